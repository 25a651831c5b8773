"""Entry point of ``condor-rlrep``.

Sub-commands live in their own modules and are imported only when invoked, so
that ``condor-rlrep hook pre`` does not pay for numpy, scipy or matplotlib.
Library errors become one clear message and exit code here, nowhere else.
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import logging
import os
import sys
from typing import Any, NoReturn

import click

from condor_rlrep import __version__
from condor_rlrep.cli.options import HELP, LOGGER
from condor_rlrep.errors import RlrepError

# command name -> "module:attribute" of a click command or group
_COMMANDS: dict[str, tuple[str, str]] = {
    "inspect": ("condor_rlrep.cli.inspect_cmd:inspect", "Show critical path, CR(W) and φ′ of a workflow."),
    "export": ("condor_rlrep.cli.export_cmd:export", "Write a DAX/WfFormat/DAG workflow as a runnable DAGMan DAG."),
    "agent": ("condor_rlrep.cli.agent_cmd:agent", "Create, inspect and drive the replica agent's store."),
    "instrument": ("condor_rlrep.cli.instrument_cmd:instrument", "Write an instrumented copy of a DAG."),
    "hook": ("condor_rlrep.cli.hook_cmd:hook", "Run a DAGMan hook (pre, post, reaper) by hand."),
    "trace": ("condor_rlrep.cli.trace_cmd:trace", "Generate, load and check cluster traces."),
    "simulate": ("condor_rlrep.cli.simulate_cmd:simulate", "Simulate workflows on a multi-use cluster trace."),
    "train": ("condor_rlrep.cli.simulate_cmd:train", "Train the agent in simulation and save it to a store."),
    "sweep": ("condor_rlrep.cli.sweep_cmd:sweep", "Run an experiment's grid of simulations."),
    "status": ("condor_rlrep.cli.status_cmd:status", "Show where every node of an instrumented DAG run stands."),
    "report": ("condor_rlrep.cli.report_cmd:report",
               "Report an instrumented DAG run, or render a sweep's results (Markdown/HTML/JSON)."),
    "replay": ("condor_rlrep.cli.replay_cmd:replay",
               "Replay a trace on a real pool: live vs simulated rows per policy."),
    "bottlemod": ("condor_rlrep.cli.bottlemod_cmd:bottlemod", "BottleMod: task I/O and resource bottlenecks."),
}


def _load(target: str) -> click.Command:
    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)


class _LazyCommands(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = _COMMANDS.get(name)
        if entry is None:
            return None
        return _load(entry[0])

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, _COMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class _LazyGroup(_LazyCommands):
    """The top-level group: one error style for every command.

    Whatever a command raises that is the user's to fix — a usage error, a
    library :class:`~condor_rlrep.errors.RlrepError`, an unreadable file —
    ends as ``condor-rlrep: error: …`` on stderr and exit status 2; a
    declined prompt or Ctrl-C as "Aborted." and 130. This is the group's
    own ``main``, so ``condor-rlrep``, :func:`main` and click's test runner
    all behave alike.
    """

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name or "condor-rlrep", complete_var, standalone_mode=False, **extra)
        except click.exceptions.Abort:
            click.echo("Aborted.", err=True)
            sys.exit(130)
        except click.UsageError as err:
            _fail(err.format_message(), hint=err.ctx.command_path if err.ctx is not None else None)
        except click.ClickException as err:
            _fail(err.format_message())
        except RlrepError as err:
            _fail(str(err))
        except OSError as err:
            if err.errno == errno.EPIPE:  # `condor-rlrep … | head`: the reader left, nothing to say
                _quiet_stdout()
                sys.exit(1)
            _fail(str(err))
        # standalone_mode=False hands back click's own exit code (--help, --version, ctx.exit)
        sys.exit(result if isinstance(result, int) else 0)


def _fail(message: str, hint: str | None = None) -> NoReturn:
    click.echo(f"condor-rlrep: error: {message}", err=True)
    if hint:
        click.echo(f"(see '{hint} --help')", err=True)
    sys.exit(2)


def _quiet_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class _ClickEcho(logging.Handler):
    """Log records as ``condor-rlrep: level: message`` on the stderr of the
    moment (a test runner swaps it between invocations)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            click.echo(f"condor-rlrep: {record.levelname.lower()}: {record.getMessage()}", err=True)
        except Exception:  # noqa: BLE001 - logging must never take the command down
            self.handleError(record)


def _set_verbosity(verbose: int, quiet: int) -> None:
    level = logging.WARNING - 10 * verbose + 10 * quiet
    logger = logging.getLogger(LOGGER)
    logger.setLevel(max(logging.DEBUG, min(level, logging.CRITICAL)))
    if not any(isinstance(handler, _ClickEcho) for handler in logger.handlers):
        logger.addHandler(_ClickEcho())
    logger.propagate = False


@click.group(cls=_LazyGroup, context_settings=HELP)
@click.version_option(__version__, prog_name="condor-rlrep")
@click.option("-v", "--verbose", count=True, help="More messages on stderr (-vv: debug).")
@click.option("-q", "--quiet", count=True, help="Fewer messages on stderr: errors only.")
def cli(verbose: int, quiet: int) -> None:
    """Learned task replication for HTCondor DAGMan workflows.

    Every command speaks one vocabulary: --phi (default 0.5), --criticality,
    --default-estimate DURATION, -o/--out FILE|DIR, --json, --max-replicas R.
    Errors are one line, 'condor-rlrep: error: …', exit status 2.
    """
    _set_verbosity(verbose, quiet)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI (the ``condor-rlrep`` executable); returns on success,
    raises SystemExit with the status otherwise."""
    try:
        cli.main(args=argv, prog_name="condor-rlrep")
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            raise
