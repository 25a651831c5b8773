"""Online estimate of how likely a replica is to survive its run, and the
model policy's replica count: one implementation for the simulator
(:mod:`condor_rlrep.sim.beyond`) and the live hooks (issue 14).

The pool's owners evict at a rate that depends on the hour of the week and
on the machine (rooms differ in popularity and opening hours; a machine
left alone for long is likely in a quiet room). :class:`SurvivalModel`
learns a constant eviction hazard per (hour of the week, idle bucket of
the machine at placement) from recorded invocations only, as exposure
seconds and evictions (removed, reboot-killed and unfinished runs are
censored: they count exposure and no eviction). The survival of a run of
``e`` seconds is ``exp(-λ·e)``.

Sparse cells borrow strength from their hour (all buckets) and the hour
from the whole week: ``λ = (evictions + k·λ_parent) / (exposure + k)``,
``k`` prior exposure seconds. Before any data every replica is assumed to
survive with the prior rate ``prior_rate``.

Live, a run's idle bucket may be unknown (the node log lacks the machine's
``KeyboardIdle``; see :func:`condor_rlrep.condor.eventlog.rebuild_cluster`):
its exposure then counts for its hour and the week only (``bucket=None``),
and a decision made before the replicas are matched (PRE does not know
their machines) uses the hour's rate, which pools every bucket.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SurvivalModel",
    "DEFAULT_IDLE_EDGES",
    "HOURS_OF_WEEK",
    "UNKNOWN_BUCKET",
    "ModelSpec",
    "ModelChoice",
    "parse_model_spec",
    "model_spec_of",
    "replicas_for_target",
    "choose_replicas",
    "replica_count",
    "hourly_rates",
    "DEFAULT_PRIOR_PER_HOUR",
    "prior_settings",
]

DEFAULT_IDLE_EDGES: tuple[float, ...] = (900.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0)
"""Idle-time bucket edges (s): < 15 min, < 1 h, < 4 h, < 12 h, < 1 day, more."""

DEFAULT_PRIOR_PER_HOUR = 1.0 / 8.0
"""Evictions per hour a new model assumes of every replica (one per 8 h)."""


def prior_settings(per_hour: float) -> dict[str, float]:
    """:class:`SurvivalModel`'s ``prior_rate`` and ``prior_seconds`` for a
    prior of ``per_hour`` evictions an hour (``model:R,prior=…``). The prior
    weighs half an eviction whatever its rate (4 h of exposure at the
    default one per 8 h), so a rate C times higher — the pool's clock
    compressed C times, as in a replay — is overruled by data C times sooner,
    as the same data would overrule it on the uncompressed clock."""
    if not (math.isfinite(per_hour) and per_hour > 0):
        raise ValueError(f"prior must be a finite number of evictions per hour > 0, got {per_hour!r}")
    return {"prior_rate": per_hour / 3600.0, "prior_seconds": 0.5 * 3600.0 / per_hour}


HOURS_OF_WEEK = 168
UNKNOWN_BUCKET = -1
"""The bucket a stored cell names when the machine's idle time was not known."""


