"""The small-array paths of :mod:`condor_rlrep.bottlemod.combine` (issue 28):
``recenter`` and ``compose`` on Python floats must give the very bits the
numpy code gives (same operations, same order), signed zeros included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from condor_rlrep.bottlemod import PFunc
from condor_rlrep.bottlemod import combine, smallpaths

VALUES = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 3.0]),
                   st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))


@st.composite
def pfuncs(draw: st.DrawFn, max_degree: int = 2) -> PFunc:
    n = draw(st.integers(0, 6))
    steps = draw(st.lists(st.floats(1e-3, 50.0), min_size=n, max_size=n))
    x0 = draw(st.floats(-10.0, 10.0))
    x = np.cumsum([x0, *steps])
    if n and not (np.diff(x) > 0).all():
        x = x0 + np.arange(n + 1, dtype=float)
    degree = draw(st.integers(0, max_degree))
    c = np.array(draw(st.lists(st.lists(VALUES, min_size=n, max_size=n), min_size=degree + 1, max_size=degree + 1)),
                 dtype=float).reshape(degree + 1, n)
    return PFunc._fast(x, c, draw(VALUES), draw(VALUES))


@st.composite
def increasing_linear(draw: st.DrawFn) -> PFunc:
    n = draw(st.integers(1, 6))
    xs = np.cumsum([draw(st.floats(-5.0, 5.0)), *draw(st.lists(st.one_of(st.just(0.0), st.floats(0.01, 20.0)),
                                                                              min_size=n, max_size=n))])
    ys = np.cumsum([draw(st.floats(-5.0, 5.0)), *draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 7.25]),
                                                                min_size=n, max_size=n))])
    return PFunc.from_points(xs.tolist(), ys.tolist())


def _bits(fields: tuple) -> tuple:
    x, c, left, end = fields
    return (np.asarray(x).tobytes(), np.asarray(c).shape, np.asarray(c).tobytes(),
            np.float64(left).tobytes(), np.float64(end).tobytes())


@settings(max_examples=300, deadline=None)
@given(f=pfuncs(), points=st.lists(st.floats(-20.0, 400.0), max_size=8), extra=st.integers(0, 2))
def test_recenter_small_gives_the_numpy_bits(f: PFunc, points: list[float], extra: int) -> None:
    at = np.asarray(points, dtype=float)
    k = f.degree + extra
    small = combine.recenter(f, at, k)
    saved, smallpaths.LIMIT = smallpaths.LIMIT, -1
    try:
        big = combine.recenter(f, at, k)
    finally:
        smallpaths.LIMIT = saved
    assert small.shape == big.shape and small.tobytes() == big.tobytes()


@settings(max_examples=300, deadline=None)
@given(outer=pfuncs(), inner=increasing_linear())
def test_compose_small_gives_the_numpy_bits(outer: PFunc, inner: PFunc) -> None:
    small = combine.compose(outer, inner)
    saved, smallpaths.LIMIT = smallpaths.LIMIT, -1
    try:
        big = combine.compose(outer, inner)
    finally:
        smallpaths.LIMIT = saved
    assert _bits(small) == _bits(big)


def test_the_small_paths_are_the_ones_taken_on_small_models() -> None:
    f = PFunc.from_points([0, 1, 3], [0, 2, 2])
    calls = []
    real = combine._recenter_small
    combine._recenter_small = lambda *a: calls.append(a) or real(*a)  # type: ignore[assignment]
    try:
        combine.recenter(f, np.array([0.5, 2.0]), 1)
    finally:
        combine._recenter_small = real  # type: ignore[assignment]
    assert calls


def _outcome(fn):
    """``fn()``'s result as bits (a PFunc's fields, or a plain value), or its error."""
    try:
        out = fn()
    except (ValueError, TypeError, OverflowError) as err:
        return ("error", type(err).__name__, str(err))
    if isinstance(out, PFunc):
        return _bits((out.x, out.c, out.left, out.end)) + (type(out.left), type(out.end))
    return out, type(out)


def _both(fn) -> tuple:
    """``fn``'s outcome on the small paths and on the array code."""
    small = _outcome(fn)
    saved, smallpaths.LIMIT = smallpaths.LIMIT, -1
    try:
        big = _outcome(fn)
    finally:
        smallpaths.LIMIT = saved
    return small, big


