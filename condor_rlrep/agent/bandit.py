"""The in-memory replica agent: one facade, two verbs (§4.4).

``choose(state) -> Choice`` and ``learn(state, replicas, reward)``. Estimates
and counts live in numpy arrays (the public view) mirrored in plain lists
that the hot paths read; ε-greedy keeps each state's greedy action in a
list so that a decision costs one or two uniform draws and a lookup. UCB1
keeps each state's decision (it only changes when the state learns: ``learn``
drops it) and Thompson each state's posterior (``learn`` updates the one
action's entry) and draws its standard normals in blocks. The SQLite store
runs the very same estimator and policy functions, so an agent saved to a
store and used by the hooks behaves as it did in simulation; for one seed
the in-memory agent makes exactly the choices ``policy.choose`` makes on the
same uniform stream.
"""

from __future__ import annotations

from math import isfinite
from typing import Any, NamedTuple

import numpy as np

from condor_rlrep.agent._uniform import BufferedNormal, uniform_source
from condor_rlrep.agent.config import AgentConfig
from condor_rlrep.agent.estimator import drifted, push_window, update_estimate
from condor_rlrep.agent.policy import (
    epsilon,
    greedy_index,
    thompson_pick,
    thompson_posterior,
    ucb1_index,
)
from condor_rlrep.agent.state import StateError, StateSpace

__all__ = ["Agent", "Choice"]


class Choice(NamedTuple):
    """A decision: ``action`` is the replica count (1 … R)."""

    action: int
    explored: bool


