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

import bisect
import math
from collections.abc import Sequence

import numpy as np

from condor_rlrep.bottlemod.polynomial import REL_TOL, poly_roots

__all__ = ["LIMIT", "float_lists", "points", "piece_values", "nondecreasing", "nonnegative", "unpack",
           "recenter", "unique", "minimum", "product"]

LIMIT = 24
"""Functions (and point sets) up to this many breakpoints take these paths
(the tests set it to -1 to compare with the array code)."""


def points(xs: list[float], ys: list[float]) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The fields of :meth:`~.functions.PFunc.from_points` of checked, finite,
    equally long point lists: the same slopes, the same errors."""
    if len(xs) == 2:  # (a line, the common case: the lists below, written out)
        (x0, x1), (y0, y1) = xs, ys
        if x1 - x0 > 0:
            slope = (y1 - y0) / (x1 - x0)
            if math.isfinite(slope):
                return np.array(xs), np.array([[slope], [y0]]), y0, y1
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


def float_lists(xs: Sequence[float], ys: Sequence[float], what: str) -> bool:
    """Are ``xs`` and ``ys`` small, equally long, non-empty lists of Python
    floats (then :func:`~.functions._paired`'s arrays would hold the same values, and
    only its finiteness test can fail: made here, with its message)?"""
    if not (type(xs) is list and type(ys) is list and 0 < len(xs) == len(ys) <= LIMIT
            and all(type(v) is float for v in xs) and all(type(v) is float for v in ys)):
        return False
    if not (all(map(math.isfinite, xs)) and all(map(math.isfinite, ys))):
        raise ValueError(f"{what} must be finite numbers")
    return True


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


def _values_and_tol(f) -> tuple[list[float], list[float], float] | None:
    """:func:`piece_values` of a small linear function ``f`` (one to
    ``LIMIT - 1`` pieces) and ``REL_TOL`` times :meth:`~.functions.PFunc.scale`, or ``None``
    for the array code; the same operations, without the calls."""
    x = f.x
    if not 1 < x.size <= LIMIT:
        return None
    rows = f.c.tolist()
    if len(rows) == 2:
        xl = x.tolist()
        start = rows[1]
        if len(xl) == 2:  # (one piece: the comprehension below, written out)
            stop = [rows[0][0] * (xl[1] - xl[0]) + start[0]]
            total = (0 + start[0]) + (0 + stop[0])  # sum()'s, for the NaN test
            if total != total:
                return None
            return start, stop, REL_TOL * max(1.0, max(abs(f.left), abs(f.end), abs(start[0]), abs(stop[0])))
        stop = [v * (b - a) + co for v, a, b, co in zip(rows[0], xl, xl[1:], start)]
    elif len(rows) == 1:
        start = stop = rows[0]
    else:
        return None
    total = sum(start) + sum(stop)
    if total != total:
        return None
    return start, stop, REL_TOL * max(1.0, max(abs(f.left), abs(f.end), max(map(abs, start)), max(map(abs, stop))))


def nondecreasing(f) -> bool | None:
    """:meth:`~.functions.PFunc.is_nondecreasing` of a constant or a small
    linear function ``f``, or ``None`` for the array code."""
    left, end = f.left, f.end
    if f.x.size == 1 <= LIMIT:  # the array code's n == 0 case: scale() is max(1, |left|, |end|)
        return end >= left - REL_TOL * max(1.0, max(abs(left), abs(end)))
    values = _values_and_tol(f)
    if values is None:
        return None
    start, stop, tol = values
    if len(start) == 1:  # (the common single piece: the loops below, written out)
        return start[0] >= left - tol and end >= stop[0] - tol and stop[0] >= start[0] - tol
    return (start[0] >= left - tol and end >= stop[-1] - tol
            and all(a >= b - tol for a, b in zip(start[1:], stop))
            and all(b >= a - tol for a, b in zip(start, stop)))


def nonnegative(f) -> bool | None:
    """:meth:`~.functions.PFunc.is_nonnegative` of a constant or a small
    linear function ``f``, or ``None`` for the array code."""
    left, end = f.left, f.end
    if f.x.size == 1 <= LIMIT:
        tol = REL_TOL * max(1.0, max(abs(left), abs(end)))
        return not (left < -tol or end < -tol)
    values = _values_and_tol(f)
    if values is None:
        return None
    start, stop, tol = values
    if len(start) == 1:
        return not (left < -tol or end < -tol or start[0] < -tol or stop[0] < -tol)
    return not (left < -tol or end < -tol or any(v < -tol for v in start) or any(v < -tol for v in stop))


Unpacked = tuple[list[float], list[list[float]], float, float, int]
"""A function as lists: breakpoints, per-piece descending coefficients, left, end, degree."""


def unpack(f) -> Unpacked:
    """``f`` (a :class:`~.functions.PFunc`) as lists, for :func:`recenter`."""
    return f.x.tolist(), f.c.T.tolist() if f.x.size > 1 else [], float(f.left), float(f.end), f.c.shape[0] - 1


def _combs(d: int) -> list[list[float]]:
    """``C(m, j)`` as floats, indexed ``[j][m]``, for ``m, j <= d``."""
    return [[float(math.comb(mm, j)) for mm in range(d + 1)] for j in range(d + 1)]


_COMBS = [_combs(d) for d in range(8)]
"""The binomial tables of the common degrees (read only)."""


def recenter(f: Unpacked, at: list[float], k: int) -> list[list[float]]:
    """:func:`~.combine.recenter` point by point, as ``k + 1`` rows of
    ascending coefficients: ``acc = acc * h + C(m, j) * a_m`` from ``acc = 0.0``."""
    xs, cols, left, end, d = f
    n = len(xs) - 1
    out = [[0.0] * len(at) for _ in range(k + 1)]
    first = out[0]
    combs = _COMBS[d] if d < len(_COMBS) else _combs(d)
    for p, t in enumerate(at):
        i = bisect.bisect_right(xs, t) - 1
        if i < 0:
            first[p] = left
        elif i >= n:
            first[p] = end
        else:
            h = t - xs[i]
            desc = cols[i]  # desc[d - mm] is the coefficient of s**mm
            if d <= 1 and h < math.inf and (h != 0.0 or math.copysign(1.0, h) > 0.0):
                # The loop below for degree 0 and 1, its steps written out: with
                # 0 <= h < inf, 0.0 * h is 0.0 and C(m, j) is 1.0 (so 1.0 * a = a).
                # (Not for h = -0.0, t = -0.0 at a breakpoint 0.0: 0.0 * -0.0 is -0.0.)
                top = 0.0 + desc[0]
                if d:
                    first[p] = top * h + desc[1]
                    out[1][p] = top
                else:
                    first[p] = top
                continue
            for j in range(d + 1):
                comb = combs[j]
                acc = 0.0
                for mm in range(d, j - 1, -1):
                    acc = acc * h + comb[mm] * desc[d - mm]
                out[j][p] = acc
    return out


def unique(values: list[float]) -> list[float] | None:
    """``numpy.unique(values)`` as a list, or ``None`` when both 0.0 and -0.0
    or a NaN are among them: ``0.0 == -0.0``, and which of the two
    ``numpy.unique`` keeps depends on its sort; any other two equal floats
    are the same bits."""
    if any(v != v for v in values):
        return None
    if 0.0 in values and len({math.copysign(1.0, v) for v in values if v == 0.0}) > 1:
        return None
    return sorted(set(values))


def _argmin(values: list[float]) -> int:
    """``numpy.argmin``: the first minimum, or the first NaN if there is one."""
    best = 0
    for i, v in enumerate(values):
        if v != v:
            return i
        if v < values[best]:
            best = i
    return best


def _interior_roots(diff: list[list[float]], x0: list[float], h: list[float]) -> list[float]:
    """:func:`~.combine._interior_roots` on rows of ascending coefficients."""
    k = len(diff) - 1
    out: list[float] = []
    if k == 0:
        return out
    if k == 1 or not any(v != 0.0 for row in diff[2:] for v in row):
        for a0, a1, x, w in zip(diff[0], diff[1], x0, h):
            if a1 != 0.0:
                r = -a0 / a1
                if 0.0 < r < w:
                    out.append(x + r)
        return out
    for i, x in enumerate(x0):
        for r in poly_roots([row[i] for row in diff]):
            if 0.0 < r < h[i]:
                out.append(x + r)
    return out


def minimum(fs: list) -> tuple[tuple[np.ndarray, np.ndarray, float, float], np.ndarray] | None:
    """:func:`~.combine.minimum` of small functions, or ``None`` for the
    array code (0.0 and -0.0, or NaN, among the breakpoints: see :func:`unique`)."""
    grid = unique([v for f in fs for v in f.x.tolist()])
    if grid is None:
        return None
    k = max(f.c.shape[0] - 1 for f in fs)
    parts = [unpack(f) for f in fs]
    if len(grid) > 1:
        starts = grid[:-1]
        h = [b - a for a, b in zip(grid, grid[1:])]
        cs = [recenter(p, starts, k) for p in parts]
        cuts = list(grid)
        for a in range(len(fs)):
            for b in range(a + 1, len(fs)):
                diff = [[u - v for u, v in zip(ra, rb)] for ra, rb in zip(cs[a], cs[b])]
                cuts += _interior_roots(diff, starts, h)
        grid = unique(cuts)
        if grid is None:
            return None
    vals = [recenter(p, grid, k) for p in parts]
    arg: list[int] = []
    for p in range(len(grid) - 1):
        mid = 0.5 * (grid[p + 1] - grid[p])
        at_mid = []
        for v in vals:
            acc = 0.0
            for j in range(k, -1, -1):
                acc = acc * mid + v[j][p]
            at_mid.append(acc)
        arg.append(_argmin(at_mid))
    lefts = [f.left for f in fs]
    ends = [f.end for f in fs]
    il, ie = _argmin(lefts), _argmin(ends)
    if len(grid) == 1:
        c = np.zeros((1, 0))
    else:
        c = np.array([[vals[a][j][p] for p, a in enumerate(arg)] for j in range(k, -1, -1)])
    return (np.array(grid), c, lefts[il], ends[ie]), np.array([il, *arg, ie], dtype=np.intp)


def product(f, g) -> tuple[list[float], list[list[float]]] | None:
    """The merged grid and ascending coefficient rows of :func:`~.combine.product`
    (``asc[i + j] += a[i] * b[j]``, in that order), or ``None`` for the array code."""
    grid = unique(f.x.tolist() + g.x.tolist())
    if grid is None:
        return None
    a = recenter(unpack(f), grid, f.c.shape[0] - 1)
    b = recenter(unpack(g), grid, g.c.shape[0] - 1)
    asc = [[0.0] * len(grid) for _ in range(len(a) + len(b) - 1)]
    for i, ai in enumerate(a):
        for j, bj in enumerate(b):
            asc[i + j] = [s + u * v for s, u, v in zip(asc[i + j], ai, bj)]
    return grid, asc
