"""outcome.evaluate_runs (the simulator's path) equals outcome.evaluate (the hooks')."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from condor_rlrep.energy import PowerTable
from condor_rlrep.outcome import Invocation, evaluate, evaluate_runs

HOSTS = {"a": 50.0, "b": 75.0, "c": 120.0}
POWER = PowerTable(80.0, HOSTS)

times = st.floats(min_value=0, max_value=1e5, allow_nan=False, allow_infinity=False)
invocation = st.tuples(
    st.integers(0, 3),
    st.sampled_from(sorted(HOSTS)),
    times,
    times,
    st.sampled_from(["success", "failure", "evicted", "removed", "running"]),
)


@settings(max_examples=150, deadline=None)
@example(  # equal (start, replica): the sum order must follow evaluate's stable sort
    runs=[(0, "a", 0.0, 0.0, "success"), (0, "a", 0.0, 44568.63842137856, "success"),
          (0, "b", 39244.0, 0.0, "running"), (0, "a", 5.327779437917343, 0.0, "success")],
    submit=0.0, phi=0.0, estimate=0.0, replicas=1,
)
@given(
    runs=st.lists(invocation, max_size=6),
    submit=times,
    phi=st.floats(min_value=-2, max_value=3),
    estimate=st.floats(min_value=0, max_value=5e4),
    replicas=st.integers(1, 4),
)
def test_same_outcome(runs, submit, phi, estimate, replicas):
    invocations = [Invocation(r, h, min(s, e), max(s, e), how) for r, h, s, e, how in runs]
    slow = evaluate(invocations, submit_time=submit, phi_prime=phi, estimate=estimate, replicas=replicas,
                    power=POWER)
    fast = evaluate_runs(
        [(i.start, i.replica, i.end, i.ended_by, HOSTS[i.host]) for i in invocations],
        submit_time=submit, phi_prime=phi, estimate=estimate, replicas=replicas, default_watts=80.0,
    )
    assert fast == (slow.completed, slow.success, slow.finish_time, slow.good_energy_j, slow.bad_energy_j,
                    slow.sigma, slow.reward, slow.winner)


def test_hand_computed_replicas():
    # Two replicas on 50 W and 120 W; the 120 W one wins at 100 s, the other
    # was removed then; one earlier run of replica 0 was evicted after 30 s.
    runs = [(0.0, 0, 30.0, "evicted", 50.0), (30.0, 0, 100.0, "removed", 50.0), (0.0, 1, 100.0, "success", 120.0)]
    done, success, finish, good, bad, sigma, reward, winner = evaluate_runs(
        runs, submit_time=0.0, phi_prime=0.0, estimate=100.0, replicas=2, default_watts=1.0)
    assert (done, success, finish, winner) == (True, True, 100.0, 1)
    assert good == 100 * 120.0 and bad == 30 * 50.0 + 70 * 50.0
    mean_watts = (50 + 50 + 120) / 3
    assert sigma == bad / (2 * 100.0 * mean_watts)
    assert reward == 1 - sigma
