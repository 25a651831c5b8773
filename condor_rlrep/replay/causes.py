"""Why a policy's live and simulated rows differ: one sentence per gap.

For each policy and P ∈ {0.1, 0.5} the gap live − simulated (without DAGMan
latency, the paper's simulator) is split into what the modelled pool
explains (the simulated row with the measured latency, start excess, slot
order and turnaround minus the one without) and the rest (live − simulated with it). A part counts as *beyond noise* when it is
more than one workflow's worth of the share (100/N points) and more than 5
points — smaller gaps are what one workflow finishing a second earlier or
later makes of a small replay. What is left beyond noise is set beside the
measured differences that can cause it: evictions (the startd's timing vs
the simulator's), replicas (the policy decided otherwise), unfinished
workflows, and otherwise the time per level that neither the latency nor
the simulated negotiation accounts for (queue order, claim reuse,
negotiation cycles longer than their interval). Replica energy differing by
more than 10 % is explained the same way.
"""

from __future__ import annotations

import math
from typing import Any

from condor_rlrep.replay.plan import FIGURE1_LEVEL_COUNT
from condor_rlrep.replay.results import NO_LATENCY, Row

__all__ = ["noise_points", "gap_causes", "CAUSE_P"]

CAUSE_P = ("0.1", "0.5")
GOAL_POINTS = 5.0
ENERGY_GOAL = 0.10


def noise_points(workflows: int) -> float:
    """Points below which a within-P gap is noise: one workflow's worth, at least the 5-point goal."""
    return max(GOAL_POINTS, 100.0 / workflows) if workflows else math.inf


def _per_level_seconds(live: Row, sim: Row, critical_path_s: float, levels: int) -> float | None:
    """Mean (p_live − p_sim)·CR / levels over workflows finished on both sides."""
    pairs = [(a, b) for a, b in zip(live.p, sim.p) if a is not None and b is not None]
    if not pairs or not critical_path_s:
        return None
    return sum(a - b for a, b in pairs) / len(pairs) * critical_path_s / levels


def gap_causes(policy: str, rows: list[Row], critical_path_s: float, levels: int = FIGURE1_LEVEL_COUNT) -> list[str]:
    """Sentences naming the cause of each gap of ``policy`` beyond noise (none: the rows agree)."""
    live = next((r for r in rows if r.side == "live"), None)
    sim = next((r for r in rows if r.side == "simulated"), None)
    bare = next((r for r in rows if r.side == NO_LATENCY), None)
    if live is None or sim is None:
        return []
    noise = noise_points(live.workflows)
    latency = float(sim.extra.get("dagman_latency_s", 0.0) or 0.0)
    source = sim.extra.get("dagman_latency_from", "given")
    out: list[str] = []
    for p in CAUSE_P:
        total = 100.0 * (live.within[p] - (bare or sim).within[p])
        rest = 100.0 * (live.within[p] - sim.within[p])
        explained = total - rest
        if abs(total) <= noise and abs(rest) <= noise:
            continue
        text = (f"within {p}: live {100 * live.within[p]:.1f} %, simulated {100 * sim.within[p]:.1f} %"
                + (f" ({100 * bare.within[p]:.1f} % without DAGMan latency)" if bare is not None else "") + ". ")
        if bare is not None and latency > 0:
            text += (f"The modelled pool — DAGMan's per-level latency ({latency:.2f} s, {source}; × {levels} levels = "
                     f"+{levels * latency / critical_path_s:.3f} on p(W)), the negotiator's slot order and the "
                     f"slot turnaround — accounts for {explained:+.1f} points; ")
        if abs(rest) <= noise:
            text += f"the remaining {rest:+.1f} points are within noise (one workflow = {100.0 / live.workflows:g} points)."
        else:
            text += f"the remaining {rest:+.1f} points are beyond noise: " + _residual_cause(live, sim, critical_path_s, levels) + "."
        out.append(text)
    if sim.replica_kwh and abs(live.replica_kwh / sim.replica_kwh - 1.0) > ENERGY_GOAL:
        out.append(f"replica energy: live {live.replica_kwh:.4f} kWh vs simulated {sim.replica_kwh:.4f} kWh "
                   f"({100 * (live.replica_kwh / sim.replica_kwh - 1.0):+.1f} %): "
                   + _residual_cause(live, sim, critical_path_s, levels) + ".")
    return out


def _residual_cause(live: Row, sim: Row, critical_path_s: float, levels: int) -> str:
    reasons: list[str] = []
    unfinished = live.workflows - live.completed
    if unfinished > sim.workflows - sim.completed:
        reasons.append(f"{unfinished} live workflow(s) did not finish in the replay's time")
    if abs(live.evictions - sim.evictions) > max(2, 0.2 * max(live.evictions, sim.evictions)):
        reasons.append(f"owners evicted {live.evictions} runs live and {sim.evictions} simulated "
                       "(the startd acts on its own polling and negotiation timing)")
    if live.tasks and sim.tasks and abs(live.replicas_per_task - sim.replicas_per_task) > 0.05:
        reasons.append(f"the policy ran {live.replicas_per_task:.2f} replicas/task live and "
                       f"{sim.replicas_per_task:.2f} simulated (it decided on what each side had learnt)")
    live_start = (live.extra.get("dagman_latency") or {}).get("start_mean_s")
    sim_start = sim.extra.get("start_wait_mean_s")
    replayed = bool(sim.extra.get("latency_workflows"))  # the live starts are in the simulated latency
    if not replayed and live_start is not None and sim_start is not None and live_start - sim_start > 1.0:
        reasons.append(f"live jobs waited {live_start:.1f} s on average from submission to their first start, "
                       f"simulated ones {sim_start:.1f} s (live matching — the schedd's request, a negotiation "
                       "cycle, the claim, the shadow — takes longer than the simulator's next tick; of a slot's "
                       "turnaround only a removed replica's is modelled)")
    per_level = _per_level_seconds(live, sim, critical_path_s, levels)
    if per_level is not None:
        reasons.append(f"live workflows took {per_level:+.2f} s per level more than simulated beyond the "
                       "modelled latency (queue order, claim reuse, negotiation cycles longer than their "
                       "interval, slots busy with other workflows' replicas)")
    return "; ".join(reasons) if reasons else "no measured difference explains it"


def causes_json(rows: dict[str, list[Row]], critical_path_s: float, levels: int = FIGURE1_LEVEL_COUNT) -> dict[str, Any]:
    return {policy: gap_causes(policy, pair, critical_path_s, levels) for policy, pair in rows.items()}
