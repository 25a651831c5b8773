"""Selection policies f(Q′(s, A)) over one state's row of estimates.

ε-greedy is eq. 9 of the replication paper with the two ε schedules of §4.4;
UCB1 (Auer et al. 2002) and Thompson sampling are beyond the paper. Every
policy breaks ties toward fewer replicas (the lowest action index).

Plain Python on one row of ``R`` values, fed by a ``uniform()`` callable
returning floats in [0, 1): the same code serves the hooks' SQLite path (no
numpy import) and the in-memory agent.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence

from condor_rlrep.agent.config import AgentConfig

__all__ = [
    "epsilon",
    "greedy_index",
    "choose_epsilon_greedy",
    "choose_ucb1",
    "ucb1_index",
    "choose_thompson",
    "thompson_posterior",
    "thompson_pick",
    "choose",
]

Uniform = Callable[[], float]


def epsilon(config: AgentConfig, rewards_seen: int, recovering: bool) -> float:
    """ε now, from the schedule of §4.4.

    ``fixed``: ε₂. ``initially-high``: ε₁ for the first ``l`` rewards, then ε₂.
    ``sliding-window``: the same, and ε₁ while the state recovers from drift.
    """
    if config.schedule == "fixed":
        return config.epsilon_low
    if rewards_seen < config.switch_after:
        return config.epsilon_high
    if config.schedule == "sliding-window" and recovering:
        return config.epsilon_high
    return config.epsilon_low


def greedy_index(q_row: Sequence[float]) -> int:
    """Index of the highest estimate; the first (fewest replicas) on ties."""
    best = 0
    best_q = q_row[0]
    for index in range(1, len(q_row)):
        if q_row[index] > best_q:
            best, best_q = index, q_row[index]
    return best


def choose_epsilon_greedy(greedy: int, n_actions: int, eps: float, uniform: Uniform) -> tuple[int, bool]:
    """Eq. 9: the greedy action with probability 1 − ε, else one uniformly at random.

    ``explored`` is True whenever the random branch was taken, even if it
    happened to pick the greedy action.
    """
    if uniform() < eps:
        return min(int(uniform() * n_actions), n_actions - 1), True
    return greedy, False


def choose_ucb1(q_row: Sequence[float], n_row: Sequence[int], c: float) -> tuple[int, bool]:
    """UCB1 (see :func:`ucb1_index`) and whether it left the greedy action."""
    index = ucb1_index(q_row, n_row, c)
    return index, index != greedy_index(q_row)


def ucb1_index(q_row: Sequence[float], n_row: Sequence[int], c: float) -> int:
    """UCB1: each untried action once (fewest replicas first), then the
    highest ``q + c·sqrt(ln N / n_a)``, N the number of rewards in the state
    (first on ties)."""
    if 0 in n_row:
        return list(n_row).index(0)
    log_total = math.log(sum(n_row))
    sqrt = math.sqrt
    scores = [q + c * sqrt(log_total / n) for q, n in zip(q_row, n_row)]
    # scores are finite, so max() + index() is greedy_index's first-maximum rule
    return scores.index(max(scores))


def thompson_posterior(
    q_row: Sequence[float], n_row: Sequence[int], config: AgentConfig
) -> tuple[list[float], list[float]]:
    """Per action: posterior mean and sqrt(precision) of its mean reward.

    Prior N(prior_mean, prior_sd²), rewards assumed N(mean, noise_sd²) — a
    conjugate stand-in for the real two-valued reward. The posterior after
    ``n`` rewards averaging ``q`` has precision ``1/prior_sd² + n/noise_sd²``.
    With a constant step size the estimate is a recency-weighted mean worth
    about ``1/α`` rewards, so ``n`` is capped there.
    """
    prior_precision = 1.0 / (config.prior_sd * config.prior_sd)
    noise_precision = 1.0 / (config.noise_sd * config.noise_sd)
    cap = math.inf if config.step_size is None else 1.0 / config.step_size
    means = []
    roots = []
    for q, n in zip(q_row, n_row):
        n_eff = min(n, cap)
        precision = prior_precision + n_eff * noise_precision
        means.append((config.prior_mean * prior_precision + n_eff * q * noise_precision) / precision)
        roots.append(math.sqrt(precision))
    return means, roots


def thompson_pick(means: Sequence[float], roots: Sequence[float], normals: Sequence[float]) -> int:
    """Index of the highest sample ``mean + z / sqrt(precision)`` (first on ties)."""
    samples = list(map(operator.add, means, map(operator.truediv, normals, roots)))
    # max() keeps the first of equal maxima and index() finds it: greedy_index's tie rule
    return samples.index(max(samples))


def choose_thompson(
    q_row: Sequence[float],
    n_row: Sequence[int],
    config: AgentConfig,
    uniform: Uniform,
) -> tuple[int, bool]:
    """Thompson sampling with a Gaussian model of each action's mean reward
    (see :func:`thompson_posterior`): one standard normal per action, in
    action order, each by Box–Muller from two consecutive uniforms."""
    means, roots = thompson_posterior(q_row, n_row, config)
    index = thompson_pick(means, roots, [_standard_normal(uniform) for _ in means])
    return index, index != greedy_index(q_row)


def choose(
    config: AgentConfig,
    q_row: Sequence[float],
    n_row: Sequence[int],
    eps: float,
    uniform: Uniform,
) -> tuple[int, bool]:
    """Action index (replicas − 1) and whether it was an exploration."""
    if config.strategy == "epsilon-greedy":
        return choose_epsilon_greedy(greedy_index(q_row), len(q_row), eps, uniform)
    if config.strategy == "ucb1":
        return choose_ucb1(q_row, n_row, config.ucb_c)
    return choose_thompson(q_row, n_row, config, uniform)


def _standard_normal(uniform: Uniform) -> float:
    # Box–Muller from two uniforms: keeps every random draw on the one stream
    u1 = uniform()
    u2 = uniform()
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