class Agent:
    """A bandit per state over the actions 1 … R replicas.

    ``rng``: numpy Generator or seed (the only source of randomness; the
    Generator is consumed in blocks of uniforms).

    Change ``estimates`` and ``counts`` only through :meth:`learn` (or
    :meth:`from_state`): UCB1's and Thompson's per-state caches follow them.
    """

    def __init__(self, config: AgentConfig | None = None, *, rng: Any = None):
        self.config = config if config is not None else AgentConfig()
        self.space = StateSpace.from_config(self.config)
        n_states = self.space.n_states
        n_actions = self.config.max_replicas
        self.n_states = n_states
        self.n_actions = n_actions
        self.counts = np.zeros((n_states, n_actions), dtype=np.int64)
        self.estimates = np.full((n_states, n_actions), self.config.initial_estimate, dtype=np.float64)
        self.recovery = [0] * n_states
        """Rewards each state still spends at ε₁ after a drift (sliding window)."""
        self.rewards_seen = 0
        self.windows: dict[tuple[int, int], list[float]] = {}
        """Last m rewards per (state, action index); sliding-window schedule only."""
        self._uniform = uniform_source(rng, prefer_numpy=True)
        self._greedy = [0] * n_states
        self._eps_greedy = self.config.strategy == "epsilon-greedy"
        self._sliding = self._eps_greedy and self.config.schedule == "sliding-window"
        self._fixed_schedule = self.config.schedule == "fixed"
        self._ucb = self.config.strategy == "ucb1"
        self._thompson = self.config.strategy == "thompson"
        self._cache: list[Any] = [None] * n_states
        """Per state, until it learns: UCB1's Choice or Thompson's posterior (means, roots)."""
        self._normals = BufferedNormal(self._uniform)
        self._choices = [(Choice(index + 1, False), Choice(index + 1, True)) for index in range(n_actions)]
        """Choice(index + 1, explored) made once: building a NamedTuple costs more than the pick."""
        self._mirror()

    def _mirror(self) -> None:
        """Plain-list copies of ``estimates`` and ``counts``, row per state,
        that the hot paths read (a numpy element read costs several list
        reads); :meth:`learn` writes both. Rebuilt wherever the arrays are
        set wholesale (:meth:`from_state`, drift forgetting)."""
        self._q: list[list[float]] = self.estimates.tolist()
        self._n: list[list[int]] = self.counts.tolist()

    # -- the two verbs -------------------------------------------------------

    def choose(self, state: int) -> Choice:
        """Pick a replica count for ``state`` (eq. 9, UCB1 or Thompson)."""
        if not 0 <= state < self.n_states:
            raise StateError(f"state must be in [0, {self.n_states}); got {state!r}")
        if self._eps_greedy:
            # epsilon() and choose_epsilon_greedy() written out (the same
            # schedule, the same draws; tests hold them equal): two calls
            # saved on the busiest path of a simulation.
            config = self.config
            if self._fixed_schedule:
                eps = config.epsilon_low
            elif self.rewards_seen < config.switch_after or (self._sliding and self.recovery[state] > 0):
                eps = config.epsilon_high
            else:
                eps = config.epsilon_low
            uniform = self._uniform
            if uniform() < eps:
                n = self.n_actions
                index = int(uniform() * n)
                return self._choices[index if index < n else n - 1][1]
            return self._choices[self._greedy[state]][0]
        cached = self._cache[state]
        if self._ucb:
            if cached is None:
                index = ucb1_index(self._q[state], self._n[state], self.config.ucb_c)
                cached = self._cache[state] = self._choices[index][index != self._greedy[state]]
            return cached
        if cached is None:
            cached = self._cache[state] = thompson_posterior(self._q[state], self._n[state], self.config)
        index = thompson_pick(cached[0], cached[1], self._normals.take(self.n_actions))
        return self._choices[index][index != self._greedy[state]]

    def learn(self, state: int, action: int, reward: float) -> None:
        """Fold one reward for ``action`` replicas in ``state`` into the estimates (eq. 8)."""
        if not 0 <= state < self.n_states:
            raise StateError(f"state must be in [0, {self.n_states}); got {state!r}")
        if not 1 <= action <= self.n_actions:
            raise StateError(f"action must be a replica count in [1, {self.n_actions}]; got {action!r}")
        reward = float(reward)
        if not isfinite(reward):
            raise StateError(f"reward must be finite; got {reward!r}")
        index = action - 1
        q_row = self._q[state]
        n_row = self._n[state]
        q, n = update_estimate(q_row[index], n_row[index], reward, self.config.step_size)
        q_row[index] = q
        n_row[index] = n
        self.estimates[state, index] = q
        self.counts[state, index] = n
        self.rewards_seen += 1
        cached = self._cache[state]
        if cached is not None:
            if self._thompson:  # one action's posterior moved; the others stand
                means, roots = thompson_posterior((q,), (n,), self.config)
                cached[0][index] = means[0]
                cached[1][index] = roots[0]
            else:  # UCB1: N changed, so every bonus did
                self._cache[state] = None
        if self._sliding:
            self._slide(state, index, reward, q)
        # greedy_index's first-maximum rule in C: the estimates are finite,
        # so max() picks the first of equal maxima and index() finds it.
        self._greedy[state] = q_row.index(max(q_row))

    # -- helpers -------------------------------------------------------------

    def epsilon(self, state: int | None = None) -> float:
        """ε now (for ``state``: including its drift recovery)."""
        recovering = state is not None and self.recovery[state] > 0
        return epsilon(self.config, self.rewards_seen, recovering)

    def greedy(self, state: int) -> int:
        """The replica count the agent believes best in ``state`` (ties: fewer)."""
        return greedy_index(self.estimates[state].tolist()) + 1

    def policy(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per state: best replica count, its estimate, and rewards seen in the state."""
        best = np.argmax(self.estimates, axis=1)  # first maximum: fewer replicas on ties
        rows = np.arange(self.n_states)
        return best + 1, self.estimates[rows, best], self.counts.sum(axis=1)

    def choose_many(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised ε-greedy decisions for an array of states: (replicas, explored).

        Draws from the same stream as :meth:`choose` but in a different order,
        so a batch and a loop of single calls differ in detail, not in law.
        """
        if not self._eps_greedy:
            raise NotImplementedError("choose_many serves epsilon-greedy only; call choose() per state")
        states = np.asarray(states, dtype=np.int64)
        if states.size and (states.min() < 0 or states.max() >= self.n_states):
            raise StateError(f"states must lie in [0, {self.n_states})")
        config = self.config
        if config.schedule == "fixed":
            eps = np.full(states.shape, config.epsilon_low)
        elif self.rewards_seen < config.switch_after:
            eps = np.full(states.shape, config.epsilon_high)
        elif self._sliding:
            recovering = np.asarray(self.recovery)[states] > 0
            eps = np.where(recovering, config.epsilon_high, config.epsilon_low)
        else:
            eps = np.full(states.shape, config.epsilon_low)
        u = self._take(2 * states.size).reshape(2, -1)
        explored = u[0] < eps
        random_action = np.minimum((u[1] * self.n_actions).astype(np.int64), self.n_actions - 1)
        greedy = np.asarray(self._greedy, dtype=np.int64)[states]
        return np.where(explored, random_action, greedy) + 1, explored

    def _take(self, count: int) -> np.ndarray:
        take = getattr(self._uniform, "take", None)
        if take is not None:
            return take(count)
        return np.array([self._uniform() for _ in range(count)], dtype=np.float64)

    def _slide(self, state: int, index: int, reward: float, q: float) -> None:
        config = self.config
        if self.recovery[state] > 0:
            self.recovery[state] -= 1
        window = push_window(self.windows.setdefault((state, index), []), reward, config.window)
        if drifted(window, q, config.window, config.drift_threshold):
            self._forget(state)

    def _forget(self, state: int) -> None:
        """Drift in ``state``: back to ε₁ for a while and let new rewards weigh in."""
        cap = self.config.forget_to
        row = self.counts[state]
        np.minimum(row, cap, out=row)
        self._n[state] = row.tolist()
        self.recovery[state] = self.config.recovery
        self._cache[state] = None
        for index in range(self.n_actions):
            self.windows.pop((state, index), None)

    # -- persistence ---------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """Learned values as plain JSON-able data (the store's ``estimates`` part)."""
        touched = (self.counts > 0) | (self.estimates != self.config.initial_estimate)
        cells = [
            [int(state), int(index) + 1, int(self.counts[state, index]), float(self.estimates[state, index]),
             list(self.windows.get((int(state), int(index)), []))]
            for state, index in zip(*np.nonzero(touched))
        ]
        return {
            "rewards_seen": self.rewards_seen,
            "recovery": {str(s): r for s, r in enumerate(self.recovery) if r},
            "cells": sorted(cells),
        }

    @classmethod
    def from_state(cls, config: AgentConfig, data: dict[str, Any], *, rng: Any = None) -> Agent:
        agent = cls(config, rng=rng)
        agent.rewards_seen = int(data.get("rewards_seen", 0))
        for key, value in data.get("recovery", {}).items():
            agent.recovery[int(key)] = int(value)
        for state, action, n, q, window in data.get("cells", []):
            agent.counts[state, action - 1] = n
            agent.estimates[state, action - 1] = q
            if window:
                agent.windows[(state, action - 1)] = [float(r) for r in window]
        agent._mirror()
        for state in range(agent.n_states):
            agent._greedy[state] = greedy_index(agent._q[state])
        agent._cache = [None] * agent.n_states
        return agent
