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

Tolerances (explicit, used by every comparison below):

* :data:`REL_TOL` — two values ``a`` and ``b`` are considered equal when
  ``|a - b| <= REL_TOL * scale``, ``scale`` being the function's value range
  (or 1).  Used for monotonicity checks and for accepting roots.
* Roots of polynomial pieces are accepted when they lie in the piece's
  interval widened by ``REL_TOL`` times its length; imaginary parts (degree > 2)
  below ``IMAG_TOL`` times the root's magnitude are ignored.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["PFunc", "REL_TOL", "IMAG_TOL", "minimum", "poly_roots"]

REL_TOL = 1e-9
IMAG_TOL = 1e-7


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
        if not np.all(np.isfinite(x)) or not np.all(np.isfinite(c)):
            raise ValueError("breakpoints and coefficients must be finite")
        if np.any(np.diff(x) <= 0):
            raise ValueError("breakpoints must be strictly increasing")
        self.x, self.c = x, c
        n = x.size - 1
        if n:
            with np.errstate(over="ignore", invalid="ignore"):
                start, stop = self.piece_values()
            if not (np.all(np.isfinite(start)) and np.all(np.isfinite(stop))):
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
        xs = np.asarray(xs, dtype=float)
        ys = np.asarray(ys, dtype=float)
        if xs.ndim != 1 or xs.shape != ys.shape or xs.size == 0:
            raise ValueError("points need matching, non-empty x and y lists")
        if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
            raise ValueError("points must be finite numbers")
        if np.any(np.diff(xs) < 0):
            raise ValueError("point x values must be non-decreasing")
        # Pieces are the spans between consecutive points with distinct x.
        span = np.flatnonzero(np.diff(xs) > 0)
        if span.size == 0:
            return cls._fast(np.array([xs[0]]), np.zeros((1, 0)), ys[0], ys[-1])
        x0, x1 = xs[span], xs[span + 1]
        y0, y1 = ys[span], ys[span + 1]
        breaks = np.append(x0, x1[-1])
        # Consecutive spans share breakpoints unless a jump sits between them.
        with np.errstate(over="ignore", invalid="ignore"):
            slope = (y1 - y0) / (x1 - x0)
        if not np.all(np.isfinite(slope)):
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
        xs = np.asarray(xs, dtype=float)
        vs = np.asarray(values, dtype=float)
        if xs.ndim != 1 or xs.shape != vs.shape or xs.size == 0:
            raise ValueError("steps need matching, non-empty x and value lists")
        if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(vs))):
            raise ValueError("steps must be finite numbers")
        if np.any(np.diff(xs) <= 0):
            raise ValueError("step x values must be strictly increasing")
        return cls._fast(xs, vs[:-1].reshape(1, -1), vs[0], vs[-1])

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
        idx = np.searchsorted(self.x, t, side="right") - 1
        inside = (idx >= 0) & (idx < n)
        out = np.where(idx < 0, self.left, self.end).astype(float)
        if n and np.any(inside):
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
        return _poly_at(self.c[:, i], t - x[i])

    def piece_values(self) -> tuple[np.ndarray, np.ndarray]:
        """Value at the start and left limit at the end of every piece."""
        h = np.diff(self.x)
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
        tol = REL_TOL * self.scale()
        if self.n == 0:
            return self.end >= self.left - tol
        start, stop = self.piece_values()
        seq_ok = (start[0] >= self.left - tol and self.end >= stop[-1] - tol
                  and bool(np.all(start[1:] >= stop[:-1] - tol)))
        if not seq_ok:
            return False
        if self.is_linear:
            return bool(np.all(stop >= start - tol))
        # A piece is monotone iff its derivative has no sign change to negative
        # inside; check the derivative at both ends and at its interior roots.
        d = self.derivative()
        h = np.diff(self.x)
        for i in range(self.n):
            pts = [0.0, h[i]] + [r for r in _roots_desc(d.c[:, i]) if 0.0 < r < h[i]]
            mid = [0.5 * (a + b) for a, b in zip(sorted(pts)[:-1], sorted(pts)[1:])]
            dtol = tol / h[i]
            if any(_poly_at(d.c[:, i], p) < -dtol for p in pts + mid):
                return False
        return True

    def is_nonnegative(self) -> bool:
        tol = REL_TOL * self.scale()
        if self.left < -tol or self.end < -tol:
            return False
        if self.n == 0:
            return True
        start, stop = self.piece_values()
        if np.any(start < -tol) or np.any(stop < -tol):
            return False
        if self.is_linear:
            return True
        h = np.diff(self.x)
        d = self.derivative()
        for i in range(self.n):
            for r in _roots_desc(d.c[:, i]):
                if 0.0 < r < h[i] and _poly_at(self.c[:, i], r) < -tol:
                    return False
        return True

    def is_piecewise_constant(self) -> bool:
        return self.n == 0 or bool(np.all(self.c[:-1] == 0.0))

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
            total += _poly_at(anti, s1) - _poly_at(anti, s0)
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
        return _compose(self, inner)

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
        roots = [r for r in _roots_desc(coefs) if -REL_TOL * h <= r <= h * (1 + REL_TOL)]
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
        return _binary(self, other, 1.0)

    def __sub__(self, other: PFunc) -> PFunc:
        return _binary(self, other, -1.0)

    def __mul__(self, other: PFunc | float) -> PFunc:
        if isinstance(other, PFunc):
            return _product(self, other)
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
        h = np.diff(self.x)
        for i in range(self.n):
            v0 = _poly_at(self.c[:, i], 0.0)
            if (prev < -tol and v0 > tol) or (prev > tol and v0 < -tol):
                out.append(float(self.x[i]))
            for r in _roots_desc(self.c[:, i]):
                if 0.0 < r < h[i]:
                    a = _poly_at(self.c[:, i], r - 1e-9 * h[i])
                    b = _poly_at(self.c[:, i], r + 1e-9 * h[i])
                    if (a < 0 < b) or (a > 0 > b):
                        out.append(float(self.x[i] + r))
            prev = _poly_at(self.c[:, i], h[i])
        if (prev < -tol and self.end > tol) or (prev > tol and self.end < -tol):
            out.append(float(self.x[-1]))
        return np.array(sorted(set(out)))


