"""Contextual-bandit replica policies, simulator only (issue 14).

``linucb:R[,alpha=A,lam=L,forget=G]`` and ``lints:R[,…]``: the actions are
1 … R replicas, placed on the free machines idle longest (as ``model:R``
places), and the value of each action is a ridge regression of the reward
on what the pool knows at the task's submission (:func:`context`). The
reward is the one every learning policy here learns from
(:func:`condor_rlrep.outcome.evaluate_runs` in the runner), learnt when the
task's outcome is judged, so decisions made meanwhile use the older fit.

Per action ``a``: ``A_a = λI + Σ x xᵀ``, ``b_a = Σ r x``, ``θ_a = A_a⁻¹ b_a``
over the decisions that ran ``a``. ``forget = γ < 1`` discounts an action's
past each time it learns (``A ← γA + (1−γ)λI + x xᵀ``, ``b ← γb + r x``):
the pool's owners change habits with the term. The score of ``a`` is
``θ_aᵀx + α·w_a`` with ``w_a = √(xᵀA_a⁻¹x)`` (LinUCB), or ``α·w_a·z_a``,
``z_a ~ N(0, 1)`` (linear Thompson sampling: only ``xᵀθ̃`` enters a
decision, and for ``θ̃ ~ N(θ_a, α²A_a⁻¹)`` that is ``N(xᵀθ_a, α²w_a²)``,
so one normal per action draws it exactly). Ties go to fewer replicas.

Two fixed rules, both ``model:R``'s. A workflow already late (``φ′ < 0``)
gets one replica and nothing is learnt from it: its task deadline is
shorter than its run, so every count fails with the same reward and the
choice only spends energy. And no more replicas than there are free
machines now (at least one): a replica beyond them waits in the queue and
takes the next machine from another task, a cost the task's own reward
does not see — on the tuning seed, without this rule, the bandit settled
in some runs into replicating more when the pool was busiest, which
lowered the success of everyone's tasks.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from condor_rlrep.errors import InputError
from condor_rlrep.sim.beyond import BeyondRunner
from condor_rlrep.survival.model import DEFAULT_IDLE_EDGES

__all__ = ["CONTEXT_NAMES", "context", "context_array", "context_names", "RidgeArms", "ContextPolicy",
           "ContextRunner", "build_contextual"]

CONTEXT_NAMES = ("bias", "day_sin", "day_cos", "day2_sin", "day2_cos", "week_sin", "week_cos",
                 "week2_sin", "week2_cos", "phi", "phi_over_1", "estimate_share", "free", "reboot")
"""The context without the idle times (:func:`context_names` adds them)."""
IDLE_EDGES = DEFAULT_IDLE_EDGES
"""Idle-time buckets, the survival model's: < 15 min, < 1 h, < 4 h, < 12 h, < 1 day, more."""
_BUCKET_NAMES = ("lt15m", "lt1h", "lt4h", "lt12h", "lt1d", "ge1d")

_WEEK = 7 * 86400.0
_DAY = 86400.0
_MONDAY = 4 * 86400.0  # the local epoch 1970-01-01 was a Thursday
_TAU = 2.0 * math.pi
_REFRESH = 1024
"""Updates of an action between exact inverses (:meth:`RidgeArms.update`)."""
_HEAD = len(CONTEXT_NAMES)
_BUCKETS = len(_BUCKET_NAMES)


def context_names(replicas: int) -> tuple[str, ...]:
    return CONTEXT_NAMES + tuple(f"idle{i + 1}_{b}" for i in range(replicas) for b in _BUCKET_NAMES)


def context(local_seconds: float, phi: float, share: float, free: float, idle: Sequence[float],
            reboot_soon: bool, replicas: int) -> list[float]:
    """The features of one decision (:func:`context_names`), each in [−1, 1].

    ``local_seconds``: local time (seconds since 1970-01-01 00:00); the hour
    of day and of week enter as two harmonics each, so that a linear fit
    can follow a daytime peak and the weekend. ``phi``: φ′, clipped to
    [0, 2] and split at 1 (a rerun fits the slack from there on). ``share``:
    the task's estimate over L′ (its remaining critical path: 1 for a last
    task). ``free``: the fraction of machines free. ``idle``: seconds the
    free machines best first have been left alone, each as one of the
    :data:`IDLE_EDGES` buckets (one-hot; all 0: no free machine for that
    replica). Buckets, not a number: a replica on a machine idle for hours
    almost always survives and one on a machine idle for minutes mostly
    does not, a step that a straight line through idle time (or its log)
    blurs. ``reboot_soon``: the nightly reboot falls before ``now + estimate``."""
    return context_array(local_seconds, phi, share, free, idle, reboot_soon, replicas).tolist()


