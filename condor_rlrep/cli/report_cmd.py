"""``condor-rlrep report``: a report of an instrumented DAG run, or of a sweep.

One verb for both reports a user asks for — ``report RUN.dag`` (what the
replicas of a live run did, :mod:`condor_rlrep.runreport`) and ``report
SWEEP_DIR`` (a sweep's simulated results, :mod:`condor_rlrep.sweepreport`) —
told apart by the argument: a DAG is a file, a sweep is a folder.
"""

from __future__ import annotations

import json
import os

import click

from condor_rlrep.cli.options import emit_json, json_option, out_option

__all__ = ["report"]


@click.command("report")
@click.argument("targets", nargs=-1, required=True, metavar="RUN.dag | SWEEP_DIR…")
@out_option("dir", "Folder to write into [default: RUN.dag.report next to the DAG; for several sweep folders required; "
            "one sweep folder or a folder of sweeps: that folder].", dest="out_dir")
@json_option("Print the report as one JSON object (a sweep: its files).")
@click.option("--run", "run_ids", multiple=True, metavar="RUN_ID",
              help="Only this run of the DAG (repeatable) [default: every run, oldest first].")
@click.option("--tuning-seed", "tuning_seeds", multiple=True, type=int, metavar="SEED",
              help="Sweeps: the trace seed the policies were tuned on (repeatable); every other seed is "
                   "reported as held out [default: not said].")
@click.pass_context
def report(ctx: click.Context, targets: tuple[str, ...], out_dir: str | None, as_json: bool, run_ids: tuple[str, ...],
           tuning_seeds: tuple[int, ...]) -> None:
    """Report RUN.dag, an instrumented DAG (condor-rlrep instrument), after it ran:
    per node its replicas, winner and host, evictions, good/bad energy, σ,
    decision, outcome and reward; per run makespan vs CR(W) and the deadline,
    p(W), energy vs a single replica, failed nodes with their stderr; a Gantt
    chart of the replicas and the agent's policy. Writes report.md,
    report.html and report.json.

    Given SWEEP_DIR folders instead, renders the sweeps' results as
    report.md, report.html, report.json and figures/: one sweep into its own
    folder; several sweeps, or a folder whose sub-folders are sweeps, as one
    report grouped by trace seed (into -o DIR, or the parent folder)."""
    if any(os.path.isdir(target) for target in targets):
        from pathlib import Path

        from condor_rlrep.cli.sweep_cmd import render_sweeps, say_report

        files = [target for target in targets if not os.path.isdir(target)]
        if files:
            raise click.UsageError(f"{files[0]} is not a folder: give one RUN.dag, or sweep folders only")
        if run_ids:
            raise click.UsageError("--run options apply to a DAG run, not to sweep folders")
        path = render_sweeps([Path(t) for t in targets], Path(out_dir) if out_dir else None,
                             list(tuning_seeds) if tuning_seeds else None)
        say_report(path, as_json)
        return
    if len(targets) > 1:
        raise click.UsageError("give one RUN.dag (several targets are for sweep folders)")
    if tuning_seeds:
        raise click.UsageError("--tuning-seed applies to sweep folders")
    target = targets[0]
    from condor_rlrep.runreport.load import RunReader
    from condor_rlrep.runreport.render import write_reports
    from condor_rlrep.runreport.report import build_reports

    data = RunReader(target).read()
    store = None
    if data.files.store:
        from condor_rlrep.store.location import open_store

        store = open_store(data.files.store)
    try:
        reports = build_reports(data, store=store, run_ids=run_ids or None)
    finally:
        if store is not None:
            store.close()
    if not reports:
        from condor_rlrep.runreport.sources import RunInputError

        raise RunInputError("no attempt of any node was recorded: nothing to report", path=data.files.dag)
    out = out_dir or data.files.dag + ".report"
    paths = write_reports(reports, out)
    if as_json:
        with open(paths["json"], encoding="utf-8") as handle:
            emit_json(json.load(handle))
        return
    for r in reports:
        made = "not finished" if r.makespan_s is None else (
            f"makespan {r.makespan_s:.1f} s, p(W) {r.p_w:.3f} (deadline {'met' if r.met_deadline else 'missed'})")
        click.echo(f"run {r.run_id}: {len(r.nodes)} attempts, {r.replicas} replicas, {made}, "
                   f"energy {r.replica_energy_j:,.0f} J ({r.bad_energy_j:,.0f} J bad)")
    click.echo(f"report: {paths['html']} (and report.md, report.json)")
