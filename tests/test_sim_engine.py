"""The simulator's engine against hand-computed runs and closed-form results."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from _simutil import make_trace, poisson_trace
from condor_rlrep.sim.clock import LocalClock
from condor_rlrep.sim.engine import Engine, EngineConfig

NO_REBOOT = EngineConfig(reboot_hour=None)


def run(trace, config=NO_REBOOT, seed=0):
    engine = Engine(trace, config, np.random.default_rng(seed))
    stats = engine.run()
    return engine, stats


def test_login_evicts_job_which_restarts_from_scratch():
    # One machine: job of 100 s from t=0, a user logs in 50..60.
    trace = make_trace(machines=1, length=1000, login_machine=[0], login_start=[50], login_end=[60],
                       job_submit=[0], job_duration=[100], watts=[80.0])
    engine, stats = run(trace)
    assert engine.jfinish[0] == 160.0
    assert engine.jevict[0] == 1
    assert stats.evictions_background == 1
    assert stats.background_energy_j == pytest.approx((50 + 100) * 80.0)
    assert engine.jfirst[0] == 0


def test_job_waits_for_logged_in_machine():
    trace = make_trace(machines=1, length=1000, login_machine=[0], login_start=[0], login_end=[300],
                       job_submit=[10], job_duration=[100])
    engine, stats = run(trace)
    assert engine.jfinish[0] == 400.0
    assert stats.evictions_background == 0


def test_overlapping_sessions_keep_machine_taken():
    # Two sessions overlap (0..100 and 50..200): the machine is free only at 200.
    trace = make_trace(machines=1, length=1000, login_machine=[0, 0], login_start=[0, 50], login_end=[100, 200],
                       job_submit=[10], job_duration=[10])
    engine, _ = run(trace)
    assert engine.jfinish[0] == 210.0


def test_nightly_reboot_kills_and_requeues():
    # Trace starts at midnight UTC; reboot at 03:00 = 10800 s.
    trace = make_trace(machines=2, length=86400, job_submit=[10000, 10790], job_duration=[1000, 5])
    engine, stats = run(trace, EngineConfig(reboot_hour=3.0))
    assert engine.jfinish[0] == 10800.0 + 1000.0  # killed at 03:00, restarted at once
    assert engine.jfinish[1] == 10795.0  # finished before the reboot
    assert stats.reboot_kills_background == 1
    assert stats.evictions_background == 0


def test_negotiation_interval_delays_matching():
    trace = make_trace(machines=1, length=1000, job_submit=[10, 20], job_duration=[30, 30])
    engine, _ = run(trace, EngineConfig(negotiation_interval=60, reboot_hour=None))
    # Both wait for the cycle at 60; the second waits for the next cycle
    # after the first finishes at 90 (cycle at 120).
    assert engine.jfinish[0] == 90.0
    assert engine.jfinish[1] == 150.0


def test_efficient_choice_takes_lowest_watts_first():
    trace = make_trace(machines=3, length=1000, job_submit=[0, 1], job_duration=[100, 100], watts=[100, 50, 75])
    engine, stats = run(trace, EngineConfig(machine_choice="efficient", reboot_hour=None))
    assert engine.jmachine[0] == 1
    assert engine.jmachine[1] == 2
    assert stats.background_energy_j == pytest.approx(100 * 50 + 100 * 75)


def test_slot_order_takes_the_lowest_free_machine_as_the_negotiator_does():
    # machine 0 is owned 0..50; jobs at 0 and 1 take machines 1 and 2; the job at 60 takes machine 0 (free again,
    # lowest), the one at 70 machine 3; after the job on machine 1 ends (at 100) the job at 120 takes machine 1
    trace = make_trace(machines=5, length=1000, login_machine=[0], login_start=[0], login_end=[50],
                       job_submit=[0, 1, 60, 70, 120], job_duration=[100, 500, 500, 500, 10])
    engine, _ = run(trace, EngineConfig(machine_choice="slot-order", reboot_hour=None))
    assert list(engine.jmachine[:5]) == [1, 2, 0, 3, 1]
    # and so on every seed: nothing is drawn
    assert list(run(trace, EngineConfig(machine_choice="slot-order", reboot_hour=None), seed=7)[0].jmachine[:5]) == \
        [1, 2, 0, 3, 1]


def test_queue_is_fifo_and_evicted_job_keeps_its_place():
    # One machine; jobs 0 and 1 queued behind job 0's eviction: job 0 runs first again.
    trace = make_trace(machines=1, length=10_000, login_machine=[0], login_start=[50], login_end=[60],
                       job_submit=[0, 1], job_duration=[100, 100])
    engine, _ = run(trace)
    assert engine.jfinish[0] == 160.0
    assert engine.jfinish[1] == 260.0


def test_running_jobs_are_charged_up_to_the_end():
    trace = make_trace(machines=1, length=500, job_submit=[0], job_duration=[1000], watts=[10.0])
    engine, stats = run(trace)
    assert math.isnan(engine.jfinish[0])
    assert stats.background_energy_j == pytest.approx(500 * 10.0)


def test_clock_follows_daylight_saving():
    london = ZoneInfo("Europe/London")
    start = datetime(2010, 3, 27, 0, 0, tzinfo=london)  # BST starts 2010-03-28 01:00 UTC
    clock = LocalClock(start, 3 * 86400)
    reboots = clock.daily(3.0)
    utc = start.astimezone(timezone.utc)  # add real seconds, not wall-clock ones
    local = [(utc + timedelta(seconds=float(t))).astimezone(london) for t in reboots]
    assert [d.hour for d in local] == [3, 3, 3]
    assert reboots[1] - reboots[0] == 23 * 3600  # the short night
    assert clock.hour(0) == 0
    assert clock.hour(float(reboots[1])) == 3
    assert clock.hours(np.asarray(reboots)).tolist() == [3, 3, 3]


def _mean_restart_time(rate: float, length: float) -> float:
    """E[T] of a job of length L restarted from scratch at Poisson(λ) failures."""
    return (math.exp(rate * length) - 1.0) / rate


def test_mean_completion_time_matches_closed_form():
    # λL = 1: E[T] = (e − 1)/λ. Ample machines, interval 0, no reboot, 1 s sessions.
    rng = np.random.default_rng(7)
    rate, length, jobs = 1 / 3600.0, 3600.0, 6000
    trace = poisson_trace(rng, machines=300, rate=rate, length=1.6e6, session=1.0, jobs=jobs,
                          job_length=length, job_window=(0, 1.0e6))
    engine, stats = run(trace, seed=3)
    done = np.asarray(engine.jfinish[:jobs]) - np.asarray(engine.jsubmit[:jobs])
    assert not np.isnan(done).any()
    expected = _mean_restart_time(rate, length)
    assert abs(done.mean() / expected - 1) < 0.03
    assert stats.evictions_background > 0.5 * jobs  # E[evictions] = e^{λL} − 1 ≈ 1.72 per job


def test_one_rng_same_seed_same_run():
    rng = np.random.default_rng(1)
    trace = poisson_trace(rng, machines=20, rate=1 / 1800, length=2e5, session=600, jobs=300,
                          job_length=2000, job_window=(0, 1e5))
    a, sa = run(trace, EngineConfig(), seed=5)
    b, sb = run(trace, EngineConfig(), seed=5)
    c, _ = run(trace, EngineConfig(), seed=6)
    assert np.array_equal(a.jfinish, b.jfinish, equal_nan=True) and a.jmachine == b.jmachine and a.njobs == b.njobs
    assert sa == sb
    assert a.jmachine != c.jmachine


def test_engine_config_rejects_bad_values():
    with pytest.raises(ValueError):
        EngineConfig(negotiation_interval=-1)
    with pytest.raises(ValueError):
        EngineConfig(machine_choice="fastest")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        EngineConfig(reboot_hour=24)


def test_owner_idle_time_before_a_machine_takes_jobs_again():
    # Logout at 100; with 900 s idle the job queued at 50 starts at 1000 —
    # unless the user comes back first (second machine: back at 500, gone at 600).
    trace = make_trace(machines=2, length=10_000, login_machine=[0, 1, 1], login_start=[0, 0, 500],
                       login_end=[100, 200, 600], job_submit=[50, 60], job_duration=[600, 600])
    engine, _ = run(trace, EngineConfig(reboot_hour=None, owner_idle=900))
    assert engine.jfinish[0] == 1600.0 and engine.jmachine[0] == 0
    assert engine.jfinish[1] == 2100.0 and engine.jmachine[1] == 1  # ready at 600 + 900, not 200 + 900
    engine, _ = run(trace, EngineConfig(reboot_hour=None))
    assert engine.jfinish[0] == 700.0 and engine.jfinish[1] == 1200.0


def test_superseded_completions_are_counted_apart_from_events():
    # The run evicted at 50 leaves its completion (due at 100) in the heap: a
    # stale pop, not an event. Events: login, logout, job arrival, completion.
    trace = make_trace(machines=1, length=1000, login_machine=[0], login_start=[50], login_end=[60],
                       job_submit=[0], job_duration=[100])
    _, stats = run(trace)
    assert stats.events == 4 and stats.stale_pops == 1


def test_first_run_outcome_per_job():
    # job 0 evicted (first run lost), job 1 clean, job 2 never ran
    trace = make_trace(machines=1, length=400, login_machine=[0], login_start=[50], login_end=[60],
                       job_submit=[0, 1, 2], job_duration=[100, 50, 500])
    engine, _ = run(trace)
    assert engine.jfirst.tolist() == [0, 1, 0]  # job 2 started at 260, still running at 400
    trace = make_trace(machines=1, length=90, job_submit=[0, 1], job_duration=[100, 100])
    engine, _ = run(trace)
    assert engine.jfirst.tolist() == [0, -1]  # still running at the end; never started


@pytest.mark.parametrize("config", [EngineConfig(), EngineConfig(negotiation_interval=300.0),
                                    EngineConfig(owner_idle=600.0), EngineConfig(machine_choice="efficient")])
def test_stream_windows_do_not_change_the_run(monkeypatch, config):
    # Whole-second times make many ties; windows of a handful of events put
    # window edges among them. The run must be the one-window run.
    rng = np.random.default_rng(11)
    trace = poisson_trace(rng, machines=12, rate=1 / 2000, length=3e5, session=700, jobs=400,
                          job_length=1500, job_window=(0, 2.5e5))
    trace.login_start = np.round(trace.login_start / 60) * 60
    trace.login_end = trace.login_start + np.round(rng.uniform(60, 3000, trace.login_count) / 60) * 60
    trace.job_submit = np.round(trace.job_submit / 60) * 60
    trace.active_watts = rng.choice([50.0, 80.0], trace.machine_count)
    import condor_rlrep.sim.engine as engine_module

    whole, whole_stats = run(trace, config, seed=2)
    monkeypatch.setattr(engine_module, "_CHUNK", 7)
    windowed, windowed_stats = run(trace, config, seed=2)
    assert whole_stats == windowed_stats
    assert np.array_equal(whole.jfinish, windowed.jfinish, equal_nan=True) and whole.jmachine == windowed.jmachine
