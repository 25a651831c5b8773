"""Every parameter of the replica agent, as one frozen, validated value.

Paper values (§4.4 of the replication paper): ε₁ = 0.5, ε₂ = 0.05, n = 10
φ′ bins up to P = 1.0, rewards +1 − σ / −5. Values the paper does not give
(l, m, the drift threshold, the recovery length, UCB's c, Thompson's prior)
are our assumptions, documented per field.

Light on purpose: imported by the hooks' fast path (no numpy).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from condor_rlrep.errors import RlrepError
from condor_rlrep.outcome import DEFAULT_FAILURE_REWARD

REWARD_LIMIT = 1e6
"""Largest |reward| (and |failure reward|, |initial estimate|, |prior mean|) a
store takes: the model's rewards are +1 − σ and the failure reward (−5);
far beyond, sums of estimates overflow to ±inf."""

__all__ = [
    "AgentConfig",
    "DEFAULT_MAX_REPLICAS",
    "ConfigError",
    "STRATEGIES",
    "SCHEDULES",
]

Strategy = Literal["epsilon-greedy", "ucb1", "thompson"]
Schedule = Literal["initially-high", "sliding-window", "fixed"]
STRATEGIES: tuple[str, ...] = ("epsilon-greedy", "ucb1", "thompson")
SCHEDULES: tuple[str, ...] = ("initially-high", "sliding-window", "fixed")


DEFAULT_MAX_REPLICAS = 3
"""R unless asked, the one default of every way to build or run an agent
(``agent init``, ``train``, ``instrument``): a shared pool's users pay for
every extra replica. The simulator's policies name their R (``rl:10``)."""


class ConfigError(RlrepError, ValueError):
    """An agent parameter that is missing, of the wrong type or out of range."""