# ------------------------------------------------------------------ helpers
def _poly_at(c_desc: Sequence[float], s: float) -> float:
    acc = 0.0
    for coef in c_desc:
        acc = acc * s + coef
    return float(acc)


def _piece_end_value(c: np.ndarray, x: np.ndarray, i: int) -> float:
    return _poly_at(c[:, i], x[i + 1] - x[i])


def poly_roots(asc: Sequence[float]) -> list[float]:
    """Real roots of ``a0 + a1 s + a2 s² + …`` (ascending coefficients).

    Closed form up to degree 2 (numerically stable quadratic formula; a
    negative discriminant within ``REL_TOL`` of zero counts as a double root),
    ``numpy.roots`` above, keeping roots whose imaginary part is below
    ``IMAG_TOL`` times their magnitude.  An identically zero polynomial has no
    roots by convention.
    """
    k = len(asc) - 1
    while k > 0 and asc[k] == 0.0:
        k -= 1
    if k == 0:
        return []
    if k == 1:
        return [-asc[0] / asc[1]]
    if k == 2:
        a0, a1, a2 = asc[0], asc[1], asc[2]
        disc = a1 * a1 - 4.0 * a2 * a0
        if disc < 0.0:
            if disc >= -REL_TOL * max(a1 * a1, abs(4.0 * a2 * a0)):
                return [-a1 / (2.0 * a2)]
            return []
        q = -0.5 * (a1 + math.copysign(math.sqrt(disc), a1))
        if q == 0.0:
            return [0.0]
        return sorted({q / a2, a0 / q})
    roots = np.roots(np.asarray(asc[: k + 1], dtype=float)[::-1])
    return sorted(float(r.real) for r in roots if abs(r.imag) <= IMAG_TOL * max(1.0, abs(r)))


def _roots_desc(c_desc: Sequence[float]) -> list[float]:
    return poly_roots(list(c_desc)[::-1])


def _recenter(f: PFunc, at: np.ndarray, k: int) -> np.ndarray:
    """Coefficients (ascending, shape (k+1, m)) of ``f`` re-expanded around the
    points ``at``, using the piece that holds each point (right-continuous).

    Points outside ``[x0, x_end)`` get the constant extensions.
    """
    m = at.size
    out = np.zeros((k + 1, m))
    idx = np.searchsorted(f.x, at, side="right") - 1
    inside = (idx >= 0) & (idx < f.n)
    out[0] = np.where(idx < 0, f.left, f.end)
    if f.n and np.any(inside):
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


def _merged_grid(fs: Sequence[PFunc]) -> np.ndarray:
    return np.unique(np.concatenate([f.x for f in fs]))


def _from_asc(grid: np.ndarray, asc: np.ndarray, left: float, end: float) -> PFunc:
    if grid.size == 1:
        return PFunc._fast(grid, np.zeros((1, 0)), left, end)
    return PFunc._fast(grid, np.ascontiguousarray(asc[::-1, :-1]), left, end)


