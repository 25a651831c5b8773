"""Synthetic trace generator: Newcastle-scale counts and rhythms, the poisson preset, determinism, profiles."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.generator import generate_trace
from condor_rlrep.sim.lengths import cluster_sizes, mean_cluster_size
from condor_rlrep.sim.profile import PRESETS, load_profile, preset_path, resolve_profile
from condor_rlrep.sim.trace import Trace
from condor_rlrep.sim.trace_io import write_trace

REPO = Path(__file__).resolve().parents[1]

# Replication paper §5: the 2010 Newcastle trace.
PAPER_LOGINS = 1_229_820
PAPER_JOBS = 561_851
PAPER_MACHINES = 1_400


@pytest.fixture(scope="module")
def year() -> Trace:
    return generate_trace("newcastle-2010", seed=7)


# ---------------------------------------------------------------- newcastle-2010


def test_year_has_newcastle_scale(year: Trace) -> None:
    assert abs(year.machine_count - PAPER_MACHINES) <= 0.05 * PAPER_MACHINES
    assert abs(year.login_count - PAPER_LOGINS) <= 0.05 * PAPER_LOGINS
    assert abs(year.job_count - PAPER_JOBS) <= 0.05 * PAPER_JOBS
    assert year.length == 365 * 86400
    assert year.start.isoformat() == "2010-01-01T00:00:00+00:00"


def _term_weekday_rate(trace: Trace, hour: int) -> float:
    """Logins starting in local hour ``hour`` on weekdays of Feb-Mar and Oct-Nov (teaching terms)."""
    hours, weekday = trace.local_clock(trace.login_start)
    month = (np.datetime64("2010-01-01") + (trace.login_start // 86400).astype("timedelta64[D]")).astype("datetime64[M]")
    month_no = month.astype(np.int64) % 12 + 1
    term = np.isin(month_no, [2, 3, 10, 11])
    return float(np.sum(term & (weekday < 5) & (hours.astype(int) == hour)))


def test_daily_rhythm(year: Trace) -> None:
    assert _term_weekday_rate(year, 14) > 3 * _term_weekday_rate(year, 4)


def test_weekly_rhythm(year: Trace) -> None:
    _, weekday = year.local_clock(year.login_start)
    per_day = np.bincount(weekday, minlength=7)
    assert per_day[5:].max() < 0.6 * per_day[:5].min()
    _, job_weekday = year.local_clock(year.job_submit)
    jobs = np.bincount(job_weekday, minlength=7)
    assert jobs[5:].max() < jobs[:5].min()


def test_term_rhythm(year: Trace) -> None:
    day = (year.login_start // 86400).astype(int)
    per_day = np.bincount(day, minlength=365)
    november = per_day[305:334].mean()  # teaching
    august = per_day[213:243].mean()  # summer vacation
    assert november > 2 * august


def test_sessions_never_overlap_on_a_machine(year: Trace) -> None:
    order = np.lexsort((year.login_start, year.login_machine))
    m, s, e = year.login_machine[order], year.login_start[order], year.login_end[order]
    same = m[1:] == m[:-1]
    assert np.all(s[1:][same] >= e[:-1][same])
    assert np.all(year.login_end >= year.login_start)
    assert np.all(np.diff(year.login_start) >= 0) and np.all(np.diff(year.job_submit) >= 0)


def test_logins_respect_opening_hours(year: Trace) -> None:
    rooms = np.array(year.machine_rooms)[year.login_machine]
    dept = np.char.startswith(rooms.astype(str), "dept-")
    hours, weekday = year.local_clock(year.login_start[dept])
    assert dept.sum() > 1000
    assert np.all((weekday < 5) & (hours >= 9) & (hours < 17))
    end_hours, _ = year.local_clock(year.login_end[dept] - 1e-6)
    assert np.all(end_hours < 17)  # cut at closing time


def test_heavy_tailed_job_lengths(year: Trace) -> None:
    d = year.job_duration
    assert np.median(d) < np.mean(d)
    assert np.percentile(d, 99.9) > 20 * np.median(d)
    assert d.min() >= 10 and d.max() <= 172800
    # Clusters share a submit time; names are ClusterId.ProcId.
    assert year.job_names[0].endswith(".0")
    assert year.job_owner is not None and len(set(year.job_owner)) > 10


def test_power_figures_come_from_machine_types(year: Trace) -> None:
    assert set(zip(year.active_watts.tolist(), year.idle_watts.tolist())) == {(100.0, 63.5), (130.0, 75.0), (80.0, 47.0)}


# ---------------------------------------------------------------- determinism


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    for name, days in (("newcastle-2010", 10), ("poisson", 3)):
        write_trace(generate_trace(name, days=days, seed=11), tmp_path / f"{name}-a", compress=True)
        write_trace(generate_trace(name, days=days, seed=11), tmp_path / f"{name}-b", compress=True)
        write_trace(generate_trace(name, days=days, seed=12), tmp_path / f"{name}-c", compress=True)
        for file in ("machines.csv", "logins.csv.gz", "jobs.csv.gz", "trace.toml"):
            assert (tmp_path / f"{name}-a" / file).read_bytes() == (tmp_path / f"{name}-b" / file).read_bytes()
        assert (tmp_path / f"{name}-a" / "logins.csv.gz").read_bytes() != (tmp_path / f"{name}-c" / "logins.csv.gz").read_bytes()


def test_days_shorter_than_a_year_keep_the_yearly_rates(year: Trace) -> None:
    # A fortnight is not rescaled to a year's count: it has the rates of the
    # year's first fortnight (Christmas vacation, then exams).
    short = generate_trace("newcastle-2010", days=14, seed=1)
    assert short.length == 14 * 86400
    in_year = int(np.sum(year.login_start < 14 * 86400))
    assert abs(short.login_count - in_year) < 0.1 * in_year
    assert in_year < 0.9 * PAPER_LOGINS * 14 / 365  # below the yearly average
    assert np.all(short.login_end <= short.length) and np.all(short.job_submit < short.length)


def test_calendar_start_can_be_moved() -> None:
    trace = generate_trace("poisson", days=1, seed=1, overrides=['calendar.start="2010-07-01T06:30:00"', "calendar.timezone=Europe/London"])
    assert trace.start.isoformat() == "2010-07-01T06:30:00+01:00"
    assert trace.start.tzinfo.key == "Europe/London"


# ---------------------------------------------------------------- poisson


def test_poisson_preset_matches_its_closed_form() -> None:
    trace = generate_trace("poisson", seed=3)
    prof = resolve_profile(load_profile("poisson"))
    lam = prof["logins"]["rate_per_hour"] / 3600.0
    session = prof["logins"]["session"]["components"][0]["seconds"]
    machines = trace.machine_count
    # Alternating renewal: each cycle is an Exp(λ) gap plus one fixed session.
    expected = machines * trace.length / (1 / lam + session)
    assert abs(trace.login_count - expected) < 0.03 * expected
    inside = trace.login_end < trace.length  # the last sessions are cut at the trace end
    assert np.all(trace.login_end[inside] - trace.login_start[inside] == session)
    assert np.all(trace.login_end[~inside] == trace.length)
    order = np.lexsort((trace.login_start, trace.login_machine))
    m, s, e = trace.login_machine[order], trace.login_start[order], trace.login_end[order]
    gaps = (s[1:] - e[:-1])[m[1:] == m[:-1]]
    assert abs(gaps.mean() * lam - 1) < 0.03  # mean gap 1/λ
    assert abs(gaps.std() / gaps.mean() - 1) < 0.05  # exponential: CV = 1
    jobs_expected = prof["jobs"]["rate_per_hour"] * trace.length / 3600
    assert abs(trace.job_count - jobs_expected) < 4 * math.sqrt(jobs_expected)
    assert set(trace.job_duration.tolist()) == {1920.0}


def test_overrides_change_the_model() -> None:
    trace = generate_trace(
        "poisson", days=1, seed=0, overrides=["rooms.0.machines=5", "logins.rate_per_hour=2", "jobs.rate_per_hour=0"]
    )
    assert trace.machine_count == 5 and trace.job_count == 0
    assert 5 * 24 / (0.5 + 0.5) * 0.7 < trace.login_count < 5 * 24 / (0.5 + 0.5) * 1.3


@pytest.mark.parametrize(
    ("setting", "what"),
    [
        ("nonsense", "expected key=value"),
        ("logins.no_such=1", "no 'logins.no_such'"),
        ("rooms.7.machines=1", "not an index"),
        ("rooms.0.type=gold", "unknown machine type"),
        ("logins.hourly_weekday=[1, 2]", "24 values"),
    ],
)
def test_bad_overrides(setting: str, what: str) -> None:
    with pytest.raises(TraceError, match=what):
        generate_trace("poisson", days=1, seed=0, overrides=[setting])


def test_bad_profile_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such profile"):
        generate_trace(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("name = \n")
    with pytest.raises(TraceError, match="cannot parse profile"):
        generate_trace(tmp_path / "bad.toml")
    with pytest.raises(TraceError, match="days must be positive"):
        generate_trace("poisson", days=0)


# ---------------------------------------------------------------- profiles


def _unsourced(node: object, path: str, covered: bool) -> list[str]:
    """Leaf values with neither a table-level ``source`` nor a ``{value, source}`` wrapper."""
    if isinstance(node, dict):
        if "value" in node and "source" in node:
            return [] if str(node["source"]).strip() else [path]
        here = covered or bool(str(node.get("source", "")).strip())
        out: list[str] = []
        for key, value in node.items():
            if key in ("source", "name", "description", "label"):
                continue
            out += _unsourced(value, f"{path}.{key}", here)
        return out
    if isinstance(node, list) and node and isinstance(node[0], dict):
        return [p for i, item in enumerate(node) for p in _unsourced(item, f"{path}[{i}]", covered)]
    return [] if covered else [path]


@pytest.mark.parametrize("name", PRESETS)
def test_every_parameter_has_a_source(name: str) -> None:
    raw = tomllib.loads(preset_path(name).read_text())
    assert _unsourced(raw, name, False) == []


def test_source_check_would_catch_a_bare_value() -> None:
    assert _unsourced({"logins": {"per_year": 5}}, "p", False) == ["p.logins.per_year"]


def test_newcastle_sources_cite_the_paper_or_say_assumed() -> None:
    raw = tomllib.loads(preset_path("newcastle-2010").read_text())
    assert "paper §5" in raw["logins"]["per_year"]["source"]
    assert "paper §5" in raw["jobs"]["per_year"]["source"]
    assert raw["logins"]["per_year"]["value"] == PAPER_LOGINS and raw["jobs"]["per_year"]["value"] == PAPER_JOBS
    assert sum(r["count"] * r["machines"] for r in raw["rooms"]) == PAPER_MACHINES
    assert all("assumed" in r["source"] or "paper" in r["source"] for r in raw["rooms"])


def test_mean_cluster_size_formula() -> None:
    spec = {"median": 2.0, "sigma": 1.3, "max": 2000}
    sizes = cluster_sizes(np.random.default_rng(5), 400_000, spec)
    assert abs(sizes.mean() - mean_cluster_size(spec)) < 0.03 * sizes.mean()
    assert mean_cluster_size({"median": 1.0, "sigma": 0.0, "max": 1}) == 1.0


def test_per_year_target_is_calibrated_for_any_setting() -> None:
    trace = generate_trace("newcastle-2010", seed=2, overrides=["logins.per_year=400000", "jobs.per_year=100000"])
    assert abs(trace.login_count - 400_000) < 0.05 * 400_000
    assert abs(trace.job_count - 100_000) < 0.05 * 100_000


def test_cluster_sizes_hold_exactly_the_job_count() -> None:
    from condor_rlrep.sim.lengths import sizes_summing_to

    spec = {"median": 2.0, "sigma": 2.0, "max": 5000}
    rng = np.random.default_rng(9)
    for total in (0, 1, 7, 12345):
        sizes = sizes_summing_to(rng, total, spec)
        assert int(sizes.sum()) == total and (sizes.size == 0 or sizes.min() >= 1)


def test_profile_as_dict_gives_the_same_trace() -> None:
    resolved = resolve_profile(load_profile("poisson"))
    a = generate_trace(resolved, days=1, seed=5)
    b = generate_trace("poisson", days=1, seed=5)
    np.testing.assert_array_equal(a.login_start, b.login_start)
    assert a.job_names == b.job_names