@dataclass(frozen=True)
class AgentConfig:
    """Parameters of the state space, the estimator and the selection policy.

    State space (§4.4): ``24·(n_bins+2)`` states, hour of day in ``timezone``
    times the φ′ bins ``φ′ ≤ 0, (0, P/n], …, (P(n−1)/n, P], > P``.
    Actions: replica counts ``1 … max_replicas``.
    """

    n_bins: int = 10
    """n: number of φ′ bins between 0 and P."""
    p_max: float = 1.0
    """P: upper end of the binned φ′ range."""
    max_replicas: int = DEFAULT_MAX_REPLICAS
    """R: actions are 1 … R replicas."""
    timezone: str = "UTC"
    """IANA zone in which the hour of day of a submission is taken."""
    strategy: Strategy = "epsilon-greedy"
    schedule: Schedule = "initially-high"
    """ε schedule (ε-greedy only). ``fixed``: always ε₂. ``initially-high``:
    ε₁ until ``switch_after`` rewards were seen (all states), then ε₂.
    ``sliding-window``: as initially-high, and a state whose last ``window``
    rewards of an action stray from the action's estimate by more than
    ``drift_threshold`` goes back to ε₁ for ``recovery`` rewards, its counts
    capped at ``forget_to`` so that new rewards weigh in (set
    ``switch_after=0`` for the paper's plain sliding window)."""
    epsilon_high: float = 0.5
    """ε₁ (paper)."""
    epsilon_low: float = 0.05
    """ε₂ (paper)."""
    switch_after: int = 1000
    """l: rewards before ε₁ → ε₂ (assumed; the paper gives no value)."""
    window: int = 50
    """m: sliding-window length per (state, action) (assumed)."""
    drift_threshold: float = 1.0
    """|window mean − estimate| that counts as drift (assumed; rewards span [−5, 1])."""
    recovery: int = 200
    """Rewards a drifting state spends at ε₁ (assumed)."""
    forget_to: int = 0
    """Counts of a drifting state's actions are capped at this: 0 starts the
    state afresh (the next reward of an action replaces its estimate). In our
    switch experiment 0 recovered in a third of the rewards that ``window`` did."""
    step_size: float | None = None
    """None: sample mean (eq. 8). A float α in (0, 1]: q ← q + α(r − q)."""
    initial_estimate: float = 0.0
    """q of an action never tried (the paper: all equal at the start)."""
    ucb_c: float = 2.0
    """UCB1 exploration weight: q + c·sqrt(ln N_s / n_a) (assumed)."""
    prior_mean: float = 0.0
    """Thompson: mean of the Gaussian prior on an action's mean reward."""
    prior_sd: float = 3.0
    """Thompson: s.d. of that prior."""
    noise_sd: float = 2.0
    """Thompson: assumed s.d. of one reward around its action's mean."""
    failure_reward: float = DEFAULT_FAILURE_REWARD
    """Reward of a failed task (paper: −5); used by callers of outcome.reward."""

    def __post_init__(self) -> None:
        _int(self, "n_bins", 1, 1000)
        _int(self, "max_replicas", 1, 1000)
        _int(self, "switch_after", 0, None)
        _int(self, "window", 1, 100_000)
        _int(self, "recovery", 0, None)
        _int(self, "forget_to", 0, None)
        _num(self, "p_max", lo=0.0, lo_open=True)
        for name in ("epsilon_high", "epsilon_low"):
            _num(self, name, lo=0.0, hi=1.0)
        _num(self, "drift_threshold", lo=0.0, lo_open=True)
        _num(self, "initial_estimate", lo=-REWARD_LIMIT, hi=REWARD_LIMIT)
        _num(self, "ucb_c", lo=0.0)
        _num(self, "prior_mean", lo=-REWARD_LIMIT, hi=REWARD_LIMIT)
        _num(self, "prior_sd", lo=0.0, lo_open=True)
        _num(self, "noise_sd", lo=0.0, lo_open=True)
        _num(self, "failure_reward", lo=-REWARD_LIMIT, hi=REWARD_LIMIT)
        if self.step_size is not None:
            _num(self, "step_size", lo=0.0, hi=1.0, lo_open=True)
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"strategy must be one of {', '.join(STRATEGIES)}; got {self.strategy!r}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"schedule must be one of {', '.join(SCHEDULES)}; got {self.schedule!r}")
        if not isinstance(self.timezone, str) or not self.timezone:
            raise ConfigError(f"timezone must be an IANA zone name; got {self.timezone!r}")
        _check_zone(self.timezone)

    @property
    def n_phi_bins(self) -> int:
        """n + 2 bins of φ′."""
        return self.n_bins + 2

    @property
    def n_states(self) -> int:
        """24·(n+2)."""
        return 24 * (self.n_bins + 2)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentConfig:
        """Build from a mapping (a store's or a JSON document's); unknown keys are errors."""
        if not isinstance(data, dict):
            raise ConfigError(f"agent config must be a mapping, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown agent parameter(s): {', '.join(unknown)}")
        return cls(**data)


def _int(cfg: AgentConfig, name: str, lo: int, hi: int | None) -> None:
    value = getattr(cfg, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer; got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ConfigError(f"{name} must be {bound}; got {value!r}")


def _num(
    cfg: AgentConfig,
    name: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
) -> None:
    value = getattr(cfg, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number; got {value!r}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise ConfigError(f"{name} must be {'>' if lo_open else '>='} {lo}; got {value!r}")
    if hi is not None and value > hi:
        raise ConfigError(f"{name} must be <= {hi}; got {value!r}")
    if isinstance(value, int):
        # store floats so that to_dict()/from_dict() round-trips to an equal value
        object.__setattr__(cfg, name, float(value))


UTC_NAMES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Universal", "Zulu"})
"""Zone names that are UTC: no need to import :mod:`zoneinfo` (hooks start lean)."""


def _check_zone(name: str) -> None:
    if name in UTC_NAMES:
        return
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ConfigError(f"unknown time zone {name!r} (expected an IANA name such as 'Europe/London')") from err
