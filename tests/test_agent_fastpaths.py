"""The in-memory agent's fast UCB1 and Thompson paths against the definitions.

The references below are written out from the documented formulas (UCB1:
untried first, then ``q + c·sqrt(ln N / n_a)``; Thompson: Gaussian posterior,
one Box–Muller normal per action in action order from consecutive uniforms),
one decision at a time and with no caching, on the uniform stream that the
agent's seed gives. The agent must make exactly the same choices.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.agent import Agent, AgentConfig, Choice
from condor_rlrep.agent._uniform import BufferedNormal, BufferedUniform
from condor_rlrep.agent.policy import (
    _standard_normal,
    choose_epsilon_greedy,
    epsilon,
    choose_thompson,
    choose_ucb1,
    thompson_pick,
    thompson_posterior,
)


def _first_max(values: list[float]) -> int:
    best = 0
    for index, value in enumerate(values):
        if value > values[best]:
            best = index
    return best


def _ref_ucb1(q_row: list[float], n_row: list[int], c: float) -> int:
    for index, n in enumerate(n_row):
        if n == 0:
            return index
    total = sum(n_row)
    return _first_max([q + c * math.sqrt(math.log(total) / n) for q, n in zip(q_row, n_row)])


def _ref_thompson(q_row: list[float], n_row: list[int], config: AgentConfig, uniform) -> int:
    samples = []
    for q, n in zip(q_row, n_row):
        n_eff = n if config.step_size is None else min(n, 1.0 / config.step_size)
        precision = 1.0 / config.prior_sd**2 + n_eff / config.noise_sd**2
        mean = (config.prior_mean / config.prior_sd**2 + n_eff * q / config.noise_sd**2) / precision
        u1, u2 = uniform(), uniform()
        z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
        samples.append(mean + z / math.sqrt(precision))
    return _first_max(samples)


def _play(agent: Agent, steps: int, seed: int, reference) -> None:
    """Interleave choices and rewards; compare every choice with ``reference``."""
    env = np.random.default_rng(seed + 1)
    states = env.integers(0, agent.n_states, steps).tolist()
    rewards = env.choice([1.0, 0.7, 0.4, -5.0], steps).tolist()
    learn_now = (env.random(steps) < 0.5).tolist()
    for s, r, learn in zip(states, rewards, learn_now):
        q_row, n_row = agent.estimates[s].tolist(), agent.counts[s].tolist()
        expected = reference(q_row, n_row)
        choice = agent.choose(s)
        assert choice == Choice(expected + 1, expected != _first_max(q_row))
        if learn:  # half the choices meet an unchanged state: the caches must hold
            agent.learn(s, choice.action, r)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), actions=st.integers(1, 6), step=st.sampled_from([None, 0.25]))
def test_thompson_agent_makes_the_reference_choices(seed, actions, step):
    config = AgentConfig(n_bins=1, max_replicas=actions, strategy="thompson", step_size=step)
    agent = Agent(config, rng=seed)
    stream = BufferedUniform(np.random.default_rng(seed))
    _play(agent, 400, seed, lambda q, n: _ref_thompson(q, n, config, stream))


def test_thompson_agent_across_normal_blocks_and_a_reload():
    config = AgentConfig(n_bins=2, max_replicas=10, strategy="thompson", prior_sd=1.5, noise_sd=1.0)
    agent = Agent(config, rng=np.random.default_rng(9))
    stream = BufferedUniform(np.random.default_rng(9))
    _play(agent, 1500, 9, lambda q, n: _ref_thompson(q, n, config, stream))  # 15,000 normals: 4 blocks
    loaded = Agent.from_state(config, agent.to_state(), rng=4)
    stream = BufferedUniform(np.random.default_rng(4))
    _play(loaded, 300, 4, lambda q, n: _ref_thompson(q, n, config, stream))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), actions=st.integers(1, 6), c=st.sampled_from([0.0, 0.5, 2.0]))
def test_ucb1_agent_makes_the_reference_choices(seed, actions, c):
    config = AgentConfig(n_bins=1, max_replicas=actions, strategy="ucb1", ucb_c=c)
    _play(Agent(config, rng=seed), 400, seed, lambda q, n: _ref_ucb1(q, n, c))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), actions=st.integers(1, 6),
       schedule=st.sampled_from(["initially-high", "sliding-window", "fixed"]), switch=st.sampled_from([0, 50, 10_000]))
def test_epsilon_greedy_agent_makes_the_policy_functions_choices(seed, actions, schedule, switch):
    # The agent writes the ε schedule and eq. 9 out inline; the store calls
    # policy.epsilon and policy.choose_epsilon_greedy. Same stream, same choices,
    # through drift recoveries too (a short window and a low threshold).
    config = AgentConfig(n_bins=1, max_replicas=actions, schedule=schedule, switch_after=switch, window=4,
                         drift_threshold=0.5, recovery=20)
    agent = Agent(config, rng=seed)
    stream = BufferedUniform(np.random.default_rng(seed))

    def reference(q_row, n_row, state):
        eps = epsilon(config, agent.rewards_seen, agent.recovery[state] > 0)
        return choose_epsilon_greedy(_first_max(q_row), len(q_row), eps, stream)

    env = np.random.default_rng(seed + 1)
    for s, r, learn in zip(env.integers(0, agent.n_states, 600).tolist(), env.choice([1.0, 0.7, 0.4, -5.0], 600).tolist(),
                           (env.random(600) < 0.6).tolist()):
        index, explored = reference(agent.estimates[s].tolist(), agent.counts[s].tolist(), s)
        choice = agent.choose(s)
        assert choice == Choice(index + 1, explored)
        if learn:
            agent.learn(s, choice.action, r)
            assert agent.greedy(s) == _first_max(agent.estimates[s].tolist()) + 1


def test_ucb1_choice_follows_learning_in_its_state_only():
    agent = Agent(AgentConfig(n_bins=1, max_replicas=2, strategy="ucb1"), rng=0)
    assert agent.choose(3) == Choice(1, False)  # untried, fewest replicas first
    agent.learn(3, 1, 0.5)
    assert agent.choose(3) == Choice(2, True)  # the other one is still untried
    assert agent.choose(4) == Choice(1, False)  # another state is untouched
    agent.learn(3, 2, 0.2)
    agent.learn(3, 1, 0.5)
    # N = 3: 0.5 + 2·sqrt(ln3/2) = 1.9823 vs 0.2 + 2·sqrt(ln3) = 2.2963
    assert agent.choose(3) == Choice(2, True)
    agent.learn(3, 2, -5.0)  # q₂ = −2.4: 0.5 + 2·sqrt(ln4/2) = 2.1651 vs −2.4 + 2·sqrt(ln4/2)
    assert agent.choose(3) == Choice(1, False)


def test_posterior_by_hand():
    config = AgentConfig(strategy="thompson", prior_mean=0.0, prior_sd=3.0, noise_sd=2.0)
    means, roots = thompson_posterior([0.5, 7.0], [4, 0], config)
    # precision 1/9 + 4/4 = 10/9, mean (4·0.5/4)/(10/9) = 0.45; untried: the prior
    assert means == pytest.approx([0.45, 0.0]) and roots == pytest.approx([math.sqrt(10 / 9), 1 / 3])
    capped = AgentConfig(strategy="thompson", step_size=0.1)  # n counts as at most 1/α = 10
    assert thompson_posterior([1.0], [500], capped) == thompson_posterior([1.0], [10], capped)


def test_thompson_pick_by_hand_and_ties_to_fewer_replicas():
    assert thompson_pick([0.0, 1.0], [1.0, 2.0], [1.5, 0.0]) == 0  # 1.5 vs 1.0
    assert thompson_pick([0.0, 1.0], [1.0, 2.0], [0.5, 2.0]) == 1  # 0.5 vs 2.0
    assert thompson_pick([0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [1.0, 0.0, -1.0]) == 0  # all 1.0


def test_store_policy_is_the_reference():
    """The store's one-at-a-time path (random.Random stream) matches the definition too."""
    config = AgentConfig(strategy="thompson", max_replicas=4, step_size=0.5)
    rows = np.random.default_rng(2)
    draws, ref_draws = random.Random(8), random.Random(8)
    for _ in range(300):
        q_row = rows.normal(0.0, 1.0, 4).tolist()
        n_row = rows.integers(0, 6, 4).tolist()
        assert choose_thompson(q_row, n_row, config, draws.random)[0] == _ref_thompson(
            q_row, n_row, config, ref_draws.random
        )
        assert choose_ucb1(q_row, n_row, 1.0)[0] == _ref_ucb1(q_row, n_row, 1.0)


@pytest.mark.parametrize("source", ["numpy", "random"])
def test_block_normals_are_the_one_at_a_time_normals(source):
    def uniform():
        if source == "numpy":
            return BufferedUniform(np.random.default_rng(6))
        return random.Random(6).random

    block = BufferedNormal(uniform())
    got = block.take(3) + block.take(4094) + block.take(5000) + block.take(1)  # across blocks, and one > block
    one = uniform()
    assert got == [_standard_normal(one) for _ in range(len(got))]  # bit for bit
