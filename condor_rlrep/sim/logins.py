"""Login sessions of a generated trace, and the calibration of their rate.

Each machine alternates free and busy. While it is free, a user sits down
at the rate λ_r(t) = s · popularity_r · hourly(hour, weekend) ·
weekday(day) · term(date) · open_r(t) of its room r (a non-homogeneous
Poisson process, sampled exactly by inverting its cumulative intensity);
the session length comes from the profile's mixture
(:mod:`condor_rlrep.sim.lengths`) and is cut at the room's closing time.
Sessions on one machine never overlap. All machines step in lock-step,
vectorised: one round draws every free machine's next session.

The scale s is given (``rate_per_hour``) or calibrated (``per_year``): the
s with which a full calendar year yields that many logins, found once per
profile by simulating the year with a fixed seed (:func:`login_scale`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.hourly import HourlyModel
from condor_rlrep.sim.lengths import sample_mixture

__all__ = ["simulate_logins", "login_scale"]

log = logging.getLogger(__name__)

_CALIBRATION_SEED = 20100101


def simulate_logins(
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
        length = np.round(sample_mixture(rng, machines.size, session, "logins.session"))
        end = np.minimum(np.minimum(start + length, next_close[r, k] * 3600.0), end_s)
        out_m.append(machines)
        out_s.append(start)
        out_e.append(end)
        t = end
    if not out_m:
        return np.zeros(0, np.int32), np.zeros(0), np.zeros(0)
    return np.concatenate(out_m).astype(np.int32), np.concatenate(out_s), np.concatenate(out_e)


def login_scale(prof: dict[str, Any]) -> float:
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
    model = HourlyModel(prof, 365.0)
    rng = np.random.default_rng(_CALIBRATION_SEED)
    mean_h = float(sample_mixture(rng, 200_000, prof["logins"]["session"], "logins.session").mean()) / 3600.0
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
        m, _, _ = simulate_logins(
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
