"""``condor-rlrep hook pre|post|reaper ARGS…``: run a DAGMan hook by hand,
with exactly the argv the ``rlrep-*`` executables take."""

from __future__ import annotations

import sys

import click

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


@click.group("hook")
def hook() -> None:
    """Run a DAGMan hook (pre, post, reaper) by hand."""


@hook.command("pre", context_settings=_RAW)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def pre(argv: tuple[str, ...]) -> None:
    """The PRE hook (rlrep-pre)."""
    from condor_rlrep.hooks.pre import run_pre

    sys.exit(run_pre(_hook_argv("pre", argv)))


@hook.command("post", context_settings=_RAW)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def post(argv: tuple[str, ...]) -> None:
    """The POST hook (rlrep-post)."""
    from condor_rlrep.hooks.post import run_post

    sys.exit(run_post(_hook_argv("post", argv)))


@hook.command("reaper", context_settings=_RAW)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def reaper(argv: tuple[str, ...]) -> None:
    """The reaper (rlrep-reaper)."""
    from condor_rlrep.hooks.reaper import run_reaper

    sys.exit(run_reaper(_hook_argv("reaper", argv)))
