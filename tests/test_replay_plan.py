"""The replay's plan (window, slots, arrivals, compression) and the pool's
slot expressions, against hand-computed values; the expressions are
evaluated by the real ClassAd library."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from condor_rlrep.errors import InputError
from condor_rlrep.replay.plan import ReplayPlan, make_plan
from condor_rlrep.replay.poolconfig import NEVER_IDLE, idle_expression, owner_expression, pool_config
from condor_rlrep.sim.trace import Trace

classad2 = pytest.importorskip("classad2")


def _trace() -> Trace:
    # three machines; the day starts at midnight UTC, so 03:00 falls 3 h in
    return Trace(
        start=datetime(2010, 1, 4, tzinfo=timezone.utc), length=86400.0, source="hand", machine_names=["m0", "m1", "m2"],
        machine_rooms=["r"] * 3, active_watts=np.array([100.0, 200.0, 300.0]), idle_watts=np.array([10.0, 20.0, 30.0]),
        login_machine=np.array([1, 0, 1, 2], dtype=np.int32),
        login_start=np.array([3600.0, 7200.0, 9000.0, 30000.0]),
        login_end=np.array([5400.0, 10800.0, 9600.0, 31000.0]),
        job_names=["j1", "j2", "j3"], job_submit=np.array([1200.0, 6000.0, 20000.0]),
        job_duration=np.array([60.0, 60.0, 60.0]),
    )


def test_window_is_cut_and_compressed():
    plan = make_plan(_trace(), slots=2, window_start=1800.0, window_seconds=3 * 3600.0, compression=60.0, workflows=1,
                     reboot_hour=3.0, pick="busiest")
    # busiest in [1800, 12600): m1 has two sessions, m0 one, m2 none → m0 and m1, in machine order
    assert plan.machines == ["m0", "m1"]
    # m0: 7200–10800 → (7200−1800)/60 = 90 … 150; the 03:00 reboot (10800) is 150 s: merged into it
    assert plan.reboots == [150.0]
    assert plan.sessions[0] == [(90.0, 151.0)]
    # m1: 3600–5400 → 30…60, 9000–9600 → 120…130, the reboot 150…151
    assert plan.sessions[1] == [(30.0, 60.0), (120.0, 130.0), (150.0, 151.0)]
    # the window's one submission (1200 is before it, 20000 after): 6000 → 70 s
    assert plan.arrivals == [70.0]
    assert plan.slots == 2 and plan.length == pytest.approx(180.0 + plan.drain_seconds)


def test_random_pick_is_the_seeds():
    one = make_plan(_trace(), slots=2, window_start=0.0, window_seconds=21600.0, compression=60.0, workflows=1, seed=7)
    again = make_plan(_trace(), slots=2, window_start=0.0, window_seconds=21600.0, compression=60.0, workflows=1, seed=7)
    assert one == again and len(set(one.machines)) == 2 and set(one.machines) <= {"m0", "m1", "m2"}
    assert one.machines == sorted(one.machines)  # slots in machine order
    draws = {tuple(make_plan(_trace(), slots=2, window_start=0.0, window_seconds=21600.0, compression=60.0,
                             workflows=1, seed=seed).machines) for seed in range(20)}
    assert len(draws) > 1  # the seed draws, it does not pick the busiest


def test_arrivals_are_the_windows_submissions():
    plan = make_plan(_trace(), slots=3, window_start=0.0, window_seconds=21600.0, compression=100.0, workflows=3,
                     reboot_hour=None)
    assert plan.arrivals == [12.0, 60.0, 200.0]
    assert plan.reboots == [] and plan.sessions[0] == [(72.0, 108.0)] and plan.sessions[2] == []
    two = make_plan(_trace(), slots=3, window_start=0.0, window_seconds=21600.0, compression=100.0, workflows=2)
    assert len(two.arrivals) == 2 and set(two.arrivals) <= {12.0, 60.0, 200.0}
    assert plan.task_seconds == pytest.approx(19.2)
    with pytest.raises(InputError, match="fewer than the 4 workflows"):
        make_plan(_trace(), slots=3, window_start=0.0, window_seconds=21600.0, compression=100.0, workflows=4)


@pytest.mark.parametrize("kwargs, message", [
    ({"slots": 4}, "slots 4 > the trace's 3"), ({"compression": 0.5}, "compression must be ≥ 1"),
    ({"window_start": 80000.0}, "is not inside"), ({"pick": "idle"}, "pick must be"),
])
def test_bad_settings_are_refused(kwargs, message):
    settings = {"slots": 2, "window_start": 0.0, "window_seconds": 21600.0, "compression": 60.0, "workflows": 1}
    settings.update(kwargs)
    with pytest.raises(InputError, match=message):
        make_plan(_trace(), **settings)


def _hand_plan() -> ReplayPlan:
    return ReplayPlan(source="hand", trace_start="2010-01-04T00:00:00+00:00", window_start=0.0, window_seconds=600.0,
                      compression=10.0, machines=["a", "b"], active_watts=[100.0, 300.0], idle_watts=[1.0, 3.0],
                      sessions=[[(10.0, 20.0), (40.0, 45.0)], []], arrivals=[0.0, 5.0], task_seconds=192.0,
                      drain_seconds=30.0)


def _evaluate(expression: str, slot: int, now: float) -> object:
    # time() is the wall clock: put the origin `now` seconds in the past
    import time

    origin = time.time() - now
    ad = classad2.ClassAd({"SlotID": slot})
    ad["X"] = classad2.ExprTree(expression(origin))
    return ad.eval("X")


@pytest.mark.parametrize("slot, now, present", [
    (1, 5, False), (1, 11, True), (1, 19, True), (1, 25, False), (1, 42, True), (1, 50, False), (2, 15, False),
])
def test_owner_expression_follows_the_sessions(slot, now, present):
    plan = _hand_plan()
    assert _evaluate(lambda origin: owner_expression(plan, origin, slot), slot, now) is present
    assert plan.owner_present(slot - 1, now) is present


@pytest.mark.parametrize("slot, now, idle", [
    (1, 5, NEVER_IDLE + 5), (1, 15, 0), (1, 30, 10), (1, 42, 0), (1, 60, 15), (2, 30, NEVER_IDLE + 30),
])
def test_idle_expression_counts_from_the_last_logout(slot, now, idle):
    plan = _hand_plan()
    value = _evaluate(lambda origin: idle_expression(plan, origin, slot), slot, now)
    assert value == pytest.approx(idle, abs=1.01)  # time() has whole seconds


def test_pool_config_has_static_slots_and_the_owner_policy():
    text = pool_config(_hand_plan(), release="/r", local_dir="/l", port=1234, origin=1000.0, user="u")
    assert "NUM_SLOTS = 2" in text and "PartitionableSlot" not in text
    assert "START = (OwnerPresent =!= True)" in text and "PREEMPT = (OwnerPresent =?= True)" in text
    assert "WANT_VACATE = False" in text and "MachineMaxVacateTime = 0" in text
    # each slot's ad carries its own sessions only (SLOT<k>_ values); slot 2 has none and keeps the defaults
    lines = dict(line.split(" = ", 1) for line in text.splitlines() if " = " in line)
    assert lines["OwnerPresent"] == "False" and lines["TraceKeyboardIdle"] == f"({NEVER_IDLE} + (time() - 1000))"
    assert lines["SLOT1_OwnerPresent"] == ("(((time() - 1000) >= 10 && (time() - 1000) < 20) || "
                                           "((time() - 1000) >= 40 && (time() - 1000) < 45))")
    assert "SLOT1_TraceKeyboardIdle" in lines and "SLOT2_OwnerPresent" not in lines
    assert "SlotID" not in text
    assert "DISK = 8388608" in text  # 4 GB per slot: a job's default 1 GB request fits however many slots
    assert lines["JOB_DEFAULT_LEASE_DURATION"] == "120"  # a removed replica's shadow gives up in minutes


def test_a_slot_ad_does_not_grow_with_the_other_slots():
    # 300 slots of one session each: every slot's expression names one session, not 300
    plan = _hand_plan()
    plan.machines = [f"m{i}" for i in range(300)]
    plan.sessions = [[(float(i), float(i) + 5.0)] for i in range(300)]
    text = pool_config(plan, release="/r", local_dir="/l", port=1234, origin=1000.0, user="u")
    owner = [line for line in text.splitlines() if line.startswith("SLOT300_OwnerPresent = ")]
    assert owner == ["SLOT300_OwnerPresent = (((time() - 1000) >= 299 && (time() - 1000) < 304))"]
    assert max(len(line) for line in text.splitlines()) < 400


def test_plan_trace_is_what_the_simulator_runs():
    plan = _hand_plan()
    trace = plan.trace()
    assert trace.machine_names == ["slot1", "slot2"]
    assert trace.login_start.tolist() == [10.0, 40.0] and trace.login_end.tolist() == [20.0, 45.0]
    assert trace.job_submit.tolist() == [0.0, 5.0]
    assert trace.length == 90.0  # 600/10 + 30
    assert trace.active_watts.tolist() == [200.0, 200.0]
    assert ReplayPlan.from_json(plan.to_json()) == plan


def test_the_replays_workflows_rank_by_the_traces_idle_time(tmp_path):
    # the pool's KeyboardIdle is the host's, equal on every slot: an idle-
    # policy (and model:R) is pointed at the trace's TraceKeyboardIdle
    from condor_rlrep.replay.poolconfig import IDLE_ATTRIBUTE
    from condor_rlrep.replay.workflows import prepare_workflows

    plan = ReplayPlan(source="hand", trace_start="2010-01-04T00:00:00+00:00", window_start=0.0,
                      window_seconds=600.0, compression=60.0, machines=["a", "b"], active_watts=[100.0] * 2,
                      idle_watts=[1.0] * 2, sessions=[[], []], arrivals=[0.0], task_seconds=10.0, drain_seconds=200.0)
    (dag,) = prepare_workflows(plan, tmp_path, "idle-fixed:2", phi=0.1, dagman_version=(25, 14, 0))
    context = Path(str(dag) + ".rlrep")
    assert IDLE_ATTRIBUTE == "TraceKeyboardIdle"
    assert json.loads((context / "hooks.json").read_text())["idle_attribute"] == IDLE_ATTRIBUTE
    assert "TARGET.TraceKeyboardIdle" in (context / "nodes" / "A.sub").read_text()
