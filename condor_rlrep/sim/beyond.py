"""Replica policies beyond the paper: they use what a real pool knows at a
task's submission and nothing of the future (issue 14).

What they see: the hour of the week, the task's estimate ``e`` and φ′, how
long each free machine has been left alone by its owners (HTCondor's
``KeyboardIdle``), the nightly reboot schedule (an admin's fixed policy),
and every earlier invocation's outcome.

* ``idle-<spec>`` (``idle-single``, ``idle-fixed:K``, ``idle-rl:R`` …): the
  replica count of ``<spec>``, placed on the free machines idle longest
  (live: a ``Rank`` on ``KeyboardIdle`` in the replicas' description, see
  :func:`condor_rlrep.condor.submit.idle_rank`; in the simulator
  at the task's submission: later matches, after an eviction or from the
  queue, are the engine's usual choice).
* ``model:R[,target=T,hi=H,prior=E]``: idle placement, and the fewest replicas
  ``k ≤ R`` on the longest-idle machines whose chance that at least one
  survives, ``1 − Π(1 − s_i)``, reaches ``T``; ``s_i`` from a
  :class:`~condor_rlrep.survival.model.SurvivalModel` learnt online from this
  policy's own first invocations. One replica when the slack makes a
  rerun affordable (``φ′ ≥ H``), when the workflow is already late
  (``φ′ < 0``: no number of replicas brings it back, with run times equal
  to estimates), when the nightly reboot falls before ``now + e`` (every
  run dies there), or when no machine is free.
* ``react:R``: idle placement of one replica; the other ``R − 1`` are held
  (no energy) and one is released each time a running replica is evicted
  by its owner (not by the reboot), until one finishes; then the held rest
  is removed.
* ``model-react:R[,…]``: ``model``'s first count, then reactive up to R
  (nothing held for a workflow already late).

Every policy here is run by :class:`BeyondRunner` (the policy names it as
its ``runner_class``), which places replicas, records the outcomes the
models learn from and releases held replicas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


from condor_rlrep.errors import InputError
from condor_rlrep.policyspec import PolicySpec
from condor_rlrep.sim.engine import EVICTED
from condor_rlrep.sim.placement import IdleClock, IdleOrder, hour_of_week
from condor_rlrep.sim.runner import WorkflowRunner
from condor_rlrep.survival.model import SurvivalModel, prior_settings, replica_count

__all__ = [
    "BeyondRunner",
    "IdlePolicy",
    "ModelPolicy",
    "build_model_policy",
]


class BeyondRunner(WorkflowRunner):
    """A :class:`WorkflowRunner` that lets the policy plan each task's
    replicas from the pool's state and places them on idle machines."""

    def attach(self, engine: Any) -> None:
        super().attach(engine)
        self.idle_clock = IdleClock.of_trace(engine.trace)
        self._idle_order = IdleOrder(self.idle_clock, engine)
        self._local = self.clock.local_seconds
        self._plan = getattr(self.policy, "plan", None)  # a runner that decides itself has none
        self._observe = getattr(self.policy, "observe", None)
        self._bucket = self.policy.model.bucket if getattr(self.policy, "model", None) is not None else None
        self._total: dict[int, int] = {}
        """Open tasks with held replicas: task → replicas started + held."""
        self._placed: dict[int, tuple[int, int]] = {}
        """Jobs whose first run the model will learn from: job → (hour of week, idle bucket)."""

    def _top_idle(self, now: float, count: int) -> tuple[list[int], list[float]]:
        """Up to ``count`` free machines, longest idle first, and their idle
        seconds (none while jobs wait: they get the machines first)."""
        engine = self.engine
        if count <= 0 or not engine.nfree or not engine._queue_empty():
            return [], []
        return self._idle_order.top(now, count)

    def _submit_replicas(self, runtime: float, k: int, now: float, count: int) -> None:
        engine = self.engine
        R = self.policy.max_replicas
        # _top_idle written out: this runs once per task
        if engine.nfree and engine._queue_empty():
            machines, idle = self._idle_order.top(now, R)
        else:
            machines, idle = [], []
        how = hour_of_week(self._local(now))
        count, held = self._plan(how, self._phi[k], self._wf_tpl[self._wf[k]].estimate[self._node[k]], idle,
                                 engine.next_reboot(now) - now, count)
        self._replicas[k] = count
        placed = count if count < len(machines) else len(machines)
        if placed:
            submit = engine.submit
            bucket = self._bucket
            if bucket is None:
                for m in machines[:placed]:
                    submit(runtime, k, now, m)
            else:
                where = self._placed
                for j in range(placed):
                    where[submit(runtime, k, now, machines[j])] = (how, bucket(idle[j]))
        if count > placed:
            engine.submit_many(runtime, k, now, count - placed)
        if held > 0:
            engine.hold_many(runtime, k, now, held)
            self._total[k] = count + held

    def invocation_end(self, job: int, owner: int, machine: int, start: float, end: float, reason: str) -> None:
        # WorkflowRunner.invocation_end written out (once per invocation)
        self.task_runs[owner].append((start, job - self.task_first[owner], end, reason, self.watts[machine]))  # type: ignore[union-attr]
        evicted = reason == EVICTED and self.engine.next_reboot(end - 1e-3) != end
        if self._placed:
            placed = self._placed.pop(job, None)
            if placed is not None and self._observe is not None:
                self._observe(placed[0], placed[1], end - start, evicted)
        if evicted:
            total = self._total.get(owner)
            if total is not None:
                started = self._replicas[owner]
                if started < total:
                    self._replicas[owner] = started + 1
                    target, _ = self._top_idle(end, 1)
                    self.engine.release(self.task_first[owner] + started, end, target[0] if target else None)

    def job_done(self, job: int, owner: int, now: float) -> None:
        total = self._total.pop(owner, None)
        if total is not None and self.task_runs[owner] is not None:
            first = self.task_first[owner]
            cancel = self.engine.cancel
            for held in range(first + self._replicas[owner], first + total):
                cancel(held, now)
        super().job_done(job, owner, now)


