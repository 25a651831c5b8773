"""``condor-rlrep replay``: a trace replayed on a real pool, live vs simulated per policy."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import click

from condor_rlrep.cli.options import emit_json, json_option, out_option, phi_option


@click.command("replay")
@out_option("dir", "Folder of the replay (plan, per-policy runs, report); rerun to resume.", required=True,
            path_type=Path)
@click.option("--trace", "trace_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Trace folder (trace generate / trace load).")
@click.option("--preset", default=None, help="Generate the trace from this preset instead (e.g. newcastle-2010).")
@click.option("--days", type=float, default=14.0, show_default=True, help="Days of the generated trace.")
@click.option("--trace-seed", type=int, default=2010, show_default=True, help="Seed of the generated trace.")
@click.option("--window-start", type=float, default=282.0, show_default=True, metavar="HOURS",
              help="Where the window starts, hours after the trace's start (282: a Tuesday 18:00 of the "
                   "newcastle-2010 presets).")
@click.option("--window", "window_hours", type=float, default=4.0, show_default=True, metavar="HOURS",
              help="Length of the window, in trace hours.")
@click.option("--slots", type=click.IntRange(min=1), default=4, show_default=True,
              help="Static slots, each standing for one of the trace's machines.")
@click.option("--pick", type=click.Choice(["random", "busiest"]), default="random", show_default=True,
              help="Which machines the slots stand for: drawn with --seed, or those with the most owner sessions "
                   "in the window (an eviction-rich stress test).")
@click.option("--compression", type=click.FloatRange(min=1.0), default=60.0, show_default=True,
              help="Trace seconds per replay second (tasks, sessions and arrivals all divided by it).")
@click.option("--workflows", type=click.IntRange(min=1), default=4, show_default=True,
              help="Figure-1 workflows, at arrival times drawn from the trace's submissions in the window.")
@click.option("--workflow", type=click.Choice(["figure1", "montage"]), default="figure1", show_default=True,
              help="What every arrival submits: the Figure-1 workflow (32-min tasks) or the 25-task Montage of "
                   "the Montage_25 DAX (the simulator's montage), run times divided by the compression.")
@click.option("--policy", "policies", multiple=True, metavar="POLICY",
              help="Policy to replay (repeatable; as instrument --policy).  [default: single, fixed:2]")
@phi_option("Contingency φ ≥ 0 of every workflow (its deadline (1+φ)·CR(W); within-P shares are reported for every P).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the slot and arrival draws and the simulator.")
@click.option("--negotiation-interval", type=click.FloatRange(min=1.0), default=2.0, show_default=True,
              help="The pool's NEGOTIATOR_INTERVAL and the simulator's negotiation ticks, in replay seconds.")
@click.option("--dagman-latency", type=click.FloatRange(min=0.0), default=None, metavar="SECONDS",
              help="DAGMan's per-level latency for the simulated rows (the simulator's --dagman-latency).  "
                   "[default: as measured on each policy's live run]")
@click.option("--slot-turnaround", type=click.FloatRange(min=0.0), default=None, metavar="SECONDS",
              help="Seconds a slot freed by a removed replica waits before it is matched again, for the simulated "
                   "row (the simulator's --slot-turnaround).  [default: as measured on each policy's live run]")
@click.option("--rescore", is_flag=True, help="Recompute the rows of the policies already replayed from their kept "
              "files (node logs, journals) with this version's code — no pool is started for them — and rewrite "
              "the report.")
@click.option("--condor", "release", type=click.Path(exists=True, file_okay=False), default=None,
              help="HTCondor release folder (sbin/condor_master) [default: the one of condor_master on PATH].")
@json_option("Print the rows as one JSON object.")
def replay(out: Path, trace_dir: str | None, preset: str | None, days: float, trace_seed: int, window_start: float,
           window_hours: float, slots: int, pick: str, compression: float, workflows: int, workflow: str,
           policies: tuple[str, ...], phi: float, seed: int, negotiation_interval: float,
           dagman_latency: float | None, slot_turnaround: float | None, rescore: bool, release: str | None, as_json: bool) -> None:
    """Replay a window of a trace on a personal HTCondor pool whose static
    slots stand for the trace's desktops (owners evict through the startd's
    START/PREEMPT), submit instrumented Figure-1 workflows at the trace's
    arrival times with each policy in a fresh pool, and set each policy's live
    row beside the simulator's on the same compressed window. Writes
    report.md, report.html and report.json into -o DIR.  Ctrl-C stops the
    pool; the same command resumes with the policies not done."""
    from condor_rlrep.replay.plan import make_plan
    from condor_rlrep.replay.pool import PoolError, find_release
    from condor_rlrep.replay.render import write_report
    from condor_rlrep.replay.run import ReplaySettings, run_replay
    from condor_rlrep.sim.run import load_trace

    if (trace_dir is None) == (preset is None):
        raise click.UsageError("give one of --trace DIR or --preset NAME")
    for policy in policies:
        from condor_rlrep.policyspec import live_spec

        live_spec(policy)  # refuses what instrument refuses, before any pool starts
    try:
        found = find_release(release)
    except PoolError:
        if not rescore or release:
            raise
        found = None  # rescoring kept runs starts no pool; a policy still to replay asks for HTCondor then
    trace = load_trace(trace_dir=trace_dir, preset=preset, days=days if preset else None, seed=trace_seed)
    plan = make_plan(trace, slots=slots, window_start=window_start * 3600.0, window_seconds=window_hours * 3600.0,
                     compression=compression, workflows=workflows, seed=seed, pick=pick, workflow=workflow)
    settings = ReplaySettings(policies=list(policies) or ["single", "fixed:2"], phi=phi, seed=seed,
                              negotiation_interval=negotiation_interval, release=found,
                              dagman_latency=dagman_latency, slot_turnaround=slot_turnaround, rescore=rescore)
    stopping = {"now": False}

    def interrupt(signum: int, frame: Any) -> None:
        if stopping["now"]:
            return  # already stopping the pool: a second Ctrl-C must not leave daemons behind
        stopping["now"] = True
        raise KeyboardInterrupt

    last: list[tuple[str, int, str]] = []

    def progress(policy: str, done: int, total: int, what: str) -> None:
        if as_json or last[-1:] == [(policy, done, what)]:
            return  # one line per change, not one per poll
        last[:] = [(policy, done, what)]
        click.echo(f"{policy}: {what} {done}/{total}", err=True)

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        rows = run_replay(out, plan, settings, progress=progress)
    except KeyboardInterrupt:
        click.echo(f"condor-rlrep: replay interrupted; pool stopped; rerun the same command to resume ({out})",
                   err=True)
        raise SystemExit(130) from None
    finally:
        signal.signal(signal.SIGINT, previous)
    shown = {"policies": settings.policies, "phi": phi, "seed": seed, "negotiation_interval": negotiation_interval,
             "pick": pick, "dagman_latency": "measured live" if dagman_latency is None else dagman_latency,
             "slot_turnaround": "measured live" if slot_turnaround is None else slot_turnaround}
    paths = write_report(out, plan, rows, shown)
    if as_json:
        emit_json({"rows": {policy: [r.to_json() for r in pair] for policy, pair in rows.items()}, "report": paths})
        return
    for policy, pair in rows.items():
        for row in pair:
            click.echo(f"{policy:>12} {row.side:>9}: {row.completed}/{row.workflows} finished, within 0.1 "
                       f"{100 * row.within['0.1']:.0f} %, 0.5 {100 * row.within['0.5']:.0f} %, "
                       f"{row.replicas_per_task:.2f} replicas/task, {row.evictions} evictions, "
                       f"{row.replica_kwh:.4f} kWh")
    click.echo(f"report: {paths['html']} (and report.md, report.json)")
