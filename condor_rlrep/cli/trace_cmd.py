"""``condor-rlrep trace``: generate, load and inspect cluster traces."""

from __future__ import annotations

import time
from pathlib import Path

import click


from condor_rlrep.cli.options import HELP, Group, emit_json, json_option, out_option
from condor_rlrep.errors import InputError

__all__ = ["trace"]


@click.group(cls=Group, context_settings=HELP)
def trace() -> None:
    """Generate, load and check cluster traces (folders of CSV + trace.toml)."""


@trace.command()
@click.option("--preset", type=click.Choice(["newcastle-2010", "newcastle-2010-cal", "poisson"]), default=None, help="Shipped profile.")
@click.option("--profile", "profile_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A profile TOML file instead of a preset.")
@click.option("--days", type=float, default=None, help="Days to generate.  [default: the profile's]")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed; same seed, same trace.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a profile value, e.g. logins.per_year=1000000 or rooms.0.machines=50 (repeatable).")
@click.option("--compress", is_flag=True, help="Write logins and jobs as .csv.gz.")
@out_option("dir", "Trace folder to write.", required=True, old=("--output",), path_type=Path)
@click.option("--force", is_flag=True, help="Replace a trace already in the -o folder.")
@json_option("Print what was written as one JSON object.")
def generate(
    preset: str | None,
    profile_file: Path | None,
    days: float | None,
    seed: int,
    overrides: tuple[str, ...],
    compress: bool,
    out: Path,
    force: bool,
    as_json: bool,
) -> None:
    """Generate a synthetic trace from a preset or profile file."""
    from condor_rlrep.sim.generator import generate_trace
    from condor_rlrep.sim.trace_io import write_trace

    if (preset is None) == (profile_file is None):
        raise click.UsageError("give exactly one of --preset or --profile")
    _refuse_existing(out, force)
    began = time.perf_counter()
    result = generate_trace(profile_file or preset, days=days, seed=seed, overrides=overrides)
    write_trace(result, out, compress=compress)
    seconds = time.perf_counter() - began
    if as_json:
        emit_json({**_counts(out, result), "days": result.length / 86400, "start": result.start.isoformat(),
                   "seconds": seconds})
        return
    click.echo(
        f"{out}: {result.machine_count} machines, {result.login_count} logins, {result.job_count} jobs, "
        f"{result.length / 86400:g} days from {result.start.isoformat()} ({seconds:.1f} s)"
    )


@trace.command()
@click.option("--format", "fmt", type=click.Choice(["condor-json", "condor-long", "swf", "fta"]), required=True,
              help="Input format.")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--machines", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="machines.csv giving the machines (and their power figures).")
@click.option("--timezone", default=None, help="IANA time zone of the trace.  [default: from the input, else UTC]")
@click.option("--compress", is_flag=True, help="Write logins and jobs as .csv.gz.")
@out_option("dir", "Trace folder to write.", required=True, old=("--output",), path_type=Path)
@click.option("--force", is_flag=True, help="Replace a trace already in the -o folder.")
@json_option("Print what was written as one JSON object.")
def load(fmt: str, files: tuple[Path, ...], machines: Path | None, timezone: str | None, compress: bool,
         out: Path, force: bool, as_json: bool) -> None:
    """Convert HTCondor history, SWF or FTA files into a trace folder."""
    from condor_rlrep.sim.loaders.assemble import load_trace
    from condor_rlrep.sim.trace_io import write_trace

    _refuse_existing(out, force)
    result = load_trace(fmt, files, machines=machines, timezone=timezone)
    write_trace(result, out, compress=compress)
    if as_json:
        emit_json(_counts(out, result))
        return
    click.echo(f"{out}: {result.machine_count} machines, {result.login_count} logins, {result.job_count} jobs")


def _refuse_existing(out: Path, force: bool) -> None:
    """A trace is a result someone may have waited for: replaced only when asked, as elsewhere."""
    if not force and (out / "trace.toml").exists():
        raise InputError(f"{out} holds a trace already: pass --force to replace it (or choose another -o)")


def _counts(out: Path, result) -> dict:
    return {"trace": str(out), "machines": result.machine_count, "logins": result.login_count,
            "jobs": result.job_count}


@trace.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@json_option()
def info(directory: Path, as_json: bool) -> None:
    """Show counts and login/job rates by hour of day and weekday."""
    from condor_rlrep.sim.trace_io import read_trace
    from condor_rlrep.sim.trace_stats import summarize

    summary = summarize(read_trace(directory))
    if as_json:
        emit_json(summary)
        return
    click.echo(f"trace      {directory}")
    click.echo(f"source     {summary['source']}")
    click.echo(f"start      {summary['start']}  ({summary['days']:g} days)")
    click.echo(f"machines   {summary['machines']} in {len(summary['rooms'])} rooms")
    click.echo(f"logins     {summary['logins']}  (mean session {summary['mean_session_minutes']:.1f} min, "
               f"mean occupancy {100 * summary['occupancy']:.1f} %)")
    click.echo(f"jobs       {summary['jobs']}  (median {summary['job_minutes']['median']:.1f} min, "
               f"mean {summary['job_minutes']['mean']:.1f} min, p99 {summary['job_minutes']['p99']:.1f} min)")
    click.echo("")
    click.echo("per day    hour: " + " ".join(f"{h:>5d}" for h in range(24)))
    click.echo("logins/h         " + " ".join(f"{v:5.0f}" for v in summary["logins_by_hour"]))
    click.echo("jobs/h           " + " ".join(f"{v:5.0f}" for v in summary["jobs_by_hour"]))
    click.echo("")
    days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    click.echo("per day    " + " ".join(f"{d:>8s}" for d in days))
    click.echo("logins     " + " ".join(f"{v:8.0f}" for v in summary["logins_by_weekday"]))
    click.echo("jobs       " + " ".join(f"{v:8.0f}" for v in summary["jobs_by_weekday"]))