@dataclass
class IdlePolicy:
    """``idle-<spec>``: the base policy's count, idle placement."""

    name: str
    base: Any
    runner_class: type = BeyondRunner
    model: Any = None

    def __post_init__(self) -> None:
        self.max_replicas = self.base.max_replicas
        self.choose = self.base.choose
        self.learn = self.base.learn

    @property
    def agent(self) -> Any:
        return getattr(self.base, "agent", None)

    def plan(self, how: int, phi: float, estimate: float, idle: list[float], reboot_in: float, count: int):
        return count, 0


@dataclass
class ModelPolicy:
    """``model:R``, ``react:R`` and ``model-react:R`` (module docstring)."""

    name: str
    max_replicas: int
    target: float = 0.95
    hi: float = 1.0
    use_model: bool = True
    reactive: bool = False
    model: SurvivalModel = field(default_factory=SurvivalModel)
    runner_class: type = BeyondRunner
    prior: float | None = None
    """Evictions per hour the new model assumes (``prior=``; None: the default)."""

    def __post_init__(self) -> None:
        if self.max_replicas < 1:
            raise InputError(f"policy {self.name!r} needs at most >= 1 replicas")
        if not 0.0 <= self.target < 1.0:
            raise InputError(f"policy {self.name!r}: target must lie in [0, 1), got {self.target!r}")
        if self.prior is not None:
            try:
                self.model = SurvivalModel(**prior_settings(self.prior))
            except ValueError as err:
                raise InputError(f"policy {self.name!r}: {err}") from None
        self.observe = self.model.record

    def choose(self, hour: int, phi_prime: float) -> tuple[int, bool, int]:
        return 1, False, -1  # replaced by plan() at submission

    def learn(self, state: int, replicas: int, reward: float) -> None:
        pass

    def initial(self, how: int, phi: float, estimate: float, idle: list[float], reboot_in: float) -> int:
        if not self.use_model:
            return 1
        return replica_count(self.model, how, phi, estimate, idle, target=self.target, hi=self.hi,
                             reboot_in=reboot_in)

    def plan(self, how: int, phi: float, estimate: float, idle: list[float], reboot_in: float, count: int):
        k = self.initial(how, phi, estimate, idle, reboot_in)
        if not self.reactive or (self.use_model and phi < 0.0):
            return k, 0  # a late workflow stays late: nothing held for it
        return k, self.max_replicas - k


def build_model_policy(spec: PolicySpec) -> ModelPolicy:
    """The policy of a parsed ``model:R``, ``react:R`` or ``model-react:R``
    spec (an ``idle-`` spec wraps its base policy: :class:`IdlePolicy`)."""
    assert spec.count is not None
    return ModelPolicy(spec.text, spec.count, use_model=spec.kind != "react", reactive=spec.kind != "model",
                       **dict(spec.options))
