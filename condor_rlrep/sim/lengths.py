"""Lengths and sizes drawn from a profile: sessions, job durations, clusters.

A profile gives a login session's length and a job cluster's duration as
a weighted mixture of lognormal, Pareto and fixed components, and a
cluster's size as a lognormal rounded up and capped. Logins
(:mod:`condor_rlrep.sim.logins`) and jobs (:mod:`condor_rlrep.sim.jobs`)
both draw from here, from the one generator of the trace, so the order of
the draws is part of what makes a seed's trace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from condor_rlrep.errors import TraceError

__all__ = ["sample_mixture", "mean_cluster_size", "cluster_sizes", "sizes_summing_to"]


def sample_mixture(rng: np.random.Generator, n: int, spec: Mapping[str, Any], what: str) -> np.ndarray:
    """``n`` lengths (seconds) from a weighted mixture of lognormal/pareto/fixed components."""
    comps = spec["components"]
    if not comps:
        raise TraceError(f"profile: {what}.components is empty")
    weights = np.array([float(c["weight"]) for c in comps])
    if np.any(weights < 0) or weights.sum() <= 0:
        raise TraceError(f"profile: {what}.components weights must be non-negative and not all zero")
    which = rng.choice(len(comps), size=n, p=weights / weights.sum())
    out = np.empty(n, dtype=np.float64)
    for i, comp in enumerate(comps):
        mask = which == i
        k = int(mask.sum())
        dist = comp.get("dist")
        if dist == "lognormal":
            out[mask] = float(comp["median"]) * np.exp(float(comp["sigma"]) * rng.standard_normal(k))
        elif dist == "pareto":
            out[mask] = float(comp["scale"]) * (1.0 - rng.random(k)) ** (-1.0 / float(comp["alpha"]))
        elif dist == "fixed":
            out[mask] = float(comp["seconds"])
        else:
            raise TraceError(f"profile: {what}: unknown dist {dist!r} (lognormal, pareto, fixed)")
    return np.clip(out, float(spec.get("min_seconds", 0)), float(spec["max_seconds"]))


def mean_cluster_size(spec: Mapping[str, Any]) -> float:
    """E[min(ceil(X), max)] for X ~ lognormal(median, sigma), at least 1."""
    median, sigma, top = float(spec["median"]), float(spec["sigma"]), int(spec["max"])
    if sigma <= 0:
        return float(min(max(math.ceil(median), 1), top))
    mu = math.log(median)
    # E[S] = 1 + sum_{k=2}^{max} P(S >= k) and P(S >= k) = P(X > k - 1).
    return 1.0 + sum(0.5 * math.erfc((math.log(k - 1) - mu) / (sigma * math.sqrt(2))) for k in range(2, top + 1))


def cluster_sizes(rng: np.random.Generator, n: int, spec: Mapping[str, Any]) -> np.ndarray:
    x = float(spec["median"]) * np.exp(float(spec["sigma"]) * rng.standard_normal(n))
    return np.clip(np.ceil(x), 1, int(spec["max"])).astype(np.int64)


def sizes_summing_to(rng: np.random.Generator, total: int, spec: Mapping[str, Any]) -> np.ndarray:
    """Cluster sizes drawn in order until they hold ``total`` jobs; the last is cut to fit."""
    mean = mean_cluster_size(spec)
    parts: list[np.ndarray] = []
    held = 0
    while held < total:
        batch = cluster_sizes(rng, int((total - held) / mean * 1.1) + 16, spec)
        parts.append(batch)
        held += int(batch.sum())
    if not parts:
        return np.zeros(0, dtype=np.int64)
    sizes = np.concatenate(parts)
    cum = np.cumsum(sizes)
    last = int(np.searchsorted(cum, total))  # first cluster reaching the total
    sizes = sizes[: last + 1].copy()
    sizes[-1] -= int(cum[last]) - total
    return sizes
