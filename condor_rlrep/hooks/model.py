"""The hooks' side of the ``model:R[,target=T,hi=H]`` policy (issue 14).

PRE asks the store for its survival model (:mod:`condor_rlrep.survival`,
the simulator's own class and decision function) and runs the fewest
replicas ``k ≤ R`` whose chance that one survives a run of the node's
estimate, from this hour of the week, reaches T; one replica when φ′ ≥ H
or φ′ < 0. PRE cannot know which machines the replicas will get (it reads
files, not the collector), so every replica is judged at the hour's rate,
which pools all idle buckets.

POST adds the node attempt's invocations to the model: each run counts its
seconds as exposure at the hour of the week it started and the idle bucket
of its machine (``KeyboardIdle`` at the match, which the replica
description asks HTCondor to log: :data:`SUBMIT_LINES`; unknown when the
log lacks it); a run evicted by its owner or a vacate is an event; success,
failure, removal (a surplus replica) and a run still open are censored.
The store keeps the attempt's key, so a POST run twice counts once.

Everything here fails open like the rest of the hooks: a store or model
that cannot be read gives one replica, and a model that cannot be updated
leaves the node's verdict alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from condor_rlrep.condor.eventlog import KEYBOARD_IDLE_ATTR

__all__ = ["SUBMIT_LINES", "decide", "exposure_cells", "record_key", "load_model"]

SUBMIT_LINES = (
    # appended to the user's lists (a self-reference expands their value)
    "job_machine_attrs = $(job_machine_attrs) KeyboardIdle",
    f"job_ad_information_attrs = $(job_ad_information_attrs) {KEYBOARD_IDLE_ATTR}",
)
"""What a model node's description adds so that the node log tells POST
each run's ``KeyboardIdle`` (see :data:`~condor_rlrep.condor.eventlog.KEYBOARD_IDLE_ATTR`)."""


def load_model(store: Any) -> Any:
    """The store's survival model (a bad row raises: the hook fails open)."""
    from condor_rlrep.survival import SurvivalModel

    return SurvivalModel.from_cells(store.survival_cells())


def decide(store: Any, spec: Any, *, phi: float, estimate: float, decided_at: float, cap: int) -> tuple[int, dict[str, Any]]:
    """PRE's count and what it was chosen from (kept in the node's state and journal)."""
    from condor_rlrep.agent.state import StateSpace
    from condor_rlrep.survival import choose_replicas

    config = store.config
    hour = StateSpace.from_config(config).hour_of_week(decided_at)
    model = load_model(store)
    limit = max(1, min(int(spec.max_replicas), int(cap)))
    choice = choose_replicas(model, hour, phi, float(estimate), [None] * limit, target=spec.target, hi=spec.hi)
    exposure, evictions = model.hour_totals(hour)
    detail = {
        "policy": spec.spec, "hour_of_week": hour, "reason": choice.reason,
        "hazard_per_hour": model.hour_rate(hour) * 3600.0, "hour_exposure_s": exposure, "hour_evictions": evictions,
        "survival": choice.survivals[0] if choice.survivals else None,
        "p_success": None if not choice.survivals else choice.success,
    }
    return choice.replicas, detail


def record_key(dag: str, run_id: Any, node: str, retry: Any, cluster: int) -> str:
    """One node attempt's key in the store (a rerun POST of it adds nothing)."""
    return f"{dag}|{run_id}|{node}|{retry}|{cluster}"


def exposure_cells(invocations: Iterable[Any], keyboard_idle: Mapping[tuple[int, float], float],
                   hour_of_week: Any, bucket_of: Any) -> list[list[float]]:
    """The cells ``[hour, bucket (-1 unknown), seconds, evictions]`` of a
    node attempt's invocations, summed per cell."""
    from condor_rlrep.survival import UNKNOWN_BUCKET

    cells: dict[tuple[int, int], list[float]] = {}
    for inv in invocations:
        if inv.start is None or inv.end is None:
            continue
        idle = keyboard_idle.get((inv.replica, inv.start))
        bucket = UNKNOWN_BUCKET if idle is None else bucket_of(idle)
        cell = cells.setdefault((hour_of_week(inv.start), bucket), [0.0, 0.0])
        cell[0] += max(0.0, float(inv.end) - float(inv.start))
        if inv.ended_by == "evicted":
            cell[1] += 1.0
    return [[hour, bucket, seconds, events] for (hour, bucket), (seconds, events) in sorted(cells.items())]


def record(store: Any, key: str, history: Any) -> str:
    """POST's update of the model from the rebuilt cluster; what was done."""
    from condor_rlrep.agent.state import StateSpace
    from condor_rlrep.survival import SurvivalModel

    space = StateSpace.from_config(store.config)
    cells = exposure_cells(history.invocations, history.keyboard_idle, space.hour_of_week, SurvivalModel().bucket)
    if not cells:
        return "model: no run to learn from"
    fresh = store.record_exposure(key, cells)
    seconds = sum(c[2] for c in cells)
    events = int(sum(c[3] for c in cells))
    known = sum(1 for c in cells if c[1] >= 0)
    what = f"model: {seconds:.0f}s exposure, {events} eviction(s) in {len(cells)} cell(s) ({known} with KeyboardIdle)"
    return what + ("" if fresh else " already counted")
