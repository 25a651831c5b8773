"""Operations that combine piecewise functions: sum and difference,
product, composition and the pointwise minimum.

Each operation works on one merged breakpoint grid: every operand's pieces
are re-expanded around the grid's points (a Taylor shift of each
polynomial, :func:`recenter`), after which the result's coefficients are
array arithmetic over all pieces at once — no per-piece objects. The
minimum and the composition add breakpoints of their own, where two
operands cross and where the inner function reaches one of the outer's
breakpoints.

The operations read :class:`~condor_rlrep.bottlemod.functions.PFunc`
values and return the fields of the result, ``(x, c, left, end)``, rather
than a PFunc: the value type wraps them as ``f + g``, ``f * g``,
``f.compose(g)`` and :func:`~condor_rlrep.bottlemod.functions.minimum`, so
the imports go one way (functions → combine → polynomial).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

import condor_rlrep.bottlemod.smallpaths as small
from condor_rlrep.bottlemod.polynomial import poly_roots

__all__ = ["Piecewise", "Fields", "recenter", "add", "product", "minimum", "compose"]

Fields = tuple[np.ndarray, np.ndarray, float, float]
"""A function's ``(x, c, left, end)``, as :class:`~.functions.PFunc` stores them."""


class Piecewise(Protocol):
    """What the operations read of an operand (a :class:`~.functions.PFunc`)."""

    x: np.ndarray
    c: np.ndarray
    left: float
    end: float

    @property
    def n(self) -> int: ...

    @property
    def degree(self) -> int: ...

    @property
    def is_linear(self) -> bool: ...

    def piece_values(self) -> tuple[np.ndarray, np.ndarray]: ...

    def value(self, t: float) -> float: ...


def recenter(f: Piecewise, at: np.ndarray, k: int) -> np.ndarray:
    """Coefficients (ascending, shape (k+1, m)) of ``f`` re-expanded around the
    points ``at``, using the piece that holds each point (right-continuous).

    Points outside ``[x0, x_end)`` get the constant extensions.
    """
    m = at.size
    if m <= small.LIMIT and f.x.size <= small.LIMIT:
        return _recenter_small(f, at, k)
    out = np.zeros((k + 1, m))
    idx = f.x.searchsorted(at, side="right") - 1
    inside = (idx >= 0) & (idx < f.n)
    out[0] = np.where(idx < 0, f.left, f.end)
    if f.n and inside.any():
        i = idx[inside]
        h = at[inside] - f.x[i]
        d = f.degree
        asc = f.c[::-1, :][:, i]  # ascending powers
        # Taylor shift: coefficient j of p(s + h) = sum_{m>=j} C(m, j) a_m h^(m-j)
        for j in range(d + 1):
            acc = np.zeros(i.size)
            for mm in range(d, j - 1, -1):
                acc = acc * h + math.comb(mm, j) * asc[mm]
            out[j, inside] = acc
    return out


def _recenter_small(f: Piecewise, at: np.ndarray, k: int) -> np.ndarray:
    """:func:`recenter` point by point (:func:`~.smallpaths.recenter`)."""
    out = small.recenter(small.unpack(f), at.tolist(), k)
    return np.array(out, dtype=float).reshape(k + 1, at.size)


def _merged_grid(fs: Sequence[Piecewise]) -> np.ndarray:
    return np.unique(np.concatenate([f.x for f in fs]))


def _from_asc(grid: np.ndarray, asc: np.ndarray, left: float, end: float) -> Fields:
    if grid.size == 1:
        return grid, np.zeros((1, 0)), left, end
    return grid, np.ascontiguousarray(asc[::-1, :-1]), left, end


def add(f: Piecewise, g: Piecewise, sign: float) -> Fields:
    """``f + sign * g`` (``sign`` ±1: a sum or a difference)."""
    grid = _merged_grid([f, g])
    k = max(f.degree, g.degree)
    asc = recenter(f, grid, k) + sign * recenter(g, grid, k)
    return _from_asc(grid, asc, f.left + sign * g.left, f.end + sign * g.end)


def product(f: Piecewise, g: Piecewise) -> Fields:
    """``f * g``, of degree ``f.degree + g.degree``."""
    if f.x.size <= small.LIMIT and g.x.size <= small.LIMIT:
        done = small.product(f, g)
        if done is not None:
            grid, rows = done
            if len(grid) == 1:
                return np.array(grid), np.zeros((1, 0)), f.left * g.left, f.end * g.end
            return (np.array(grid), np.array([row[:-1] for row in reversed(rows)], dtype=float),
                    f.left * g.left, f.end * g.end)
    grid = _merged_grid([f, g])
    a, b = recenter(f, grid, f.degree), recenter(g, grid, g.degree)
    asc = np.zeros((f.degree + g.degree + 1, grid.size))
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            asc[i + j] += a[i] * b[j]
    return _from_asc(grid, asc, f.left * g.left, f.end * g.end)


