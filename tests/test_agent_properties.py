"""Invariants of the state space and the estimator (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from condor_rlrep.agent import Agent, AgentConfig, StateSpace
from condor_rlrep.agent.estimator import update_estimate

FAST = settings(max_examples=60, deadline=None)


@FAST
@given(n=st.integers(1, 40), p=st.floats(0.01, 100.0), phi=st.floats(-1e6, 1e6))
@example(n=3, p=0.05, phi=0.05)  # 0.05·3/3 != 0.05: φ′ = P must still be in the last bin
def test_phi_bin_matches_the_interval_definition(n, p, phi):
    space = StateSpace(n_bins=n, p_max=p)
    b = space.phi_bin(phi)
    edges = [p * k / n for k in range(n)] + [p]
    if b == 0:
        assert phi <= 0
    elif b == n + 1:
        assert phi > p
    else:
        assert edges[b - 1] < phi <= edges[b]


@FAST
@given(hour=st.integers(0, 23), phi=st.floats(allow_nan=False), n=st.integers(1, 12))
def test_state_index_round_trips(hour, phi, n):
    space = StateSpace(n_bins=n)
    state = space.index(hour, phi)
    assert 0 <= state < space.n_states
    assert space.decode(state) == (hour, space.phi_bin(phi))


@FAST
@given(rewards=st.lists(st.floats(-5.0, 1.0), min_size=1, max_size=200))
def test_incremental_estimate_is_the_sample_mean(rewards):
    q, n = 0.0, 0
    for r in rewards:
        q, n = update_estimate(q, n, r, None)
    assert n == len(rewards)
    assert math.isclose(q, math.fsum(rewards) / n, rel_tol=1e-9, abs_tol=1e-12)
    assert min(rewards) - 1e-12 <= q <= max(rewards) + 1e-12


@FAST
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 300))
def test_choices_stay_in_range_and_counts_add_up(seed, steps):
    agent = Agent(AgentConfig(n_bins=1, max_replicas=4, schedule="sliding-window", switch_after=10, window=3,
                              drift_threshold=0.5, recovery=4), rng=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        s = int(rng.integers(0, agent.n_states))
        choice = agent.choose(s)
        assert 1 <= choice.action <= 4
        agent.learn(s, choice.action, float(rng.choice([1.0, 0.4, -5.0])))
    assert agent.rewards_seen == steps
    assert agent.counts.sum() <= steps  # forgetting only ever lowers counts