EDGES = st.one_of(VALUES, st.sampled_from([1e308, -1e308, 1e-308, 5e-324, 1.7e308, float("inf"), float("nan")]),
                  st.integers(-3, 3), st.just(10**400))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the array code's overflows, on purpose
@settings(max_examples=400, deadline=None)
@given(xs=st.lists(st.one_of(EDGES, st.sampled_from([0.0, 1.0, 2.0, 2.0, 3.5])), min_size=0, max_size=8),
       ys=st.lists(EDGES, min_size=0, max_size=8), sort=st.booleans())
def test_builders_give_the_numpy_bits_and_errors(xs: list, ys: list, sort: bool) -> None:
    ys = ys[: len(xs)] if sort else ys
    if sort:
        try:
            xs = sorted(xs)
        except TypeError:
            pass
    small, big = _both(lambda: PFunc.from_points(xs, ys))
    assert small == big
    small, big = _both(lambda: PFunc.from_steps(xs, ys))
    assert small == big


@settings(max_examples=400, deadline=None)
@given(f=pfuncs(max_degree=1), tol_scale=st.sampled_from([1.0, 1e-12, 1e9]))
def test_checks_give_the_numpy_answers(f: PFunc, tol_scale: float) -> None:
    f = PFunc._fast(f.x, f.c * tol_scale, f.left, f.end)
    for check in (f.is_nondecreasing, f.is_nonnegative, f.is_piecewise_constant, f.scale):
        small, big = _both(check)
        assert small == big


@settings(max_examples=200, deadline=None)
@given(f=increasing_linear(), wobble=st.sampled_from([0.0, -1e-12, -1e-6, 1e-12, -0.0]))
def test_checks_near_their_tolerance_give_the_numpy_answers(f: PFunc, wobble: float) -> None:
    # values a rounding error below the previous one: the tolerance decides
    c = f.c.copy()
    c[-1] = c[-1] + wobble * np.arange(c.shape[1])
    g = PFunc._fast(f.x, c, f.left, f.end + wobble)
    for check in (g.is_nondecreasing, g.is_nonnegative):
        small, big = _both(check)
        assert small == big


@st.composite
def on_a_grid(draw: st.DrawFn) -> PFunc:
    """Functions sharing breakpoints (0 among them sometimes) and values, so that
    ties, crossings at breakpoints and equal pieces are common."""
    xs = sorted(set(draw(st.lists(st.sampled_from([-2.0, 0.0, 1.0, 2.5, 4.0, 7.0]), min_size=1, max_size=5))))
    if xs[0] == 0.0 and draw(st.booleans()):
        xs[0] = -0.0  # beside another function's 0.0: which one the grid keeps is numpy's to say
    degree = draw(st.integers(0, 3))
    coefs = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -3.0, 1e300, -1.5e308, 1.5e308])  # inf - inf: NaN
    c = [[draw(coefs) for _ in xs[1:]] for _ in range(degree + 1)]
    return PFunc._fast(np.array(xs), np.array(c, dtype=float).reshape(degree + 1, len(xs) - 1),
                       draw(VALUES), draw(VALUES))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the array code's overflows, on purpose
@settings(max_examples=400, deadline=None)
@given(fs=st.lists(st.one_of(pfuncs(max_degree=3), on_a_grid()), min_size=2, max_size=4))
def test_minimum_small_gives_the_numpy_bits(fs: list[PFunc]) -> None:
    def run():
        fields, index = combine.minimum(fs)
        return _bits(fields), index.dtype, index.tobytes()

    small, big = _both(run)
    assert small == big


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=300, deadline=None)
@given(f=st.one_of(pfuncs(max_degree=3), on_a_grid()), g=st.one_of(pfuncs(max_degree=2), on_a_grid()),
       at=st.lists(st.one_of(st.floats(-20.0, 400.0), st.sampled_from([0.0, -0.0, 1.0, 2.5, 7.0])), max_size=6))
def test_product_and_value_give_the_numpy_bits(f: PFunc, g: PFunc, at: list[float]) -> None:
    small, big = _both(lambda: f * g)
    assert small == big
    for t in at:
        small, big = _both(lambda: f.value(t))
        assert small == big