def minimum(fs: Sequence[Piecewise]) -> tuple[Fields, np.ndarray]:
    """Pointwise minimum of two or more functions and the index of the
    minimal one, as :func:`~condor_rlrep.bottlemod.functions.minimum` says."""
    if all(f.x.size <= small.LIMIT for f in fs):
        done = small.minimum(fs)
        if done is not None:
            return done
    grid = _merged_grid(fs)
    k = max(f.degree for f in fs)
    # Split every merged interval at the crossings of any two functions.
    cuts: list[np.ndarray] = [grid]
    if grid.size > 1:
        h = grid[1:] - grid[:-1]
        cs = [recenter(f, grid[:-1], k) for f in fs]
        for a in range(len(fs)):
            for b in range(a + 1, len(fs)):
                diff = cs[a] - cs[b]
                cuts.append(_interior_roots(diff, grid[:-1], h))
    grid = np.unique(np.concatenate(cuts))
    vals = np.array([recenter(f, grid, k) for f in fs])  # (F, k+1, m)
    if grid.size > 1:
        # Decide the argmin at each sub-interval's midpoint (no crossing inside).
        mid = 0.5 * (grid[1:] - grid[:-1])
        mv = np.zeros((len(fs), grid.size - 1))
        for j in range(k, -1, -1):
            mv = mv * mid + vals[:, j, :-1]
        arg = np.argmin(mv, axis=0)
    else:
        arg = np.zeros(0, dtype=np.intp)
    asc = vals[np.append(arg, 0), :, np.arange(grid.size)].T
    lefts = [f.left for f in fs]
    ends = [f.end for f in fs]
    il, ie = int(np.argmin(lefts)), int(np.argmin(ends))
    return _from_asc(grid, asc, lefts[il], ends[ie]), np.concatenate([[il], arg, [ie]]).astype(np.intp)


