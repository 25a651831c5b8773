"""What a replay replays: a window of a trace on S slots, compressed by C.

:func:`make_plan` cuts ``[start, start + window)`` out of a simulator trace,
keeps S of its machines (drawn with the seed; they become the pool's static
slots 1…S in that order), picks N of the trace's own job submissions in the
window as the workflows' arrival times, and divides every time by C. The
result, :class:`ReplayPlan`, is itself a small trace
(:meth:`ReplayPlan.trace`): the simulator runs on exactly it (with every
job replaced by a workflow), and the live pool's slot expressions are
written from exactly it (:mod:`condor_rlrep.replay.poolconfig`) — one source
of owners and arrivals for both rows of the report.

Times in a plan are *replay seconds* from the replay's origin (the moment
the pool's clock is set to 0). The nightly reboot (``reboot_hour`` local
time of the original trace) becomes a short owner session on every slot
(``reboot_seconds`` long), so the pool's startd kills every job as the
reboot does; the simulator then runs without its own reboot, seeing the
same sessions.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np

from condor_rlrep.errors import InputError

__all__ = ["ReplayPlan", "make_plan", "FIGURE1_LEVEL_COUNT", "compressed_policy", "REPLAY_WORKFLOWS"]

REPLAY_WORKFLOWS = ("figure1", "montage")
"""What a replay submits: the Figure-1 workflow (32-min tasks), or the
25-task Montage of the shared Montage_25 DAX (the simulator's built-in
``montage``, runtimes × its scale); both with every time divided by C."""

FIGURE1_LEVEL_COUNT = 4
"""Task levels on the Figure-1 critical path (CR(W) = 4 task lengths)."""


def compressed_policy(policy: str, compression: float) -> str:
    """The policy a replay runs for ``policy`` under compression C, live and
    simulated alike: ``model:R`` (and ``model-react:R``) without a ``prior=``
    gets the default prior rate × C (and its exposure ÷ C:
    :func:`~condor_rlrep.survival.model.prior_settings`), so a compressed
    task of ``e / C`` seconds sees the eviction hazard the uncompressed task
    of ``e`` seconds would — compressed time means rates × C. Every other
    policy is unchanged (the bandit learns its rewards, which have no clock)."""
    from condor_rlrep.policyspec import parse_spec
    from condor_rlrep.survival.model import DEFAULT_PRIOR_PER_HOUR

    spec = parse_spec(policy, live=True)
    if spec.kind not in ("model", "model-react") or "prior" in dict(spec.options) or compression == 1.0:
        return policy
    return f"{policy},prior={DEFAULT_PRIOR_PER_HOUR * compression:g}"


@dataclass
class ReplayPlan:
    """A compressed window of a trace on S slots, and the workflows' arrivals."""

    source: str
    """The original trace's source line."""
    trace_start: str
    """ISO time of the original trace's start."""
    window_start: float
    """Seconds from the original trace's start where the window begins."""
    window_seconds: float
    compression: float
    machines: list[str]
    """The original machines slot 1…S stand for."""
    active_watts: list[float]
    idle_watts: list[float]
    sessions: list[list[tuple[float, float]]]
    """Per slot, owner sessions (start, end) in replay seconds, sorted, disjoint."""
    arrivals: list[float]
    """Workflow arrival times in replay seconds, ascending."""
    task_seconds: float
    """A Figure-1 task's length in replay seconds (32 min / C)."""
    drain_seconds: float
    """Replay seconds after the window with no owner, for the last workflows to finish."""
    reboots: list[float] = field(default_factory=list)
    seed: int = 0
    workflow: str = "figure1"
    """One of :data:`REPLAY_WORKFLOWS`."""

    @property
    def slots(self) -> int:
        return len(self.machines)

    @property
    def length(self) -> float:
        """Replay seconds from the origin to the end of the drain."""
        return self.window_seconds / self.compression + self.drain_seconds

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.workflow == "figure1":
            del data["workflow"]  # a Figure-1 plan reads as it did before there was a choice (resume)
        return data

    def dag_workflow(self) -> Any:
        """The workflow every arrival submits, with its compressed run times."""
        from condor_rlrep.sim.workflows import MONTAGE_RUNTIME_SCALE, figure1_workflow, montage_workflow

        if self.workflow == "montage":
            return montage_workflow(runtime_scale=MONTAGE_RUNTIME_SCALE / self.compression)
        return figure1_workflow(self.task_seconds)

    def workflow_spec(self) -> str:
        """The simulator's ``--workflow`` for the same workflow and run times."""
        from condor_rlrep.sim.workflows import MONTAGE_RUNTIME_SCALE

        if self.workflow == "montage":
            return f"montage@{MONTAGE_RUNTIME_SCALE / self.compression!r}"
        return f"figure1@{self.task_seconds / 1920.0!r}"

    def shape(self) -> tuple[float, int, list[tuple[str, str]]]:
        """(critical path seconds, tasks on it, edges) of the submitted workflow."""
        wf = self.dag_workflow()
        return workflow_shape(wf)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplayPlan:
        data = dict(data)
        data["sessions"] = [[(float(a), float(b)) for a, b in slot] for slot in data["sessions"]]
        return cls(**data)

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True)

    def owner_present(self, slot: int, at: float) -> bool:
        """Whether slot ``slot`` (0-based) has its owner at replay second ``at``."""
        return any(a <= at < b for a, b in self.sessions[slot])

    def trace(self) -> Any:
        """The plan as a simulator trace: S machines, the sessions as logins,
        one job per arrival (each to be replaced by a workflow)."""
        from datetime import datetime

        from condor_rlrep.sim.trace import Trace

        machine, starts, ends = [], [], []
        for index, sessions in enumerate(self.sessions):
            for a, b in sessions:
                machine.append(index)
                starts.append(a)
                ends.append(b)
        order = np.argsort(np.asarray(starts, dtype=np.float64), kind="stable")
        start = datetime.fromisoformat(self.trace_start) + timedelta(seconds=self.window_start)
        return Trace(
            start=start,
            length=float(math.ceil(self.length)),
            source=f"replay of {self.source}",
            machine_names=[f"slot{i + 1}" for i in range(self.slots)],
            machine_rooms=["replay"] * self.slots,
            # one power for every slot, as the live run's power table has (one host)
            active_watts=np.full(self.slots, float(np.mean(self.active_watts))),
            idle_watts=np.full(self.slots, float(np.mean(self.idle_watts))),
            login_machine=np.asarray(machine, dtype=np.int32)[order],
            login_start=np.asarray(starts, dtype=np.float64)[order],
            login_end=np.asarray(ends, dtype=np.float64)[order],
            job_names=[f"wf{i + 1:04d}" for i in range(len(self.arrivals))],
            job_submit=np.asarray(self.arrivals, dtype=np.float64),
            job_duration=np.full(len(self.arrivals), self.task_seconds, dtype=np.float64),
        )