@st.composite
def lines(draw: st.DrawFn) -> PFunc:
    """Piecewise-linear functions (two coefficient rows) on a shared grid, with
    signed zeros, huge and tiny coefficients, rising or not."""
    xs = sorted(set(draw(st.lists(st.sampled_from([-1.7e308, -2.0, 0.0, 1.0, 2.5, 4.0, 7.0, 1e300, 1.7e308]), min_size=2, max_size=5))))
    if xs[0] == 0.0 and draw(st.booleans()):
        xs[0] = -0.0
    coefs = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, 1e-300, 5e-324, 1e300, -1.5e308, 1.5e308])
    c = [[draw(coefs) for _ in xs[1:]] for _ in range(2)]
    return PFunc._fast(np.array(xs), np.array(c, dtype=float), draw(VALUES), draw(VALUES))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the array code's overflows, on purpose
@settings(max_examples=500, deadline=None)
@given(outer=st.one_of(pfuncs(max_degree=1), on_a_grid(), lines()),
       inner=st.one_of(increasing_linear(), lines(), pfuncs(max_degree=1)))
@example(  # a flat piece of infinite width ends at 0 * inf = NaN: the array code finds a breakpoint there
    outer=PFunc._fast(np.array([1.0]), np.zeros((1, 0)), 0.0, 0.0),
    inner=PFunc._fast(np.array([-1.7e308, 1.7e308]), np.array([[0.0], [0.0]]), 0.0, 0.0))
@example(  # every outer slope zero and inner - ob[oi] overflowing: 0.0 * inf would be NaN, the array code skips it
    outer=PFunc._fast(np.array([-1.7e308, 1.7e308]), np.array([[0.0], [5.0]]), 0.0, 0.0),
    inner=PFunc._fast(np.array([0.0, 1.0]), np.array([[1.0], [1.5e308]]), 0.0, 0.0))
def test_compose_of_lines_gives_the_numpy_bits(outer: PFunc, inner: PFunc) -> None:
    # outer of degree 0 or 1 after a linear inner: combine._compose_lines, whose
    # written-out steps must keep every signed zero, overflow and NaN of the
    # array code (outer slopes all zero skip a multiplication there)
    if outer.degree > 1:
        outer = PFunc._fast(outer.x, outer.c[-2:], outer.left, outer.end)
    small, big = _both(lambda: PFunc._fast(*combine.compose(outer, inner)))
    assert small == big


@settings(max_examples=300, deadline=None)
@given(segs=st.lists(st.tuples(st.floats(0.0, 5.0), st.lists(VALUES, min_size=1, max_size=3)), min_size=1, max_size=8),
       p_end=VALUES)
def test_progress_pieces_are_laid_out_as_the_array_code_did(segs: list, p_end: float) -> None:
    from condor_rlrep.bottlemod import progress

    seg_t = np.cumsum([s for s, _ in segs]).tolist()
    seg_c = [list(c) for _, c in segs]
    t_end = seg_t[-1] + 1.0
    f, keep = progress._build(seg_t, seg_c, t_end, p_end)
    if not keep:
        return
    deg = f.c.shape[0]
    c = np.zeros((deg, len(keep)))  # the layout as it was written with numpy
    for col, k in enumerate(keep):
        co = seg_c[k][:deg]
        c[deg - len(co):, col] = co[::-1]
    assert f.c.shape == c.shape and f.c.tobytes() == c.tobytes() and f.c.flags.c_contiguous


def test_unchanged_allocations_are_told_as_numpy_array_equal_tells() -> None:
    from condor_rlrep.bottlemod.analysis import _same_allocs

    a = PFunc.from_points([0.0, 1.0, 3.0], [0.0, 2.0, 2.0])
    cases = [
        (PFunc.from_points([0.0, 1.0, 3.0], [0.0, 2.0, 2.0]), True),
        (PFunc.from_points([-0.0, 1.0, 3.0], [0.0, 2.0, 2.0]), True),  # -0.0 == 0.0
        (PFunc.from_points([0.0, 1.0, 3.5], [0.0, 2.0, 2.0]), False),
        (PFunc.from_points([0.0, 1.0], [0.0, 2.0]), False),  # other shape
        (PFunc._fast(a.x, np.array([[2.0, 0.0]]), a.left, a.end), False),  # other degree
        (PFunc._fast(a.x, a.c.copy(), a.left, 3.0), False),
    ]
    for g, same in cases:
        assert _same_allocs({"r": a}, {"r": g}) is same
        assert same == (np.array_equal(a.x, g.x) and np.array_equal(a.c, g.c) and a.end == g.end)
    nan = PFunc._fast(np.array([0.0, np.nan]), np.array([[1.0]]), 0.0, 1.0)
    nan2 = PFunc._fast(np.array([0.0, np.nan]), np.array([[1.0]]), 0.0, 1.0)
    assert not _same_allocs({"r": nan}, {"r": nan2})  # NaN is unequal, as in numpy
    assert _same_allocs({"r": nan}, {"r": nan})  # the same object: no comparison


