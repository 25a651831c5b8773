"""The replay's report: live and simulated rows side by side (Markdown, HTML, JSON).

A figure of the within-P curves (``within.svg``/``.png``, live solid,
simulated dashed); one table row per policy and side: workflows finished, the share within
P = 0.1, 0.5, 1.0 and 2.0, replicas per task, evictions and replica energy;
then the differences live − simulated per policy, the cause of each gap
beyond noise (:mod:`condor_rlrep.replay.causes`), and the plan (trace,
window, slots, compression, arrivals) and settings every row shares. The
simulated row models the live pool (DAGMan's per-level latency, the start
excess, the negotiator's slot order, the slot turnaround); the row
"simulated, no DAGMan latency" is the paper's simulator on the same plan.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from condor_rlrep.atomic import write_atomic
from condor_rlrep.document import Code, Document
from condor_rlrep.replay.causes import causes_json, noise_points
from condor_rlrep.replay.plan import ReplayPlan, compressed_policy
from condor_rlrep.replay.results import NO_LATENCY, Row

__all__ = ["write_report", "SHOWN_P"]

SHOWN_P = ("0.1", "0.5", "1", "2")
_STYLE = ("body{font-family:sans-serif;max-width:80em;margin:auto;padding:0 1em}"
          "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #bbb;padding:2px 6px}"
          "td{text-align:right}td:first-child,td:nth-child(2){text-align:left}th{background:#eee}")


def _machine_list(machines: list[str], shown: int = 6) -> str:
    """The slots' machines, or the first few of them when there are many
    (a list of hundreds of names buries the report's first paragraph)."""
    if len(machines) <= shown:
        return ", ".join(machines)
    return f"{', '.join(machines[:shown])} … {machines[-1]} (every one in plan.json)"


def _pct(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.1f} %"


def _num(value: float, fmt: str = "{:.2f}") -> str:
    return "–" if value is None or math.isnan(value) else fmt.format(value)


def write_report(out: Path, plan: ReplayPlan, rows: dict[str, list[Row]], settings: dict) -> dict[str, str]:
    doc = Document()
    doc.h(1, "Replay: live pool vs simulator")
    doc.p(f"Trace {plan.source}: window of {plan.window_seconds / 3600:g} h from {plan.window_start / 3600:g} h "
          f"after its start, compressed ×{plan.compression:g} into {plan.window_seconds / plan.compression:.0f} s "
          f"(+ {plan.drain_seconds:.0f} s without owners for the last workflows); {plan.slots} slots standing for "
          f"{_machine_list(plan.machines)}; {sum(len(s) for s in plan.sessions)} owner sessions; "
          + (f"{len(plan.arrivals)} Figure-1 workflows of {plan.task_seconds:g} s tasks" if plan.workflow == "figure1"
             else f"{len(plan.arrivals)} {plan.workflow} workflows (critical path {plan.shape()[0]:.0f} s)")
          + " at the trace's arrival times; "
          f"{len(plan.reboots)} nightly reboot(s) as owner sessions on every slot.")
    doc.p("Every policy ran in a fresh pool of its own with the same owners and arrivals (clock origin set after "
          "the pool was up). Settings: ", Code(json.dumps(settings, sort_keys=True)), ".")
    header = ["policy", "side", "finished", *[f"within {p}" for p in SHOWN_P], "replicas/task", "evictions",
              "replica kWh"]
    table = []
    for policy, pair in rows.items():
        for row in pair:
            table.append([Code(policy), row.side, f"{row.completed}/{row.workflows}",
                          *[_pct(row.within.get(p, math.nan)) for p in SHOWN_P],
                          _num(row.replicas_per_task), str(row.evictions), _num(row.replica_kwh, "{:.4f}")])
    doc.table(header, table)
    out.mkdir(parents=True, exist_ok=True)
    if _within_figure(rows, out / "within"):
        doc.img("within.svg", "Share of workflows within P, live (solid), simulated (dashed) and simulated without DAGMan latency (dotted), per policy",
                caption=True)
    doc.h(2, "Live − simulated")
    diffs = []
    for policy, pair in rows.items():
        live = next((r for r in pair if r.side == "live"), None)
        sim = next((r for r in pair if r.side == "simulated"), None)
        if live is None or sim is None:
            continue
        energy = (live.replica_kwh / sim.replica_kwh - 1.0) if sim.replica_kwh else math.nan
        diffs.append([Code(policy), *[_num(100 * (live.within[p] - sim.within[p]), "{:+.1f}") for p in ("0.1", "0.5")],
                      _num(100 * energy, "{:+.1f} %"), f"{live.evictions - sim.evictions:+d}",
                      f"{live.replicas - sim.replicas:+d}"])
    doc.table(["policy", "Δ within 0.1 (points)", "Δ within 0.5 (points)", "Δ replica energy", "Δ evictions",
               "Δ replicas"], diffs)
    critical_path, levels, _ = plan.shape()
    causes = causes_json(rows, critical_path, levels)
    doc.h(2, "Why they differ")
    replayed = any(r.extra.get("latency_workflows") for pair in rows.values() for r in pair if r.side == "simulated")
    head = ("DAGMan's per-level latency, measured live: the turn — seconds from a node becoming ready (its "
            "last parent's end, or the workflow's arrival) to its job's submission: log scan, POST, PRE, "
            "submit — and the start — from submission to the first execution: negotiation, claim, shadow "
            "and starter (a wait for a busy slot included). ")
    if replayed:
        model = ("Live, slow nodes come in periods (slots short, a busy startd), so the simulated row gives each "
                 "workflow the delays of the live workflow that arrived nearest to it, node for node: its turn plus "
                 "its start — their mean is the latency below — decided before the start part, as the PRE hook "
                 "does, each replica running its node's run excess (execute to terminate beyond the task's "
                 "seconds) longer, and jobs matched as soon as a slot is free (the live start already holds the "
                 "wait for the match); ")
    else:
        model = ("The simulated row delays each task by one live node's turn plus its start in excess of the "
                 "simulator's own start (which is only a wait for a negotiation tick and a free slot), drawn at "
                 "random — their mean is the latency below, unless it is given — and decides before that start "
                 "part, as the PRE hook does; ")
    parts: list = [head + model + "it places jobs on the lowest free slot, as HTCondor's default negotiator order "
                   "does; the row without latency is the paper's simulator (random placement). Per policy: "]
    for index, (policy, pair) in enumerate(rows.items()):
        sim = next((r for r in pair if r.side == "simulated"), None)
        live = next((r for r in pair if r.side == "live"), None)
        measured = (live.extra.get("dagman_latency") or {}) if live is not None else {}
        ran = compressed_policy(policy, plan.compression)
        parts += ["; " if index else "", Code(policy)]
        if ran != policy:
            parts += [" (run as ", Code(ran), ")"]
        start = measured.get("start_median_s")
        parts.append(": " + (f"turn {measured['mean_s']:.2f} s (mean of {measured['nodes']} nodes)"
                             + (f", start median {start:.1f} s, mean {measured['start_mean_s']:.1f} s"
                                if start is not None else "")
                             if measured.get("mean_s") is not None else "not measured")
                     + (f"; simulated latency {sim.extra.get('dagman_latency_s', 0.0):.2f} s "
                        f"({sim.extra.get('dagman_latency_from', 'given')}"
                        + (f": turn {sim.extra['turn_s']:.2f} s + start excess {sim.extra['start_excess_s']:.2f} s"
                           if sim.extra.get("start_excess_s") else "")
                        + (f", run excess {sim.extra['run_excess_s']:.2f} s" if sim.extra.get("run_excess_s") else "")
                        + ")" if sim is not None else "")
                     + (f", simulated start mean {sim.extra['start_wait_mean_s']:.1f} s"
                        if sim is not None and sim.extra.get("start_wait_mean_s") is not None else "")
                     + _turnaround_text(live, sim))
    parts.append(". The slot turnaround (the simulator's --slot-turnaround) is how much longer a removed "
                 "replica's slot takes than a completed job's to start the next waiting job, live (from the node "
                 "logs: next start on the slot minus the winner's end, vs minus the completion)")
    parts.append(f". Time is compressed ×{plan.compression:g}: a model:R without a prior of its own runs with the "
                 f"default prior rate × {plan.compression:g}, so a {plan.task_seconds:g}-s task sees the eviction "
                 f"hazard a {plan.task_seconds * plan.compression:g}-s one would.")
    doc.p(*parts)
    n = max((pair[0].workflows for pair in rows.values() if pair), default=0)
    doc.p(f"A gap is beyond noise when larger than one workflow's worth and 5 points "
          f"({noise_points(n):.0f} points with {n} workflows), or 10 % of replica energy.")
    for policy, lines in causes.items():
        if not lines:
            doc.p(Code(policy), ": live and simulated agree within noise.")
        for line in lines:
            doc.p(Code(policy), ", " + line)
    paths = {"md": str(out / "report.md"), "html": str(out / "report.html"), "json": str(out / "report.json")}
    write_atomic(paths["md"], doc.markdown())
    write_atomic(paths["html"], doc.html("condor-rlrep replay", style=_STYLE, lang="en"))
    payload = {"plan": plan.to_json(), "settings": settings, "causes": causes,
               "rows": {policy: [r.to_json() for r in pair] for policy, pair in rows.items()}}
    write_atomic(paths["json"], json.dumps(payload, indent=1) + "\n")
    return paths


def _within_figure(rows: dict[str, list[Row]], stem: Path) -> bool:
    """Within-P curves: one colour per policy, live solid, simulated dashed."""
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "condor-rlrep"
    fig, ax = plt.subplots(figsize=(9, 4))
    for index, (policy, pair) in enumerate(rows.items()):
        colour = f"C{index % 10}"
        for row in pair:
            ps = sorted(row.within, key=float)
            ax.plot([float(p) for p in ps], [100 * row.within[p] for p in ps], color=colour, marker="o",
                    linestyle="-" if row.side == "live" else (":" if row.side == NO_LATENCY else "--"),
                    label=f"{policy} ({row.side})")
    ax.set_xscale("log")
    ax.set_xlabel("P (p(W) ≤ P)")
    ax.set_ylabel("workflows within P (%)")
    ax.set_ylim(-2, 102)
    # beside the axes: inside, up to 12 curves hid the points they label
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(stem.with_suffix(".svg"), metadata={"Date": None})
    fig.savefig(stem.with_suffix(".png"), dpi=110, metadata={"Software": None})
    plt.close(fig)
    return True


def _turnaround_text(live: Row | None, sim: Row | None) -> str:
    """The measured slot turnaround of one policy and the simulated row's, for "Why they differ"."""
    measured = (live.extra.get("slot_turnaround") or {}) if live is not None else {}
    if not measured:
        return ""
    done, gone = measured.get("completed") or {}, measured.get("removed") or {}
    text = (f"; slot turnaround {measured['turnaround_s']:.2f} s" if measured.get("turnaround_s") is not None
            else "; no slot turnaround measured" + ("" if gone.get("gaps") else " (no replica removed)"))
    gaps = [f"{what} {part['mean_s']:.2f} s over {part['gaps']}" for what, part in (("after a completion", done),
                                                                                     ("after a removal", gone))
            if part.get("mean_s") is not None]
    if gaps:
        text += " (next start " + ", ".join(gaps) + ")"
    if sim is not None:
        text += f", simulated {sim.extra.get('slot_turnaround_s', 0.0):.2f} s"
    return text
