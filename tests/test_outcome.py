"""σ, reward and the outcome of a decision (eq. 3 and §4.4 of the replication
paper) against hand-computed values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.energy import PowerTable
from condor_rlrep.outcome import Invocation, evaluate, reward, sigma, task_deadline

POWER = PowerTable(default_watts=100.0, hosts={"fast": 50.0, "lab-b-*": 200.0})


def test_power_table_lookup_order():
    assert POWER.watts("fast") == 50.0
    assert POWER.watts("lab-b-17") == 200.0
    assert POWER.watts("elsewhere") == 100.0
    assert POWER.watts(None) == 100.0


def test_power_table_rejects_negative():
    with pytest.raises(ValueError, match="host 'x'"):
        PowerTable(hosts={"x": -1.0})


def test_task_deadline_clamps_negative_slack():
    assert task_deadline(100.0, 0.5, 60.0) == 190.0
    assert task_deadline(100.0, -3.0, 60.0) == 100.0


def test_sigma_hand_values():
    # 2 replicas for 100 s at 50 W could draw 10 kJ; 2.5 kJ wasted → 0.25
    assert sigma(2500.0, 2, 100.0, 50.0) == pytest.approx(0.25)
    assert sigma(1e9, 2, 100.0, 50.0) == 1.0
    assert sigma(0.0, 1, 0.0, 50.0) == 0.0
    assert sigma(5.0, 1, 0.0, 50.0) == 1.0


def test_sigma_rejects_nonsense():
    with pytest.raises(ValueError):
        sigma(-1.0, 1, 1.0, 1.0)
    with pytest.raises(ValueError):
        sigma(1.0, 0, 1.0, 1.0)


def test_reward_values():
    assert reward(True, 0.25) == 0.75
    assert reward(False, 0.25) == -5.0
    assert reward(False, 0.0, failure_reward=-2.0) == -2.0
    with pytest.raises(ValueError):
        reward(True, 1.5)
    with pytest.raises(ValueError):
        reward(True, math.nan)


def test_evaluate_first_success_wins_and_everything_else_is_bad():
    runs = [
        Invocation(0, "fast", 10.0, 40.0, "evicted"),  # 30 s × 50 W = 1500 J bad
        Invocation(0, "fast", 50.0, 150.0, "success", 0),  # 100 s × 50 W (loses: ends later)
        Invocation(1, "other", 10.0, 110.0, "success", 0),  # winner: 100 s × 100 W
        Invocation(2, "lab-b-1", 20.0, 110.0, "removed"),  # 90 s × 200 W = 18000 J bad
    ]
    out = evaluate(runs, submit_time=0.0, phi_prime=0.5, estimate=100.0, replicas=3, power=POWER)
    assert out.winner == 1
    assert out.completed and out.success
    assert out.finish_time == 110.0 and out.duration == 110.0
    assert out.good_energy_j == 10000.0
    assert out.bad_energy_j == 1500.0 + 5000.0 + 18000.0
    assert out.mean_active_watts == pytest.approx((50 + 50 + 100 + 200) / 4)
    expected_sigma = 24500.0 / (3 * 110.0 * 100.0)
    assert out.sigma == pytest.approx(expected_sigma)
    assert out.reward == pytest.approx(1 - expected_sigma)


def test_evaluate_late_success_is_a_failure():
    runs = [Invocation(0, None, 0.0, 200.0, "success", 0)]
    out = evaluate(runs, submit_time=0.0, phi_prime=0.5, estimate=100.0, replicas=1, power=POWER)
    assert out.completed and not out.success
    assert out.reward == -5.0


def test_evaluate_no_success():
    runs = [Invocation(0, None, 0.0, 50.0, "failure", 1)]
    out = evaluate(runs, submit_time=0.0, phi_prime=0.0, estimate=100.0, replicas=1, power=POWER)
    assert not out.completed and out.winner is None
    assert out.bad_energy_j == 5000.0 and out.reward == -5.0


invocations = st.lists(
    st.builds(
        Invocation,
        replica=st.integers(0, 5),
        host=st.sampled_from([None, "fast", "lab-b-2", "x"]),
        start=st.floats(0, 1e5),
        end=st.floats(0, 2e5),
        ended_by=st.sampled_from(["success", "failure", "evicted", "removed", "running"]),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(invocations, st.floats(-2, 3), st.floats(1, 1e4))
def test_energy_adds_up_and_sigma_bounded(runs, phi_prime, estimate):
    out = evaluate(runs, submit_time=0.0, phi_prime=phi_prime, estimate=estimate, replicas=6, power=POWER)
    total = sum(inv.seconds * POWER.watts(inv.host) for inv in runs)
    assert out.good_energy_j + out.bad_energy_j == pytest.approx(total)
    assert 0.0 <= out.sigma <= 1.0
    assert out.completed == any(inv.ended_by == "success" for inv in runs)
    assert out.reward <= 1.0


def test_zero_estimate_task_has_no_slack_even_with_infinite_phi_prime():
    assert task_deadline(100.0, math.inf, 0.0) == 100.0
    runs = [Invocation(0, None, 100.0, 100.0, "success", 0)]
    out = evaluate(runs, submit_time=100.0, phi_prime=math.inf, estimate=0.0, replicas=1, power=POWER)
    assert out.success and out.reward == 1.0


def test_evaluate_a_node_the_users_post_failed_did_not_complete():
    """Issue 23 item 11: replica 0 exited 0 but the user's POST failed the
    node: the task did not complete, all 3 kJ + 1 kJ are waste, reward −5."""
    runs = [Invocation(0, None, 10.0, 40.0, "success", 0), Invocation(1, None, 10.0, 20.0, "removed")]
    out = evaluate(runs, submit_time=10.0, phi_prime=1.0, estimate=60.0, replicas=2, power=POWER, accepted=False)
    assert (out.completed, out.success, out.winner, out.reward) == (False, False, None, -5.0)
    assert (out.good_energy_j, out.bad_energy_j, out.sigma) == (0.0, 4000.0, 1.0)


def test_evaluate_a_node_the_users_post_accepted_completed_with_its_kept_result():
    """Issue 23 item 11: no replica exited 0 but the user's POST accepted the
    node: it completed when the first failure ended (the result POST kept).
    Kept: replica 1 (ended at 30 s, 20 s at 100 W = 2 kJ good); replica 0
    (10..50 s, 4 kJ) is waste: D = 20 s, σ = 4000 / (2·20·100) = 1 → reward 0."""
    runs = [Invocation(0, None, 10.0, 50.0, "failure", 2), Invocation(1, None, 10.0, 30.0, "failure", 1)]
    out = evaluate(runs, submit_time=10.0, phi_prime=1.0, estimate=60.0, replicas=2, power=POWER, accepted=True)
    assert (out.completed, out.success, out.winner, out.finish_time) == (True, True, 1, 30.0)
    assert (out.good_energy_j, out.bad_energy_j) == (2000.0, 4000.0)
    assert out.sigma == 1.0 and out.reward == 0.0
    # one replica, failed and accepted: a plain success, nothing wasted
    one = evaluate(runs[1:], submit_time=10.0, phi_prime=1.0, estimate=60.0, replicas=1, power=POWER, accepted=True)
    assert (one.success, one.sigma, one.reward) == (True, 0.0, 1.0)
    # the same runs, accepted by nothing (the simulator) or by the replicas' own verdict: a failure
    for verdict in (None, False):
        out = evaluate(runs, submit_time=10.0, phi_prime=1.0, estimate=60.0, replicas=2, power=POWER, accepted=verdict)
        assert (out.completed, out.reward) == (False, -5.0)
