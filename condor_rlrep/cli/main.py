"""Entry point of ``condor-rlrep``.

Sub-commands live in their own modules and are imported only when invoked, so
that ``condor-rlrep hook pre`` does not pay for numpy, scipy or matplotlib.
Library errors become one clear message and exit code here, nowhere else.
"""

from __future__ import annotations

import errno
import functools
import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from condor_rlrep import __version__
from condor_rlrep.cli.interrupt import Interrupted, interrupted
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
    "submit": ("condor_rlrep.cli.submit_cmd:submit",
               "Submit an instrumented DAG (condor_submit_dag's options) and say how to follow it."),
    "status": ("condor_rlrep.cli.status_cmd:status", "Show where every node of an instrumented DAG run stands."),
    "report": ("condor_rlrep.cli.report_cmd:report",
               "Report an instrumented DAG run, or render a sweep's results (Markdown/HTML/JSON)."),
    "replay": ("condor_rlrep.cli.replay_cmd:replay",
               "Replay a trace on a real pool: live vs simulated rows per policy."),
    "bottlemod": ("condor_rlrep.cli.bottlemod_cmd:bottlemod", "BottleMod: task I/O and resource bottlenecks."),
}


def _load(target: str) -> click.Command:
    module_name, attribute = target.split(":")
    command = getattr(importlib.import_module(module_name), attribute)
    _guard(command)
    return command


def _guard(command: click.Command) -> None:
    """Make every callback of ``command`` (and of its sub-commands) drop a
    :class:`MemoryError`'s traceback before the error leaves it.

    The traceback keeps every frame of the command, and so all its data,
    alive while the error unwinds click's frames; CPython 3.11 can need memory
    to unwind a frame (an ``int`` for a ``with`` handler at a large offset) and
    retries forever when it gets none: ``inspect BIG.dag`` under ``prlimit``
    spun at 100 % CPU in click's ``Command.main``. Raised afresh from here,
    the error crosses click with the command's data already freed.
    """
    callback = command.callback
    if callback is not None and not getattr(callback, "_frees_on_oom", False):
        command.callback = _freeing_on_oom(callback)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _guard(sub)


