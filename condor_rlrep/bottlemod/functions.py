"""Monotone piecewise functions of one variable, with jumps (right-continuous).

BottleMod (the second seed paper, §2–§4) describes tasks by requirement,
input, allocation and output functions.  They are piecewise polynomials that
may jump; requirement and input functions are non-decreasing.

Representation (:class:`PFunc`): breakpoints ``x`` (strictly increasing,
``n + 1`` of them), coefficients ``c`` of shape ``(degree + 1, n)`` in the
layout of :class:`scipy.interpolate.PPoly` (local coordinates, highest power
first: piece ``i`` is ``sum_m c[m, i] * (x - x[i]) ** (degree - m)`` on
``[x[i], x[i+1])``), and two constant extensions: ``left`` for ``x < x[0]``
and ``end`` for ``x >= x[-1]``.  Because each piece owns the left end of its
interval, every function is right-continuous, and a jump is simply a piece
whose value at its start differs from the previous piece's value at its end.
The constant extensions mean a function never extrapolates: an input that
stops growing at its last point stays at its final amount.

Piecewise-linear functions (degree ≤ 1, the common case) are handled exactly
and vectorised on numpy arrays; no per-piece objects are ever created.
Higher degrees (quadratic pieces arise from linearly ramping allocations;
users may give polynomial pieces) share the same arrays: roots are closed-form
up to degree 2 and ``numpy.roots`` above.  The coefficient layout is stock
``scipy.interpolate.PPoly``'s, so :meth:`PFunc.from_ppoly` and
:meth:`PFunc.to_ppoly` convert both ways (wrapping, never subclassing) for
anything PPoly offers beyond what is here.

Tolerances are :mod:`~condor_rlrep.bottlemod.polynomial`'s
(:data:`REL_TOL`, :data:`IMAG_TOL`): values within ``REL_TOL`` times the
function's value range (or 1) are equal, for monotonicity checks and for
accepting roots. Operations on two or more functions (sum, product,
composition, minimum) are :mod:`~condor_rlrep.bottlemod.combine`'s; the
methods and :func:`minimum` here wrap them.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

import condor_rlrep.bottlemod.combine as combine
import condor_rlrep.bottlemod.smallpaths as small
from condor_rlrep.bottlemod.polynomial import REL_TOL, poly_at, roots_desc

__all__ = ["PFunc", "minimum"]


class PFunc:
    """A right-continuous piecewise polynomial with constant extensions.

    Construct with :meth:`from_points`, :meth:`from_steps`, :meth:`constant`
    or :meth:`from_ppoly`; the raw constructor validates its arrays, and
    :meth:`_fast` skips validation for trusted internal calls.
    """

    __slots__ = ("x", "c", "left", "end")

    def __init__(self, x: Sequence[float] | np.ndarray, c: Sequence[Sequence[float]] | np.ndarray,
                 left: float | None = None, end: float | None = None):
        x = np.asarray(x, dtype=float)
        c = np.asarray(c, dtype=float)
        if x.ndim != 1 or x.size < 1:
            raise ValueError("x must be a 1-D array with at least one breakpoint")
        if c.ndim != 2 or c.shape[1] != x.size - 1:
            raise ValueError(f"c must have shape (degree + 1, {x.size - 1}), got {c.shape}")
        if not np.isfinite(x).all() or not np.isfinite(c).all():
            raise ValueError("breakpoints and coefficients must be finite")
        if ((x[1:] - x[:-1]) <= 0).any():
            raise ValueError("breakpoints must be strictly increasing")
        self.x, self.c = x, c
        n = x.size - 1
        if n:
            with np.errstate(over="ignore", invalid="ignore"):
                start, stop = self.piece_values()
            if not (np.isfinite(start).all() and np.isfinite(stop).all()):
                raise ValueError("the pieces' values overflow a float: rescale the units")
        self.left = float(left) if left is not None else (float(c[-1, 0]) if n else 0.0)
        self.end = float(end) if end is not None else (_piece_end_value(c, x, n - 1) if n else self.left)
        if not (math.isfinite(self.left) and math.isfinite(self.end)):
            raise ValueError("left and end values must be finite")

    @classmethod
    def _fast(cls, x: np.ndarray, c: np.ndarray, left: float, end: float) -> PFunc:
        f = cls.__new__(cls)
        f.x, f.c, f.left, f.end = x, c, float(left), float(end)
        return f

    # ---------------------------------------------------------------- builders
    @classmethod
    def constant(cls, value: float, at: float = 0.0) -> PFunc:
        """The constant ``value`` everywhere (one breakpoint, no pieces)."""
        return cls._fast(np.array([float(at)]), np.zeros((1, 0)), value, value)

    @classmethod
    def from_points(cls, xs: Sequence[float], ys: Sequence[float]) -> PFunc:
        """Piecewise-linear through the points; a repeated ``x`` is a jump.

        At a repeated ``x`` the *last* listed point is the function's value
        (right-continuity); earlier ones are the limit from the left.  Before
        the first point the function equals the first ``y``; from the last
        point on it equals the last ``y``.
        """
        if small.float_lists(xs, ys, "points"):  # (a model file's points)
            return cls._fast(*small.points(xs, ys))  # type: ignore[arg-type]
        xs, ys = _paired(xs, ys, "points", "y")
        if xs.size <= small.LIMIT:
            return cls._fast(*small.points(xs.tolist(), ys.tolist()))
        if ((xs[1:] - xs[:-1]) < 0).any():
            raise ValueError("point x values must be non-decreasing")
        # Pieces are the spans between consecutive points with distinct x.
        span = np.flatnonzero((xs[1:] - xs[:-1]) > 0)
        if span.size == 0:
            return cls._fast(np.array([xs[0]]), np.zeros((1, 0)), ys[0], ys[-1])
        x0, x1 = xs[span], xs[span + 1]
        y0, y1 = ys[span], ys[span + 1]
        breaks = np.append(x0, x1[-1])
        # Consecutive spans share breakpoints unless a jump sits between them.
        with np.errstate(over="ignore", invalid="ignore"):
            slope = (y1 - y0) / (x1 - x0)
        if not np.isfinite(slope).all():
            k = int(np.flatnonzero(~np.isfinite(slope))[0])
            raise ValueError(
                f"the slope from point ({x0[k]:g}, {y0[k]:g}) to ({x1[k]:g}, {y1[k]:g}) is too steep "
                "to compute with (it overflows a float): spread the points or rescale the units"
            )
        c = np.vstack([slope, y0])
        return cls._fast(breaks, c, ys[0], ys[-1])

    @classmethod
    def from_steps(cls, xs: Sequence[float], values: Sequence[float]) -> PFunc:
        """Piecewise-constant: ``values[i]`` on ``[xs[i], xs[i+1])``, the last
        value from ``xs[-1]`` on, and ``values[0]`` before ``xs[0]``."""
        if small.float_lists(xs, values, "steps"):
            xl, vl = xs, values
            xs = np.array(xl)
        else:
            xs, vs = _paired(xs, values, "steps", "value")
            if xs.size > small.LIMIT:
                if ((xs[1:] - xs[:-1]) <= 0).any():
                    raise ValueError("step x values must be strictly increasing")
                return cls._fast(xs, vs[:-1].reshape(1, -1), vs[0], vs[-1])
            xl, vl = xs.tolist(), vs.tolist()
        if any(b - a <= 0 for a, b in zip(xl, xl[1:])):  # type: ignore[operator]
            raise ValueError("step x values must be strictly increasing")
        return cls._fast(xs, np.array([vl[:-1]]), vl[0], vl[-1])  # type: ignore[index]

    @classmethod
    def from_ppoly(cls, pp, left: float | None = None, end: float | None = None) -> PFunc:
        """Wrap a stock ``scipy.interpolate.PPoly`` (ascending ``x``)."""
        return cls(np.asarray(pp.x, dtype=float), np.asarray(pp.c, dtype=float), left, end)

    def to_ppoly(self):
        """The pieces as a stock ``PPoly`` (without the constant extensions)."""
        from scipy.interpolate import PPoly

        if self.n == 0:
            raise ValueError("a constant function has no pieces to convert")
        return PPoly.construct_fast(self.c.copy(), self.x.copy())

    # -------------------------------------------------------------- properties
    @property
    def n(self) -> int:
        """Number of polynomial pieces."""
        return self.x.size - 1

    @property
    def degree(self) -> int:
        return self.c.shape[0] - 1

    @property
    def is_linear(self) -> bool:
        return self.c.shape[0] <= 2

    def __repr__(self) -> str:
        return f"PFunc(n={self.n}, degree={self.degree}, x=[{self.x[0]:g}..{self.x[-1]:g}], end={self.end:g})"

    # -------------------------------------------------------------- evaluation
    def __call__(self, t: float | np.ndarray) -> float | np.ndarray:
        """Value(s) at ``t`` (right-continuous)."""
        if np.ndim(t) == 0:
            return self.value(float(t))
        t = np.asarray(t, dtype=float)
        n = self.n
        idx = self.x.searchsorted(t, side="right") - 1
        inside = (idx >= 0) & (idx < n)
        out = np.where(idx < 0, self.left, self.end).astype(float)
        if n and inside.any():
            i = idx[inside]
            s = t[inside] - self.x[i]
            acc = self.c[0, i].copy()
            for m in range(1, self.c.shape[0]):
                acc = acc * s + self.c[m, i]
            out[inside] = acc
        return out

    def value(self, t: float) -> float:
        """Scalar value at ``t`` (right-continuous)."""
        x = self.x
        if t < x[0]:
            return self.left
        if x.size <= small.LIMIT:  # Python floats: the same arithmetic without numpy scalars
            xl = x.tolist()
            i = bisect.bisect_right(xl, t) - 1
            if i >= self.n:
                return self.end
            s = t - xl[i]
            acc = 0.0
            for coef in self.c[:, i].tolist():
                acc = acc * s + coef
            return float(acc)
        i = bisect.bisect_right(x, t) - 1 if x.size < 64 else int(np.searchsorted(x, t, side="right")) - 1
        if i >= self.n:
            return self.end
        s = t - x[i]
        acc = 0.0
        for coef in self.c[:, i]:
            acc = acc * s + coef
        return float(acc)

    def left_limit(self, t: float) -> float:
        """``lim f(u)`` as ``u`` → ``t`` from below."""
        x = self.x
        if t <= x[0]:
            return self.left
        i = int(np.searchsorted(x, t, side="left")) - 1
        if i >= self.n:
            return self.end
        return poly_at(self.c[:, i], t - x[i])

    def piece_values(self) -> tuple[np.ndarray, np.ndarray]:
        """Value at the start and left limit at the end of every piece."""
        h = self.x[1:] - self.x[:-1]
        start = self.c[-1].copy()
        stop = self.c[0].copy()
        for m in range(1, self.c.shape[0]):
            stop = stop * h + self.c[m]
        return start, stop

    def scale(self) -> float:
        """Magnitude of the function's values (≥ 1), for relative tolerances."""
        vals = [abs(self.left), abs(self.end)]
        if self.n:
            a, b = self.piece_values()
            vals += [float(np.max(np.abs(a))), float(np.max(np.abs(b)))]
        return max(1.0, max(vals))

    # -------------------------------------------------------------- properties
    def is_nondecreasing(self) -> bool:
        """True when the function never decreases (within :data:`REL_TOL`)."""
        verdict = small.nondecreasing(self)
        if verdict is not None:
            return verdict
        tol = REL_TOL * self.scale()
        if self.n == 0:
            return self.end >= self.left - tol
        start, stop = self.piece_values()
        seq_ok = (start[0] >= self.left - tol and self.end >= stop[-1] - tol
                  and bool((start[1:] >= stop[:-1] - tol).all()))
        if not seq_ok:
            return False
        if self.is_linear:
            return bool((stop >= start - tol).all())
        # A piece is monotone iff its derivative has no sign change to negative
        # inside; check the derivative at both ends and at its interior roots.
        d = self.derivative()
        h = self.x[1:] - self.x[:-1]
        for i in range(self.n):
            pts = [0.0, h[i]] + [r for r in roots_desc(d.c[:, i]) if 0.0 < r < h[i]]
            mid = [0.5 * (a + b) for a, b in zip(sorted(pts)[:-1], sorted(pts)[1:])]
            dtol = tol / h[i]
            if any(poly_at(d.c[:, i], p) < -dtol for p in pts + mid):
                return False
        return True

    def is_nonnegative(self) -> bool:
        verdict = small.nonnegative(self)
        if verdict is not None:
            return verdict
        tol = REL_TOL * self.scale()
        if self.left < -tol or self.end < -tol:
            return False
        if self.n == 0:
            return True
        start, stop = self.piece_values()
        if (start < -tol).any() or (stop < -tol).any():
            return False
        if self.is_linear:
            return True
        h = self.x[1:] - self.x[:-1]
        d = self.derivative()
        for i in range(self.n):
            for r in roots_desc(d.c[:, i]):
                if 0.0 < r < h[i] and poly_at(self.c[:, i], r) < -tol:
                    return False
        return True

    def is_piecewise_constant(self) -> bool:
        return self.n == 0 or not self.c[:-1].any()  # (NaN is "any", and not == 0.0)

    # -------------------------------------------------------------- operations
    def derivative(self) -> PFunc:
        """Derivative of the pieces (jumps are ignored; extensions are 0)."""
        k = self.degree
        if self.n == 0 or k == 0:
            return PFunc._fast(self.x, np.zeros((1, self.n)), 0.0, 0.0)
        powers = np.arange(k, 0, -1, dtype=float).reshape(-1, 1)
        return PFunc._fast(self.x, self.c[:-1] * powers, 0.0, 0.0)

    def integrate(self, a: float, b: float) -> float:
        """``∫_a^b f`` including the constant extensions (``a <= b``)."""
        if b < a:
            return -self.integrate(b, a)
        x = self.x
        total = 0.0
        if a < x[0]:
            total += self.left * (min(b, x[0]) - a)
        if b > x[-1]:
            total += self.end * (b - max(a, x[-1]))
        lo, hi = max(a, x[0]), min(b, x[-1])
        if hi <= lo or self.n == 0:
            return total
        i0 = int(np.searchsorted(x, lo, side="right")) - 1
        i1 = int(np.searchsorted(x, hi, side="left")) - 1
        k = self.degree
        div = np.arange(k + 1, 0, -1, dtype=float)
        for i in range(i0, i1 + 1):
            s0, s1 = max(lo, x[i]) - x[i], min(hi, x[i + 1]) - x[i]
            anti = np.append(self.c[:, i] / div, 0.0)
            total += poly_at(anti, s1) - poly_at(anti, s0)
        return total

    def shift(self, dt: float) -> PFunc:
        """``g(t) = f(t - dt)``."""
        return PFunc._fast(self.x + dt, self.c, self.left, self.end)

    def scaled(self, factor: float) -> PFunc:
        """``g(t) = factor * f(t)``."""
        return PFunc._fast(self.x, self.c * factor, self.left * factor, self.end * factor)

    def time_scaled(self, factor: float) -> PFunc:
        """``g(t) = f(factor * t)`` (``factor > 0``): events ``factor`` times sooner."""
        k = self.degree
        powers = factor ** np.arange(k, -1, -1, dtype=float).reshape(-1, 1)
        return PFunc._fast(self.x / factor, self.c * powers, self.left, self.end)

    def compose(self, inner: PFunc) -> PFunc:
        """``self ∘ inner``: ``t ↦ self(inner(t))`` for a non-decreasing ``inner``.

        Exact for polynomial pieces.  ``inner``'s pieces are split where its
        value reaches one of ``self``'s breakpoints; right-continuity of both
        makes the result right-continuous.
        """
        return PFunc._fast(*combine.compose(self, inner))

    def first_reach(self, y: float) -> float:
        """``inf {x : f(x) >= y}`` of a non-decreasing function, ``inf`` if never.

        Values within ``REL_TOL * scale`` of ``y`` count as reaching it.
        """
        tol = REL_TOL * max(1.0, abs(y))
        if self.left >= y - tol:
            return -math.inf
        if self.n == 0:
            return float(self.x[0]) if self.end >= y - tol else math.inf
        start, stop = self.piece_values()
        reach = np.flatnonzero(np.maximum(start, stop) >= y - tol)
        if reach.size == 0:
            return float(self.x[-1]) if self.end >= y - tol else math.inf
        i = int(reach[0])
        if start[i] >= y - tol:
            return float(self.x[i])
        h = self.x[i + 1] - self.x[i]
        coefs = self.c[:, i].copy()
        coefs[-1] -= y
        roots = [r for r in roots_desc(coefs) if -REL_TOL * h <= r <= h * (1 + REL_TOL)]
        return float(self.x[i] + min(max(min(roots), 0.0), h)) if roots else float(self.x[i + 1])

    def inverse(self) -> PFunc:
        """Right-continuous generalised inverse ``y ↦ sup {x : f(x) <= y}``.

        Only for non-decreasing piecewise-linear functions, where it is exact:
        a jump of ``f`` becomes a flat stretch of the inverse, a flat stretch
        of ``f`` a jump.  (For the *first* time a value is reached, which is
        left-continuous, use :meth:`first_reach`.)
        """
        if not self.is_linear:
            raise ValueError("inverse() is exact only for piecewise-linear functions")
        xs, ys = self.points()
        return PFunc.from_points(ys, xs)

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """Point list (repeated ``x`` at jumps) of a piecewise-linear function."""
        if not self.is_linear:
            raise ValueError("points() needs a piecewise-linear function")
        if self.n == 0:
            x0 = float(self.x[0])
            if self.left == self.end:
                return np.array([x0]), np.array([self.end])
            return np.array([x0, x0]), np.array([self.left, self.end])
        start, stop = self.piece_values()
        xs = np.empty(2 * self.n + 2)
        ys = np.empty(2 * self.n + 2)
        xs[0], ys[0] = self.x[0], self.left
        xs[1:-1:2], ys[1:-1:2] = self.x[:-1], start
        xs[2:-1:2], ys[2:-1:2] = self.x[1:], stop
        xs[-1], ys[-1] = self.x[-1], self.end
        keep = np.ones(xs.size, dtype=bool)
        keep[1:] = (xs[1:] != xs[:-1]) | (ys[1:] != ys[:-1])
        return xs[keep], ys[keep]

    def __add__(self, other: PFunc) -> PFunc:
        return PFunc._fast(*combine.add(self, other, 1.0))

    def __sub__(self, other: PFunc) -> PFunc:
        return PFunc._fast(*combine.add(self, other, -1.0))

    def __mul__(self, other: PFunc | float) -> PFunc:
        if isinstance(other, PFunc):
            return PFunc._fast(*combine.product(self, other))
        return self.scaled(float(other))

    __rmul__ = __mul__

    def crossings(self, other: PFunc) -> np.ndarray:
        """Points where ``self - other`` changes sign (roots of pieces with a
        sign change, and jumps across zero), sorted."""
        return (self - other).sign_changes()

    def sign_changes(self) -> np.ndarray:
        """Points where the function changes sign, by root or by jump."""
        out: list[float] = []
        tol = REL_TOL * self.scale()
        prev = self.left
        h = self.x[1:] - self.x[:-1]
        for i in range(self.n):
            v0 = poly_at(self.c[:, i], 0.0)
            if (prev < -tol and v0 > tol) or (prev > tol and v0 < -tol):
                out.append(float(self.x[i]))
            for r in roots_desc(self.c[:, i]):
                if 0.0 < r < h[i]:
                    a = poly_at(self.c[:, i], r - 1e-9 * h[i])
                    b = poly_at(self.c[:, i], r + 1e-9 * h[i])
                    if (a < 0 < b) or (a > 0 > b):
                        out.append(float(self.x[i] + r))
            prev = poly_at(self.c[:, i], h[i])
        if (prev < -tol and self.end > tol) or (prev > tol and self.end < -tol):
            out.append(float(self.x[-1]))
        return np.array(sorted(set(out)))


