"""Online estimate of how likely a replica is to survive its run.

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
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["SurvivalModel", "DEFAULT_IDLE_EDGES"]

DEFAULT_IDLE_EDGES: tuple[float, ...] = (900.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0)
"""Idle-time bucket edges (s): < 15 min, < 1 h, < 4 h, < 12 h, < 1 day, more."""

HOURS_OF_WEEK = 168


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
        self.exposure = np.zeros((HOURS_OF_WEEK, self.buckets))
        self.evictions = np.zeros((HOURS_OF_WEEK, self.buckets))
        # running totals per hour and for the week (no re-summing per query)
        self._hour_exposure = [0.0] * HOURS_OF_WEEK
        self._hour_evictions = [0.0] * HOURS_OF_WEEK
        self._week_exposure = 0.0
        self._week_evictions = 0.0

    def bucket(self, idle_seconds: float) -> int:
        """The idle bucket of a machine idle for ``idle_seconds``."""
        b = 0
        for edge in self.edges:
            if idle_seconds < edge:
                return b
            b += 1
        return b

    def record(self, hour: int, bucket: int, seconds: float, evicted: bool) -> None:
        """One invocation placed at ``hour`` of the week on a machine of
        ``bucket`` ran ``seconds`` and was (or was not) evicted by its owner."""
        if seconds < 0:
            raise ValueError(f"an invocation cannot run {seconds!r} s")
        self.exposure[hour, bucket] += seconds
        self._hour_exposure[hour] += seconds
        self._week_exposure += seconds
        if evicted:
            self.evictions[hour, bucket] += 1.0
            self._hour_evictions[hour] += 1.0
            self._week_evictions += 1.0

    def hazard(self, hour: int, bucket: int) -> float:
        """Evictions per second of a run placed at ``hour`` on ``bucket``."""
        k = self.prior_seconds
        week = (self._week_evictions + k * self.prior_rate) / (self._week_exposure + k)
        at_hour = (self._hour_evictions[hour] + k * week) / (self._hour_exposure[hour] + k)
        return float((self.evictions[hour, bucket] + k * at_hour) / (self.exposure[hour, bucket] + k))

    def survival(self, hour: int, bucket: int, seconds: float) -> float:
        """Probability that a run of ``seconds`` placed there sees no login."""
        return math.exp(-self.hazard(hour, bucket) * max(0.0, seconds))
