"""Irregular episodes of the synthetic year (practical classes, outages, HTC
surges), the calibrated preset, and the smooth preset kept bit for bit."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.episodes import union_sessions
from condor_rlrep.sim.generator import SURGE_OWNER, generate_trace
from condor_rlrep.sim.profile import PRESETS, load_profile, resolve_profile
from condor_rlrep.sim.trace import Trace
from condor_rlrep.sim.trace_io import validate_trace

HOUR = 3600.0
DAY = 86400.0


def _digest(trace: Trace) -> str:
    h = hashlib.sha256()
    for a in (trace.login_machine, trace.login_start, trace.login_end, trace.job_submit, trace.job_duration,
              trace.active_watts, trace.idle_watts):
        h.update(np.ascontiguousarray(a).tobytes())
    for col in (trace.machine_names, trace.machine_rooms, list(trace.job_names), trace.job_owner):
        h.update("\x00".join(col).encode())
    h.update(repr((trace.start, trace.length, trace.source)).encode())
    return h.hexdigest()


# Digests of traces made by the generator before episodes existed (commit
# a1bc2b5): committed results name the preset and regenerate from it, so the
# smooth presets must not move by a bit.
@pytest.mark.parametrize(
    ("preset", "days", "seed", "digest"),
    [
        ("newcastle-2010", 21, 3, "5e9285b617793abf16bb257c45fad3ad208e23cc20cb400c668c2d8ed4eed7d6"),
        ("poisson", 5, 1, "e46054cea0dae8f9ee9129fc5fb9c6626b3eec59202fef3dd96dbe08ae6b47db"),
    ],
)
def test_smooth_presets_are_byte_identical_to_before(preset: str, days: int, seed: int, digest: str) -> None:
    assert _digest(generate_trace(preset, days=days, seed=seed)) == digest


def _room(machines: int = 20, hours: list[int] | None = None) -> dict:
    """A one-room profile with no smooth logins and no smooth jobs (only episodes)."""
    raw = resolve_profile(load_profile("poisson"))
    raw["calendar"].update(start="2010-01-04T00:00:00", days=7)  # a Monday
    raw["rooms"][0].update(name="lab", machines=machines,
                           weekday_hours=hours or [8, 20], weekend_hours=[0, 0])
    raw["logins"]["rate_per_hour"] = 0.0
    raw["jobs"]["rate_per_hour"] = 0.0
    return raw


def _burst(**kw: object) -> dict:
    spec = {"rooms": ["lab"], "per_day": 1.0, "start_hours": [10, 11], "minutes": 110, "arrive_minutes": 10,
            "fill": 0.75, "weekdays_only": True}
    spec.update(kw)
    return spec


def test_a_class_adds_fill_times_machines_logins_in_its_window() -> None:
    prof = _room(machines=20)
    prof["calendar"]["days"] = 1  # Monday only: every class starts at 10:00
    prof["login_bursts"] = [_burst()]
    seen = 0
    for seed in range(12):
        trace = generate_trace(prof, seed=seed)
        if trace.login_count == 0:
            continue
        seen += 1
        # one class, or several unioned: 0.75 × 20 = 15 machines each, none twice
        assert np.unique(trace.login_machine).size == trace.login_count
        assert trace.login_count >= 15
        assert np.all(trace.login_start >= 10 * HOUR) and np.all(trace.login_start <= 10 * HOUR + 600)
        np.testing.assert_array_equal(trace.login_end, 10 * HOUR + 110 * 60)
    assert seen >= 6  # P(no class in a day) = e^-1


def test_exactly_one_class_gives_exactly_fifteen_logins() -> None:
    prof = _room(machines=20)
    prof["calendar"]["days"] = 1
    prof["login_bursts"] = [_burst(per_day=0.2)]
    counts = {generate_trace(prof, seed=s).login_count for s in range(20)}
    assert counts <= {0, 15, 16, 17, 18, 19, 20} and 15 in counts  # a 2nd class in the hour only adds machines


def test_classes_keep_to_eligible_hours_days_and_closing_time() -> None:
    prof = _room(machines=10, hours=[8, 11])
    prof["logins"]["truncate_at_close"] = True
    prof["login_bursts"] = [_burst(per_day=3.0, start_hours=[9, 11], minutes=300, fill=1.0)]
    trace = generate_trace(prof, seed=4)
    assert trace.login_count > 0
    hour_of_day = (trace.login_start % DAY) / HOUR
    assert np.all((hour_of_day >= 9) & (hour_of_day < 11 + 1 / 6))
    assert np.all(trace.login_start // DAY < 5)  # Monday–Friday only
    assert np.all(trace.login_end % DAY <= 11 * HOUR)  # cut at closing (11:00), not 5 h later


def test_a_down_machine_is_unavailable_for_its_days() -> None:
    prof = _room(machines=3)
    prof["calendar"]["days"] = 60
    prof["outages"] = [{"scope": "machine", "per_year": 40, "days_median": 2.5, "days_sigma": 0.0}]
    trace = generate_trace(prof, seed=1)
    validate_trace(trace)
    spans = trace.login_end - trace.login_start
    assert trace.login_count > 0
    # each outage is one 2.5-day "login" (two on one machine may overlap into a union)
    cut = trace.login_end >= trace.length
    assert np.all(spans[~cut] >= 2.5 * DAY) and np.all(spans[~cut] % (2.5 * DAY) <= 2.5 * DAY)


def test_a_down_room_takes_all_its_machines_at_once() -> None:
    prof = _room(machines=4)
    prof["calendar"]["days"] = 365
    prof["outages"] = [{"scope": "room", "per_year": 3, "days_median": 1.0, "days_sigma": 0.0}]
    trace = generate_trace(prof, seed=2)
    assert trace.login_count > 0 and trace.login_count % 4 == 0
    starts = trace.login_start.reshape(-1, 4)  # sorted by start: the room's 4 machines together
    assert np.all(starts == starts[:, :1])


def test_a_down_machine_takes_no_job_in_the_simulator() -> None:
    from condor_rlrep.sim.config import SimConfig
    from condor_rlrep.sim.run import simulate

    prof = _room(machines=1)
    prof["calendar"]["days"] = 3
    prof["jobs"]["rate_per_hour"] = 2.0
    prof["outages"] = [{"scope": "machine", "per_year": 365 * 3, "days_median": 1.0, "days_sigma": 0.0}]
    trace = generate_trace(prof, seed=3)
    down = list(zip(trace.login_start.tolist(), trace.login_end.tolist()))
    assert down
    result = simulate(trace, SimConfig(workflows=(), fraction=0.0, policy="single", reboot_hour=None))
    busy = result.energy_kwh["background"] * 3.6e6 / float(trace.active_watts[0])  # seconds of job runs
    free = trace.length - sum(e - s for s, e in _merged(down))
    assert busy <= free + 1e-6


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def test_a_surge_adds_its_jobs_in_its_window() -> None:
    prof = _room(machines=5)
    prof["job_surges"] = [{"per_year": 200, "jobs": 250, "cluster_jobs": 100, "spread_hours": 2,
                           "start_hours": [9, 10], "duration_median": 600, "duration_sigma": 0.0}]
    trace = generate_trace(prof, seed=5)
    validate_trace(trace)
    assert trace.job_count > 0 and trace.job_count % 250 == 0
    assert set(trace.job_owner) == {SURGE_OWNER}
    np.testing.assert_array_equal(trace.job_duration, 600)
    hour_of_day = (trace.job_submit % DAY) / HOUR
    assert np.all((hour_of_day >= 9) & (hour_of_day <= 12))
    names = list(trace.job_names)
    assert len(set(names)) == len(names)
    procs = {}
    for name in names:
        cluster, proc = name.split(".")
        procs.setdefault(cluster, []).append(int(proc))
    assert sorted(len(v) for v in procs.values()) == sorted([100, 100, 50] * (trace.job_count // 250))
    assert all(sorted(v) == list(range(len(v))) for v in procs.values())


def test_surges_come_after_the_smooth_jobs_numbering() -> None:
    prof = _room(machines=5)
    prof["jobs"]["rate_per_hour"] = 3.0
    smooth = generate_trace(prof, seed=6)
    prof["job_surges"] = [{"per_year": 100, "jobs": 40, "duration_median": 60, "start_hours": [0, 24],
                           "weekdays_only": False}]
    both = generate_trace(prof, seed=6)
    assert both.job_count > smooth.job_count
    # the smooth jobs are untouched: same names, submits and lengths, in order
    smooth_names = list(smooth.job_names)
    kept = [i for i, n in enumerate(both.job_names) if both.job_owner[i] != SURGE_OWNER]
    assert [both.job_names[i] for i in kept] == smooth_names
    np.testing.assert_array_equal(both.job_submit[kept], smooth.job_submit)


def test_bad_episode_specs_name_the_fault() -> None:
    prof = _room()
    prof["login_bursts"] = [_burst(fill=1.5)]
    with pytest.raises(TraceError, match=r"login_bursts\[0\]\.fill"):
        generate_trace(prof, seed=0)
    prof["login_bursts"] = [_burst(rooms=["nowhere"])]
    with pytest.raises(TraceError, match="unknown room kind"):
        generate_trace(prof, seed=0)
    prof["login_bursts"] = []
    prof["outages"] = [{"scope": "building", "per_year": 1, "days_median": 1}]
    with pytest.raises(TraceError, match=r"outages\[0\]\.scope"):
        generate_trace(prof, seed=0)
    prof["outages"] = [{"per_year": 1}]
    with pytest.raises(TraceError, match="days_median"):
        generate_trace(prof, seed=0)
    prof["outages"] = []
    prof["job_surges"] = [{"per_year": 1, "jobs": 10, "duration_median": 60, "start_hours": [20, 10]}]
    with pytest.raises(TraceError, match="start_hours"):
        generate_trace(prof, seed=0)


# ---------------------------------------------------------------- properties

_intervals = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 200), st.integers(0, 60)), min_size=0, max_size=40
)


def _arrays(items: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = np.array([i[0] for i in items], dtype=np.int32)
    s = np.array([i[1] for i in items], dtype=np.float64)
    e = s + np.array([i[2] for i in items], dtype=np.float64)
    return m, s, e


@settings(max_examples=200, deadline=None)
@given(_intervals)
def test_union_sessions_is_the_union(items: list[tuple[int, int, int]]) -> None:
    m, s, e = _arrays(items)
    um, us, ue = union_sessions(m, s, e)
    for machine in range(5):
        mine = um == machine
        starts, ends = us[mine], ue[mine]
        assert np.all(np.diff(starts) >= 0)
        assert np.all(starts[1:] >= ends[:-1])  # no two overlap
        want = _merged_open([(a, b) for a, b, k in zip(s, e, m) if k == machine])
        got = _merged_open(list(zip(starts.tolist(), ends.tolist())))
        assert got == want  # the same busy time, point for point


def _merged_open(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Union of intervals as open sets: touching intervals stay one busy stretch."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    per_day=st.floats(0.0, 4.0),
    fill=st.floats(0.0, 1.0),
    outages=st.floats(0.0, 400.0),
    surges=st.floats(0.0, 300.0),
    login_rate=st.sampled_from([0.0, 0.2, 1.0]),
)
def test_generated_traces_keep_their_invariants(seed, per_day, fill, outages, surges, login_rate) -> None:
    prof = _room(machines=6)
    prof["calendar"]["days"] = 5
    prof["logins"]["rate_per_hour"] = login_rate
    prof["logins"]["session"]["components"] = [{"weight": 1.0, "dist": "lognormal", "median": 3000, "sigma": 0.7}]
    prof["logins"]["session"]["max_seconds"] = 20000
    prof["jobs"]["rate_per_hour"] = 1.0
    prof["login_bursts"] = [_burst(per_day=per_day, fill=fill, start_hours=[9, 15])]
    prof["outages"] = [{"scope": "machine", "per_year": outages, "days_median": 0.5, "days_sigma": 1.0}]
    prof["job_surges"] = [{"per_year": surges, "jobs": 7, "cluster_jobs": 3, "spread_hours": 1,
                           "duration_median": 900, "duration_sigma": 1.0}]
    trace = generate_trace(prof, seed=seed)
    if trace.login_count or trace.job_count:
        validate_trace(trace)
    assert np.all(trace.login_start >= 0) and np.all(trace.login_end <= trace.length)
    assert np.all(trace.login_end > trace.login_start)
    for machine in range(6):
        mine = trace.login_machine == machine
        assert np.all(trace.login_start[mine][1:] >= trace.login_end[mine][:-1])
    assert np.all(np.diff(trace.job_submit) >= 0) and np.all(trace.job_submit < trace.length)
    assert len(set(trace.job_names)) == trace.job_count
    assert generate_trace(prof, seed=seed).login_start.tobytes() == trace.login_start.tobytes()


# ---------------------------------------------------------------- the calibrated preset


def test_calibrated_preset_is_shipped_and_keeps_the_smooth_year() -> None:
    assert "newcastle-2010-cal" in PRESETS
    cal = resolve_profile(load_profile("newcastle-2010-cal"))
    smooth = resolve_profile(load_profile("newcastle-2010"))
    assert {"login_bursts", "outages", "job_surges"} <= set(cal)
    same = [{k: v for k, v in r.items() if k != "popularity"} for r in cal["rooms"]]
    assert same == [{k: v for k, v in r.items() if k != "popularity"} for r in smooth["rooms"]]
    assert cal["machine_types"] == smooth["machine_types"] and cal["logins"] == smooth["logins"]
    # the calibrated values say so in their sources
    raw = load_profile("newcastle-2010-cal")
    assert "calibrated" in raw["jobs"]["per_year"]["source"]
    assert all("calibrated" in r["source"] for r, s in zip(raw["rooms"], smooth["rooms"]) if r["popularity"] != s["popularity"])
    assert all("assumed" in e["source"] for kind in ("login_bursts", "outages", "job_surges") for e in raw[kind])


def test_calibrated_year_has_newcastle_counts() -> None:
    trace = generate_trace("newcastle-2010-cal", seed=11, days=56)
    validate_trace(trace)
    smooth = generate_trace("newcastle-2010", seed=11, days=56)
    assert trace.machine_count == smooth.machine_count == 1400
    assert SURGE_OWNER in set(trace.job_owner)
