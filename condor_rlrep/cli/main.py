"""Entry point of ``condor-rlrep``.

Sub-commands live in their own modules and are imported only when invoked, so
that ``condor-rlrep hook pre`` does not pay for numpy, scipy or matplotlib.
Library errors become one clear message and exit code here, nowhere else.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from condor_rlrep import __version__
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
    "report": ("condor_rlrep.cli.sweep_cmd:report", "Render a sweep's results as a Markdown/HTML report."),
    "demo": ("condor_rlrep.cli.demo_cmd:demo", "Quick end-to-end run on the embedded defaults."),
    "bottlemod": ("condor_rlrep.cli.bottlemod_cmd:bottlemod", "BottleMod: task I/O and resource bottlenecks."),
}


def _load(target: str) -> click.Command:
    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, (target, _) in _COMMANDS.items() if _available(target))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = _COMMANDS.get(name)
        if entry is None:
            return None
        try:
            return _load(entry[0])
        except ModuleNotFoundError as err:
            if err.name and err.name.startswith("condor_rlrep.cli"):
                return None
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, _COMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _available(target: str) -> bool:
    module_name = target.split(":")[0]
    return importlib.util.find_spec(module_name) is not None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="condor-rlrep")
def cli() -> None:
    """Learned task replication for HTCondor DAGMan workflows."""


def main(argv: list[str] | None = None) -> None:
    """Run the CLI, turning library errors into one line on stderr and exit 2."""
    try:
        cli.main(args=argv, prog_name="condor-rlrep", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)
    except RlrepError as err:
        click.echo(f"condor-rlrep: error: {err}", err=True)
        sys.exit(2)
    except OSError as err:
        click.echo(f"condor-rlrep: error: {err}", err=True)
        sys.exit(2)
