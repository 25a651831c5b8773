"""Small hand-built traces for the simulator tests (no generator needed)."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np

from condor_rlrep.sim.trace import Trace

START = datetime(2010, 1, 4, 0, 0, tzinfo=timezone.utc)


def make_trace(
    *,
    machines: int,
    length: float,
    login_machine=(),
    login_start=(),
    login_end=(),
    job_submit=(),
    job_duration=(),
    watts=None,
    start: datetime = START,
) -> Trace:
    ls = np.asarray(login_start, dtype=np.float64)
    order = np.argsort(ls, kind="stable")
    js = np.asarray(job_submit, dtype=np.float64)
    jorder = np.argsort(js, kind="stable")
    w = np.full(machines, 100.0) if watts is None else np.asarray(watts, dtype=np.float64)
    return Trace(
        start=start,
        length=float(length),
        source="test",
        machine_names=[f"m{i:04d}" for i in range(machines)],
        machine_rooms=["room"] * machines,
        active_watts=w,
        idle_watts=w * 0.5,
        login_machine=np.asarray(login_machine, dtype=np.int32)[order],
        login_start=ls[order],
        login_end=np.asarray(login_end, dtype=np.float64)[order],
        job_names=[f"j{i}" for i in range(len(js))],
        job_submit=js[jorder],
        job_duration=np.asarray(job_duration, dtype=np.float64)[jorder],
    )


def poisson_trace(
    rng: np.random.Generator,
    *,
    machines: int,
    rate: float,
    length: float,
    session: float = 1.0,
    jobs: int = 0,
    job_length: float = 3600.0,
    job_window: tuple[float, float] | None = None,
) -> Trace:
    """Independent Poisson logins at ``rate`` per second on every machine,
    each lasting ``session`` seconds, plus ``jobs`` jobs of ``job_length``
    submitted uniformly in ``job_window``."""
    n = rng.poisson(rate * length * machines)
    lm = rng.integers(0, machines, n)
    ls = rng.uniform(0.0, length, n)
    lo, hi = job_window if job_window is not None else (0.0, length / 2)
    js = rng.uniform(lo, hi, jobs)
    return make_trace(
        machines=machines,
        length=length,
        login_machine=lm,
        login_start=ls,
        login_end=ls + session,
        job_submit=js,
        job_duration=np.full(jobs, job_length),
    )


def newcastle_like(rng: np.random.Generator, *, days: float = 365.0, machines: int = 1400) -> Trace:
    """A crude Newcastle-scale trace (for speed checks only): ≈1.23 M logins
    and ≈562 k jobs per year, daytime-heavy logins, lognormal lengths."""
    length = days * 86400.0
    n_log = int(1_229_820 * days / 365)
    n_job = int(561_851 * days / 365)
    day = rng.integers(0, int(days), n_log)
    hour = np.clip(rng.normal(13.0, 3.5, n_log), 0, 23.99)
    ls = np.minimum(day * 86400.0 + hour * 3600.0, length - 1)
    dur = np.minimum(rng.lognormal(np.log(3000), 0.9, n_log), 8 * 3600)
    lm = rng.integers(0, machines, n_log)
    js = np.sort(rng.uniform(0, length, n_job))
    jd = np.minimum(rng.lognormal(np.log(1200), 1.3, n_job), 3 * 86400)
    watts = rng.choice([57.0, 75.0, 96.0], machines)
    return make_trace(
        machines=machines,
        length=length,
        login_machine=lm,
        login_start=ls,
        login_end=ls + dur,
        job_submit=js,
        job_duration=jd,
        watts=watts,
    )
