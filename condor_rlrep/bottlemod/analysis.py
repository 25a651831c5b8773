"""Workflow analysis: progress, bottlenecks and resource usage of every task.

Tasks are analysed in dependency order; a task's data input from another task
is that task's output function composed with its progress function
(``O_u(P_u(t))``, BottleMod §3.3).  Links shared by several transfers are
handled by a fixed-point iteration over the users' finish times: each user
gets ``capacity(t) · w_u / Σ w_v`` over the users ``v`` active at ``t``
(from their declared ``start`` until they finish; a user waiting for its
data keeps its share, as in the paper's static link shares).  With all users active the earliest finisher is exact; each further
round makes the next finisher exact, so at most ``users + 1`` rounds are
needed (the loop stops as soon as no finish time changes).  The rounds take
only the link users and the tasks feeding them, and of those only the ones
whose allocation or upstream changed; the other tasks depend on the link's
outcome but never feed it, so they are analysed once, after the rounds.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace

import numpy as np

import condor_rlrep.bottlemod.smallpaths as small
from condor_rlrep.bottlemod.functions import PFunc, minimum
from condor_rlrep.bottlemod.polynomial import REL_TOL
from condor_rlrep.bottlemod.model import DataInput, Resource, Task, Workflow
from condor_rlrep.bottlemod.progress import ProgressResult, compute_progress
from condor_rlrep.errors import ModelError

__all__ = ["Bottleneck", "TaskResult", "Analysis", "Gain", "analyze", "gain_if_relieved", "relieved"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Bottleneck:
    """``kind`` ("data" or "resource") ``name`` limits progress on ``[start, end)``."""

    start: float
    end: float
    kind: str
    name: str

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True)
class TaskResult:
    name: str
    max_progress: float
    start: float | None
    finish: float | None
    progress: PFunc
    bottlenecks: tuple[Bottleneck, ...]
    allocations: dict[str, PFunc] = field(repr=False)
    requirements: dict[str, PFunc] = field(repr=False)
    output: PFunc = field(repr=False)

    @property
    def finished(self) -> bool:
        return self.finish is not None

    def usage(self, resource: str) -> PFunc:
        """Resource used over time: ``Q_l(P(t)) · P'(t)`` (rate, like the allocation)."""
        if resource not in self.requirements:
            raise KeyError(resource)
        q = self.requirements[resource].compose(self.progress)
        return q * self.progress.derivative()


@dataclass(frozen=True)
class Analysis:
    tasks: dict[str, TaskResult]
    rounds: int

    @property
    def makespan(self) -> float | None:
        """Latest finish, or ``None`` when some task never finishes."""
        fins = [r.finish for r in self.tasks.values()]
        return None if any(f is None for f in fins) else max(fins)  # type: ignore[type-var]


@dataclass(frozen=True)
class Gain:
    """Effect of relieving one bottleneck (paper §3.4: "performance gain")."""

    task: str
    item: str
    factor: float
    finish_before: float | None
    finish_after: float | None
    makespan_before: float | None
    makespan_after: float | None

    @property
    def gain(self) -> float:
        """Makespan saved (``inf`` if the workflow only finishes when relieved)."""
        b = math.inf if self.makespan_before is None else self.makespan_before
        a = math.inf if self.makespan_after is None else self.makespan_after
        return 0.0 if a == b else b - a


def analyze(workflow: Workflow) -> Analysis:
    """Analyse every task of ``workflow`` (validated first)."""
    order = workflow.validate()
    links = {lk.name: lk.capacity for lk in workflow.links}
    users: dict[str, list[tuple[str, float, float]]] = {name: [] for name in links}
    for t in order:
        for r in t.resources:
            if r.link is not None:
                users[r.link].append((t.name, t.start, r.weight))
    link_users = {u for us in users.values() for u, _, _ in us}
    # Only the link users and the tasks they take input from feed the fixed
    # point; every other task depends on its outcome, never the other way
    # round, so it is analysed once, from the converged results (as its last
    # recomputation in the rounds would have been).
    feeding = _upstream(order, link_users)
    finish: dict[str, float] = {t.name: math.inf for t in order}
    results: dict[str, TaskResult] = {}
    allocs_prev: dict[str, dict[str, PFunc]] = {}
    rounds = 0
    max_rounds = len(link_users) + 2
    while True:
        rounds += 1
        changed: set[str] = set()
        for t in feeding:
            allocs = {r.name: _allocation(r, t.name, t.start, links, users, finish) for r in t.resources}
            upstream_changed = any(d.from_task in changed for d in t.inputs)
            if t.name in results and not upstream_changed and _same_allocs(allocs, allocs_prev[t.name]):
                continue
            results[t.name] = _analyze_task(t, allocs, results)
            allocs_prev[t.name] = allocs
            changed.add(t.name)
        new_finish = {n: (r.finish if r.finish is not None else math.inf) for n, r in results.items()}
        stable = all(_close(new_finish[u], finish[u]) for u in link_users)
        finish = new_finish
        if stable or not link_users:
            break
        if rounds >= max_rounds:
            log.warning("shared-link iteration stopped after %d rounds", rounds)
            break
    for t in order:
        if t.name not in results:
            allocs = {r.name: _allocation(r, t.name, t.start, links, users, finish) for r in t.resources}
            results[t.name] = _analyze_task(t, allocs, results)
    return Analysis({t.name: results[t.name] for t in workflow.tasks}, rounds)