def context_array(local_seconds: float, phi: float, share: float, free: float, idle: Sequence[float],
                  reboot_soon: bool, replicas: int) -> np.ndarray:
    """:func:`context` as a new array, the form the runner keeps per task:
    building it in place costs half of a list handed to ``np.array``."""
    week = ((local_seconds - _MONDAY) % _WEEK) / _WEEK
    day = (local_seconds % _DAY) / _DAY
    p = min(max(phi, 0.0), 2.0)
    x = np.zeros(_HEAD + _BUCKETS * replicas)
    x[:_HEAD] = (1.0,
                 math.sin(_TAU * day), math.cos(_TAU * day), math.sin(2 * _TAU * day), math.cos(2 * _TAU * day),
                 math.sin(_TAU * week), math.cos(_TAU * week), math.sin(2 * _TAU * week), math.cos(2 * _TAU * week),
                 min(p, 1.0), p - 1.0 if p > 1.0 else 0.0, share, free, 1.0 if reboot_soon else 0.0)
    # bisect_right counts the edges at or below the idle time (a NaN too
    # lands in the last bucket): the bucket of "first edge it is below"
    for i in range(min(replicas, len(idle))):
        x[_HEAD + _BUCKETS * i + bisect_right(IDLE_EDGES, idle[i])] = 1.0
    return x