CHECK_EDGES = st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-13, -1e-13, 1.5e308, -1.5e308, float("inf"), float("-inf"),
                               float("nan")])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the array code's inf - inf, on purpose
@settings(max_examples=400, deadline=None)
@given(n=st.integers(0, 4), degree=st.integers(0, 2), data=st.data())
def test_checks_on_extreme_values_give_the_numpy_answers(n: int, degree: int, data: st.DataObject) -> None:
    # constants (n = 0, any degree's shape) and small pieces with NaN, ±inf,
    # huge and signed-zero values: the small checks hand back to the array
    # code or answer as it does
    x = np.arange(n + 1, dtype=float) * data.draw(st.sampled_from([1.0, 1e300, 1e-300]))
    c = np.array(data.draw(st.lists(st.lists(CHECK_EDGES, min_size=n, max_size=n), min_size=degree + 1,
                                    max_size=degree + 1)), dtype=float).reshape(degree + 1, n)
    f = PFunc._fast(x, c, data.draw(CHECK_EDGES), data.draw(CHECK_EDGES))
    for check in (f.is_nondecreasing, f.is_nonnegative):
        small, big = _both(check)
        assert small == big


@settings(max_examples=200, deadline=None)
@given(v=st.sampled_from([2.0, 1e6, -1e6, 3e300]), d=st.sampled_from([0.0, 0.5, 1.0 - 1e-6, 1.0, 1.0 + 1e-6, 2.0]),
       up=st.booleans())
def test_constant_checks_at_their_tolerance_give_the_numpy_answers(v: float, d: float, up: bool) -> None:
    # a constant whose end is its left moved by d tolerances, or a huge value
    # beside a small negative one: the tolerance is REL_TOL * max(1, |left|,
    # |end|), so the larger of the two must count
    other = v - d * 1e-9 * abs(v) if not up else v + d * 1e-9 * abs(v)
    for left, end in ((v, other), (other, v), (-abs(v) * d * 1e-9, 0.0), (abs(v), -d), (-d, abs(v))):
        f = PFunc._fast(np.array([0.0]), np.zeros((1, 0)), left, end)
        for check in (f.is_nondecreasing, f.is_nonnegative):
            small, big = _both(check)
            assert small == big


@pytest.mark.parametrize("degree", [0, 1])
def test_recenter_at_minus_zero_on_a_breakpoint_at_zero_gives_the_numpy_bits(degree: int) -> None:
    # t = -0.0 on a piece starting at 0.0: h = -0.0 and 0.0 * h is -0.0, so
    # the written-out steps (which take 0.0 * h as 0.0) must not be used;
    # hypothesis found it through minimum() (a -0.0 coefficient came out 0.0)
    f = PFunc._fast(np.array([-2.0, 0.0, 1.0]), np.array([[0.0, -0.0]] * (degree + 1)), 0.0, 0.0)
    at = np.array([-2.0, -0.0, 0.0, 0.5])
    small, big = _both(lambda: _bits((at, combine.recenter(f, at, degree), 0.0, 0.0)))
    assert small == big
    fs = [PFunc._fast(np.array([-2.0, 0.0, 1.0, 2.5, 4.0]), np.array([[0.0, -0.0, 0.0, 0.0]]), 0.0, 0.0),
          PFunc._fast(np.array([0.0]), np.zeros((1, 0)), 0.0, 0.0),
          PFunc._fast(np.array([0.0, 1.0]), np.array([[0.0]]), 0.0, 0.0),
          PFunc._fast(np.array([-0.0]), np.zeros((1, 0)), 0.0, 0.0)]
    small, big = _both(lambda: _bits(combine.minimum(fs)[0]))
    assert small == big
