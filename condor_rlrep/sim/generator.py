"""Synthetic multi-use cluster traces from a profile file.

A profile (TOML; presets ``newcastle-2010``, ``newcastle-2010-cal`` and ``poisson`` ship in
``condor_rlrep/data/profiles/``, copies of ``sim/profiles/``) describes rooms
of machines with opening hours and power figures, interactive logins and HTC
jobs with daily, weekly and term-time rhythms. Every value carries its source
(``{ value = ..., source = ... }`` or a table-level ``source``).

Model (all times local wall-clock via the profile's time zone):

* Logins. Each machine alternates free and busy. While it is free, a user
  sits down at the rate λ_r(t) = s · popularity_r · hourly(hour, weekend) ·
  weekday(day) · term(date) · open_r(t) (a non-homogeneous Poisson process,
  sampled exactly by inverting its cumulative intensity); the session length
  comes from a mixture (lognormal/Pareto/fixed) and is cut at the room's
  closing time. Sessions on one machine never overlap. With ``per_year``, s is
  calibrated once per profile so that a full calendar year yields that many
  logins in expectation; with ``rate_per_hour`` s is given (the ``poisson``
  preset: gaps Exp(λ) after each session).
* Jobs. Clusters (one ``condor_submit``) arrive as a non-homogeneous Poisson
  process with their own rhythm; a cluster has a heavy-tailed size and a
  duration drawn from a mixture, varied per job. ``per_year`` is the expected
  number of jobs in a full year.
* Episodes (optional ``[[login_bursts]]``, ``[[outages]]``, ``[[job_surges]]``:
  practical classes, machines down for days, surges of HTC load) are added
  on top by :mod:`condor_rlrep.sim.episodes` from their own random streams;
  a profile without them gives exactly the smooth trace.

All sampling is vectorised numpy driven by one ``numpy.random.Generator``
seeded from ``seed``: same profile and seed, same trace. Times are rounded to
whole seconds (the resolution of HTCondor's own logs).
"""

from __future__ import annotations

import copy
import json
import logging
import math
import tomllib
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from condor_rlrep.errors import TraceError
from condor_rlrep.sim import episodes
from condor_rlrep.sim.trace import StringColumn, Trace, hourly_utc_offsets
from condor_rlrep.sim.trace_io import parse_start

__all__ = ["PRESETS", "generate_trace", "generated_source", "load_profile", "resolve_profile", "apply_overrides",
           "preset_path"]

log = logging.getLogger(__name__)

PRESETS = ("newcastle-2010", "newcastle-2010-cal", "poisson")
_CALIBRATION_SEED = 20100101


# ------------------------------------------------------------------ profiles


def preset_path(name: str) -> Path:
    """Path of a shipped preset profile (package data)."""
    if name not in PRESETS:
        raise TraceError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return Path(str(resources.files("condor_rlrep") / "data" / "profiles" / f"{name}.toml"))


