"""Unit tests of the estimator, σ and reward, ε schedules, policies and states,
against hand-computed values."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from condor_rlrep.agent import Agent, AgentConfig, Choice, StateError, StateSpace
from condor_rlrep.outcome import DEFAULT_FAILURE_REWARD, reward, sigma
from condor_rlrep.agent.estimator import drifted, push_window, update_estimate
from condor_rlrep.agent.policy import (
    choose_epsilon_greedy,
    choose_thompson,
    choose_ucb1,
    epsilon,
    greedy_index,
)
from condor_rlrep.errors import RlrepError


# -- estimator (eq. 8) ---------------------------------------------------------

def test_sample_mean_by_hand():
    q, n = 0.0, 0
    for r in (1.0, 0.5, -5.0):
        q, n = update_estimate(q, n, r, None)
    assert n == 3
    assert q == pytest.approx((1.0 + 0.5 - 5.0) / 3, abs=1e-15)


def test_constant_step_by_hand():
    q, n = update_estimate(0.7, 0, 1.0, 0.1)  # the first reward replaces the initial value
    assert (q, n) == (1.0, 1)
    q, n = update_estimate(q, n, -5.0, 0.1)
    assert q == pytest.approx(1.0 + 0.1 * (-6.0))  # 0.4
    q, n = update_estimate(q, n, 0.0, 0.1)
    assert q == pytest.approx(0.4 * 0.9)


def test_agent_learn_is_the_sample_mean():
    agent = Agent(AgentConfig(n_bins=1, max_replicas=3), rng=0)
    for r in (0.25, 0.75, -5.0, 1.0):
        agent.learn(4, 2, r)
    assert agent.counts[4, 1] == 4
    assert agent.estimates[4, 1] == pytest.approx(-3.0 / 4)
    assert agent.counts.sum() == 4 and agent.rewards_seen == 4


def test_window_and_drift():
    w: list[float] = []
    for r in (1.0, 1.0, 1.0, -5.0):
        push_window(w, r, 3)
    assert w == [1.0, 1.0, -5.0]
    assert drifted(w, 0.5, 3, 1.0)  # mean −1 vs 0.5: 1.5 > 1
    assert not drifted(w, -0.5, 3, 1.0)  # 0.5 ≤ 1
    assert not drifted([1.0, -5.0], 10.0, 3, 1.0)  # window not full


# -- σ and reward (outcome.py, re-exported) --------------------------------------

def test_sigma_and_reward_by_hand():
    # 2 replicas, task took 100 s on 50 W machines, 2,500 J wasted: 2500 / (2·100·50) = 0.25
    assert sigma(2500.0, 2, 100.0, 50.0) == 0.25
    assert sigma(1e9, 2, 100.0, 50.0) == 1.0  # capped
    assert sigma(0.0, 1, 0.0, 50.0) == 0.0
    assert reward(True, 0.25) == 0.75
    assert reward(False, 0.25) == DEFAULT_FAILURE_REWARD == -5.0
    assert reward(False, 0.0, failure_reward=-3.0) == -3.0


# -- ε schedules (§4.4) ----------------------------------------------------------

def test_initially_high_switches_after_l_rewards():
    config = AgentConfig(schedule="initially-high", switch_after=3)
    assert [epsilon(config, k, False) for k in range(5)] == [0.5, 0.5, 0.5, 0.05, 0.05]
    agent = Agent(AgentConfig(n_bins=1, max_replicas=2, switch_after=3), rng=0)
    eps = []
    for _ in range(5):
        eps.append(agent.epsilon())
        agent.learn(0, 1, 1.0)
    assert eps == [0.5, 0.5, 0.5, 0.05, 0.05]


def test_fixed_schedule_is_always_epsilon_low():
    config = AgentConfig(schedule="fixed", epsilon_low=0.1)
    assert {epsilon(config, k, r) for k in (0, 10**6) for r in (False, True)} == {0.1}


def test_sliding_window_raises_epsilon_on_drift_then_returns():
    config = AgentConfig(
        n_bins=1, max_replicas=2, schedule="sliding-window", switch_after=0, window=3,
        drift_threshold=2.5, recovery=2,
    )
    agent = Agent(config, rng=0)
    for _ in range(10):
        agent.learn(5, 1, 1.0)
    assert agent.epsilon(5) == 0.05
    agent.learn(5, 1, -5.0)  # q = 5/11, window [1, 1, −5]: mean −1, 1.45 apart
    assert agent.epsilon(5) == 0.05
    agent.learn(5, 1, -5.0)  # q = 0, window [1, −5, −5]: mean −3, 3 apart > 2.5: drift
    assert agent.recovery[5] == 2 and agent.epsilon(5) == 0.5
    assert agent.counts[5].tolist() == [0, 0]  # forget_to = 0: the state starts afresh
    assert agent.epsilon(6) == 0.05  # other states are unaffected
    agent.learn(5, 1, 1.0)
    assert agent.estimates[5, 0] == 1.0  # first reward after forgetting replaces q
    agent.learn(5, 2, 0.0)
    assert agent.epsilon(5) == 0.05  # recovery spent


# -- policies ------------------------------------------------------------------

def test_ties_go_to_fewer_replicas():
    assert greedy_index([0.0, 0.0, 0.0]) == 0
    assert greedy_index([-1.0, 0.5, 0.2, 0.5]) == 1
    agent = Agent(AgentConfig(n_bins=1, max_replicas=4, schedule="fixed", epsilon_low=0.0), rng=0)
    assert agent.choose(0) == Choice(1, False)  # all untried: one replica
    agent.learn(0, 3, 0.5)
    agent.learn(0, 4, 0.5)
    assert agent.choose(0) == Choice(3, False)


def test_epsilon_greedy_draws():
    draws = iter([0.3, 0.9])  # 0.3 < ε: explore, then action ⌊0.9·4⌋ = 3
    assert choose_epsilon_greedy(1, 4, 0.5, lambda: next(draws)) == (3, True)
    draws = iter([0.7])
    assert choose_epsilon_greedy(1, 4, 0.5, lambda: next(draws)) == (1, False)


def test_epsilon_greedy_explores_at_rate_epsilon():
    agent = Agent(AgentConfig(schedule="fixed", epsilon_low=0.2), rng=3)
    explored = sum(agent.choose(7).explored for _ in range(20_000))
    assert abs(explored / 20_000 - 0.2) < 0.015


def test_ucb1_by_hand():
    assert choose_ucb1([0.0, 0.0, 0.0], [2, 0, 1], 2.0) == (1, True)  # untried first
    # N = 4: scores 0.5 + 2·sqrt(ln4/3) = 1.8596, 0.2 + 2·sqrt(ln4/1) = 2.5548
    assert choose_ucb1([0.5, 0.2], [3, 1], 2.0) == (1, True)
    assert choose_ucb1([0.5, 0.2], [3, 1], 0.5) == (0, False)  # 1.1798 vs 0.7887


def test_thompson_follows_the_posterior():
    config = AgentConfig(strategy="thompson")
    rng = random.Random(1)
    picks = [choose_thompson([0.9, 0.1, -2.0], [10_000] * 3, config, rng.random)[0] for _ in range(200)]
    assert picks == [0] * 200  # posteriors far apart and narrow
    picks = [choose_thompson([0.0, 0.0], [0, 0], config, rng.random)[0] for _ in range(2000)]
    assert 0.45 < picks.count(0) / 2000 < 0.55  # prior only: a fair coin


def test_same_seed_same_choices():
    def run(seed):
        agent = Agent(AgentConfig(schedule="fixed", epsilon_low=0.3), rng=seed)
        return [agent.choose(s % agent.n_states) for s in range(500)]

    assert run(5) == run(5)
    assert run(5) != run(6)
    gen_run = Agent(AgentConfig(schedule="fixed", epsilon_low=0.3), rng=np.random.default_rng(5))
    assert [gen_run.choose(s % gen_run.n_states) for s in range(500)] == run(5)


def test_choose_many_matches_the_law():
    agent = Agent(AgentConfig(max_replicas=10, schedule="fixed", epsilon_low=0.1), rng=1)
    agent.learn(3, 4, 1.0)
    actions, explored = agent.choose_many(np.full(20_000, 3))
    assert (actions[~explored] == 4).all()
    assert abs(explored.mean() - 0.1) < 0.01
    assert set(actions[explored].tolist()) == set(range(1, 11))


# -- states ----------------------------------------------------------------------

def test_phi_bins_by_hand():
    space = StateSpace(n_bins=10, p_max=1.0)
    cases = {-3.0: 0, 0.0: 0, 1e-9: 1, 0.1: 1, 0.10001: 2, 0.3: 3, 0.95: 10, 1.0: 10, 1.0001: 11,
             math.inf: 11, -math.inf: 0}
    assert {phi: space.phi_bin(phi) for phi in cases} == cases
    assert space.n_states == 24 * 12
    assert space.index(5, 0.35) == 5 * 12 + 4
    assert space.index(np.int64(5), np.float64(0.35)) == space.index(5.0, 0.35) == 5 * 12 + 4
    assert space.decode(5 * 12 + 4) == (5, 4)
    assert StateSpace(n_bins=4, p_max=2.0).phi_bin(1.5) == 3  # (1, 1.5]


def test_hour_in_the_configured_zone():
    ts = 1_719_835_200.0  # 2024-07-01 12:00 UTC
    assert StateSpace(timezone="UTC").hour_of(ts) == 12
    assert StateSpace(timezone="Europe/London").hour_of(ts) == 13  # BST
    assert StateSpace(timezone="America/New_York").index_at(ts, 0.5) == 8 * 12 + 5


@pytest.mark.parametrize("hour, phi", [(24, 0.1), (-1, 0.1), (3, math.nan), ("3", 0.1), (3.5, 0.1), (True, 0.1),
                                       (3, "x")])
def test_bad_states_are_refused(hour, phi):
    with pytest.raises(StateError) as info:
        StateSpace().index(hour, phi)
    assert isinstance(info.value, RlrepError) and isinstance(info.value, ValueError)


def test_agent_refuses_bad_state_action_reward():
    agent = Agent(AgentConfig(n_bins=1, max_replicas=2), rng=0)
    for call in (lambda: agent.choose(72), lambda: agent.learn(0, 3, 1.0), lambda: agent.learn(0, 0, 1.0),
                 lambda: agent.learn(0, 1, math.nan)):
        with pytest.raises(StateError):
            call()
    assert agent.rewards_seen == 0
