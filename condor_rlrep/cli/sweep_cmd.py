"""``condor-rlrep sweep`` and ``condor-rlrep report``."""

from __future__ import annotations

from pathlib import Path

import click

from condor_rlrep.cli.options import emit_json, json_option, out_option
from condor_rlrep.errors import InputError


@click.command()
@click.argument("experiment")
@click.option("--quick", is_flag=True, help="The reduced variant of the experiment (its [quick] table).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Runs in parallel (local backend).")
@click.option("--backend", type=click.Choice(["local", "condor"]), default="local", show_default=True,
              help="local: run here; condor: write a DAG that runs the grid on an HTCondor pool.")
@out_option("dir", "Sweep folder.  [default: results/EXPERIMENT[-quick]]", dest="out_dir", path_type=Path)
@click.option("--only", "only", multiple=True, metavar="RUN_ID[,RUN_ID…]",
              help="Run only these runs (repeatable or comma-separated; used by the condor backend).")
@click.option("--prepare-only", is_flag=True, help="Only build the shared trace (used by the condor backend).")
@click.option("--no-report", is_flag=True, help="Do not render the report after a local sweep.")
@json_option("Print what was run (and the report's files) as one JSON object.")
def sweep(experiment, quick, jobs, backend, out_dir, only, prepare_only, no_report, as_json):
    """Run EXPERIMENT (a built-in name such as paper-figure1, or a TOML file).

    Finished runs are kept in OUT/runs and never redone, so an interrupted
    sweep resumes where it stopped. With --backend condor a DAG is written
    that fans the runs out over an HTCondor pool instead.
    """
    from condor_rlrep.sweep.experiment import experiment_path, load_experiment
    from condor_rlrep.sweep.local import PhaseClock
    from condor_rlrep.sweep.store import SweepDir

    clock = PhaseClock()
    definition = load_experiment(experiment)
    if quick:
        definition = definition.as_quick()
    clock.lap("experiment loaded")
    out = SweepDir(out_dir or Path("results") / (definition.name + ("-quick" if quick else "")))
    if backend == "condor":
        from condor_rlrep.sweep.condor import describe_submit, write_condor_sweep

        dag = write_condor_sweep(definition, out, experiment_file=experiment_path(experiment))
        if as_json:
            emit_json({"dag": str(dag), "results": str(out.root), "submit": describe_submit(dag)})
        else:
            click.echo(f"wrote {dag}\nsubmit it with: {describe_submit(dag)}")
        return
    from condor_rlrep.sweep.execute import open_sweep
    from condor_rlrep.sweep.local import run_local

    if prepare_only:
        open_sweep(definition, out)
        if as_json:
            emit_json({"results": str(out.root), "prepared": True})
        return
    wanted = {run_id.strip() for item in only for run_id in item.split(",") if run_id.strip()}
    specs = [s for s in definition.runs() if not wanted or s.run_id in wanted]
    if wanted and len(specs) != len(wanted):
        known = {s.run_id for s in definition.runs()}
        raise InputError(f"unknown run id(s): {', '.join(sorted(wanted - known))}")
    from condor_rlrep.cli.progress import Progress

    progress = Progress(f"sweep {definition.name}", len(specs), "runs")
    planned = [False]

    def on_plan(plan) -> None:
        planned[0] = True
        progress.announce(
            f"{plan.total} runs: {plan.skipped} already finished, {plan.todo} to run "
            f"({plan.simulations} simulations on {plan.jobs} worker{'s' if plan.jobs != 1 else ''}) into {out.root}"
        )

    def on_run_done(_spec) -> None:
        # runs found finished before the plan is announced are not work done now
        (progress.update if planned[0] else progress.skip)(1)

    with progress:
        summary = run_local(definition, out, jobs=jobs, only=wanted or None, on_run_done=on_run_done, on_plan=on_plan)
    report_path = None
    if not only and not no_report:
        from condor_rlrep.sweepreport.render import render_report

        clock = PhaseClock()  # from here: the runs' phases were timed by run_local
        report_path = render_report(out.root)
        clock.lap("report rendered")
    if as_json:
        emit_json({**_fields(summary), "results": str(out.root), **_report_files(report_path)})
        return
    click.echo(
        f"{summary.total} runs: {summary.ran} ran ({summary.simulations} simulations), "
        f"{summary.skipped} already finished; results in {out.root}"
    )
    if report_path is not None:
        click.echo(f"report: {report_path}")


@click.command()
@click.argument("sweep_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@json_option("Print the report's files as one JSON object.")
def report(sweep_dir, as_json):
    """Render SWEEP_DIR's results as report.md, report.html, report.json and
    figures/*.png, written into SWEEP_DIR itself."""
    say_report(render_sweeps([sweep_dir], None, None), as_json)


def say_report(path: Path, as_json: bool) -> None:
    """Where a rendered report is: its files as JSON, or one line."""
    if as_json:
        emit_json(_report_files(path))
    else:
        click.echo(f"report: {path}")


def render_sweeps(folders: list[Path], out_dir: Path | None, tuning_seeds: list[int] | None) -> Path:
    """One sweep folder: its report, in it. A folder of sweeps: one report
    of them all, in it (or ``out_dir``). Several folders: one report, into
    ``out_dir``."""
    from condor_rlrep.sweepreport.render import render_combined, render_report

    if len(folders) == 1 and (folders[0] / "experiment.json").exists():
        if out_dir is not None and out_dir.resolve() != folders[0].resolve():
            raise click.UsageError("a single sweep's report is written into its folder; -o is for several sweeps")
        return render_report(folders[0], tuning_seeds=tuning_seeds)
    if out_dir is None:
        if len(folders) > 1:
            raise click.UsageError("several sweep folders: say where the report goes with -o DIR")
        out_dir = folders[0]
    return render_combined(folders, out_dir, tuning_seeds=tuning_seeds)


def _fields(summary) -> dict:
    from dataclasses import asdict, is_dataclass

    if is_dataclass(summary):
        return asdict(summary)
    return {key: value for key, value in vars(summary).items() if not key.startswith("_")}


def _report_files(markdown: Path | None) -> dict:
    """The report's files (render_report returns the Markdown; the rest sit beside it)."""
    if markdown is None:
        return {"report": None}
    markdown = Path(markdown)
    html = markdown.with_suffix(".html")
    data = markdown.with_suffix(".json")
    figures = markdown.parent / "figures"
    return {
        "report": str(markdown),
        "html": str(html) if html.exists() else None,
        "json": str(data) if data.exists() else None,
        "figures": sorted(str(path) for path in figures.glob("*.png")) if figures.is_dir() else [],
    }

