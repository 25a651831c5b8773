"""Small functions on Python floats (issue 28).

The paper's models have functions of 2–10 pieces, and an analysis makes
hundreds of operations on them; numpy costs about a microsecond per call
whatever the size, a dozen calls an operation, so on such arrays the calls
are the work. Up to :data:`LIMIT` points
the operations here do the array code's floating-point operations one by
one, in the same order, so the results are the same bits (signed zeros
included) and the same errors; the callers keep the array code for larger
functions, and tests/test_bottlemod_small_paths.py compares the two.

Every function reads and returns plain values (lists, floats, the
``(x, c, left, end)`` fields of a function), so this module imports only
numpy for the arrays it hands back.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["LIMIT", "points", "piece_values", "scale"]

LIMIT = 24
"""Functions (and point sets) up to this many breakpoints take these paths
(the tests set it to -1 to compare with the array code)."""


def points(xs: list[float], ys: list[float]) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The fields of :meth:`~.functions.PFunc.from_points` of checked, finite,
    equally long point lists: the same slopes, the same errors."""
    steps = [b - a for a, b in zip(xs, xs[1:])]
    if any(h < 0 for h in steps):
        raise ValueError("point x values must be non-decreasing")
    span = [i for i, h in enumerate(steps) if h > 0]
    if not span:
        return np.array([xs[0]]), np.zeros((1, 0)), ys[0], ys[-1]
    slope = [(ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]) for i in span]
    for k, v in enumerate(slope):
        if not math.isfinite(v):
            i = span[k]
            raise ValueError(
                f"the slope from point ({xs[i]:g}, {ys[i]:g}) to ({xs[i + 1]:g}, {ys[i + 1]:g}) is too steep "
                "to compute with (it overflows a float): spread the points or rescale the units"
            )
    breaks = [xs[i] for i in span] + [xs[span[-1] + 1]]
    return np.array(breaks), np.array([slope, [ys[i] for i in span]]), ys[0], ys[-1]


def piece_values(x: np.ndarray, c: np.ndarray) -> tuple[list[float], list[float]] | None:
    """:meth:`~.functions.PFunc.piece_values` as lists (``stop = stop * h +
    c[m]``, row by row), or ``None`` for the array code to decide: a
    function without pieces or above the size limit, or one with a NaN
    value (where Python's ``max`` and numpy's part ways)."""
    if not 1 < x.size <= LIMIT:
        return None
    xl = x.tolist()
    rows = c.tolist()
    start = rows[-1]
    stop = list(rows[0])
    for row in rows[1:]:
        stop = [v * (b - a) + co for v, a, b, co in zip(stop, xl, xl[1:], row)]
    total = sum(start) + sum(stop)
    return None if total != total else (start, stop)


def scale(left: float, end: float, start: list[float], stop: list[float]) -> float:
    """:meth:`~.functions.PFunc.scale` from :func:`piece_values`' lists."""
    return max(1.0, max(abs(left), abs(end), max(map(abs, start)), max(map(abs, stop))))
