"""HTC jobs of a generated trace: clusters arriving on the profile's rhythm.

Clusters (one ``condor_submit``) arrive as a non-homogeneous Poisson
process with the jobs' own daily, weekly and term rhythm; a cluster has a
heavy-tailed size and a duration drawn from a mixture, varied per job
(:mod:`condor_rlrep.sim.lengths`). ``per_year`` is the expected number of
jobs in a full year. The job count is Poisson and clusters are drawn until
they hold it, so the heavy-tailed sizes shape the burstiness without making
the yearly count a lottery. Owners are Zipf-distributed over ``users.count``
users.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.hourly import HourlyModel
from condor_rlrep.sim.lengths import sample_mixture, sizes_summing_to
from condor_rlrep.sim.trace import StringColumn

__all__ = ["generate_jobs", "job_names"]


def _digits(values: np.ndarray) -> np.ndarray:
    """Decimal digits of each non-negative integer."""
    values = np.asarray(values, dtype=np.int64)
    digits = np.ones(values.shape, dtype=np.int64)
    bound = 10
    while True:
        more = values >= bound
        if not more.any():
            return digits
        digits += more
        bound *= 10


def generate_jobs(
    rng: np.random.Generator, prof: Mapping[str, Any], model: HourlyModel
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Smooth-rate jobs: cluster number, proc, submit, duration, owner index; and the owner names."""
    jobs = prof["jobs"]
    size_spec = jobs["cluster_size"]
    shape = model.job_shape
    if "rate_per_hour" in jobs:
        scale = float(jobs["rate_per_hour"])
    elif "per_year" in jobs:
        year = HourlyModel(prof, 365.0).job_shape if model.end_h != 365 * 24 else shape
        scale = float(jobs["per_year"]) / max(float(year.sum()), 1e-300)
    else:
        raise TraceError("profile: jobs needs per_year or rate_per_hour")
    cum = np.concatenate(([0.0], np.cumsum(shape)))
    k_end = min(int(model.end_h), shape.size - 1)
    total = cum[k_end] + (model.end_h - k_end) * shape[k_end]
    # The job count is Poisson; clusters are drawn until they hold that many
    # jobs (the last one cut short). Heavy-tailed cluster sizes then shape
    # the burstiness without making the yearly count a lottery.
    n_jobs = int(rng.poisson(scale * total)) if scale * total > 0 else 0
    sizes = sizes_summing_to(rng, n_jobs, size_spec)
    clusters = sizes.size
    u = np.sort(rng.random(clusters)) * total
    k = np.clip(np.searchsorted(cum, u, side="right") - 1, 0, shape.size - 1)
    rate = shape[k]
    submit_h = k + np.clip(np.divide(u - cum[k], rate, out=np.zeros_like(u), where=rate > 0), 0.0, 1.0)
    dur_spec = jobs["duration"]
    base = sample_mixture(rng, clusters, dur_spec, "jobs.duration")
    users = jobs["users"]
    n_users = max(int(users["count"]), 1)
    popularity = np.arange(1, n_users + 1, dtype=np.float64) ** -float(users["zipf"])
    owner_of = rng.choice(n_users, size=clusters, p=popularity / popularity.sum())

    cluster_of = np.repeat(np.arange(clusters), sizes)
    proc = np.arange(cluster_of.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    noise = np.exp(float(dur_spec.get("within_cluster_sigma", 0.0)) * rng.standard_normal(cluster_of.size))
    duration = np.clip(base[cluster_of] * noise, float(dur_spec.get("min_seconds", 0)), float(dur_spec["max_seconds"]))
    submit = np.minimum(np.round(submit_h * 3600.0), math.ceil(model.length) - 1.0)[cluster_of]
    width = len(str(n_users))
    user_names = [f"user{i + 1:0{width}d}" for i in range(n_users)]
    return cluster_of + 1, proc, submit, np.maximum(np.round(duration), 0.0), owner_of[cluster_of], user_names


def job_names(cluster_no: np.ndarray, proc: np.ndarray) -> StringColumn:
    """``cluster.proc``, built as one text (no string object per job survives)."""
    return StringColumn.from_text(
        "".join(map("{}.{}".format, cluster_no.tolist(), proc.tolist())), _digits(cluster_no) + 1 + _digits(proc)
    )