class SurvivalModel:
    def __init__(
        self,
        idle_edges: Sequence[float] = DEFAULT_IDLE_EDGES,
        *,
        prior_seconds: float = 4 * 3600.0,
        prior_rate: float = 1.0 / (8 * 3600.0),
    ):
        edges = [float(x) for x in idle_edges]
        if any(b <= a for a, b in zip(edges, edges[1:])) or any(x < 0 for x in edges):
            raise ValueError(f"idle edges must be >= 0 and increasing, got {idle_edges!r}")
        if not prior_seconds > 0 or not prior_rate >= 0:
            raise ValueError("prior exposure must be > 0 s and the prior rate >= 0")
        self.edges = edges
        self.buckets = len(edges) + 1
        self.prior_seconds = float(prior_seconds)
        self.prior_rate = float(prior_rate)
        # nested lists, not numpy: the PRE hook builds one per call (numpy's
        # import is most of a hook's start-up); the arithmetic is the same IEEE doubles
        self.exposure = [[0.0] * self.buckets for _ in range(HOURS_OF_WEEK)]
        self.evictions = [[0.0] * self.buckets for _ in range(HOURS_OF_WEEK)]
        # running totals per hour and for the week (no re-summing per query)
        self._hour_exposure = [0.0] * HOURS_OF_WEEK
        self._hour_evictions = [0.0] * HOURS_OF_WEEK
        self._week_exposure = 0.0
        self._week_evictions = 0.0

    def bucket(self, idle_seconds: float) -> int:
        """The idle bucket of a machine idle for ``idle_seconds``: how many
        edges it has reached (the first edge it is below)."""
        if idle_seconds != idle_seconds:  # NaN reaches no edge: past them all, as ever
            return len(self.edges)
        return bisect_right(self.edges, idle_seconds)

    def record(self, hour: int, bucket: int | None, seconds: float, evicted: bool) -> None:
        """One invocation placed at ``hour`` of the week on a machine of
        ``bucket`` (None: unknown) ran ``seconds`` and was (or was not)
        evicted by its owner."""
        if seconds < 0:
            raise ValueError(f"an invocation cannot run {seconds!r} s")
        if bucket is not None:
            self.exposure[hour][bucket] += seconds
        self._hour_exposure[hour] += seconds
        self._week_exposure += seconds
        if evicted:
            if bucket is not None:
                self.evictions[hour][bucket] += 1.0
            self._hour_evictions[hour] += 1.0
            self._week_evictions += 1.0

    def add_cell(self, hour: int, bucket: int | None, exposure: float, evictions: float) -> None:
        """Add a stored cell's totals (``bucket`` None or :data:`UNKNOWN_BUCKET`: unknown)."""
        if not 0 <= hour < HOURS_OF_WEEK:
            raise ValueError(f"hour of week {hour!r} outside 0..{HOURS_OF_WEEK - 1}")
        if bucket == UNKNOWN_BUCKET:
            bucket = None
        if bucket is not None and not 0 <= bucket < self.buckets:
            raise ValueError(f"idle bucket {bucket!r} outside 0..{self.buckets - 1}")
        if not (exposure >= 0 and evictions >= 0 and math.isfinite(exposure) and math.isfinite(evictions)):
            raise ValueError(f"cell ({hour}, {bucket}): exposure and evictions must be finite and >= 0")
        if bucket is not None:
            self.exposure[hour][bucket] += exposure
            self.evictions[hour][bucket] += evictions
        self._hour_exposure[hour] += exposure
        self._hour_evictions[hour] += evictions
        self._week_exposure += exposure
        self._week_evictions += evictions

    @classmethod
    def from_cells(cls, cells: Iterable[Sequence[float]], **kwargs: float) -> SurvivalModel:
        """A model holding stored cells ``(hour, bucket, exposure, evictions)``."""
        model = cls(**kwargs)
        for hour, bucket, exposure, evictions in cells:
            model.add_cell(int(hour), int(bucket), float(exposure), float(evictions))
        return model

    def hour_rate(self, hour: int) -> float:
        """Evictions per second at ``hour`` over every bucket (shrunk toward the week's)."""
        k = self.prior_seconds
        week = (self._week_evictions + k * self.prior_rate) / (self._week_exposure + k)
        return (self._hour_evictions[hour] + k * week) / (self._hour_exposure[hour] + k)

    def hour_totals(self, hour: int) -> tuple[float, float]:
        """(exposure seconds, evictions) recorded at ``hour`` over every bucket."""
        return self._hour_exposure[hour], self._hour_evictions[hour]

    def week_totals(self) -> tuple[float, float]:
        return self._week_exposure, self._week_evictions

    def hazard(self, hour: int, bucket: int | None) -> float:
        """Evictions per second of a run placed at ``hour`` on ``bucket``
        (None: a machine not known yet, the hour's rate)."""
        at_hour = self.hour_rate(hour)
        if bucket is None:
            return float(at_hour)
        k = self.prior_seconds
        return float((self.evictions[hour][bucket] + k * at_hour) / (self.exposure[hour][bucket] + k))

    def survival(self, hour: int, bucket: int | None, seconds: float) -> float:
        """Probability that a run of ``seconds`` placed there sees no login."""
        return math.exp(-self.hazard(hour, bucket) * max(0.0, seconds))

    def survivals(self, hour: int, buckets: Iterable[int | None], seconds: float) -> list[float]:
        """:meth:`survival` of each of ``buckets`` at ``hour`` (the same
        arithmetic, the hour's and the week's rates computed once: the
        simulator asks this once per task)."""
        k = self.prior_seconds
        at_hour = self.hour_rate(hour)
        t = max(0.0, seconds)
        evictions = self.evictions[hour]
        exposure = self.exposure[hour]
        exp = math.exp
        return [exp(-(at_hour if b is None else (evictions[b] + k * at_hour) / (exposure[b] + k)) * t)
                for b in buckets]


