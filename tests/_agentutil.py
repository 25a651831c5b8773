"""Helpers for the agent tests: a synthetic bandit world with a known best action."""

from __future__ import annotations

import numpy as np

from condor_rlrep.agent import Agent


def world(n_states: int, n_actions: int, shift: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Success probability p[s, a], waste σ[a] and the best action index per state.

    Best action index of state s is (7s + shift) mod R; every step away costs
    0.1 of success probability, every extra replica 0.03 of σ.
    """
    states = np.arange(n_states)
    best = (7 * states + shift) % n_actions
    actions = np.arange(n_actions)
    p = np.clip(0.95 - 0.1 * np.abs(actions[None, :] - best[:, None]), 0.02, 1.0)
    sigma = 0.03 * actions
    expected = p * (1.0 - sigma[None, :]) - 5.0 * (1.0 - p)
    assert (expected.argmax(axis=1) == best).all()
    return p, sigma, best


def play(agent: Agent, p: np.ndarray, sigma: np.ndarray, steps: int, env_rng: np.random.Generator) -> None:
    """``steps`` decisions in uniformly random states, each rewarded +1 − σ or −5."""
    states = env_rng.integers(0, agent.n_states, steps)
    draws = env_rng.random(steps)
    choose, learn = agent.choose, agent.learn
    for t in range(steps):
        s = int(states[t])
        a = choose(s).action
        learn(s, a, float(1.0 - sigma[a - 1]) if draws[t] < p[s, a - 1] else -5.0)


def accuracy(agent: Agent, best: np.ndarray) -> float:
    """Share of states whose greedy action is the best one."""
    return float(np.mean(agent.policy()[0] - 1 == best))
