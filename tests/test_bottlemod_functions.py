"""Piecewise functions: hand-computed values and properties (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.bottlemod.functions import PFunc, minimum
from condor_rlrep.bottlemod.polynomial import poly_roots


def test_points_jump_is_right_continuous():
    f = PFunc.from_points([0, 5, 5, 10], [0, 1, 3, 4])
    assert f(0.0) == 0.0
    assert f(2.5) == pytest.approx(0.5)
    assert f(5.0) == 3.0  # the later point at a repeated x is the value
    assert f.left_limit(5.0) == pytest.approx(1.0)
    assert f(7.5) == pytest.approx(3.5)
    assert f(10.0) == 4.0 and f(1e9) == 4.0  # constant after the last point: no extrapolation
    assert f(-3.0) == 0.0
    np.testing.assert_allclose(f(np.array([-1, 2.5, 5, 11])), [0, 0.5, 3, 4])


def test_jump_at_start_and_end():
    f = PFunc.from_points([0, 0, 10, 10], [0, 2, 4, 9])
    assert f(-1e-9) == 0.0 and f(0.0) == 2.0
    assert f.left_limit(10.0) == pytest.approx(4.0) and f(10.0) == 9.0


def test_steps():
    f = PFunc.from_steps([0, 10, 20], [2.0, 0.0, 1.0])
    assert [f(t) for t in (-1, 0, 9.99, 10, 19.9, 20, 1e6)] == [2, 2, 2, 0, 0, 1, 1]
    assert f.integrate(0, 30) == pytest.approx(2 * 10 + 0 + 10)
    assert f.is_piecewise_constant()


def test_integrate_includes_extensions():
    f = PFunc.from_points([0, 10], [0, 10])
    assert f.integrate(0, 10) == pytest.approx(50)
    assert f.integrate(-5, 0) == 0.0
    assert f.integrate(10, 12) == pytest.approx(20)
    assert f.integrate(5, 15) == pytest.approx(37.5 + 50)


def test_compose_hand_values_with_jump():
    # "needs the whole input": progress 0 until all 100 units are there, then 20
    req = PFunc.from_points([0, 100, 100], [0, 0, 20])
    inp = PFunc.from_points([0, 50], [0, 100])
    pd = req.compose(inp)
    assert pd(49.999) == 0.0
    assert pd(50.0) == 20.0
    assert pd(1e6) == 20.0
    # streaming through a kinked requirement
    req2 = PFunc.from_points([0, 40, 100], [0, 10, 70])
    pd2 = req2.compose(inp)
    assert pd2(10.0) == pytest.approx(5.0)   # inp 20 -> 5
    assert pd2(20.0) == pytest.approx(10.0)  # inp 40 -> 10 (a new breakpoint)
    assert pd2(35.0) == pytest.approx(40.0)  # inp 70 -> 10 + 30
    assert 20.0 in pd2.x


def test_compose_quadratic_inner_is_exact():
    inner = PFunc(np.array([0.0, 10.0]), np.array([[1.0], [0.0], [0.0]]), end=100.0)  # t^2 on [0, 10)
    outer = PFunc.from_points([0, 25, 100], [0, 25, 175])  # slope 1 then 2
    g = outer.compose(inner)
    assert 5.0 in g.x  # t^2 reaches 25 at t = 5
    for t in [0.0, 2.0, 5.0, 7.0, 9.9]:
        assert g(t) == pytest.approx(outer(t * t))


def test_inverse_swaps_jumps_and_flats():
    f = PFunc.from_points([0, 10, 20, 20, 30], [0, 10, 10, 15, 25])
    g = f.inverse()
    assert g(5.0) == pytest.approx(5.0)
    assert g(10.0) == pytest.approx(20.0)  # flat stretch of f -> jump; sup {x: f(x) <= 10}
    assert g(12.0) == pytest.approx(20.0)  # jump of f -> flat stretch
    assert g(20.0) == pytest.approx(25.0)
    assert f.first_reach(10.0) == pytest.approx(10.0)  # the first time 10 is reached
    assert f.first_reach(12.0) == pytest.approx(20.0)
    assert f.first_reach(26.0) == math.inf


def test_inverse_of_quadratic_refused():
    f = PFunc(np.array([0.0, 1.0]), np.array([[1.0], [0.0], [0.0]]))
    with pytest.raises(ValueError):
        f.inverse()
    assert f.first_reach(0.25) == pytest.approx(0.5)


def test_minimum_with_argmin_and_crossing():
    a = PFunc.from_points([0, 10], [0, 10])      # t
    b = PFunc.from_points([0, 10], [4, 6])       # 4 + t/5: crosses at t = 5
    m, idx = minimum([a, b])
    assert 5.0 in m.x
    assert m(2.0) == pytest.approx(2.0) and m(8.0) == pytest.approx(5.6)
    i = int(np.searchsorted(m.x, 2.0, side="right")) - 1
    j = int(np.searchsorted(m.x, 8.0, side="right")) - 1
    assert idx[1 + i] == 0 and idx[1 + j] == 1
    assert m.end == pytest.approx(6.0) and idx[-1] == 1


def test_ppoly_roundtrip_and_roots():
    from scipy.interpolate import PPoly

    pp = PPoly(np.array([[1.0, -1.0], [0.0, 2.0], [-1.0, 0.0]]), np.array([0.0, 1.0, 3.0]))
    f = PFunc.from_ppoly(pp)
    xs = np.linspace(0, 2.99, 37)
    np.testing.assert_allclose(f(xs), pp(xs))
    back = f.to_ppoly()
    np.testing.assert_allclose(back(xs), pp(xs))
    assert poly_roots([-1.0, 0.0, 1.0]) == pytest.approx([-1.0, 1.0])
    assert poly_roots([1.0, 2.0, 1.0]) == pytest.approx([-1.0])  # double root
    assert poly_roots([6.0, -11.0, 6.0, -1.0]) == pytest.approx([1.0, 2.0, 3.0])


def test_crossings_include_jumps():
    f = PFunc.from_points([0, 10], [0, 10])
    g = PFunc.from_points([0, 4, 4, 10], [3, 3, 8, 8])
    c = f.crossings(g)
    np.testing.assert_allclose(c, [3.0, 4.0, 8.0])


def test_validation_messages():
    with pytest.raises(ValueError, match="non-decreasing"):
        PFunc.from_points([0, 2, 1], [0, 1, 2])
    with pytest.raises(ValueError, match="strictly increasing"):
        PFunc.from_steps([0, 0], [1, 2])
    assert not PFunc.from_points([0, 1], [1, 0]).is_nondecreasing()
    assert not PFunc.from_points([0, 1, 1], [0, 1, 0.5]).is_nondecreasing()


# ---------------------------------------------------------------- properties
@st.composite
def monotone_pl(draw, max_points=8):
    n = draw(st.integers(1, max_points))
    dx = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 7.0]), min_size=n - 1, max_size=n - 1))
    dy = draw(st.lists(st.floats(0.0, 10.0, allow_nan=False), min_size=n - 1, max_size=n - 1))
    x0 = draw(st.floats(-5, 5, allow_nan=False))
    y0 = draw(st.floats(0, 10, allow_nan=False))
    xs = np.concatenate([[x0], x0 + np.cumsum(dx)])
    ys = np.concatenate([[y0], y0 + np.cumsum(dy)])
    return PFunc.from_points(xs, ys)


def _probe(f: PFunc, g: PFunc | None = None) -> np.ndarray:
    pts = [f.x] + ([g.x] if g is not None else [])
    base = np.unique(np.concatenate(pts))
    mids = (base[:-1] + base[1:]) / 2 if base.size > 1 else np.empty(0)
    return np.concatenate([base, mids, [base[0] - 1.0, base[-1] + 1.0]])


@settings(max_examples=60, deadline=None)
@given(monotone_pl(), monotone_pl())
def test_compose_equals_pointwise(outer, inner):
    g = outer.compose(inner)
    ts = _probe(inner)
    expect = np.array([outer.value(inner.value(t)) for t in ts])
    scale = max(1.0, float(np.max(np.abs(expect))))
    assert np.all(np.abs(g(ts) - expect) <= 1e-7 * scale) or _near_jump(outer, inner, ts, g(ts), expect)


def _near_jump(outer, inner, ts, got, expect):
    # Where inner's value lands within rounding of one of outer's jumps, either
    # side is acceptable; everything else must match.
    bad = np.abs(got - expect) > 1e-7 * max(1.0, float(np.max(np.abs(expect))))
    for t in ts[bad]:
        u = inner.value(float(t))
        if np.min(np.abs(outer.x - u)) > 1e-9 * max(1.0, abs(u)):
            return False
    return True


@settings(max_examples=60, deadline=None)
@given(st.lists(monotone_pl(), min_size=1, max_size=3))
def test_minimum_equals_pointwise(fs):
    m, idx = minimum(fs)
    ts = np.unique(np.concatenate([_probe(f) for f in fs]))
    want = np.min([f(ts) for f in fs], axis=0)
    np.testing.assert_allclose(m(ts), want, rtol=1e-9, atol=1e-9)
    assert idx.size == m.n + 2
    # the argmin index names a function that attains the minimum
    for k in range(m.n):
        t = 0.5 * (m.x[k] + m.x[k + 1])
        assert fs[int(idx[1 + k])].value(t) == pytest.approx(m.value(t), rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(monotone_pl())
def test_inverse_first_reach_property(f):
    # first_reach(y) is the smallest x with f(x) >= y
    ys = np.linspace(f.left, f.end, 7)
    for y in ys[1:]:
        x = f.first_reach(float(y))
        if math.isfinite(x):
            assert f.value(x) >= y - 1e-9 * max(1.0, abs(y))
            assert f.value(x - 1e-6) < y + 1e-9 * max(1.0, abs(y)) or x == -math.inf