def replicas_for_target(survivals: Iterable[float], target: float) -> int:
    """Fewest leading entries of ``survivals`` (per-replica survival
    probabilities, best first) with ``1 − Π(1 − s_i) ≥ target``; all of them
    if none reach it; at least 1."""
    fail = 1.0
    k = 0
    for s in survivals:
        k += 1
        fail *= 1.0 - s
        if 1.0 - fail >= target:
            return k
    return max(1, k)


@dataclass(frozen=True)
class ModelSpec:
    """``model:R[,target=T,hi=H,prior=E]``: at most R replicas, survival
    target T, one replica when φ′ ≥ H, a new model's prior of E evictions
    per hour (:func:`prior_settings`)."""

    max_replicas: int
    target: float = 0.95
    hi: float = 1.0
    prior: float = DEFAULT_PRIOR_PER_HOUR

    def __post_init__(self) -> None:
        if not 1 <= self.max_replicas <= 100:
            raise ValueError(f"model:R needs 1 <= R <= 100, got {self.max_replicas!r}")
        if not 0.0 <= self.target < 1.0:
            raise ValueError(f"target must lie in [0, 1), got {self.target!r}")
        if not self.hi == self.hi:
            raise ValueError("hi must be a number")
        prior_settings(self.prior)  # raises naming the value

    def model(self, cells: Iterable[Sequence[float]] = ()) -> SurvivalModel:
        """A survival model of this spec's prior holding stored ``cells``."""
        return SurvivalModel.from_cells(cells, **prior_settings(self.prior))

    @property
    def spec(self) -> str:
        """The canonical spelling (defaults left out)."""
        options = "".join(f",{key}={value:g}" for key, value, default in
                          (("target", self.target, 0.95), ("hi", self.hi, 1.0),
                           ("prior", self.prior, DEFAULT_PRIOR_PER_HOUR)) if value != default)
        return f"model:{self.max_replicas}{options}"


def model_spec_of(spec: Any) -> ModelSpec | None:
    """The :class:`ModelSpec` of a parsed ``model:R`` policy
    (:class:`condor_rlrep.policyspec.PolicySpec`); None for another kind."""
    if spec.kind != "model":
        return None
    try:
        return ModelSpec(int(spec.count), **dict(spec.options))
    except ValueError as err:
        raise ValueError(f"policy {spec.text!r}: {err}") from None


def parse_model_spec(text: str) -> ModelSpec | None:
    """:func:`model_spec_of` the policy ``text`` names (parsed by
    :mod:`condor_rlrep.policyspec`, the one grammar); ValueError naming the
    fault for a bad spec."""
    from condor_rlrep.errors import InputError
    from condor_rlrep.policyspec import parse_spec

    try:
        parsed = parse_spec(text, live=True)
    except InputError as err:
        raise ValueError(str(err)) from None
    return model_spec_of(parsed)


