"""Learning on synthetic problems with a known best action per state.

Claims (deterministic seeds):
- ε-greedy, paper defaults (288 states × 10 actions), initially-high with
  l = 100,000: greedy == best in ≥ 95 % of states after 200,000 rewards.
- UCB1 and Thompson (96 states × 5 actions): ≥ 95 % after 60,000 rewards.
- After the best action of every state moves, the sliding-window schedule
  has ≥ 95 % of states right again within 30,000 rewards (≈ 310 per state),
  while fixed ε₂ = 0.05 is still below 25 % at that point.
"""

from __future__ import annotations

import numpy as np
import pytest

from _agentutil import accuracy, play, world
from condor_rlrep.agent import Agent, AgentConfig


def test_epsilon_greedy_learns_the_best_action_with_paper_defaults():
    agent = Agent(AgentConfig(switch_after=100_000), rng=7)
    p, sigma, best = world(agent.n_states, agent.n_actions, 0)
    play(agent, p, sigma, 200_000, np.random.default_rng(11))
    assert accuracy(agent, best) >= 0.95


@pytest.mark.parametrize("strategy", ["ucb1", "thompson"])
def test_ucb1_and_thompson_learn_the_best_action(strategy):
    agent = Agent(AgentConfig(n_bins=2, max_replicas=5, strategy=strategy), rng=7)
    p, sigma, best = world(agent.n_states, agent.n_actions, 0)
    play(agent, p, sigma, 60_000, np.random.default_rng(11))
    assert accuracy(agent, best) >= 0.95


def _switch_run(schedule: str) -> tuple[float, float]:
    config = AgentConfig(n_bins=2, max_replicas=5, schedule=schedule, switch_after=30_000)
    agent = Agent(config, rng=7)
    env_rng = np.random.default_rng(11)
    p, sigma, best = world(agent.n_states, agent.n_actions, 0)
    play(agent, p, sigma, 60_000, env_rng)
    before = accuracy(agent, best)
    p, sigma, best = world(agent.n_states, agent.n_actions, 2)  # every best action moves by 2 or 3
    play(agent, p, sigma, 30_000, env_rng)
    return before, accuracy(agent, best)


def test_sliding_window_recovers_after_a_switch_and_fixed_epsilon_does_not():
    sliding_before, sliding_after = _switch_run("sliding-window")
    fixed_before, fixed_after = _switch_run("fixed")
    assert sliding_before >= 0.95
    assert fixed_before >= 0.85  # it had learned the old world too
    assert sliding_after >= 0.95
    assert fixed_after < 0.25
