"""Synthetic multi-use cluster traces from a profile file.

A profile (:mod:`condor_rlrep.sim.profile`; presets ``newcastle-2010``,
``newcastle-2010-cal`` and ``poisson`` ship in ``condor_rlrep/data/profiles/``)
describes rooms of machines with opening hours and power figures,
interactive logins and HTC jobs with daily, weekly and term-time rhythms.
Every value carries its source.

Model (all times local wall-clock via the profile's time zone; the profile
laid out per hour: :mod:`condor_rlrep.sim.hourly`):

* Logins (:mod:`condor_rlrep.sim.logins`). Each machine alternates free and
  busy; while free, a user sits down at a non-homogeneous Poisson rate
  (room popularity × hourly × weekday × term factors, zero while the room
  is closed); the session length comes from a mixture (lognormal/Pareto/
  fixed) and is cut at the room's closing time. With ``per_year`` the rate
  scale is calibrated once per profile so that a full calendar year yields
  that many logins in expectation; with ``rate_per_hour`` it is given (the
  ``poisson`` preset: gaps Exp(λ) after each session).
* Jobs (:mod:`condor_rlrep.sim.jobs`). Clusters (one ``condor_submit``)
  arrive as a non-homogeneous Poisson process with their own rhythm; a
  cluster has a heavy-tailed size and a duration drawn from a mixture,
  varied per job. ``per_year`` is the expected number of jobs in a full year.
* Episodes (optional ``[[login_bursts]]``, ``[[outages]]``, ``[[job_surges]]``:
  practical classes, machines down for days, surges of HTC load) are added
  on top by :mod:`condor_rlrep.sim.episodes` from their own random streams;
  a profile without them gives exactly the smooth trace.

All sampling is vectorised numpy driven by one ``numpy.random.Generator``
seeded from ``seed``, drawn in a fixed order (logins, then jobs): same
profile and seed, same trace. Times are rounded to whole seconds (the
resolution of HTCondor's own logs).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from condor_rlrep.errors import TraceError
from condor_rlrep.sim import episodes
from condor_rlrep.sim.hourly import HourlyModel
from condor_rlrep.sim.jobs import generate_jobs, job_names
from condor_rlrep.sim.logins import login_scale, simulate_logins
from condor_rlrep.sim.profile import load_profile, prof_name, resolve_profile
from condor_rlrep.sim.trace import Trace

__all__ = ["generate_trace", "generated_source", "SURGE_OWNER"]

log = logging.getLogger(__name__)


SURGE_OWNER = "surge"
"""Owner of the jobs of ``[[job_surges]]`` (one heavy user's batch)."""


def _add_episodes(prof: Mapping[str, Any], model: HourlyModel, seed: int, logins: tuple, jobs: tuple) -> tuple[tuple, tuple]:
    """The smooth logins and jobs with the profile's irregular episodes added
    (:mod:`condor_rlrep.sim.episodes`)."""
    machine, start, end = logins
    extra = [episodes.login_bursts(model, prof.get("login_bursts") or [], seed),
             episodes.outages(model, prof.get("outages") or [], seed)]
    if any(part[0].size for part in extra):
        machine, start, end = episodes.union_sessions(
            np.concatenate([machine, *(p[0] for p in extra)]),
            np.concatenate([start, *(p[1] for p in extra)]),
            np.concatenate([end, *(p[2] for p in extra)]),
        )
    cluster_no, proc, submit, duration, owner_of, user_names = jobs
    s_submit, s_duration, s_cluster = episodes.job_surges(model, prof.get("job_surges") or [], seed)
    if s_submit.size:
        first = np.flatnonzero(np.r_[True, s_cluster[1:] != s_cluster[:-1]])
        s_proc = np.arange(s_cluster.size) - np.repeat(first, np.diff(np.r_[first, s_cluster.size]))
        top = int(cluster_no.max()) if cluster_no.size else 0
        cluster_no = np.concatenate([cluster_no, top + 1 + s_cluster])
        proc = np.concatenate([proc, s_proc])
        submit = np.concatenate([submit, s_submit])
        duration = np.concatenate([duration, s_duration])
        owner_of = np.concatenate([owner_of, np.full(s_submit.size, len(user_names))])
        user_names = [*user_names, SURGE_OWNER]
        order = np.argsort(submit, kind="stable")
        cluster_no, proc, submit, duration, owner_of = (a[order] for a in (cluster_no, proc, submit, duration, owner_of))
    return (machine, start, end), (cluster_no, proc, submit, duration, owner_of, user_names)


def generate_trace(
    profile: str | Path | Mapping[str, Any] = "newcastle-2010",
    *,
    days: float | None = None,
    seed: int = 0,
    overrides: Iterable[str] = (),
) -> Trace:
    """Generate a synthetic trace.

    ``profile``: preset name (see :data:`~condor_rlrep.sim.profile.PRESETS`), TOML path, or dict
    (raw, with sources, or already resolved). ``days`` defaults to the profile's
    ``calendar.days``. ``overrides``: ``key=value`` strings as for ``--set``.
    Same arguments, same trace (bit for bit).
    """
    raw = load_profile(profile, overrides)
    try:
        prof = resolve_profile(raw)
        days = float(prof["calendar"]["days"] if days is None else days)
        if not days > 0:
            raise TraceError(f"days must be positive, not {days}")
        from condor_rlrep.sim.limits import MAX_TRACE_SECONDS

        if not days * 86400.0 <= MAX_TRACE_SECONDS:
            raise TraceError(f"days: {days:g} is above its limit (<= {MAX_TRACE_SECONDS / 86400:g}, a century)")
        model = HourlyModel(prof, days)
        scale = login_scale(prof)
        rng = np.random.default_rng(seed)
        machine, start, end = simulate_logins(
            rng, scale * model.login_shape, model.next_close, model.room_of, model.end_h, prof["logins"]["session"]
        )
        # A session that rounding squeezes to nothing (a login in the last
        # half second before closing) is no session.
        keep = end > start
        machine, start, end = machine[keep], start[keep], end[keep]
        jobs = generate_jobs(rng, prof, model)
        if episodes.has_episodes(prof):
            (machine, start, end), jobs = _add_episodes(prof, model, seed, (machine, start, end), jobs)
        order = np.lexsort((machine, start))
        cluster_no, proc, submit, duration, owner_of, user_names = jobs
        names = job_names(cluster_no, proc)
        owners = [user_names[i] for i in owner_of.tolist()]
    except (KeyError, TypeError, ValueError) as err:
        raise TraceError(f"profile {prof_name(raw)!r}: missing or malformed value: {err!r}") from err
    trace = Trace(
        start=model.start,
        length=model.length,
        source=generated_source(prof_name(raw), seed, days),
        machine_names=model.names,
        machine_rooms=model.rooms,
        active_watts=model.active,
        idle_watts=model.idle,
        login_machine=machine[order],
        login_start=start[order],
        login_end=end[order],
        job_names=names,
        job_submit=submit,
        job_duration=duration,
        job_owner=owners,
    )
    log.info("generated %d machines, %d logins, %d jobs", trace.machine_count, trace.login_count, trace.job_count)
    return trace


def generated_source(profile_name: str, seed: int, days: float) -> str:
    """The ``source`` line of a generated trace's trace.toml: for a trace
    generated before sweeps stamped their trace's identity, the only record
    of the profile, seed and days it came from."""
    return f"generated by condor-rlrep: profile {profile_name}, seed {seed}, {days:g} days"