def _upstream(order: list[Task], names: set[str]) -> list[Task]:
    """The tasks of ``order`` named in ``names`` and those they take input
    from, directly or not, in ``order``'s order."""
    by_name = {t.name: t for t in order}
    seen = set(names)
    todo = list(names)
    while todo:
        for d in by_name[todo.pop()].inputs:
            if d.from_task is not None and d.from_task not in seen:
                seen.add(d.from_task)
                todo.append(d.from_task)
    return [t for t in order if t.name in seen]


def _close(a: float, b: float) -> bool:
    if a == b:
        return True
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= REL_TOL * max(1.0, abs(a))


def _same_allocs(a: dict[str, PFunc], b: dict[str, PFunc]) -> bool:
    for k, f in a.items():
        g = b.get(k)
        # numpy.array_equal, on lists: same shapes and == everywhere (NaN unequal, 0.0 == -0.0)
        if g is None or f is not g and not (
            f.left == g.left and f.end == g.end and f.x.shape == g.x.shape and f.c.shape == g.c.shape
            and f.x.tolist() == g.x.tolist() and f.c.tolist() == g.c.tolist()
        ):
            return False
    return True


def _allocation(r: Resource, task: str, start: float, links: dict[str, PFunc],
                users: dict[str, list[tuple[str, float, float]]], finish: dict[str, float]) -> PFunc:
    if r.allocation is not None:
        base = r.allocation
    else:
        cap = links[r.link]  # type: ignore[index]
        # (start, finish, weight) of the other users: each holds its share on
        # [start, finish), from its declared start time until it finishes.
        others = [(s0, finish[u], w) for u, s0, w in users[r.link] if u != task]  # type: ignore[index]
        # Shares only grow from round to round, so this user finishes no later
        # than last round: changes at or after that finish cannot matter, and
        # leaving them out lets an unchanged allocation skip recomputation.
        # Likewise nothing before this user's own start matters.
        own, own_start = finish[task], start
        times = sorted({x for s0, f, _ in others for x in (s0, f) if own_start < x < own})

        def share(t: float) -> float:
            return r.weight / (r.weight + sum(w for s0, f, w in others if s0 <= t < f))

        if not times:
            base = cap.scaled(share(own_start))
        else:
            steps = PFunc.from_steps([own_start] + times, [share(own_start)] + [share(x) for x in times])
            base = cap * steps
    if r.scale != 1.0 and math.isfinite(r.scale):
        base = base.scaled(r.scale)
    return base


def _input_function(d: DataInput, results: dict[str, TaskResult]) -> PFunc:
    f = d.source if d.source is not None else results[d.from_task].output  # type: ignore[index]
    if d.speedup == math.inf:
        return PFunc.constant(f.end, float(f.x[0]))
    if d.speedup != 1.0:
        f = f.time_scaled(d.speedup)
    return f


def _analyze_task(t: Task, allocs: dict[str, PFunc], results: dict[str, TaskResult]) -> TaskResult:
    if t.inputs:
        limits = [d.requirement.compose(_input_function(d, results)) for d in t.inputs]
        pd, idx = minimum(limits)
    else:
        pd, idx = PFunc.constant(t.max_progress), np.zeros(2, dtype=np.intp)
    active = [r for r in t.resources if r.scale != math.inf]
    res = [(allocs[r.name], r.requirement) for r in active]
    try:
        pr = compute_progress(pd, idx, res, t.max_progress, t.start)
    except RuntimeError as err:  # the event budget: report with the task's name
        raise ModelError(f"tasks.{t.name}: {err}") from err
    names = [("data", d.name) for d in t.inputs]
    rnames = [("resource", r.name) for r in active]
    output = pr.progress if t.output is None else t.output.compose(pr.progress)
    return TaskResult(
        name=t.name,
        max_progress=t.max_progress,
        start=_start_time(pr),
        finish=pr.finish,
        progress=pr.progress,
        bottlenecks=_bottlenecks(pr, names, rnames, pd, idx, res, t.max_progress),
        allocations=dict(allocs),
        requirements={r.name: r.requirement for r in t.resources},
        output=output,
    )


