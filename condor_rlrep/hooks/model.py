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
of its machine (``KeyboardIdle`` at the match; unknown where no log has
it); a run evicted by its owner or a vacate is an event; success,
failure, removal (a surplus replica) and a run still open are censored.
The store keeps the attempt's key, so a POST run twice counts once.

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
leaves the node's verdict alone.
"""

from __future__ import annotations

import re
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


_LOG_COMMAND = re.compile(r"^[ \t]*(log|initialdir|initial_dir)[ \t]*=", re.IGNORECASE | re.MULTILINE)
_PER_JOB_MACRO = re.compile(r"\$\((?:cluster|clusterid|process|procid|node|item|row|step)\)", re.IGNORECASE)


def job_log(text: str, context: str, node: str, macros: Mapping[str, str], cwd: str) -> tuple[list[str], str | None, str]:
    """Where the node's 028 events will be: (lines to add to the description,
    the log's absolute path or None when it cannot be known before submit,
    a note for the hook log)."""
    import os

    from condor_rlrep.hooks.layout import node_file_stem

    commands = {m.group(1).lower() for m in _LOG_COMMAND.finditer(text)}
    if "log" not in commands:
        path = os.path.join(context, "logs", node_file_stem(node) + ".log")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return [f"log = {path}"], path, "job log added"
    import htcondor2  # only for a description with its own log

    from condor_rlrep.condor.submit import macro_prefix

    submit = htcondor2.Submit(macro_prefix(macros) + text)
    raw = submit.get("log") or ""
    if _PER_JOB_MACRO.search(raw):
        return [], None, "the job's log names its cluster or proc: KeyboardIdle unknown"
    value = submit.expand("log").strip()
    if not value or "$" in value:
        return [], None, "the job's log does not expand before submit: KeyboardIdle unknown"
    if not os.path.isabs(value):
        base = (submit.expand("initialdir") or submit.expand("initial_dir") or "").strip() if commands - {"log"} else ""
        if "$" in base:
            return [], None, "the job's initialdir does not expand before submit: KeyboardIdle unknown"
        value = os.path.join(cwd, base, value)
    return [], os.path.normpath(value), "the user's job log"


def keyboard_idle_from(path: str, offset: int, cluster: int) -> dict[tuple[int, float], float]:
    """Each run's ``KeyboardIdle`` of ``cluster`` from the job log at ``path``
    (its 028 events after PRE's ``offset``)."""
    from condor_rlrep.condor.eventlog import read_events, rebuild_cluster

    return rebuild_cluster(read_events(path, offset=offset), cluster).keyboard_idle


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


def record(store: Any, key: str, history: Any, keyboard_idle: Mapping[tuple[int, float], float] | None = None) -> str:
    """POST's update of the model from the rebuilt cluster (``keyboard_idle``:
    from the job's log, else the node log's); what was done."""
    from condor_rlrep.agent.state import StateSpace
    from condor_rlrep.survival import SurvivalModel

    space = StateSpace.from_config(store.config)
    idle = {**history.keyboard_idle, **(keyboard_idle or {})}
    cells = exposure_cells(history.invocations, idle, space.hour_of_week, SurvivalModel().bucket)
    if not cells:
        return "model: no run to learn from"
    fresh = store.record_exposure(key, cells)
    seconds = sum(c[2] for c in cells)
    events = int(sum(c[3] for c in cells))
    known = sum(1 for c in cells if c[1] >= 0)
    what = f"model: {seconds:.0f}s exposure, {events} eviction(s) in {len(cells)} cell(s) ({known} with KeyboardIdle)"
    return what + ("" if fresh else " already counted")
