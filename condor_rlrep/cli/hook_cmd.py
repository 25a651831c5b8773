"""``condor-rlrep hook pre|post|reaper ARGS…``: run a DAGMan hook by hand,
with exactly the argv the ``rlrep-*`` executables take."""

from __future__ import annotations

import sys

import click

from condor_rlrep.cli.options import HELP, Group

_RAW = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


def _hook_argv(name: str, parsed: tuple[str, ...]) -> list[str]:
    """The hook's argv as typed: click drops the first ``--``, which the hooks
    need (it separates the user's own script), so take it from ``sys.argv``
    when that is where ``parsed`` came from."""
    raw = sys.argv[1:]
    for index in range(1, len(raw)):
        if raw[index] == name and raw[index - 1] == "hook":
            rest = raw[index + 1 :]
            without = list(rest)
            if "--" in without:
                without.remove("--")
            if without == list(parsed):
                return rest
    return list(parsed)


def _help_asked(argv: tuple[str, ...]) -> bool:
    """``--help``/``-h`` as the first argument: DAGMan never passes that
    (instrument writes ``--ctx`` first), so it is a person asking."""
    if argv[:1] in (("--help",), ("-h",)):
        ctx = click.get_current_context()
        click.echo(ctx.get_help())
        return True
    return False


@click.group("hook", cls=Group, context_settings=HELP)
def hook() -> None:
    """Run a DAGMan hook (pre, post, reaper) by hand, with the arguments
    `instrument` wrote into the DAG's SCRIPT lines (`hook pre --help`)."""


@hook.command("pre", context_settings=_RAW)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def pre(argv: tuple[str, ...]) -> None:
    """The PRE hook (rlrep-pre): decide the node's replica count and write its submit file.

    \b
    ARGV: --ctx=DIR --node=NAME --submit=ORIGINAL.sub --macros=job,retry,max-retries,dagid
          -- $JOB $RETRY $MAX_RETRIES $DAGID [-- USER_PRE_SCRIPT ARGS...]
    (exactly the DAG's SCRIPT PRE line; options only as --name=value.)
    Fails open: whatever goes wrong, the node runs as it would without us.
    """
    if _help_asked(argv):
        return
    from condor_rlrep.hooks.pre import run_pre

    sys.exit(run_pre(_hook_argv("pre", argv)))


@hook.command("post", context_settings=_RAW)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def post(argv: tuple[str, ...]) -> None:
    """The POST hook (rlrep-post): read the node's job event log and record the outcome.

    \b
    ARGV: --ctx=DIR --node=NAME --macros=job,retry,jobid,return,dagid,cluster,success
          -- $JOB $RETRY $JOBID $RETURN $DAGID $CLUSTERID $SUCCESS [-- USER_POST_SCRIPT ARGS...]
    (exactly the DAG's SCRIPT POST line; by hand also --return=N and the like.)
    Exits with the status DAGMan would have seen without us.
    """
    if _help_asked(argv):
        return
    from condor_rlrep.hooks.post import run_post

    sys.exit(run_post(_hook_argv("post", argv)))


@hook.command("reaper", context_settings=_RAW)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def reaper(argv: tuple[str, ...]) -> None:
    """The reaper (rlrep-reaper): remove a node's surplus replicas once one has won.

    \b
    ARGV: --ctx=DIR [--interval=SECONDS] [--log=NODE_LOG]
    Runs as the DAG's SERVICE node and ends by itself.
    """
    if _help_asked(argv):
        return
    from condor_rlrep.hooks.reaper import run_reaper

    sys.exit(run_reaper(_hook_argv("reaper", argv)))