def _interior_roots(asc: np.ndarray, x0: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Roots strictly inside ``(x0, x0 + h)`` of per-interval polynomials."""
    k = asc.shape[0] - 1
    if k == 0:
        return np.empty(0)
    out: list[np.ndarray] = []
    if k == 1 or not asc[2:].any():
        a0, a1 = asc[0], asc[1]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = -a0 / a1
        ok = (a1 != 0) & (r > 0) & (r < h)
        out.append(x0[ok] + r[ok])
    else:
        for i in range(x0.size):
            for r in poly_roots(list(asc[:, i])):
                if 0.0 < r < h[i]:
                    out.append(np.array([x0[i] + r]))
    return np.concatenate(out) if out else np.empty(0)


def compose(outer: Piecewise, inner: Piecewise) -> Fields:
    """``outer ∘ inner`` for a non-decreasing ``inner``, as :meth:`~.functions.PFunc.compose` says."""
    ko, ki = outer.degree, inner.degree
    k = ko * ki if ko and ki else 0
    if inner.n == 0:
        if inner.left == inner.end:
            value = float(outer.value(inner.end))
            return np.array([float(inner.x[0])]), np.zeros((1, 0)), value, value
        return inner.x, np.zeros((1, 0)), outer.value(inner.left), outer.value(inner.end)
    if inner.is_linear and inner.x.size <= small.LIMIT and outer.x.size <= small.LIMIT:
        done = _compose_small(outer, inner, ko, ki, k)
        if done is not None:
            return done
    # Times at which inner reaches each of outer's breakpoints, piece by piece.
    start, stop = inner.piece_values()
    h = inner.x[1:] - inner.x[:-1]
    ob = outer.x
    extra: list[float] = []
    if inner.is_linear:
        # Vectorised: breakpoint values strictly inside each piece's value range.
        lo_i = ob.searchsorted(start, side="right")
        hi_i = ob.searchsorted(stop, side="left")
        cnt = np.maximum(hi_i - lo_i, 0)
        if cnt.sum():
            piece = np.repeat(np.arange(inner.n), cnt)
            offs = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            v = ob[lo_i[piece] + offs]
            slope = inner.c[0, piece]
            extra_arr = inner.x[piece] + (v - start[piece]) / slope
            extra = extra_arr.tolist()
    else:
        for i in range(inner.n):
            a = int(ob.searchsorted(start[i], side="right"))
            b = int(ob.searchsorted(stop[i], side="left"))
            for j in range(a, b):
                coefs = list(inner.c[::-1, i])
                coefs[0] -= ob[j]
                rs = [r for r in poly_roots(coefs) if 0.0 < r < h[i]]
                if rs:
                    extra.append(float(inner.x[i] + min(rs)))
    grid = np.unique(np.concatenate([inner.x, np.asarray(extra, dtype=float)])) if extra else inner.x
    ia = recenter(inner, grid[:-1], ki)  # inner around each sub-piece start (ascending)
    # The outer piece of a sub-piece is found from inner's value at the
    # sub-piece's midpoint: strictly between two outer breakpoints unless inner
    # is flat there, and then right-continuity picks the right piece.  (Using
    # the start value would misplace sub-pieces whose computed start lands a
    # rounding error below the breakpoint.)
    hm = 0.5 * (grid[1:] - grid[:-1])
    um = np.zeros(grid.size - 1)
    for j in range(ki, -1, -1):
        um = um * hm + ia[j]
    oi = ob.searchsorted(um, side="right") - 1
    asc = np.zeros((k + 1, grid.size))
    inside = (oi >= 0) & (oi < outer.n)
    asc[0, :-1] = np.where(oi < 0, outer.left, outer.end)
    if inside.any():
        sel = np.flatnonzero(inside)
        oc = outer.c[::-1, :][:, oi[sel]]  # outer ascending coefs
        # local inner value relative to outer breakpoint: u(s) = ia(s) - ob[oi]
        u = ia[:, sel].copy()
        u[0] -= ob[oi[sel]]
        # Horner in polynomial space: res = sum_m oc[m] * u^m
        res = np.zeros((k + 1, sel.size))
        res[0] = oc[ko]
        for m in range(ko - 1, -1, -1):
            res = _polymul_trunc(res, u, k)
            res[0] += oc[m]
        asc[:, sel] = res
    return _from_asc(grid, asc, outer.value(inner.left), outer.value(inner.end))


def _compose_small(outer: Piecewise, inner: Piecewise, ko: int, ki: int, k: int) -> Fields | None:
    """:func:`compose` of a piecewise-linear ``inner`` with few pieces, on
    Python floats: the same floating-point operations in the same order as
    the array code (so the same bits), without numpy's per-call cost on
    arrays of a few elements (see :mod:`~condor_rlrep.bottlemod.smallpaths`);
    ``None`` for the array code when a piece's end value is NaN."""
    xs = inner.x.tolist()
    n = len(xs) - 1
    rows = inner.c.tolist()  # descending powers, one row per power
    ob = outer.x.tolist()
    starts = rows[-1]
    extra: list[float] = []
    for i in range(n):
        # piece_values(): the start value and the left limit at the end
        stop = rows[0][i]
        if ki:
            stop = stop * (xs[i + 1] - xs[i]) + rows[1][i]
        if stop != stop:  # NaN (0 * inf): numpy's searchsorted puts it last, bisect does not
            return None
        lo, hi = bisect.bisect_right(ob, starts[i]), bisect.bisect_left(ob, stop)
        for j in range(lo, hi):  # times inner reaches outer's breakpoints inside the piece
            extra.append(xs[i] + (ob[j] - starts[i]) / rows[0][i])
    if not extra:
        grid, g = inner.x, xs
    else:
        g = small.unique(xs + extra)
        if g is None:  # 0.0 and -0.0 among them: numpy's choice
            grid = np.unique(np.concatenate([inner.x, np.asarray(extra, dtype=float)]))
            g = grid.tolist()
        else:
            grid = np.array(g)
    nout = len(ob) - 1
    outer_cols = outer.c.T.tolist()  # per outer piece, descending powers
    if ki == 1 and ko <= 1:
        return (grid, _compose_lines(outer, inner, rows, xs, g, ob, outer_cols, ko),
                _value_small(outer, ob, outer_cols, inner.left), _value_small(outer, ob, outer_cols, inner.end))
    ia = small.recenter(small.unpack(inner), g[:-1], ki)
    size = len(g)
    asc = [[0.0] * size for _ in range(k + 1)]
    sel: list[int] = []
    pieces: list[int] = []
    for col in range(size - 1):
        hm = 0.5 * (g[col + 1] - g[col])
        um = 0.0
        for j in range(ki, -1, -1):
            um = um * hm + ia[j][col]
        oi = bisect.bisect_right(ob, um) - 1
        if oi < 0:
            asc[0][col] = float(outer.left)
        elif oi >= nout:
            asc[0][col] = float(outer.end)
        else:
            sel.append(col)
            pieces.append(oi)
    if sel:
        # u = inner around each sub-piece start, relative to its outer piece's breakpoint
        u = [[ia[r][col] for col in sel] for r in range(ki + 1)]
        u[0] = [v - ob[oi] for v, oi in zip(u[0], pieces)]
        oc = [outer_cols[oi][::-1] for oi in pieces]  # ascending, per selected sub-piece
        res = [[0.0] * len(sel) for _ in range(k + 1)]
        res[0] = [c[ko] for c in oc]
        for m in range(ko - 1, -1, -1):
            res = _polymul_small(res, u, k)
            res[0] = [v + c[m] for v, c in zip(res[0], oc)]
        for r in range(k + 1):
            row = asc[r]
            for v, col in zip(res[r], sel):
                row[col] = v
    # _from_asc, on the lists: descending rows without the last point's column (size >= 2 here)
    return (grid, np.array([row[:-1] for row in reversed(asc)], dtype=float),
            _value_small(outer, ob, outer_cols, inner.left), _value_small(outer, ob, outer_cols, inner.end))


def _compose_lines(outer: Piecewise, inner: Piecewise, rows: list[list[float]], xs: list[float], g: list[float],
                   ob: list[float], outer_cols: list[list[float]], ko: int) -> np.ndarray:
    """The coefficient array of :func:`_compose_small` for a piecewise-linear
    ``inner`` (``rows``: its slopes and start values, at breakpoints ``xs``)
    and an ``outer`` of degree ``ko`` 0 or 1, on the grid ``g``: the steps of
    its general loops (and of :func:`~.smallpaths.recenter`'s) for these
    degrees, written out in the same order, so the same bits, without the
    intermediate rows."""
    slopes, starts = rows
    n = len(xs) - 1
    nout = len(ob) - 1
    inf = math.inf
    out0: list[float] = []
    out1: list[float] = []
    sel: list[tuple[int, int, float, float]] = []  # (column, outer piece, inner value, inner slope there)
    for col in range(len(g) - 1):
        # inner re-expanded around g[col] (smallpaths.recenter, degree 1)
        t = g[col]
        i = bisect.bisect_right(xs, t) - 1
        if i < 0:
            ia0, ia1 = float(inner.left), 0.0
        elif i >= n:
            ia0, ia1 = float(inner.end), 0.0
        else:
            h = t - xs[i]
            if h < inf and (h != 0.0 or math.copysign(1.0, h) > 0.0):
                ia1 = 0.0 + slopes[i]
                ia0 = ia1 * h + starts[i]
            else:  # (recenter's loop, where 0.0 * h is not 0.0)
                ia1 = 0.0 * h + 1.0 * slopes[i]
                ia0 = ia1 * h + 1.0 * starts[i]
        # the outer piece, from inner's value at the sub-piece's midpoint
        hm = 0.5 * (g[col + 1] - t)
        oi = bisect.bisect_right(ob, (0.0 * hm + ia1) * hm + ia0) - 1
        out1.append(0.0)
        if oi < 0:
            out0.append(float(outer.left))
        elif oi >= nout:
            out0.append(float(outer.end))
        else:
            out0.append(0.0)
            sel.append((col, oi, ia0, ia1))
    if ko == 0:
        for col, oi, _, _ in sel:
            out0[col] = outer_cols[oi][0]
    else:
        # outer's a * u + b with u = inner - ob[oi], by _polymul_small, which
        # skips the a-row when every selected a is zero
        mult = any(outer_cols[oi][0] != 0.0 for _, oi, _, _ in sel)
        for col, oi, ia0, ia1 in sel:
            a, b = outer_cols[oi]
            if mult:
                out0[col] = (0.0 + a * (ia0 - ob[oi])) + b
                out1[col] = 0.0 + a * ia1
            else:
                out0[col] = 0.0 + b
    return np.array([out1, out0] if ko else [out0], dtype=float)


def _value_small(f: Piecewise, xs: list[float], cols: list[list[float]], t: float) -> float:
    """``f.value(t)`` from ``f``'s lists (breakpoints, per-piece descending
    coefficients): the same Horner steps."""
    if t < xs[0]:
        return f.left
    i = bisect.bisect_right(xs, t) - 1
    if i >= len(xs) - 1:
        return f.end
    s = t - xs[i]
    acc = 0.0
    for coef in cols[i]:
        acc = acc * s + coef
    return float(acc)


def _polymul_small(a: list[list[float]], b: list[list[float]], k: int) -> list[list[float]]:
    """:func:`_polymul_trunc` on lists of rows: a row of ``a`` that is zero in
    every column is skipped there too (its zero products would turn a -0.0 sum
    into 0.0)."""
    width = len(a[0])
    out = [[0.0] * width for _ in range(k + 1)]
    for i, ai in enumerate(a):
        if not any(v != 0.0 for v in ai):
            continue
        for j, bj in enumerate(b):
            if i + j <= k:
                o = out[i + j]
                for col in range(width):
                    o[col] = o[col] + ai[col] * bj[col]
    return out


def _polymul_trunc(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros((k + 1, a.shape[1]))
    for i in range(a.shape[0]):
        if not a[i].any():
            continue
        for j in range(b.shape[0]):
            if i + j <= k:
                out[i + j] += a[i] * b[j]
    return out