def load_profile(profile: str | Path | Mapping[str, Any], overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Raw profile (values still wrapped with their sources), with ``key=value`` overrides applied.

    ``profile`` is a preset name, a path to a TOML file, or an already loaded dict.
    """
    if isinstance(profile, Mapping):
        raw = copy.deepcopy(dict(profile))
    else:
        path = preset_path(str(profile)) if str(profile) in PRESETS else Path(profile)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as err:
            raise TraceError(f"no such profile (presets: {', '.join(PRESETS)})", path=str(path)) from err
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            raise TraceError(f"cannot parse profile: {err}", path=str(path)) from err
    apply_overrides(raw, overrides)
    return raw


def apply_overrides(raw: dict[str, Any], overrides: Iterable[str]) -> None:
    """Apply ``dotted.key=value`` settings in place (value parsed as TOML, else a string).

    A key naming a ``{value, source}`` parameter sets its value; list items
    are addressed by index (``rooms.0.machines=100``).
    """
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise TraceError(f"--set {item!r}: expected key=value")
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text
        parts = key.strip().split(".")
        node: Any = raw
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            if isinstance(node, list):
                try:
                    idx = int(part)
                    node[idx]  # noqa: B018 - bounds check
                except (ValueError, IndexError) as err:
                    raise TraceError(f"--set {key}: {part!r} is not an index of a {len(node)}-item list") from err
                if last:
                    node[idx] = value
                else:
                    node = node[idx]
                continue
            if not isinstance(node, dict) or part not in node:
                raise TraceError(f"--set {key}: the profile has no {'.'.join(parts[: depth + 1])!r}")
            if last:
                if _is_wrapped(node[part]):
                    node[part]["value"] = value
                else:
                    node[part] = value
            else:
                node = node[part]
                if _is_wrapped(node):
                    node = node["value"]


def _is_wrapped(node: Any) -> bool:
    return isinstance(node, dict) and "value" in node and "source" in node and set(node) <= {"value", "source", "note"}


def resolve_profile(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Drop sources: ``{value, source}`` becomes its value, ``source`` keys go."""

    def strip(node: Any) -> Any:
        if _is_wrapped(node):
            return strip(node["value"])
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "source"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(raw)


# ------------------------------------------------------------------ sampling helpers


def _sample_mixture(rng: np.random.Generator, n: int, spec: Mapping[str, Any], what: str) -> np.ndarray:
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


def _mean_cluster_size(spec: Mapping[str, Any]) -> float:
    """E[min(ceil(X), max)] for X ~ lognormal(median, sigma), at least 1."""
    median, sigma, top = float(spec["median"]), float(spec["sigma"]), int(spec["max"])
    if sigma <= 0:
        return float(min(max(math.ceil(median), 1), top))
    mu = math.log(median)
    # E[S] = 1 + sum_{k=2}^{max} P(S >= k) and P(S >= k) = P(X > k - 1).
    return 1.0 + sum(0.5 * math.erfc((math.log(k - 1) - mu) / (sigma * math.sqrt(2))) for k in range(2, top + 1))


def _cluster_sizes(rng: np.random.Generator, n: int, spec: Mapping[str, Any]) -> np.ndarray:
    x = float(spec["median"]) * np.exp(float(spec["sigma"]) * rng.standard_normal(n))
    return np.clip(np.ceil(x), 1, int(spec["max"])).astype(np.int64)


def _sizes_summing_to(rng: np.random.Generator, total: int, spec: Mapping[str, Any]) -> np.ndarray:
    """Cluster sizes drawn in order until they hold ``total`` jobs; the last is cut to fit."""
    mean = _mean_cluster_size(spec)
    parts: list[np.ndarray] = []
    held = 0
    while held < total:
        batch = _cluster_sizes(rng, int((total - held) / mean * 1.1) + 16, spec)
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


# ------------------------------------------------------------------ calendar


class _Grid:
    """Per-hour local calendar fields over the trace (hour k covers [k, k+1) h)."""

    def __init__(self, start: datetime, hours: int, calendar: Mapping[str, Any]):
        offsets = hourly_utc_offsets(start, hours)[:hours]
        wall = start.timestamp() + 3600.0 * np.arange(hours) + offsets
        self.hour = (np.mod(wall, 86400.0) // 3600.0).astype(np.int64)
        days = np.floor_divide(wall, 86400.0).astype(np.int64)
        self.weekday = (days + 3) % 7  # 1970-01-01 was a Thursday
        self.weekend = self.weekday >= 5
        dates = days.astype("datetime64[D]")
        months = dates.astype("datetime64[M]")
        month = months.astype(np.int64) % 12 + 1
        day = (dates - months.astype("datetime64[D]")).astype(np.int64) + 1
        key = month * 100 + day
        self.login_factor = np.full(hours, float(calendar.get("default_login_factor", 1.0)))
        self.job_factor = np.full(hours, float(calendar.get("default_job_factor", 1.0)))
        for period in calendar.get("periods", []):
            lo, hi = _month_day(period["from"]), _month_day(period["to"])
            mask = (key >= lo) & (key <= hi) if lo <= hi else (key >= lo) | (key <= hi)
            self.login_factor[mask] = float(period.get("logins", 1.0))
            self.job_factor[mask] = float(period.get("jobs", 1.0))

    def profile(self, spec: Mapping[str, Any], what: str) -> np.ndarray:
        weekday_h = np.asarray(spec["hourly_weekday"], dtype=np.float64)
        weekend_h = np.asarray(spec["hourly_weekend"], dtype=np.float64)
        dow = np.asarray(spec["weekday_factor"], dtype=np.float64)
        if weekday_h.shape != (24,) or weekend_h.shape != (24,) or dow.shape != (7,):
            raise TraceError(f"profile: {what}: hourly_* need 24 values and weekday_factor 7")
        if np.any(weekday_h < 0) or np.any(weekend_h < 0) or np.any(dow < 0):
            raise TraceError(f"profile: {what}: rate factors must be non-negative")
        return np.where(self.weekend, weekend_h[self.hour], weekday_h[self.hour]) * dow[self.weekday]


def _month_day(text: str) -> int:
    try:
        month, day = (int(x) for x in str(text).split("-"))
    except ValueError as err:
        raise TraceError(f"profile: calendar period date {text!r} is not MM-DD") from err
    return month * 100 + day


def _open_mask(grid: _Grid, room: Mapping[str, Any]) -> np.ndarray:
    def hours_open(span: list[int]) -> np.ndarray:
        lo, hi = int(span[0]), int(span[1])
        return (grid.hour >= lo) & (grid.hour < hi)

    return np.where(grid.weekend, hours_open(room["weekend_hours"]), hours_open(room["weekday_hours"]))


# ------------------------------------------------------------------ logins


def _simulate_logins(
    rng: np.random.Generator,
    lam: np.ndarray,
    next_close: np.ndarray,
    room_of: np.ndarray,
    end_h: float,
    session: Mapping[str, Any],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Alternating free/busy process per machine, all machines in lock-step.

    ``lam[r, k]``: arrival rate (per hour) at a free machine of room r in hour k;
    ``next_close[r, k]``: the hour at which room r next closes (sessions are cut
    there). Returns machine index, start and end, in whole seconds.
    """
    rooms, hours = lam.shape
    cum = np.zeros((rooms, hours + 1))
    np.cumsum(lam, axis=1, out=cum[:, 1:])
    # Λ_r at the trace end (the last hour may be partial).
    k_end = min(int(end_h), hours - 1)
    total = cum[:, k_end] + (end_h - k_end) * lam[:, k_end]
    stride = hours + 1
    gap = float(cum[:, -1].max()) + 1.0
    flat = (cum + gap * np.arange(rooms)[:, None]).ravel()  # one sorted array for all rooms

    machines = np.arange(room_of.size)
    t = np.zeros(room_of.size)  # whole seconds: rounding here keeps sessions of a machine apart
    end_s = math.floor(end_h * 3600.0)
    out_m: list[np.ndarray] = []
    out_s: list[np.ndarray] = []
    out_e: list[np.ndarray] = []
    while machines.size:
        r = room_of[machines]
        th = t / 3600.0
        k = np.minimum(th.astype(np.int64), hours - 1)
        u = cum[r, k] + (th - k) * lam[r, k] + rng.standard_exponential(machines.size)
        alive = u < total[r]
        machines, r, u, t = machines[alive], r[alive], u[alive], t[alive]
        if not machines.size:
            break
        pos = np.searchsorted(flat, u + gap * r, side="right") - 1
        # Clipping guards against rounding in the offset sums (never hit in practice).
        k = np.clip(pos - r * stride, 0, hours - 1)
        rate = lam[r, k]
        frac = np.divide(u - cum[r, k], rate, out=np.zeros_like(u), where=rate > 0)
        start = np.maximum(np.round((k + np.clip(frac, 0.0, 1.0)) * 3600.0), t)
        length = np.round(_sample_mixture(rng, machines.size, session, "logins.session"))
        end = np.minimum(np.minimum(start + length, next_close[r, k] * 3600.0), end_s)
        out_m.append(machines)
        out_s.append(start)
        out_e.append(end)
        t = end
    if not out_m:
        return np.zeros(0, np.int32), np.zeros(0), np.zeros(0)
    return np.concatenate(out_m).astype(np.int32), np.concatenate(out_s), np.concatenate(out_e)


def _next_close(open_mask: np.ndarray, truncate: bool) -> np.ndarray:
    """For each hour, the first closed hour at or after it (``hours`` if none)."""
    hours = open_mask.size
    if not truncate:
        return np.full(hours, float(hours))
    idx = np.where(~open_mask, np.arange(hours), hours)
    return np.minimum.accumulate(idx[::-1])[::-1].astype(np.float64)


class _Model:
    """A resolved profile laid out on an hourly grid."""

    def __init__(self, prof: Mapping[str, Any], days: float):
        cal = prof["calendar"]
        self.start = parse_start(cal["start"], cal.get("timezone"), "profile calendar")
        self.length = float(days) * 86400.0
        self.end_h = self.length / 3600.0
        hours = max(int(math.ceil(self.end_h)), 1)
        self.grid = _Grid(self.start, hours, cal)
        types = prof["machine_types"]
        names, rooms, active, idle, room_index, popularity, opens, kinds = [], [], [], [], [], [], [], []
        for kind in prof["rooms"]:
            mtype = types.get(kind["type"])
            if mtype is None:
                raise TraceError(f"profile: room {kind['name']!r} has unknown machine type {kind['type']!r}")
            count, per_room = int(kind.get("count", 1)), int(kind["machines"])
            if count < 0 or per_room < 0:
                raise TraceError(f"profile: room {kind['name']!r}: negative count or machines")
            mask = _open_mask(self.grid, kind)
            for i in range(count):
                room = f"{kind['name']}-{i + 1:02d}" if count > 1 else str(kind["name"])
                opens.append(mask)
                kinds.append(str(kind["name"]))
                popularity.append(float(kind.get("popularity", 1.0)))
                for j in range(per_room):
                    names.append(f"{room}-{j + 1:03d}")
                    rooms.append(room)
                    room_index.append(len(opens) - 1)
                    active.append(float(mtype["active_watts"]))
                    idle.append(float(mtype["idle_watts"]))
        if not names:
            raise TraceError("profile: no machines (rooms with machines > 0 needed)")
        self.names, self.rooms = names, rooms
        self.room_kinds = kinds  # per individual room: the [[rooms]] entry it came from
        self.active, self.idle = np.array(active), np.array(idle)
        self.room_of = np.array(room_index, dtype=np.int64)
        self.open = np.array(opens)
        logins = prof["logins"]
        base = self.grid.profile(logins, "logins") * self.grid.login_factor
        self.login_shape = np.array(popularity)[:, None] * base[None, :] * self.open
        truncate = bool(logins.get("truncate_at_close", True))
        self.next_close = np.array([_next_close(m, truncate) for m in self.open])
        self.job_shape = self.grid.profile(prof["jobs"], "jobs") * self.grid.job_factor


def _login_scale(prof: dict[str, Any]) -> float:
    logins = prof["logins"]
    if "rate_per_hour" in logins:
        return float(logins["rate_per_hour"])
    if "per_year" not in logins:
        raise TraceError("profile: logins needs per_year or rate_per_hour")
    return _calibrated_scale(json.dumps(prof, sort_keys=True))


@lru_cache(maxsize=16)
def _calibrated_scale(prof_json: str) -> float:
    """Rate scale s giving ``logins.per_year`` logins over one calendar year.

    Starts from the quasi-stationary estimate (a free machine sees arrivals at
    λ, so a fraction 1/(1 + λ·E[S]) of time is free) and corrects it by
    simulating the year with a fixed seed (secant steps on log s).
    """
    prof = json.loads(prof_json)
    target = float(prof["logins"]["per_year"])
    if target <= 0:
        return 0.0
    model = _Model(prof, 365.0)
    rng = np.random.default_rng(_CALIBRATION_SEED)
    mean_h = float(_sample_mixture(rng, 200_000, prof["logins"]["session"], "logins.session").mean()) / 3600.0
    machines = np.bincount(model.room_of, minlength=model.open.shape[0])
    shape = model.login_shape

    def expected(s: float) -> float:
        lam = s * shape
        return float((machines[:, None] * lam / (1.0 + lam * mean_h)).sum())

    lo, hi = 0.0, 1.0
    while expected(hi) < target:
        hi *= 2.0
        if hi > 1e9:
            raise TraceError("profile: logins.per_year cannot be reached with these rooms and hours")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if expected(mid) < target else (lo, mid)
    scale = 0.5 * (lo + hi)

    def simulate(s: float) -> float:
        m, _, _ = _simulate_logins(
            np.random.default_rng(_CALIBRATION_SEED), s * shape, model.next_close, model.room_of, model.end_h,
            prof["logins"]["session"],
        )
        return float(m.size)

    points: list[tuple[float, float]] = [(math.log(scale), math.log(simulate(scale)))]
    for _ in range(4):
        x, y = points[-1]
        if abs(y - math.log(target)) < 0.002:
            break
        if len(points) == 1:
            slope = 1.0
        else:
            (x0, y0), (x1, y1) = points[-2], points[-1]
            slope = (y1 - y0) / (x1 - x0) if x1 != x0 else 1.0
            slope = min(max(slope, 0.2), 2.0)
        x_new = x + (math.log(target) - y) / slope
        points.append((x_new, math.log(simulate(math.exp(x_new)))))
    best = min(points, key=lambda p: abs(p[1] - math.log(target)))
    log.debug("login scale calibrated: %s", points)
    return math.exp(best[0])


# ------------------------------------------------------------------ jobs


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


def _generate_jobs(
    rng: np.random.Generator, prof: Mapping[str, Any], model: _Model
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Smooth-rate jobs: cluster number, proc, submit, duration, owner index; and the owner names."""
    jobs = prof["jobs"]
    size_spec = jobs["cluster_size"]
    shape = model.job_shape
    if "rate_per_hour" in jobs:
        scale = float(jobs["rate_per_hour"])
    elif "per_year" in jobs:
        year = _Model(prof, 365.0).job_shape if model.end_h != 365 * 24 else shape
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
    sizes = _sizes_summing_to(rng, n_jobs, size_spec)
    clusters = sizes.size
    u = np.sort(rng.random(clusters)) * total
    k = np.clip(np.searchsorted(cum, u, side="right") - 1, 0, shape.size - 1)
    rate = shape[k]
    submit_h = k + np.clip(np.divide(u - cum[k], rate, out=np.zeros_like(u), where=rate > 0), 0.0, 1.0)
    dur_spec = jobs["duration"]
    base = _sample_mixture(rng, clusters, dur_spec, "jobs.duration")
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


def _job_names(cluster_no: np.ndarray, proc: np.ndarray) -> StringColumn:
    """``cluster.proc``, built as one text (no string object per job survives)."""
    return StringColumn.from_text(
        "".join(map("{}.{}".format, cluster_no.tolist(), proc.tolist())), _digits(cluster_no) + 1 + _digits(proc)
    )


SURGE_OWNER = "surge"
"""Owner of the jobs of ``[[job_surges]]`` (one heavy user's batch)."""


def _add_episodes(prof: Mapping[str, Any], model: _Model, seed: int, logins: tuple, jobs: tuple) -> tuple[tuple, tuple]:
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


# ------------------------------------------------------------------ entry point


def generate_trace(
    profile: str | Path | Mapping[str, Any] = "newcastle-2010",
    *,
    days: float | None = None,
    seed: int = 0,
    overrides: Iterable[str] = (),
) -> Trace:
    """Generate a synthetic trace.

    ``profile``: preset name (see :data:`PRESETS`), TOML path, or dict
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
        model = _Model(prof, days)
        scale = _login_scale(prof)
        rng = np.random.default_rng(seed)
        machine, start, end = _simulate_logins(
            rng, scale * model.login_shape, model.next_close, model.room_of, model.end_h, prof["logins"]["session"]
        )
        # A session that rounding squeezes to nothing (a login in the last
        # half second before closing) is no session.
        keep = end > start
        machine, start, end = machine[keep], start[keep], end[keep]
        jobs = _generate_jobs(rng, prof, model)
        if episodes.has_episodes(prof):
            (machine, start, end), jobs = _add_episodes(prof, model, seed, (machine, start, end), jobs)
        order = np.lexsort((machine, start))
        cluster_no, proc, submit, duration, owner_of, user_names = jobs
        names = _job_names(cluster_no, proc)
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


def prof_name(raw: Mapping[str, Any]) -> str:
    name = raw.get("name", "custom")
    return str(name["value"]) if _is_wrapped(name) else str(name)
