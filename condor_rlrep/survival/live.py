"""The hooks' side of the ``model:R[,target=T,hi=H,prior=E]`` policy (issue 14).

PRE asks the store for its survival model (:mod:`condor_rlrep.survival.model`,
the simulator's own class and decision function) and runs the fewest
replicas ``k ≤ R`` whose chance that one survives a run of the node's
estimate, from this hour of the week, reaches T; one replica when φ′ ≥ H
or φ′ < 0. PRE cannot know which machines the replicas will get (it reads
files, not the collector), so every replica is judged at the hour's rate,
which pools all idle buckets.

POST adds the node attempt's invocations to the model: each run counts its
seconds as exposure at the hour of the week it started and the idle bucket
of its machine (``KeyboardIdle`` at the match; unknown where no log has
it); a run evicted by its owner or a vacate is an event; success,
failure, removal (a surplus replica) and a run still open are censored.
The store keeps the attempt's key, so a POST run twice counts once. When
the store cannot take the update, POST spools the attempt's runs
(:func:`runs_of`) and a later POST of the run records them into the same
store (:func:`condor_rlrep.hooks.spool.flush_spool`, :func:`record_runs`).

Where ``KeyboardIdle`` comes from: the replica description asks HTCondor
to copy the machine's ``KeyboardIdle`` into the job ad at each match and
to log it (:data:`SUBMIT_LINES`), which HTCondor 25.14 does in a
job-ad-information event (028) after each execute event — but only in the
job's own ``log``, never in DAGMan's node log (measured on the pool). So
PRE notes the job's log (the user's ``log`` when the description has one
and it expands without the cluster's id; else a log of ours in the run
directory, ``<ctx>/logs/<node>.log``, added to the description) and its
size, and POST reads the 028 events of the node's cluster from there.

Everything here fails open like the rest of the hooks: a store or model
that cannot be read gives one replica, and a model that cannot be updated
leaves the node's verdict alone (the update waits in the spool).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["decide", "exposure_cells", "runs_of", "cells_of", "check_runs", "record_runs", "record",
           "record_key", "load_model"]

def load_model(store: Any, spec: Any = None) -> Any:
    """The store's survival model, from ``spec``'s prior (a :class:`ModelSpec`;
    None: the default prior). A bad row raises: the hook fails open."""
    from condor_rlrep.survival.model import SurvivalModel

    if spec is not None:
        return spec.model(store.survival_cells())
    return SurvivalModel.from_cells(store.survival_cells())


def decide(store: Any, spec: Any, *, phi: float, estimate: float, decided_at: float, cap: int) -> tuple[int, dict[str, Any]]:
    """PRE's count and what it was chosen from (kept in the node's state and journal)."""
    from condor_rlrep.agent.state import StateSpace
    from condor_rlrep.survival.model import choose_replicas

    config = store.config
    hour = StateSpace.from_config(config).hour_of_week(decided_at)
    model = load_model(store, spec)
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


def runs_of(invocations: Iterable[Any], keyboard_idle: Mapping[tuple[int, float], float]) -> list[dict[str, Any]]:
    """A node attempt's finished runs, each with its machine's ``KeyboardIdle``
    (None: not logged): everything its cells are made of but the store's
    hour of the week, as JSON (what a spooled model update holds)."""
    runs = []
    for inv in invocations:
        if inv.start is None or inv.end is None:
            continue
        idle = keyboard_idle.get((inv.replica, inv.start))
        runs.append({"replica": int(inv.replica), "start": float(inv.start), "end": float(inv.end),
                     "ended_by": str(inv.ended_by), "keyboard_idle": None if idle is None else float(idle)})
    return runs


def cells_of(runs: Iterable[Mapping[str, Any]], hour_of_week: Any, bucket_of: Any) -> list[list[float]]:
    """The cells ``[hour, bucket (-1 unknown), seconds, evictions]`` of
    :func:`runs_of`'s runs, summed per cell."""
    from condor_rlrep.survival.model import UNKNOWN_BUCKET

    cells: dict[tuple[int, int], list[float]] = {}
    for run in runs:
        idle = run["keyboard_idle"]
        bucket = UNKNOWN_BUCKET if idle is None else bucket_of(idle)
        cell = cells.setdefault((hour_of_week(run["start"]), bucket), [0.0, 0.0])
        cell[0] += max(0.0, run["end"] - run["start"])
        if run["ended_by"] == "evicted":
            cell[1] += 1.0
    return [[hour, bucket, seconds, events] for (hour, bucket), (seconds, events) in sorted(cells.items())]


