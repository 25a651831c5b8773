"""BottleMod process and workflow model (paper §2): plain, validated values.

A :class:`Task` ("process" in the paper) has

* data inputs (:class:`DataInput`): a requirement function ``R_k`` — the
  progress reachable with amount ``k`` of that input (non-decreasing; a jump
  at the full amount models a task that needs its whole input) — and a source:
  either an external input function ``I_k(t)`` (amount available over time)
  or the output of another task (pipelined/streaming through output → input);
* resources (:class:`Resource`): a requirement ``Q_l(p)`` — resource needed
  per unit of progress, piecewise constant in progress (the paper's §4
  restriction, which keeps the resource-bound progress closed-form) — and
  an allocation ``A_l(t)`` (rate over time, any piecewise-linear shape), given
  directly or as a weighted share of a shared :class:`Link`;
* a maximum progress ``P_max`` and an output function ``O(p)`` (output amount
  at progress ``p``; identity when omitted).

``speedup`` (inputs) and ``scale`` (resources) exist for "what if" analyses:
an input with ``speedup = f`` delivers by ``t`` what it would have delivered
by ``f·t``; a resource with ``scale = f`` gets ``f`` times its allocation
(``inf`` removes the limit altogether).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from condor_rlrep.bottlemod.functions import PFunc
from condor_rlrep.errors import ModelError

__all__ = ["DataInput", "Resource", "Task", "Link", "Workflow"]


@dataclass(frozen=True)
class DataInput:
    name: str
    requirement: PFunc
    source: PFunc | None = None
    from_task: str | None = None
    speedup: float = 1.0


@dataclass(frozen=True)
class Resource:
    name: str
    requirement: PFunc
    allocation: PFunc | None = None
    link: str | None = None
    weight: float = 1.0
    scale: float = 1.0


@dataclass(frozen=True)
class Task:
    name: str
    max_progress: float
    inputs: tuple[DataInput, ...] = ()
    resources: tuple[Resource, ...] = ()
    output: PFunc | None = None
    start: float = 0.0


@dataclass(frozen=True)
class Link:
    """A shared transfer capacity; users get ``weight / Σ active weights`` of
    it, and a user's share goes to the others once that user has finished."""

    name: str
    capacity: PFunc


@dataclass(frozen=True)
class Workflow:
    tasks: tuple[Task, ...]
    links: tuple[Link, ...] = ()
    name: str = ""
    source: str | None = field(default=None, compare=False)  # file it came from, for messages

    def task(self, name: str) -> Task:
        for t in self.tasks:
            if t.name == name:
                return t
        raise ModelError(f"no task named {name!r}", path=self.source)

    def validate(self) -> list[Task]:
        """Check the model and return its tasks in dependency order.

        Raises :class:`~condor_rlrep.errors.ModelError` naming the item at fault.
        The result is cached on the (immutable) workflow.
        """
        cached = self.__dict__.get("_validated")
        if cached is not None:
            return list(cached)
        order = self._validate()
        object.__setattr__(self, "_validated", tuple(order))
        return order

    def _validate(self) -> list[Task]:
        err = self._error
        names = [t.name for t in self.tasks]
        if not names:
            err("workflow", "has no tasks")
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            err(f"tasks.{sorted(dup)[0]}", "is defined more than once")
        links = {lk.name: lk for lk in self.links}
        for lk in self.links:
            if not lk.capacity.is_nonnegative():
                err(f"links.{lk.name}.capacity", "must not be negative")
            if not lk.capacity.is_linear:
                err(f"links.{lk.name}.capacity", "must be piecewise-linear")
        known = set(names)
        for t in self.tasks:
            where = f"tasks.{t.name}"
            if not (t.max_progress > 0 and math.isfinite(t.max_progress)):
                err(f"{where}.max_progress", "must be a positive number")
            if not math.isfinite(t.start):
                err(f"{where}.start", "must be a finite number")
            if t.output is not None and not t.output.is_nondecreasing():
                err(f"{where}.output", "must be non-decreasing")
            for d in t.inputs:
                w = f"{where}.inputs.{d.name}"
                if (d.source is None) == (d.from_task is None):
                    err(w, "needs exactly one of 'source' (external input) or 'from' (a task)")
                if d.from_task is not None and d.from_task not in known:
                    err(f"{w}.from", f"names unknown task {d.from_task!r}")
                if d.from_task == t.name:
                    err(f"{w}.from", "a task cannot consume its own output")
                if not d.requirement.is_nondecreasing():
                    err(f"{w}.requirement", "must be non-decreasing")
                if d.source is not None and not d.source.is_nondecreasing():
                    err(f"{w}.source", "must be non-decreasing (data, once available, stays)")
                if not d.speedup > 0:
                    err(f"{w}.speedup", "must be positive")
            for r in t.resources:
                w = f"{where}.resources.{r.name}"
                if (r.allocation is None) == (r.link is None):
                    err(w, "needs exactly one of 'allocation' or 'link'")
                if r.link is not None and r.link not in links:
                    err(f"{w}.link", f"names unknown link {r.link!r}")
                if not (r.weight > 0 and math.isfinite(r.weight)):
                    err(f"{w}.weight", "must be a positive number")
                if not r.requirement.is_piecewise_constant():
                    err(f"{w}.requirement", "must be piecewise constant in progress (use steps)")
                if not r.requirement.is_nonnegative():
                    err(f"{w}.requirement", "must not be negative")
                if r.allocation is not None:
                    if not r.allocation.is_linear:
                        err(f"{w}.allocation", "must be piecewise-linear")
                    if not r.allocation.is_nonnegative():
                        err(f"{w}.allocation", "must not be negative")
                if not r.scale > 0:
                    err(f"{w}.scale", "must be positive")
        return self._order()

    def _order(self) -> list[Task]:
        by_name = {t.name: t for t in self.tasks}
        state: dict[str, int] = {}
        order: list[Task] = []
        for root in by_name:
            if root in state:
                continue
            stack = [(root, iter([d.from_task for d in by_name[root].inputs if d.from_task]))]
            state[root] = 1
            path = [root]
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    stack.pop()
                    path.pop()
                    state[node] = 2
                    order.append(by_name[node])
                elif state.get(nxt) == 1:
                    cycle = path[path.index(nxt):] + [nxt]
                    self._error("tasks", "output→input links form a cycle: " + " -> ".join(cycle))
                elif nxt not in state:
                    state[nxt] = 1
                    path.append(nxt)
                    stack.append((nxt, iter([d.from_task for d in by_name[nxt].inputs if d.from_task])))
        return order

    def _error(self, item: str, message: str) -> None:
        raise ModelError(f"{item}: {message}", path=self.source)