def workflow_shape(wf: Any) -> tuple[float, int, list[tuple[str, str]]]:
    """(critical path seconds, tasks on the longest chain, sorted edges) of a workflow."""
    edges = sorted(wf.edges)
    parents: dict[str, list[str]] = {n: [] for n in wf.nodes}
    for a, b in edges:
        parents[b].append(a)
    seconds: dict[str, float] = {}
    depth: dict[str, int] = {}

    def visit(node: str) -> None:
        if node in seconds:
            return
        for parent in parents[node]:
            visit(parent)
        seconds[node] = float(wf.nodes[node].runtime or 0.0) + max((seconds[q] for q in parents[node]), default=0.0)
        depth[node] = 1 + max((depth[q] for q in parents[node]), default=0)

    for node in wf.nodes:
        visit(node)
    return max(seconds.values()), max(depth.values()), edges


def _merge(sessions: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(sessions):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _reboot_times(trace: Any, start: float, end: float, hour: float) -> list[float]:
    """Trace seconds in [start, end) at which the local clock reads ``hour``."""
    grid = np.arange(math.floor(start / 3600.0) * 3600.0, end + 3600.0, 3600.0)
    if not len(grid):
        return []
    local, _ = trace.local_clock(grid)
    out = []
    for t, h in zip(grid, local):
        delta = ((hour - float(h)) % 24.0) * 3600.0
        if delta < 3600.0 and start <= t + delta < end:
            out.append(float(t + delta))
    return sorted(set(out))


def make_plan(trace: Any, *, slots: int, window_start: float, window_seconds: float, compression: float,
              workflows: int, seed: int = 0, task_seconds: float = 1920.0, drain_seconds: float | None = None,
              reboot_hour: float | None = 3.0, reboot_seconds: float = 1.0, pick: str = "random",
              workflow: str = "figure1") -> ReplayPlan:
    """Cut the window, keep ``slots`` machines and ``workflows`` arrivals, compress by ``compression``.

    ``pick``: ``random`` draws the machines with the seed; ``busiest`` keeps
    those with the most owner sessions in the window (ties: the lower index).

    Raises :class:`InputError` naming the value when the window or the
    counts do not fit the trace.
    """
    if slots < 1:
        raise InputError(f"slots must be ≥ 1, got {slots}")
    if slots > trace.machine_count:
        raise InputError(f"slots {slots} > the trace's {trace.machine_count} machines")
    if not compression >= 1.0:
        raise InputError(f"compression must be ≥ 1, got {compression!r}")
    if not (window_seconds > 0 and window_start >= 0 and window_start + window_seconds <= trace.length):
        raise InputError(f"window [{window_start:g}, {window_start + window_seconds:g}) s is not inside the "
                         f"trace's {trace.length:g} s")
    if workflows < 1:
        raise InputError(f"workflows must be ≥ 1, got {workflows}")
    if workflow not in REPLAY_WORKFLOWS:
        raise InputError(f"workflow must be one of {', '.join(REPLAY_WORKFLOWS)}, got {workflow!r}")
    if pick not in ("busiest", "random"):
        raise InputError(f"pick must be busiest or random, got {pick!r}")
    rng = np.random.default_rng(seed)
    end = window_start + window_seconds
    in_window = (trace.login_end > window_start) & (trace.login_start < end)
    if pick == "random":
        chosen = np.sort(rng.choice(trace.machine_count, size=slots, replace=False))
    else:
        counts = np.bincount(trace.login_machine[in_window], minlength=trace.machine_count)
        chosen = np.sort(np.argsort(-counts, kind="stable")[:slots])
    task = task_seconds / compression
    # arrivals: the trace's own submissions, late enough for a workflow to fit the window
    lo = int(np.searchsorted(trace.job_submit, window_start, side="left"))
    hi = int(np.searchsorted(trace.job_submit, end, side="left"))
    if hi - lo < workflows:
        raise InputError(f"the window holds {hi - lo} job submissions, fewer than the {workflows} workflows asked")
    picked = np.sort(rng.choice(np.arange(lo, hi), size=workflows, replace=False))
    arrivals = [float((trace.job_submit[i] - window_start) / compression) for i in picked]
    sessions: list[list[tuple[float, float]]] = []
    reboots = [] if reboot_hour is None else [(t - window_start) / compression
                                               for t in _reboot_times(trace, window_start, end, reboot_hour)]
    for machine in chosen:
        rows = np.flatnonzero(in_window & (trace.login_machine == machine))
        spans = [((max(float(trace.login_start[r]), window_start) - window_start) / compression,
                  (min(float(trace.login_end[r]), end) - window_start) / compression) for r in rows]
        spans += [(t, t + reboot_seconds) for t in reboots]
        sessions.append(_merge(spans))
    plan = ReplayPlan(
        source=trace.source, trace_start=trace.start.isoformat(), window_start=float(window_start),
        window_seconds=float(window_seconds), compression=float(compression),
        machines=[trace.machine_names[i] for i in chosen],
        active_watts=[float(trace.active_watts[i]) for i in chosen],
        idle_watts=[float(trace.idle_watts[i]) for i in chosen],
        sessions=sessions, arrivals=arrivals, task_seconds=task, drain_seconds=0.0,
        reboots=reboots, seed=seed, workflow=workflow,
    )
    if drain_seconds is None:
        # room for the last arrival's critical path several times over, evictions included
        drain_seconds = (3 * FIGURE1_LEVEL_COUNT * task if workflow == "figure1" else 3 * plan.shape()[0]) + 60.0
    plan.drain_seconds = float(drain_seconds)
    return plan