def exposure_cells(invocations: Iterable[Any], keyboard_idle: Mapping[tuple[int, float], float],
                   hour_of_week: Any, bucket_of: Any) -> list[list[float]]:
    """The cells ``[hour, bucket (-1 unknown), seconds, evictions]`` of a
    node attempt's invocations, summed per cell."""
    return cells_of(runs_of(invocations, keyboard_idle), hour_of_week, bucket_of)


def check_runs(runs: Any, path: str) -> list[dict[str, Any]]:
    """Runs read back from the file ``path`` (a spooled update), each checked;
    :class:`~condor_rlrep.errors.InputError` naming the file and the entry at fault."""
    import math

    from condor_rlrep.errors import InputError

    if not isinstance(runs, list) or not runs:
        raise InputError("runs: must be a non-empty list", path=path)
    checked = []
    for i, run in enumerate(runs):
        at = f"runs[{i}]"
        if not isinstance(run, dict):
            raise InputError(f"{at}: expected an object", path=path)
        values = {}
        for name in ("start", "end", "keyboard_idle"):
            value = run.get(name)
            if value is None and name == "keyboard_idle":
                values[name] = None
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InputError(f"{at}.{name}: must be a finite number; got {value!r}", path=path)
            values[name] = float(value)
        if values["end"] < values["start"]:
            raise InputError(f"{at}: ends before it starts", path=path)
        if not isinstance(run.get("ended_by"), str):
            raise InputError(f"{at}.ended_by: must be a string; got {run.get('ended_by')!r}", path=path)
        if isinstance(run.get("replica"), bool) or not isinstance(run.get("replica"), int):
            raise InputError(f"{at}.replica: must be an integer; got {run.get('replica')!r}", path=path)
        checked.append({"replica": run["replica"], **values, "ended_by": run["ended_by"]})
    return checked


def record_runs(store: Any, key: str, runs: list[dict[str, Any]], *, now: float | None = None) -> str:
    """Add a node attempt's runs to ``store``'s model under ``key`` (its
    cells binned by the store's own time zone); what was done.

    Raises :class:`~condor_rlrep.errors.StaleExposureError` when the runs
    ended before the store's survival horizon and the key is unknown."""
    from condor_rlrep.agent.state import StateSpace
    from condor_rlrep.survival.model import SurvivalModel

    space = StateSpace.from_config(store.config)
    cells = cells_of(runs, space.hour_of_week, SurvivalModel().bucket)
    if not cells:
        return "model: no run to learn from"
    fresh = store.record_exposure(key, cells, now=now, ran_until=max(run["end"] for run in runs))
    seconds = sum(c[2] for c in cells)
    events = int(sum(c[3] for c in cells))
    known = sum(1 for c in cells if c[1] >= 0)
    what = f"model: {seconds:.0f}s exposure, {events} eviction(s) in {len(cells)} cell(s) ({known} with KeyboardIdle)"
    return what + ("" if fresh else " already counted")


def record(store: Any, key: str, history: Any, keyboard_idle: Mapping[tuple[int, float], float] | None = None) -> str:
    """POST's update of the model from the rebuilt cluster (``keyboard_idle``:
    from the job's log, else the node log's); what was done."""
    return record_runs(store, key, runs_of(history.invocations, {**history.keyboard_idle, **(keyboard_idle or {})}))