def _paired(xs: Sequence[float], ys: Sequence[float], what: str, second: str) -> tuple[np.ndarray, np.ndarray]:
    """``xs`` and ``ys`` as float arrays, checked: one-dimensional, as long
    as each other, not empty, finite (``what``/``second`` name them in errors)."""
    xs = np.asarray(xs, dtype=float)
    ys = np.asarray(ys, dtype=float)
    if xs.ndim != 1 or xs.shape != ys.shape or xs.size == 0:
        raise ValueError(f"{what} need matching, non-empty x and {second} lists")
    if xs.size <= small.LIMIT:
        if not all(map(math.isfinite, xs.tolist())) or not all(map(math.isfinite, ys.tolist())):
            raise ValueError(f"{what} must be finite numbers")
    elif not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise ValueError(f"{what} must be finite numbers")
    return xs, ys


def _piece_end_value(c: np.ndarray, x: np.ndarray, i: int) -> float:
    return poly_at(c[:, i], x[i + 1] - x[i])


def minimum(fs: Sequence[PFunc]) -> tuple[PFunc, np.ndarray]:
    """Pointwise minimum and the index of the minimal function.

    Returns ``(m, idx)`` where ``idx`` has ``m.n + 2`` entries: ``idx[0]`` for
    ``x < m.x[0]``, ``idx[1 + i]`` for piece ``i``, ``idx[-1]`` for
    ``x >= m.x[-1]``.  Ties go to the lowest index.  Crossings inside pieces
    become new breakpoints (closed form up to degree 2).
    """
    if not fs:
        raise ValueError("minimum of no functions")
    if len(fs) == 1:
        return fs[0], np.zeros(fs[0].n + 2, dtype=np.intp)
    fields, index = combine.minimum(fs)
    return PFunc._fast(*fields), index