def _freeing_on_oom(callback: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except MemoryError as err:
            kind, said = type(err), err.args  # no allocation here: memory may be gone
        # Out of the except block: the traceback and the frames' data are freed.
        raise _same_error(kind, said)

    run._frees_on_oom = True  # type: ignore[attr-defined]
    return run


def _same_error(kind: type[MemoryError], said: tuple[Any, ...]) -> MemoryError:
    """A fresh ``kind(*said)``: a subclass keeps its message (numpy's says
    which array could not be allocated, from its shape and dtype in ``said``)."""
    try:
        return kind(*said)
    except Exception:  # noqa: BLE001 - a subclass that cannot be rebuilt from its args
        return MemoryError(*said)


class _LazyCommands(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = _COMMANDS.get(name)
        if entry is None:
            return None
        return _load(entry[0])

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None and not ctx.resilient_parsing:
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=2, cutoff=0.6)
            if close:
                ctx.fail(f"No such command {name!r}. Did you mean {' or '.join(repr(c) for c in close)}?")
        return super().resolve_command(ctx, args)

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
    declined prompt as "Aborted." and 130, Ctrl-C as one line saying what
    was kept (:mod:`condor_rlrep.cli.interrupt`) and 130. This is the
    group's own ``main``, so ``condor-rlrep``, :func:`main` and click's test
    runner all behave alike.
    """

    def invoke(self, ctx: click.Context) -> Any:
        # click would print a blank line and raise Abort ("Aborted."): carry
        # the interrupt, with what the command kept, to main instead.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as err:
            raise Interrupted(str(err)) from None

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        out_of_memory: str | None = None
        try:
            result = super().main(args, prog_name or "condor-rlrep", complete_var, standalone_mode=False, **extra)
        except Interrupted as err:
            interrupted(str(err))
        except click.exceptions.Abort:
            click.echo("Aborted.", err=True)
            sys.exit(130)
        except click.UsageError as err:
            _fail(err.format_message(), hint=err.ctx.command_path if err.ctx is not None else None)
        except click.ClickException as err:
            _fail(err.format_message())
        except RlrepError as err:
            _fail(str(err))
        except MemoryError as err:
            # Under a memory limit (ulimit -v, prlimit, a cgroup) a large input
            # ends here. Said after the except block: until then the error's
            # traceback keeps the command's data alive, and writing the line
            # could itself run out of memory.
            out_of_memory = str(err)
        except ImportError as err:
            # A late import (numpy, scipy) under the same limit: the loader
            # cannot map the C extension. Anything else is a broken install.
            out_of_memory = _import_out_of_memory(err)
            if out_of_memory is None:
                _fail(f"cannot import {_import_failure(err)}: the installation is incomplete "
                      "(reinstall condor-rlrep with its dependencies)")
        except OSError as err:
            if err.errno == errno.EPIPE:  # `condor-rlrep … | head`: the reader left, nothing to say
                _quiet_stdout()
                sys.exit(1)
            _fail(str(err))
        if out_of_memory is not None:
            import gc

            gc.collect()
            detail = f" ({out_of_memory})" if out_of_memory else ""
            _fail(f"out of memory running '{_command_of(args)}'{detail}: the input is too large for "
                  "the memory this process may use (raise the limit, or split the input)")
        # standalone_mode=False hands back click's own exit code (--help, --version, ctx.exit)
        sys.exit(result if isinstance(result, int) else 0)


# What the dynamic loader says when it cannot map a library for want of memory.
_NO_MEMORY = ("failed to map segment", "cannot allocate memory")


def _import_chain(err: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    cause: BaseException | None = err
    while cause is not None and len(chain) < 16:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    return chain


def _import_failure(err: ImportError) -> str:
    """``'module' (first line of the root cause)`` of a failed import, one line."""
    chain = _import_chain(err)
    name = err.name or _importing_package(err) or next(
        (e.name for e in chain if isinstance(e, ImportError) and e.name), None)
    said = next((line.strip() for line in str(chain[-1]).splitlines() if line.strip()), type(chain[-1]).__name__)
    return f"{name!r} ({said})" if name else said


def _importing_package(err: BaseException) -> str | None:
    """The package whose module body raised ``err`` (numpy re-raises a failed
    C extension as an ImportError of its own, without a name)."""
    tb = err.__traceback__
    found = None
    while tb is not None:
        frame = tb.tb_frame
        module = frame.f_globals.get("__name__", "") if frame.f_code.co_name == "<module>" else ""
        if module and module != "__main__" and not module.startswith("condor_rlrep"):
            found = found or module.split(".")[0]
        tb = tb.tb_next
    return found


def _import_out_of_memory(err: ImportError) -> str | None:
    """The detail line when ``err`` comes from running out of memory, else None."""
    for cause in _import_chain(err):
        text = str(cause).lower()
        if isinstance(cause, MemoryError) or (any(s in text for s in _NO_MEMORY) and "static tls" not in text):
            return f"cannot load {_import_failure(err)}"
    return None


def _command_of(args: Any) -> str:
    words = list(args) if args is not None else sys.argv[1:]
    return " ".join(["condor-rlrep", *(word for word in words if not word.startswith("-"))][:2])


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


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--version``: ours, and the HTCondor this would run against — the
    Python bindings the hooks import and the ``condor_dagman`` on PATH that
    ``instrument`` reads — since a bug report needs all three."""
    if not value or ctx.resilient_parsing:
        return
    import platform
    import re

    click.echo(f"condor-rlrep {__version__}")
    click.echo(f"Python {platform.python_version()} ({sys.executable})")
    try:
        import htcondor2

        stamp = re.search(r"\d+\.\d+\.\d+", htcondor2.version())
        click.echo(f"htcondor2 bindings {stamp.group(0) if stamp else htcondor2.version()}")
    except Exception as err:  # noqa: BLE001 - an absent or broken install is what we report
        click.echo(f"htcondor2 bindings: not usable ({type(err).__name__}: {err})")
    from condor_rlrep.condor.version import detect_dagman_version, version_text

    found = detect_dagman_version()
    if found is None:
        click.echo("condor_dagman: not found on PATH (instrument then needs --dagman-version)")
    else:
        click.echo(f"condor_dagman {version_text(found[0])} ({found[1]})")
    ctx.exit()


@click.group(cls=_LazyGroup, context_settings=HELP)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_show_version,
              help="Show the version, and the HTCondor bindings and condor_dagman found, and exit.")
@click.option("-v", "--verbose", count=True, help="More messages on stderr (-vv: debug).")
@click.option("-q", "--quiet", count=True, help="Fewer messages on stderr: errors only.")
def cli(verbose: int, quiet: int) -> None:
    """Learned task replication for HTCondor DAGMan workflows.

    Every command speaks one vocabulary: --phi (default 0.5), --criticality,
    --default-estimate DURATION, -o/--out FILE|DIR, --json, --max-replicas R
    (default 3). Ctrl-C stops a long command at once (exit 130), keeping what
    finished.
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
