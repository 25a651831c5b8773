"""The simulator's slot-turnaround knob (``SimConfig.slot_turnaround``,
``--slot-turnaround``): a machine freed by removing a job (a losing
replica) is matched again only that many seconds later; a completed job's
machine at once (live, the schedd reuses its claim). Hand-computed times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _simutil import make_trace
from condor_rlrep.errors import InputError
from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.engine import Engine, EngineConfig
from condor_rlrep.sim.run import simulate


def _one_machine(logins=()):
    # job 0: 60 s from 0; job 1: 10 s, submitted at 5, queued behind it
    return make_trace(machines=1, length=1000.0, login_machine=[0] * len(logins),
                      login_start=[a for a, _ in logins], login_end=[b for _, b in logins],
                      job_submit=[0.0, 5.0], job_duration=[60.0, 10.0])


def _run(trace, turnaround, cancel_at=30.0, interval=0.0):
    engine = Engine(trace, EngineConfig(reboot_hour=None, slot_turnaround=turnaround,
                                        negotiation_interval=interval), np.random.default_rng(0))
    if cancel_at is not None:
        engine.call_at(cancel_at, lambda t: engine.cancel(0, t))
    engine.run()
    return engine


@pytest.mark.parametrize("turnaround, finish", [(0.0, 40.0), (7.0, 47.0), (0.5, 40.5)])
def test_a_removed_jobs_machine_waits_the_turnaround(turnaround, finish):
    # job 0 removed at 30: job 1 starts at 30 + turnaround, runs 10 s
    engine = _run(_one_machine(), turnaround)
    assert engine.jfinish[1] == pytest.approx(finish)
    assert engine.stats.stale_pops == 1  # job 0's cancelled completion at 60


def test_with_negotiation_ticks_the_machine_waits_for_the_first_tick_after_the_turnaround():
    # ticks every 4 s: removed at 30, back at 33, matched at the 36-s tick
    engine = _run(_one_machine(), 3.0, interval=4.0)
    assert engine.jfinish[1] == pytest.approx(46.0)


def test_a_completed_jobs_machine_is_not_held():
    # no removal: job 0 ends at 60 and job 1 starts there, turnaround or not
    for turnaround in (0.0, 7.0):
        engine = _run(_one_machine(), turnaround, cancel_at=None)
        assert engine.jfinish[1] == pytest.approx(70.0)


def test_an_owner_arriving_during_the_turnaround_keeps_the_machine_until_they_leave():
    # removed at 30, owner 32–50: the turnaround's end (37) is superseded,
    # the logout frees it at 50 — job 1 ends at 60, not at 47
    engine = _run(_one_machine(logins=[(32.0, 50.0)]), 7.0)
    assert engine.jfinish[1] == pytest.approx(60.0)
    assert engine.stats.stale_pops == 2  # job 0's cancelled completion, the superseded expiry


def test_zero_changes_nothing_and_is_not_recorded():
    trace = make_trace(machines=3, length=60_000.0, job_submit=[100.0, 20_000.0], job_duration=[60.0, 60.0])
    base = dict(fraction=1.0, policy="fixed:2", phi=0.1, reboot_hour=None)
    plain = simulate(trace, SimConfig(**base))
    zero = simulate(trace, SimConfig(**base, slot_turnaround=0.0))
    np.testing.assert_array_equal(plain.wf_finish, zero.wf_finish)
    assert "slot_turnaround" not in zero.config.to_dict()  # summary.json as before the knob
    assert SimConfig(slot_turnaround=2.5).to_dict()["slot_turnaround"] == 2.5


def test_fixed2_on_three_machines_waits_for_its_losers_machines():
    # Figure 1 with 2 replicas per task on 3 machines: the roots A, B, C
    # (6 replicas) cannot all run; each level's losers are removed at the
    # winners' end and their machines come back only after the turnaround,
    # so the workflow takes longer with it, and exactly as long without any
    # removal to wait for (single).
    trace = make_trace(machines=3, length=60_000.0, job_submit=[100.0], job_duration=[60.0])
    base = dict(fraction=1.0, phi=0.1, reboot_hour=None)
    fast = simulate(trace, SimConfig(**base, policy="fixed:2"))
    slow = simulate(trace, SimConfig(**base, policy="fixed:2", slot_turnaround=100.0))
    assert slow.wf_finish[0] > fast.wf_finish[0]
    one = simulate(trace, SimConfig(**base, policy="single"))
    held = simulate(trace, SimConfig(**base, policy="single", slot_turnaround=100.0))
    assert held.wf_finish[0] == one.wf_finish[0]


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_bad_turnaround_is_refused(bad):
    with pytest.raises(InputError, match="slot turnaround"):
        SimConfig(slot_turnaround=bad)
    with pytest.raises(ValueError, match="slot turnaround"):
        EngineConfig(slot_turnaround=bad)


CLI = str(Path(sys.executable).parent / "condor-rlrep")


def test_cli_takes_the_knob_and_refuses_a_negative_one(tmp_path):
    out = tmp_path / "run"
    ok = subprocess.run([CLI, "simulate", "--preset", "newcastle-2010", "--days", "1", "--fraction", "0.05",
                         "--policy", "fixed:2", "--slot-turnaround", "3", "-o", str(out)],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert json.loads((out / "summary.json").read_text())["config"]["slot_turnaround"] == 3.0
    bad = subprocess.run([CLI, "simulate", "--preset", "newcastle-2010", "--days", "1", "--slot-turnaround", "-1"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0
    assert "--slot-turnaround" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_an_experiment_run_takes_the_knob():
    from condor_rlrep.sweep.execute import _config

    assert _config({"policy": "fixed:2", "slot_turnaround": 3.0}).slot_turnaround == 3.0
    assert _config({"policy": "fixed:2"}).slot_turnaround == 0.0
