"""Progress of one task, computed from event to event (BottleMod §3, Alg. 2).

The progress function is the largest ``p(t)`` with

* ``p(t) <= P_D(t)``, the data limit ``min_k R_k(I_k(t))`` (eq. 3 of the
  paper: requirement of input ``k`` composed with its input function), and
* ``p'(t) <= min_l A_l(t) / Q_l(p(t))``, the resource limit (eqs. 5–9: the
  allocation of resource ``l`` over the resource it needs per unit of
  progress, ``Q_l = dR_Rl/dp``, piecewise constant as in the paper's §4).

The loop never steps time.  At each iteration it looks at the current pieces
of ``P_D``, of every allocation ``A_l`` and of every ``Q_l`` and moves to the
earliest *event*: a piece boundary, a change of the binding resource, the
moment a resource-bound progress catches up with ``P_D``, the moment ``P_D``
starts to outrun the resources, a ``Q_l`` breakpoint being reached, or
``p = P_max``.  Between events ``P_D`` is one polynomial piece and the
resource-bound progress is a quadratic (linear allocation, constant ``Q``),
so every event is a closed-form root.

Termination: piece boundaries and ``Q`` breakpoints are each passed once, and
every other event is a root strictly ahead of the current time (by at least
``TIME_EPS`` relative), so time advances at every iteration; an iteration cap
proportional to the number of pieces turns a would-be endless loop (which
would be a bug) into an error instead of a hang.  When no event lies ahead and
``p < P_max`` the task is reported as not finished (``finish is None``).

Tolerances: progress values within ``REL_TOL * P_max`` are equal (a task
finishes when ``p >= P_max - REL_TOL * P_max``; ``p`` "meets" ``P_D`` the
same way); roots closer than ``TIME_EPS * max(1, |t|)`` to the current time
are ignored.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from condor_rlrep.bottlemod.functions import PFunc
from condor_rlrep.bottlemod.polynomial import REL_TOL, poly_roots

__all__ = ["ProgressResult", "compute_progress", "TIME_EPS"]

TIME_EPS = 1e-12
_INF = math.inf


@dataclass(frozen=True)
class ProgressResult:
    """Raw outcome of :func:`compute_progress`.

    ``progress`` is ``P(t)`` from the start on (0 before it, constant after
    the last event); ``labels[i]`` says what limits piece ``i`` of
    ``progress``: ``k >= 0`` is data input ``k``, ``-1 - l`` is resource ``l``.
    ``finish`` is ``None`` when the task never reaches ``P_max``; then
    ``stalled_at`` is the time from which nothing changes any more.
    """

    progress: PFunc
    labels: np.ndarray
    finish: float | None
    stalled_at: float | None


def _shift_asc(asc: Sequence[float], h: float) -> list[float]:
    """Coefficients of ``q(s) = p(s + h)`` (ascending)."""
    k = len(asc) - 1
    if k == 0 or h == 0.0:
        return list(asc)
    if k == 1:
        return [asc[0] + asc[1] * h, asc[1]]
    if k == 2:
        a0, a1, a2 = asc
        return [a0 + (a1 + a2 * h) * h, a1 + 2.0 * a2 * h, a2]
    out = []
    for j in range(k + 1):
        acc = 0.0
        for m in range(k, j - 1, -1):
            acc = acc * h + math.comb(m, j) * asc[m]
        out.append(acc)
    return out


def _eval(asc: Sequence[float], s: float) -> float:
    acc = 0.0
    for a in reversed(asc):
        acc = acc * s + a
    return acc


def _first_root(asc: Sequence[float], lo: float, hi: float) -> float:
    """Smallest root of the polynomial in ``(lo, hi]``, or ``inf``."""
    best = _INF
    for r in poly_roots(asc):
        if lo < r <= hi and r < best:
            best = r
    return best


def _not_faster(d0: float, d1: float, r0: float, r1: float, eps: float) -> bool:
    """Does ``d0 + d1 s`` stay <= ``r0 + r1 s`` just after ``s = 0``?

    "Just after" is ``s = eps``, the time resolution below which the event
    search ignores roots: deciding at ``s = 0`` alone would let a crossing
    inside ``(0, eps)`` go unseen by both branches. (A data limit rising at
    4.7e-44 units/s is "faster" at ``s = 0`` than an allocation ramping up
    from exactly 0, which overtakes it after 4.7e-44 s: the resource-bound
    branch would then miss its catch-up root and run far above ``P_D``.)
    Rates within ``REL_TOL`` (relative) of each other count as equal so
    that a crossing found a rounding error early does not leave P_D's faster
    slope in charge; then the slopes decide.
    """
    d = d0 + d1 * eps
    r = r0 + r1 * eps
    tol = REL_TOL * max(abs(d), abs(r))
    if d < r - tol:
        return True
    if d > r + tol:
        return False
    return d1 <= r1 + REL_TOL * max(abs(d1), abs(r1))


class _Fn:
    """A PFunc unpacked into Python lists for the scalar event loop."""

    __slots__ = ("x", "c", "n", "left", "end")

    def __init__(self, f: PFunc):
        self.x = f.x.tolist()
        self.n = n = len(self.x) - 1
        self.c = f.c[::-1].T.tolist() if n else []  # per piece, ascending powers (a constant has none)
        self.left, self.end = f.left, f.end

    def index(self, t: float) -> int:
        return bisect.bisect_right(self.x, t) - 1

    def local(self, i: int, t: float) -> list[float]:
        """Piece ``i`` re-expanded around ``t`` (ascending)."""
        if i < 0:
            return [self.left]
        if i >= self.n:
            return [self.end]
        return _shift_asc(self.c[i], t - self.x[i])

    def next_break(self, i: int) -> float:
        return self.x[i + 1] if i + 1 <= self.n else _INF


def compute_progress(
    data_limit: PFunc,
    data_labels: np.ndarray | Sequence[int],
    resources: Sequence[tuple[PFunc, PFunc]],
    max_progress: float,
    start: float = 0.0,
) -> ProgressResult:
    """Progress function of one task.

    ``data_limit`` is ``P_D(t)`` with ``data_labels`` laid out as returned by
    :func:`~condor_rlrep.bottlemod.functions.minimum`; ``resources`` holds
    ``(allocation A_l(t), requirement Q_l(p))`` pairs with ``A_l``
    piecewise-linear and non-negative, ``Q_l`` piecewise-constant and
    non-negative (``Q_l = 0`` means the resource is not needed there).
    """
    for a, q in resources:
        if not a.is_linear:
            raise ValueError("allocations must be piecewise-linear")
        if not q.is_piecewise_constant():
            raise ValueError("resource requirements must be piecewise constant in progress")
    if not (max_progress > 0 and math.isfinite(max_progress)):
        raise ValueError("max_progress must be a positive number")
    pmax = float(max_progress)
    ptol = REL_TOL * max(1.0, abs(pmax))
    # The finish is the first time p reaches pdone, whichever mode gets there:
    # one threshold keeps the finish time monotone in the inputs.
    pdone = pmax - ptol
    pd = _Fn(data_limit)
    labels = data_labels.tolist() if isinstance(data_labels, np.ndarray) else [int(v) for v in data_labels]
    allocs = [_Fn(a) for a, _ in resources]
    reqs = [_Fn(q) for _, q in resources]
    nres = len(resources)

    t = float(start)
    p = 0.0
    i = pd.index(t)
    ai = [a.index(t) for a in allocs]
    qi = [q.index(0.0) for q in reqs]

    seg_t: list[float] = []
    seg_c: list[list[float]] = []
    seg_l: list[int] = []
    finish: float | None = None
    stalled: float | None = None
    cap = pd.n + 16
    for a in allocs:
        cap += a.n
    for q in reqs:
        cap += q.n
    cap *= 64

    for _ in range(cap):
        # --- bring every piece pointer up to (t, p)
        while i + 1 <= pd.n and pd.x[i + 1] <= t:
            i += 1
        for l in range(nres):
            a = allocs[l]
            while ai[l] + 1 <= a.n and a.x[ai[l] + 1] <= t:
                ai[l] += 1
            q = reqs[l]
            while qi[l] + 1 <= q.n and q.x[qi[l] + 1] <= p + ptol:
                qi[l] += 1
        if p >= pdone:
            p = pmax
            finish = t
            break

        P = pd.local(i, t)
        horizon = pd.next_break(i)
        next_q = _INF
        # --- resource rates r_l(s) = (alpha + beta s) / Q_l; binding = lexicographic min
        bind = -1
        r0 = r1 = _INF
        rates: list[tuple[float, float, int]] = []
        for l in range(nres):
            a, q = allocs[l], reqs[l]
            horizon = min(horizon, a.next_break(ai[l]))
            nq = q.next_break(qi[l])
            if nq < next_q:
                next_q = nq
            qv = q.local(qi[l], p)[0]
            if qv <= 0.0:
                continue
            loc = a.local(ai[l], t)
            alpha = loc[0] / qv
            beta = (loc[1] / qv) if len(loc) > 1 else 0.0
            rates.append((alpha, beta, l))
            if alpha < r0 or (alpha == r0 and beta < r1):
                r0, r1, bind = alpha, beta, l
        eps = TIME_EPS * max(1.0, abs(t))
        # binding-resource change: another rate line crossing below the binding one
        t_bind = _INF
        if bind >= 0:
            for alpha, beta, l in rates:
                if l != bind and beta < r1:
                    s = (alpha - r0) / (r1 - beta)
                    if s > eps and t + s < t_bind:
                        t_bind = t + s

        gap = P[0] - p
        if gap <= ptol:
            # p meets P_D (within tolerance): snap up, never down, so that p
            # stays monotone; it may then exceed P_D by at most ptol.
            if gap > 0.0:
                p = P[0]
            dP = [k * P[k] for k in range(1, len(P))] or [0.0]
            d0 = dP[0]
            d1 = dP[1] if len(dP) > 1 else 0.0
            data_bound = bind < 0 or _not_faster(d0, d1, r0, r1, eps)
        else:
            data_bound = False

        if data_bound:
            limit = horizon
            H = limit - t
            # P_D starts outrunning the resources: d(s) - r(s) crosses to > 0
            if bind >= 0:
                diff = list(dP)
                diff[0] -= r0
                if len(diff) < 2:
                    diff.append(0.0)
                diff[1] -= r1
                limit = min(limit, t + _first_root(diff, eps, H), t_bind)
            snap = None
            for target in (next_q, pdone):
                if target < _INF:
                    coefs = list(P)
                    coefs[0] -= target
                    tt = t + _first_root(coefs, 0.0, H)
                    if tt < limit:
                        limit, snap = tt, target
            if limit == _INF:
                stalled = t
                break
            _append(seg_t, seg_c, seg_l, t, P, labels[i + 1])
            s = limit - t
            pnew = _eval(P, s)
            if snap is not None:
                # land exactly on the level that triggered the event, so the
                # pointer (or the finish test) moves on even if t + s == t
                pnew = max(pnew, snap)
            t = limit
            p = max(p, pnew)
            continue

        # --- resource-bound
        if bind < 0:
            # No resource is needed here: progress jumps to P_D at once, but
            # only up to the next requirement breakpoint, where one may be.
            p = max(p, min(P[0], pmax, next_q))
            continue
        curve = [p, r0, 0.5 * r1]
        H = horizon - t
        limit = min(horizon, t_bind)
        snap = None
        for target in (next_q, pdone):
            if target < _INF:
                coefs = [p - target, r0, 0.5 * r1]
                tt = t + _first_root(coefs, 0.0, H)
                if tt < limit:
                    limit, snap = tt, target
        # catch-up with the data limit: P(s) - curve(s) reaches 0. Starting on
        # P_D, s = 0 is a root to skip (and one within eps: see _not_faster);
        # starting below it, every root is a real catch-up, however soon (fast
        # resources close a gap of a few ptol in far less than eps).
        diff = list(P) + [0.0] * (3 - len(P))
        diff[0] -= p
        diff[1] -= r0
        diff[2] -= 0.5 * r1
        tt = t + _first_root(diff, eps if gap <= ptol else 0.0, H)
        catch = False
        if tt < limit:
            limit, snap, catch = tt, None, True
        if limit == _INF:
            stalled = t
            break
        _append(seg_t, seg_c, seg_l, t, curve, -1 - bind)
        s = limit - t
        pnew = _eval(curve, s)
        if snap is not None:
            pnew = snap
        elif catch:
            pnew = min(pnew, _eval(P, s))
        t = limit
        p = max(p, min(pnew, _eval(P, s)))
    else:
        raise RuntimeError("progress computation exceeded its event budget (a bug: please report the model)")

    progress, keep = _build(seg_t, seg_c, t, p)
    return ProgressResult(progress, np.asarray([seg_l[k] for k in keep], dtype=np.intp), finish, stalled)


def _append(seg_t: list[float], seg_c: list[list[float]], seg_l: list[int],
            t: float, coefs: list[float], label: int) -> None:
    """Start a new segment, unless it merely continues the previous one (same
    limiting factor, same polynomial), which keeps downstream piece counts low."""
    if seg_l and seg_l[-1] == label:
        prev = _shift_asc(seg_c[-1], t - seg_t[-1])
        k = max(len(prev), len(coefs))
        a = prev + [0.0] * (k - len(prev))
        b = list(coefs) + [0.0] * (k - len(coefs))
        if all(abs(x - y) <= 1e-12 * max(abs(x), abs(y)) for x, y in zip(a, b)):
            return
    seg_t.append(t)
    seg_c.append(coefs)
    seg_l.append(label)


def _build(seg_t: list[float], seg_c: list[list[float]], t_end: float, p_end: float) -> tuple[PFunc, list[int]]:
    # Segments shorter than one ulp of t (t + s == t) carry no time: drop them.
    xs = seg_t + [t_end]
    keep = [k for k in range(len(seg_t)) if xs[k + 1] > xs[k]]
    if not keep:
        return PFunc._fast(np.array([t_end]), np.zeros((1, 0)), 0.0, p_end), []
    # Trim to the degree actually used: piecewise-linear progress keeps the
    # exact, vectorised linear paths available downstream.
    deg = 1
    for k in keep:
        co = seg_c[k]
        for d in range(len(co) - 1, deg - 1, -1):
            if co[d] != 0.0:
                deg = d + 1
                break
    # c[deg - len(co):, col] = co[::-1], built as rows (no numpy call per segment)
    rows = [[0.0] * len(keep) for _ in range(deg)]
    for col, k in enumerate(keep):
        co = seg_c[k][:deg]
        for j, v in enumerate(reversed(co), deg - len(co)):
            rows[j][col] = v
    c = np.array(rows, dtype=float)
    x = np.array([xs[k] for k in keep] + [t_end])
    return PFunc._fast(x, c, 0.0, p_end), keep
