"""Action-value estimates per (state, action): eq. 8 of the replication paper.

``q′(s, a)`` is the sample mean of the rewards seen for ``a`` in ``s``, kept
incrementally (``q ← q + (r − q)/n``); with a constant step size ``α`` it is
the exponential recency-weighted mean ``q ← q + α(r − q)`` for drifting pools
(the first reward then sets ``q`` outright, so the arbitrary initial value
leaves no bias). The sliding window of the last ``m`` rewards feeds the drift
test of the sliding-window ε schedule (§4.4).

Plain Python on scalars: the SQLite store (hooks, no numpy) and the in-memory
:class:`~condor_rlrep.agent.bandit.Agent` call the same functions, so both
give bit-identical estimates for the same rewards.
"""

from __future__ import annotations

import math

__all__ = ["update_estimate", "push_window", "drifted"]


def update_estimate(q: float, n: int, reward: float, step_size: float | None) -> tuple[float, int]:
    """New ``(q, n)`` after one more ``reward`` (eq. 8, or a constant step)."""
    n_new = n + 1
    if step_size is None:
        return q + (reward - q) / n_new, n_new
    if n == 0:
        return reward, n_new
    return q + step_size * (reward - q), n_new


def push_window(window: list[float], reward: float, length: int) -> list[float]:
    """Append ``reward`` to a (state, action)'s window, keeping the last ``length``."""
    window.append(reward)
    if len(window) > length:
        del window[: len(window) - length]
    return window


def drifted(window: list[float], estimate: float, length: int, threshold: float) -> bool:
    """True when a full window's mean strays from the estimate by more than ``threshold``."""
    if len(window) < length:
        return False
    return abs(math.fsum(window) / len(window) - estimate) > threshold