def _start_time(pr: ProgressResult) -> float | None:
    f = pr.progress
    if f.n == 0:
        return float(f.x[0]) if f.end > 0 else None
    values = small.piece_values(f.x, f.c)
    if values is not None:
        for i, (a, b) in enumerate(zip(*values)):
            if b > a or a > 0:
                return float(f.x[i])
        return float(f.x[-1]) if f.end > 0 else None
    start, stop = f.piece_values()
    moving = np.flatnonzero((stop > start) | (start > 0))
    if moving.size:
        return float(f.x[moving[0]])
    return float(f.x[-1]) if f.end > 0 else None


def _bottlenecks(pr: ProgressResult, names, rnames, pd: PFunc, idx: np.ndarray,
                 res, pmax: float) -> tuple[Bottleneck, ...]:
    f = pr.progress
    out: list[Bottleneck] = []
    labs = pr.labels
    if labs.size:
        # progress pieces are contiguous: one interval per run of equal labels
        runs = labs.tolist()
        xs = f.x.tolist()
        a = 0
        for b in range(1, len(runs) + 1):
            if b == len(runs) or runs[b] != runs[a]:
                lab = runs[a]
                kind, name = names[lab] if lab >= 0 else rnames[-1 - lab]
                out.append(Bottleneck(xs[a], xs[b], kind, name))
                a = b
    if pr.finish is None and pr.stalled_at is not None:
        p = f.end
        if pd.end <= p + REL_TOL * pmax or not res:
            kind, name = names[int(idx[-1])] if names else ("data", "?")
        else:
            stuck = [k for k, (a, q) in enumerate(res) if a.end <= 0 and q.value(p) > 0]
            kind, name = rnames[stuck[0] if stuck else 0]
        stall = Bottleneck(pr.stalled_at, math.inf, kind, name)
        if out and out[-1].label == stall.label and out[-1].end == stall.start:
            out[-1] = replace(out[-1], end=math.inf)
        else:
            out.append(stall)
    return tuple(out)


def relieved(workflow: Workflow, task: str, item: str, factor: float = 2.0) -> Workflow:
    """The workflow with one bottleneck of ``task`` relieved by ``factor``.

    ``item`` is ``"data:NAME"`` (the input arrives ``factor`` times sooner;
    ``inf``: all of it at once) or ``"resource:NAME"`` (``factor`` times the
    allocation; ``inf``: no limit).
    """
    kind, _, name = item.partition(":")
    if kind not in ("data", "resource") or not name:
        raise ModelError(f"bottleneck {item!r}: expected 'data:NAME' or 'resource:NAME'", path=workflow.source)
    if not factor >= 1.0:
        raise ModelError(f"relief factor must be >= 1, got {factor}", path=workflow.source)
    t = workflow.task(task)
    if kind == "data":
        if name not in {d.name for d in t.inputs}:
            raise ModelError(f"tasks.{task}: no data input named {name!r}", path=workflow.source)
        new = replace(t, inputs=tuple(replace(d, speedup=d.speedup * factor) if d.name == name else d
                                      for d in t.inputs))
    else:
        if name not in {r.name for r in t.resources}:
            raise ModelError(f"tasks.{task}: no resource named {name!r}", path=workflow.source)
        new = replace(t, resources=tuple(replace(r, scale=r.scale * factor) if r.name == name else r
                                         for r in t.resources))
    return replace(workflow, tasks=tuple(new if x.name == task else x for x in workflow.tasks))


def gain_if_relieved(workflow: Workflow, task: str, item: str, factor: float = math.inf,
                     before: Analysis | None = None) -> Gain:
    """Finish and makespan before and after relieving ``item`` of ``task``."""
    before = before if before is not None else analyze(workflow)
    after = analyze(relieved(workflow, task, item, factor))
    return Gain(task, item, factor, before.tasks[task].finish, after.tasks[task].finish,
                before.makespan, after.makespan)
