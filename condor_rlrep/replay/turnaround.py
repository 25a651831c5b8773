"""How long a live slot takes to run the next job: the simulator's slot turnaround, measured.

The simulator rematches a freed machine at its next negotiation tick. Live,
a completed job's slot is handed by the schedd straight to the next idle job
of the same user (claim reuse: no negotiation), while a *removed* replica's
slot first has the job shut down (the reaper's removal, the startd's
deactivate, the starter's exit: ≈ 2 s in the StartLog of a 25.14 replay
pool) before its claim runs the next job. :func:`measure_turnaround` reads
that from the runs' own
node logs (``<dag>.nodes.log``, the events ``status``/``report`` read) and
the plan's owner sessions:

* per slot, every run (an EXECUTE with its ``SlotName`` to the run's end:
  TERMINATED, or EVICTED/ABORTED of a job that was removed — not an owner's
  eviction) followed by another run on the same slot, with no owner on the
  slot from the end to the next start, and at least as many jobs idle at
  that end (submitted or requeued strictly before it) as slots free then —
  i.e. a job was waiting for exactly this kind of slot;
* the *gap* is the next start minus the end; for a removed replica the end
  is its node's winning replica's end (TERMINATED of another proc of its
  cluster), as the simulator removes the losers at the winner's end (live,
  the reaper removes them a moment later: part of the turnaround);
* the turnaround (``SimConfig.slot_turnaround``) is the mean gap after a
  removal minus the mean gap after a completion: what a removed replica's
  slot costs beyond the next job's own matching, which the simulator has
  for both (None when either side has no gap — e.g. ``single`` removes
  nothing).

Event stamps are whole seconds; both ends of a gap are floored alike.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = ["measure_turnaround", "turnaround_from_events"]

_SLOT = re.compile(r"slot(\d+)")
SUBMIT, EXECUTE, EVICTED, TERMINATED, ABORTED = 0, 1, 4, 5, 9


def _events(dag: Path) -> list[tuple[float, int, tuple[int, int], int | None]]:
    """(time, event number, (cluster, proc), slot index or None) of a DAG's node log."""
    from condor_rlrep.condor.eventlog import EventLogError, event_time, read_events

    path = Path(str(dag) + ".nodes.log")
    try:
        events = read_events(path)
    except EventLogError:
        return []
    out = []
    for event in events:
        number = int(event.type)
        if number not in (SUBMIT, EXECUTE, EVICTED, TERMINATED, ABORTED):
            continue
        slot = None
        if number == EXECUTE:
            name = event.get("SlotName")
            match = _SLOT.match(str(name)) if name else None
            # None: the reaper's local-universe job, running without a slot (not waiting for one)
            slot = int(match.group(1)) - 1 if match else None
        out.append((event_time(event), number, (int(event.cluster), int(event.proc)), slot))
    return out


def turnaround_from_events(events: list[tuple[float, int, tuple[int, int], int | None]],
                           owner_present: Any, slots: int) -> dict[str, Any]:
    """The gaps and the turnaround (module docstring) of ``events`` (time,
    event number, (cluster, proc), 0-based slot) of one replay on ``slots``
    slots; ``owner_present(slot, t0, t1)`` says whether the slot's owner is
    there at any time in [t0, t1]."""
    events = sorted(events, key=lambda e: e[0])
    idle_since: dict[tuple[int, int], float] = {}
    running: dict[tuple[int, int], tuple[int, float]] = {}
    waits: list[tuple[float, float]] = []  # (idle from, idle until) per job wait
    runs: list[list[Any]] = []  # [slot, start, end, how, job]
    removed: set[tuple[int, int]] = set()
    won: dict[int, float] = {}  # cluster → its first TERMINATED
    for t, number, job, slot in events:
        if number == SUBMIT:
            idle_since[job] = t
        elif number == EXECUTE:
            since = idle_since.pop(job, None)
            if slot is None:
                continue
            if since is not None:
                waits.append((since, t))
            running[job] = (slot, t)
        else:
            run = running.pop(job, None)
            if run is not None:
                runs.append([run[0], run[1], t, number, job])
            if number == TERMINATED:
                won.setdefault(job[0], t)
            elif number == EVICTED:
                idle_since[job] = t
            else:
                removed.add(job)
                since = idle_since.pop(job, None)
                if since is not None:
                    waits.append((since, t))
    # a job still idle when the logs end waited too
    waits.extend((since, float("inf")) for since in idle_since.values())
    by_slot: dict[int, list[list[Any]]] = {}
    for run in runs:
        by_slot.setdefault(run[0], []).append(run)
    gaps: dict[str, list[float]] = {"completed": [], "removed": []}
    for slot, slot_runs in by_slot.items():
        slot_runs.sort(key=lambda r: r[1])
        for run, after in zip(slot_runs, slot_runs[1:]):
            end, start = run[2], after[1]
            if run[3] == TERMINATED:
                how, since = "completed", end
            elif run[4] in removed:
                how, since = "removed", won.get(run[4][0], end)
                since = min(since, end)
            else:
                continue  # an owner's eviction: the slot was the owner's
            if owner_present(slot, end, start):
                continue
            waiting = sum(1 for a, b in waits if a < end < b)
            free = sum(1 for s in range(slots)
                       if not owner_present(s, end, end) and not any(r[1] <= end < r[2] for r in by_slot.get(s, ())))
            if waiting >= max(free, 1):
                gaps[how].append(start - since)
    summary: dict[str, Any] = {}
    for how, values in gaps.items():
        summary[how] = {"gaps": len(values), "mean_s": sum(values) / len(values) if values else None}
    done, gone = summary["completed"]["mean_s"], summary["removed"]["mean_s"]
    summary["turnaround_s"] = None if done is None or gone is None else max(0.0, gone - done)
    return summary


def measure_turnaround(dags: list[Path], plan: Any, origin: float) -> dict[str, Any]:
    """:func:`turnaround_from_events` over the node logs of one policy's
    ``dags``, owners from ``plan`` (replay seconds after ``origin``)."""
    events = [e for dag in dags for e in _events(dag)]

    def owner_present(slot: int, t0: float, t1: float) -> bool:
        a0, a1 = t0 - origin, t1 - origin
        return any(a <= a1 and b > a0 for a, b in plan.sessions[slot])

    return turnaround_from_events(events, owner_present, plan.slots)