def _binary(f: PFunc, g: PFunc, sign: float) -> PFunc:
    grid = _merged_grid([f, g])
    k = max(f.degree, g.degree)
    asc = _recenter(f, grid, k) + sign * _recenter(g, grid, k)
    return _from_asc(grid, asc, f.left + sign * g.left, f.end + sign * g.end)


def _product(f: PFunc, g: PFunc) -> PFunc:
    grid = _merged_grid([f, g])
    a, b = _recenter(f, grid, f.degree), _recenter(g, grid, g.degree)
    asc = np.zeros((f.degree + g.degree + 1, grid.size))
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            asc[i + j] += a[i] * b[j]
    return _from_asc(grid, asc, f.left * g.left, f.end * g.end)


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
    grid = _merged_grid(fs)
    k = max(f.degree for f in fs)
    # Split every merged interval at the crossings of any two functions.
    cuts: list[np.ndarray] = [grid]
    if grid.size > 1:
        h = np.diff(grid)
        cs = [_recenter(f, grid[:-1], k) for f in fs]
        for a in range(len(fs)):
            for b in range(a + 1, len(fs)):
                diff = cs[a] - cs[b]
                cuts.append(_interior_roots(diff, grid[:-1], h))
    grid = np.unique(np.concatenate(cuts))
    vals = np.array([_recenter(f, grid, k) for f in fs])  # (F, k+1, m)
    if grid.size > 1:
        # Decide the argmin at each sub-interval's midpoint (no crossing inside).
        mid = 0.5 * np.diff(grid)
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
    m = _from_asc(grid, asc, lefts[il], ends[ie])
    return m, np.concatenate([[il], arg, [ie]]).astype(np.intp)


def _interior_roots(asc: np.ndarray, x0: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Roots strictly inside ``(x0, x0 + h)`` of per-interval polynomials."""
    k = asc.shape[0] - 1
    if k == 0:
        return np.empty(0)
    out: list[np.ndarray] = []
    if k == 1 or not np.any(asc[2:]):
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


def _compose(outer: PFunc, inner: PFunc) -> PFunc:
    ko, ki = outer.degree, inner.degree
    k = ko * ki if ko and ki else 0
    if inner.n == 0:
        return PFunc.constant(outer.value(inner.end), float(inner.x[0])) if inner.left == inner.end else \
            PFunc._fast(inner.x, np.zeros((1, 0)), outer.value(inner.left), outer.value(inner.end))
    # Times at which inner reaches each of outer's breakpoints, piece by piece.
    start, stop = inner.piece_values()
    h = np.diff(inner.x)
    ob = outer.x
    extra: list[float] = []
    if inner.is_linear:
        # Vectorised: breakpoint values strictly inside each piece's value range.
        lo_i = np.searchsorted(ob, start, side="right")
        hi_i = np.searchsorted(ob, stop, side="left")
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
            a = int(np.searchsorted(ob, start[i], side="right"))
            b = int(np.searchsorted(ob, stop[i], side="left"))
            for j in range(a, b):
                coefs = list(inner.c[::-1, i])
                coefs[0] -= ob[j]
                rs = [r for r in poly_roots(coefs) if 0.0 < r < h[i]]
                if rs:
                    extra.append(float(inner.x[i] + min(rs)))
    grid = np.unique(np.concatenate([inner.x, np.asarray(extra, dtype=float)])) if extra else inner.x
    ia = _recenter(inner, grid[:-1], ki)  # inner around each sub-piece start (ascending)
    # The outer piece of a sub-piece is found from inner's value at the
    # sub-piece's midpoint: strictly between two outer breakpoints unless inner
    # is flat there, and then right-continuity picks the right piece.  (Using
    # the start value would misplace sub-pieces whose computed start lands a
    # rounding error below the breakpoint.)
    hm = 0.5 * np.diff(grid)
    um = np.zeros(grid.size - 1)
    for j in range(ki, -1, -1):
        um = um * hm + ia[j]
    oi = np.searchsorted(ob, um, side="right") - 1
    asc = np.zeros((k + 1, grid.size))
    inside = (oi >= 0) & (oi < outer.n)
    asc[0, :-1] = np.where(oi < 0, outer.left, outer.end)
    if np.any(inside):
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


def _polymul_trunc(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros((k + 1, a.shape[1]))
    for i in range(a.shape[0]):
        if not np.any(a[i]):
            continue
        for j in range(b.shape[0]):
            if i + j <= k:
                out[i + j] += a[i] * b[j]
    return out