class RidgeArms:
    """One ridge regression per action over the same features."""

    def __init__(self, actions: int, dim: int, *, lam: float = 1.0, forget: float = 1.0):
        if not lam > 0 or not 0.0 < forget <= 1.0:
            raise ValueError(f"ridge needs lam > 0 and 0 < forget <= 1, got {lam!r}, {forget!r}")
        self.lam = float(lam)
        self.forget = float(forget)
        self.a = np.repeat(np.eye(dim)[None] * lam, actions, axis=0)
        self.b = np.zeros((actions, dim))
        self.inv = np.repeat(np.eye(dim)[None] / lam, actions, axis=0)
        self.theta = np.zeros((actions, dim))
        self._counts = [0] * actions  # a Python int adds in a tenth of a numpy element's time
        self._prior = np.eye(dim) * (lam * (1.0 - forget))
        # the per-action views and scratch space of update() and means_forms(),
        # made once: at 32 features allocation costs more than the arithmetic
        self._rows = list(zip(self.a, self.b, self.inv, self.theta))
        self._square = np.empty((dim, dim))
        self._vector = np.empty(dim)
        self._scaled = np.empty(dim)
        self._stacked = np.empty((actions, dim))

    @property
    def counts(self) -> np.ndarray:
        """Updates learnt per action."""
        return np.array(self._counts, dtype=np.int64)

    def means_widths(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per action: the fitted reward ``θᵀx`` and ``√(xᵀA⁻¹x)``."""
        means, forms = self.means_forms(x)
        return np.array(means), np.sqrt(np.maximum(forms, 0.0))

    def means_forms(self, x: np.ndarray) -> tuple[list[float], list[float]]:
        """Per action: ``θᵀx`` and ``xᵀA⁻¹x`` as Python floats, for a
        decision among a handful of actions that numpy calls would outcost."""
        # ndarray.dot is the BLAS gemv that @ calls on these shapes, minus
        # the gufunc's overhead; the stack of inverses stays a matmul, whose
        # gemv per action a 3-d dot would replace with dots per row
        return (self.theta.dot(x).tolist(),
                np.matmul(self.inv, x, out=self._stacked).dot(x).tolist())

    def update(self, action: int, x: np.ndarray, reward: float) -> None:
        """Learn ``reward`` for ``action`` (0-based) in context ``x``."""
        a, b, inv, theta = self._rows[action]
        self._counts[action] = count = self._counts[action] + 1
        if self.forget < 1.0:
            a *= self.forget
            a += self._prior
            b *= self.forget
        square, vector = self._square, self._vector
        # broadcasting: np.outer's own checks cost more than the product
        a += np.multiply(x[:, None], x, square)
        b += np.multiply(reward, x, vector)
        if self.forget < 1.0 or count % _REFRESH == 0:
            inv[...] = np.linalg.inv(a)  # forgetting is no rank-one change
        else:
            # Sherman–Morrison: a third of an inverse's cost, a year has
            # ~450 k updates; the exact inverse every _REFRESH bounds the drift
            v = inv.dot(x, vector)
            scaled = np.divide(v, 1.0 + v.dot(x), self._scaled)
            inv -= np.multiply(v[:, None], scaled, square)
        inv.dot(b, theta)


class ContextRunner(BeyondRunner):
    """Computes each task's context, asks the policy, places the replicas on
    the longest-idle free machines, and hands the judged reward back with
    the context it was decided in."""

    def attach(self, engine: Any) -> None:
        super().attach(engine)
        self._decide = self.policy.decide
        self._update = self.policy.arms.update  # policy.update without its call
        self._learn = self._learn_context  # the base runner's reward hook
        self._contexts: dict[int, np.ndarray] = {}
        self._share = [[e / r if r > 0 else 1.0 for e, r in
                        zip(tpl.estimate, (tpl.plan.remaining[name] for name in tpl.tasks))]
                       for tpl in self.templates]

    def _submit_replicas(self, runtime: float, k: int, now: float, count: int) -> None:
        engine = self.engine
        node = self._node[k]
        w = self._wf[k]
        estimate = self._wf_tpl[w].estimate[node]
        phi = self._phi[k]
        R = self.policy.max_replicas
        if engine.nfree and engine._queue_empty():  # _top_idle written out (once per task)
            machines, idle = self._idle_order.top(now, R)
        else:
            machines, idle = [], []
        if phi < 0.0:
            count = 1  # late: see the module docstring; nothing learnt
        else:
            x = context_array(self._local(now), phi, self._share[self.wf_template[w]][node],
                              engine.nfree / self._machines, idle,
                              engine.next_reboot(now) - now < estimate, R)
            # one replica per free machine at most (module docstring); a
            # forced single still teaches action 1 about this context
            count = self._decide(x, len(machines)) if len(machines) > 1 else 1
            self._contexts[k] = x
            self._state[k] = k  # learnable: the runner passes k back to _learn_context
        self._replicas[k] = count
        placed = min(count, len(machines))
        submit = engine.submit
        for m in machines[:placed]:
            submit(runtime, k, now, m)
        if count > placed:
            engine.submit_many(runtime, k, now, count - placed)

    def _learn_context(self, k: int, replicas: int, reward: float) -> None:
        self._update(replicas - 1, self._contexts.pop(k), reward)


@dataclass
class ContextPolicy:
    """``linucb:R`` / ``lints:R`` (module docstring); run by :class:`ContextRunner`."""

    name: str
    max_replicas: int
    thompson: bool = False
    alpha: float = 1.0
    lam: float = 1.0
    forget: float = 1.0
    rng: Any = None
    runner_class: type = ContextRunner

    def __post_init__(self) -> None:
        if self.max_replicas < 1:
            raise InputError(f"policy {self.name!r} needs at most >= 1 replicas")
        if not (self.alpha >= 0 and math.isfinite(self.alpha)):
            raise InputError(f"policy {self.name!r}: alpha must be a finite number >= 0, got {self.alpha!r}")
        if not (self.lam > 0 and math.isfinite(self.lam)):
            raise InputError(f"policy {self.name!r}: lam must be a finite number > 0, got {self.lam!r}")
        if not 0.0 < self.forget <= 1.0:
            raise InputError(f"policy {self.name!r}: forget must lie in (0, 1], got {self.forget!r}")
        self.dim = len(context_names(self.max_replicas))
        self.arms = RidgeArms(self.max_replicas, self.dim, lam=self.lam, forget=self.forget)
        if self.thompson:
            self.rng = np.random.default_rng(self.rng)

    model = None  # no survival model for BeyondRunner to feed

    def choose(self, hour: int, phi_prime: float) -> tuple[int, bool, int]:
        return 1, False, -1  # replaced by decide() at submission

    def learn(self, state: int, replicas: int, reward: float) -> None:
        pass  # the runner calls update() with the decision's context

    def decide(self, x: np.ndarray, limit: int | None = None) -> int:
        """Replicas (1 … R, at most ``limit``) for context ``x``."""
        means, forms = self.arms.means_forms(x)
        # every action's normal is drawn, allowed or not, as the stream was
        noise = self.rng.standard_normal(len(forms)).tolist() if self.thompson else None
        alpha = self.alpha
        best, top = 0, math.nan
        # scalar IEEE arithmetic as numpy's elementwise (max(·, 0) differs
        # from np.maximum at most in a zero's sign, which no sum or
        # comparison below sees); the first maximum or first NaN wins, as
        # in np.argmax
        for i, (mean, form) in enumerate(zip(means[:limit], forms)):
            width = math.sqrt(max(form, 0.0))
            if noise is not None:
                width = width * noise[i]
            score = mean + alpha * width
            if i == 0 or score > top or (score != score and top == top):
                best, top = i, score
        return best + 1

    def update(self, x: np.ndarray, replicas: int, reward: float) -> None:
        self.arms.update(replicas - 1, x, reward)


def build_contextual(spec: Any, *, rng: Any = None, **_: Any) -> ContextPolicy:
    """The policy of a parsed ``linucb:R`` / ``lints:R`` spec."""
    assert spec.count is not None
    return ContextPolicy(spec.text, spec.count, thompson=spec.kind == "lints", rng=rng, **dict(spec.options))
