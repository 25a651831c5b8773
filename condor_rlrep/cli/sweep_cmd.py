"""``condor-rlrep sweep`` and ``condor-rlrep report``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from condor_rlrep.errors import InputError


@click.command()
@click.argument("experiment")
@click.option("--quick", is_flag=True, help="The reduced variant of the experiment (its [quick] table).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Runs in parallel (local backend).")
@click.option("--backend", type=click.Choice(["local", "condor"]), default="local", show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Sweep folder (default: results/EXPERIMENT[-quick]).")
@click.option("--only", "only", multiple=True, metavar="RUN_ID", help="Run only these runs (used by the condor backend).")
@click.option("--prepare-only", is_flag=True, help="Only build the shared trace (used by the condor backend).")
@click.option("--no-report", is_flag=True, help="Do not render the report after a local sweep.")
def sweep(experiment, quick, jobs, backend, out_dir, only, prepare_only, no_report):
    """Run EXPERIMENT (a built-in name such as paper-figure1, or a TOML file).

    Finished runs are kept in OUT/runs and never redone, so an interrupted
    sweep resumes where it stopped. With --backend condor a DAG is written
    that fans the runs out over an HTCondor pool instead.
    """
    from condor_rlrep.sweep.experiment import experiment_path, load_experiment
    from condor_rlrep.sweep.store import SweepDir

    definition = load_experiment(experiment)
    if quick:
        definition = definition.as_quick()
    out = SweepDir(out_dir or Path("results") / (definition.name + ("-quick" if quick else "")))
    if backend == "condor":
        from condor_rlrep.sweep.condor import describe_submit, write_condor_sweep

        dag = write_condor_sweep(definition, out, experiment_file=experiment_path(experiment))
        click.echo(f"wrote {dag}\nsubmit it with: {describe_submit(dag)}")
        return
    from condor_rlrep.sweep.execute import prepare_trace
    from condor_rlrep.sweep.local import run_local

    if prepare_only:
        out.save_experiment(definition)
        prepare_trace(definition, out)
        return
    specs = [s for s in definition.runs() if not only or s.run_id in only]
    if only and len(specs) != len(set(only)):
        known = {s.run_id for s in definition.runs()}
        raise InputError(f"unknown run id(s): {', '.join(sorted(set(only) - known))}")
    show = sys.stderr.isatty()
    with click.progressbar(length=len(specs), label=f"{definition.name}: runs", file=sys.stderr if show else _Null()) as bar:
        summary = run_local(definition, out, jobs=jobs, only=set(only) or None, on_run_done=lambda _: bar.update(1))
    click.echo(f"{summary.total} runs: {summary.ran} ran, {summary.skipped} already finished; results in {out.root}")
    if not only and not no_report:
        from condor_rlrep.report.render import render_report

        click.echo(f"report: {render_report(out.root)}")


@click.command()
@click.argument("sweep_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
def report(sweep_dir):
    """Render SWEEP_DIR's results as report.md and report.html with figures."""
    from condor_rlrep.report.render import render_report

    click.echo(f"report: {render_report(sweep_dir)}")


class _Null:
    def write(self, _text: str) -> int:
        return 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False