@dataclass(frozen=True)
class ModelChoice:
    """How many replicas the model policy runs, and why."""

    replicas: int
    reason: str
    """``late`` (φ′ < 0), ``slack`` (φ′ ≥ hi: a rerun fits), ``reboot``
    (the nightly reboot falls within the run), ``no machine`` (none free),
    ``target`` (the fewest reaching it), ``capped`` (R replicas fall short)."""
    survivals: tuple[float, ...] = ()
    """Per-replica survival probabilities the count was chosen from."""

    @property
    def success(self) -> float:
        """P(at least one of the chosen replicas survives) by the model."""
        fail = 1.0
        for s in self.survivals[: self.replicas]:
            fail *= 1.0 - s
        return 1.0 - fail if self.survivals else float("nan")


def choose_replicas(
    model: SurvivalModel,
    hour: int,
    phi: float,
    estimate: float,
    buckets: Sequence[int | None],
    *,
    target: float,
    hi: float,
    reboot_in: float = math.inf,
) -> ModelChoice:
    """The model policy's count: the fewest leading machines of ``buckets``
    (the idle bucket of each candidate machine, best first; None: not known,
    at most R entries) whose chance that one replica survives a run of
    ``estimate`` seconds reaches ``target``; one replica when ``φ′ ≥ hi``
    (a rerun fits the slack), ``φ′ < 0`` (already late: no count brings it
    back), the reboot falls within the run, or there is no machine."""
    reason = _single_reason(phi, estimate, len(buckets), hi=hi, reboot_in=reboot_in)
    if reason is not None:
        return ModelChoice(1, reason)
    survivals = tuple(model.survivals(hour, buckets, estimate))
    count = replicas_for_target(survivals, target)
    fail = 1.0
    for s in survivals[:count]:
        fail *= 1.0 - s
    return ModelChoice(count, "target" if 1.0 - fail >= target else "capped", survivals)


def replica_count(
    model: SurvivalModel,
    hour: int,
    phi: float,
    estimate: float,
    idle_seconds: Sequence[float],
    *,
    target: float,
    hi: float,
    reboot_in: float = math.inf,
) -> int:
    """``choose_replicas(...).replicas`` for candidate machines idle
    ``idle_seconds`` (best first), without the record of why: the
    simulator's per-task path."""
    if _single_reason(phi, estimate, len(idle_seconds), hi=hi, reboot_in=reboot_in) is not None:
        return 1
    bucket = model.bucket
    return replicas_for_target(model.survivals(hour, [bucket(t) for t in idle_seconds], estimate), target)


def _single_reason(phi: float, estimate: float, candidates: int, *, hi: float, reboot_in: float) -> str | None:
    """Why the model policy places one replica whatever the model says, or
    None (:func:`choose_replicas`)."""
    if not 0.0 <= phi:
        return "late"
    if not phi < hi:
        return "slack"
    if reboot_in < estimate:
        return "reboot"
    if not candidates:
        return "no machine"
    return None


def hourly_rates(model: SurvivalModel) -> list[dict[str, float]]:
    """Per hour of the week: the rate a decision uses (evictions per hour,
    shrunk toward the week's), the exposure and evictions behind it, and the
    rate per idle bucket (what a run on a machine of that bucket gets)."""
    rows = []
    for hour in range(HOURS_OF_WEEK):
        exposure, evictions = model.hour_totals(hour)
        rows.append({
            "hour_of_week": hour, "rate_per_hour": model.hour_rate(hour) * 3600.0,
            "exposure_s": exposure, "evictions": evictions,
            "bucket_rates_per_hour": [model.hazard(hour, b) * 3600.0 for b in range(model.buckets)],
        })
    return rows
