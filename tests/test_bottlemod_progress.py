"""Progress of single tasks: hand-computed cases and invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from condor_rlrep.bottlemod import PFunc, compute_progress
from _bottlemod_util import const, cpu, labels_of, single

R = -1  # label of resource 0


def test_compute_bound():
    # all 100 units of data at t = 0; 2 CPU/s, 0.5 CPU per unit -> 4 units/s
    r = single(const(100.0), [cpu(2.0, 0.5)])
    assert r.finish == pytest.approx(25.0)
    assert labels_of(r) == [(0.0, pytest.approx(25.0), R)]
    assert r.progress(10.0) == pytest.approx(40.0)


def test_data_bound():
    r = single(PFunc.from_points([0, 50], [0, 100]), [cpu(10.0)])
    assert r.finish == pytest.approx(50.0)
    assert labels_of(r) == [(0.0, pytest.approx(50.0), 0)]
    assert r.progress(20.0) == pytest.approx(40.0)


def test_whole_input_first():
    req = PFunc.from_points([0, 100, 100], [0, 0, 20])  # nothing before the last byte
    pd = req.compose(PFunc.from_points([0, 50], [0, 100]))
    r = single(pd, [cpu(1.0)], pmax=20.0)
    assert r.finish == pytest.approx(70.0)
    assert labels_of(r) == [(0.0, 50.0, 0), (50.0, pytest.approx(70.0), R)]
    assert r.progress(49.0) == 0.0


def test_resource_then_data_then_resource_with_jump():
    # input: 2 units/s until t = 10 (20 units), nothing until 30, then the rest at once
    pd = PFunc.from_points([0, 10, 30, 30], [0, 20, 20, 100])
    r = single(pd, [cpu(1.0)])
    # p = t catches the flat data limit 20 at t = 20, waits, then CPU-bound again
    assert r.finish == pytest.approx(110.0)
    assert labels_of(r) == [(0.0, pytest.approx(20.0), R), (pytest.approx(20.0), 30.0, 0), (30.0, pytest.approx(110.0), R)]


def test_catch_up_mid_piece_relabels():
    # 10 units at once, then 1 unit/s up to 50; CPU 4 units/s catches up at t = 10/3
    pd = PFunc.from_points([0, 40], [10, 50])
    r = single(pd, [cpu(4.0)], pmax=50.0)
    lab = labels_of(r)
    assert lab[0] == (0.0, pytest.approx(10 / 3), R)
    assert lab[1] == (pytest.approx(10 / 3), pytest.approx(40.0), 0)
    assert r.finish == pytest.approx(40.0)


def test_allocation_drops_mid_run():
    r = single(const(40.0), [cpu(PFunc.from_steps([0, 10], [2.0, 0.5]))], pmax=40.0)
    assert r.finish == pytest.approx(50.0)  # 20 by t = 10, the other 20 at 0.5/s
    r = single(const(40.0), [cpu(PFunc.from_steps([0, 10, 20], [2.0, 0.0, 1.0]))], pmax=40.0)
    assert r.finish == pytest.approx(40.0)
    assert r.progress(15.0) == pytest.approx(20.0)


def test_allocation_ramps():
    # 0 -> 2 linearly over [0, 10]: 10 units by t = 10, then 2/s for the other 30
    r = single(const(40.0), [cpu(PFunc.from_points([0, 10], [0, 2]))], pmax=40.0)
    assert r.finish == pytest.approx(25.0)
    assert r.progress(5.0) == pytest.approx(2.5)  # ∫0^5 t/5 dt
    # 1/s, then ramping down to 0 over [10, 20]: finish solves u - u²/20 = 2
    r = single(const(12.0), [cpu(PFunc.from_points([0, 10, 20], [1, 1, 0]))], pmax=12.0)
    assert r.finish == pytest.approx(10 + 10 - math.sqrt(60), rel=1e-8)  # finish = P_max(1 - REL_TOL)
    # ramping down to 0 before enough is done: never finishes
    r = single(const(20.0), [cpu(PFunc.from_points([0, 10, 20], [1, 1, 0]))], pmax=20.0)
    assert r.finish is None and r.progress.end == pytest.approx(15.0)


def test_requirement_changes_with_progress():
    q = PFunc.from_steps([0, 50], [1.0, 2.0])  # the second half costs twice as much
    r = single(const(100.0), [cpu(1.0, q)])
    assert r.finish == pytest.approx(150.0)


def test_two_resources_binding_changes():
    # CPU 1/s flat; network ramps 0 -> 4 over [0, 4]: network binds until t = 1
    net = (PFunc.from_points([0, 4], [0, 4]), const(1.0))
    r = compute_progress(const(100.0), np.zeros(2, dtype=np.intp), [cpu(1.0), net], 100.0)
    lab = labels_of(r)
    assert lab[0] == (0.0, pytest.approx(1.0), -2) and lab[1][2] == -1
    assert r.finish == pytest.approx(1.0 + 99.5)  # 0.5 units by t = 1, the other 99.5 at 1/s


def test_no_resources_follows_data_limit_with_jumps():
    pd = PFunc.from_points([0, 5, 5, 10], [0, 10, 60, 100])
    r = single(pd, [])
    assert r.finish == pytest.approx(10.0)
    assert r.progress(5.0) == pytest.approx(60.0)
    assert r.progress(7.5) == pytest.approx(80.0)


def test_zero_requirement_stretch_is_free():
    q = PFunc.from_steps([0, 40, 60], [1.0, 0.0, 1.0])  # progress 40..60 needs no CPU
    r = single(const(100.0), [cpu(1.0, q)])
    assert r.finish == pytest.approx(80.0)


def test_never_finishes_when_inputs_fall_short():
    r = single(const(50.0), [cpu(1.0)])
    assert r.finish is None
    assert r.stalled_at == pytest.approx(50.0)
    assert r.progress.end == pytest.approx(50.0)


def test_never_finishes_without_allocation():
    r = single(const(100.0), [cpu(PFunc.from_steps([0, 10], [1.0, 0.0]))])
    assert r.finish is None and r.progress.end == pytest.approx(10.0)


def test_start_time_and_near_equal_end_values():
    # data end equals P_max up to rounding: still finishes (no exact == compare)
    r = single(const(100.0 * (1 - 1e-13)), [cpu(1.0)], start=5.0)
    assert r.finish == pytest.approx(105.0)
    assert r.progress(4.0) == 0.0


def test_tiny_data_limit_against_allocation_from_zero():
    # P_D rises at 4.7e-44 units/s; at t = 1 the allocation ramps up from 0 and
    # overtakes that rate after 4.7e-44 s: progress must follow P_D, not run
    # resource-bound up to 0.5 and drop back (it did, non-monotone).
    inp, req, alloc, q = _tiny_ramp_case(1.4013e-45)
    pd = req.compose(inp)
    r = single(pd, [(alloc, q)])
    ts = np.linspace(0.0, 4.0, 401)
    assert np.all(np.diff(r.progress(ts)) >= 0.0)
    assert np.all(r.progress(ts) <= pd(ts) * (1 + 1e-9))
    assert r.finish is None and r.stalled_at == pytest.approx(3.0)


def test_fast_resource_catches_up_within_time_resolution():
    # 1e9 units/s close a 2e-7 gap in 2e-16 s, far below TIME_EPS: the
    # catch-up must still stop the resource-bound stretch (it ran to p = 100).
    pd = PFunc.from_points([0, 10], [2e-7, 100])
    r = single(pd, [cpu(1e9)])
    for t in (1e-16, 5e-8, 1e-7, 5.0):
        assert r.progress(t) <= pd(t) + 1e-12
    assert r.finish == pytest.approx(10.0)


def test_large_values_terminate():
    # 1e11 units at 1 unit/s: no creeping steps, one piece
    r = single(const(1e11), [cpu(1.0)], pmax=1e11)
    assert r.finish == pytest.approx(1e11) and r.progress.n == 1


# ------------------------------------------------------------------ invariants
@st.composite
def scenario(draw):
    n = draw(st.integers(1, 6))
    dts = draw(st.lists(st.sampled_from([0.0, 1.0, 3.0, 10.0]), min_size=n, max_size=n))
    incs = draw(st.lists(st.floats(0.0, 40.0), min_size=n, max_size=n))
    ts = np.concatenate([[0.0], np.cumsum(dts)])
    ys = np.concatenate([[draw(st.floats(0.0, 20.0))], np.cumsum(incs)])
    ys[1:] += ys[0]
    inp = PFunc.from_points(ts, ys)
    req_kind = draw(st.sampled_from(["stream", "whole", "kinked"]))
    top = max(float(ys[-1]), 1.0)
    if req_kind == "stream":
        req = PFunc.from_points([0, top], [0, 100])
    elif req_kind == "whole":
        req = PFunc.from_points([0, top, top], [0, 0, 100])
    else:
        req = PFunc.from_points([0, top / 3, top], [0, 70, 100])
    m = draw(st.integers(1, 5))
    at = np.concatenate([[0.0], np.cumsum(draw(st.lists(st.sampled_from([1.0, 4.0, 9.0]), min_size=m - 1, max_size=m - 1)))])
    av = draw(st.lists(st.floats(0.0, 8.0), min_size=m, max_size=m))
    if draw(st.booleans()):
        alloc = PFunc.from_points(at, av)
    else:
        alloc = PFunc.from_steps(at, av)
    qv = draw(st.lists(st.floats(0.05, 2.0), min_size=1, max_size=3))
    q = PFunc.from_steps(np.linspace(0, 90, len(qv)), qv)
    return inp, req, alloc, q


def _run(inp, req, alloc, q):
    pd = req.compose(inp)
    return pd, single(pd, [(alloc, q)])


def _tiny_ramp_case(top: float):
    """An input ramping 0 -> ``top`` (denormal-scale) over [0, 3]; an allocation
    ramping up from exactly 0 at t = 1 (the shape hypothesis found)."""
    return (PFunc.from_points([0, 3], [0, top]), PFunc.from_points([0, 1], [0, 100]),
            PFunc.from_points([0, 1, 2], [0, 0, 1]), const(1.0))


@settings(max_examples=80, deadline=None)
@given(scenario())
@example(_tiny_ramp_case(1.79135e-88))
@example(_tiny_ramp_case(1.4013e-45))
def test_invariants(sc):
    inp, req, alloc, q = sc
    pd, r = _run(inp, req, alloc, q)
    p = r.progress
    horizon = (r.finish if r.finish is not None else (r.stalled_at or 0.0)) + 5.0
    ts = np.unique(np.concatenate([np.linspace(0, horizon, 97), p.x, pd.x[pd.x <= horizon]]))
    vals = p(ts)
    tol = 1e-7 * 100
    assert np.all(np.diff(vals) >= -tol)                  # monotone
    assert np.all(vals <= pd(ts) + tol)                   # never above P_D
    assert np.all(vals <= 100.0 + tol)
    # never faster than the resource allows: ∫Q dp over [a, b] <= ∫A dt
    for a, b in zip(ts[:-1:7], ts[7::7]):
        need = q.integrate(float(p(a)), float(p(b)))
        assert need <= alloc.integrate(float(a), float(b)) + 1e-6 * max(1.0, need)
    if r.finish is not None:
        assert p(r.finish) == pytest.approx(100.0)


@settings(max_examples=60, deadline=None)
@given(scenario(), st.floats(1.0, 4.0), st.sampled_from(["alloc", "input", "both"]))
def test_speeding_up_never_delays(sc, factor, what):
    inp, req, alloc, q = sc
    _, before = _run(inp, req, alloc, q)
    assume(before.finish is not None)
    inp2 = inp.time_scaled(factor) if what in ("input", "both") else inp
    alloc2 = alloc.scaled(factor) if what in ("alloc", "both") else alloc
    _, after = _run(inp2, req, alloc2, q)
    assert after.finish is not None
    assert after.finish <= before.finish * (1 + 1e-9) + 1e-9


def test_polynomial_requirement_pieces():
    # R(k) = k²/100 (quadratic piece, PPoly layout) with input I(t) = t: P_D = t²/100
    from condor_rlrep.bottlemod import parse_function

    req = parse_function({"ppoly": {"x": [0, 100], "c": [[0.01], [0.0], [0.0]]}, "end": 100}, "req")
    pd = req.compose(PFunc.from_points([0, 100], [0, 100]))
    r = single(pd, [cpu(50.0)])
    assert r.finish == pytest.approx(100.0)
    assert r.progress(50.0) == pytest.approx(25.0)
    # CPU at 1/s catches t²/100 where the slope t/50 exceeds 1: resource-bound from t = 50
    r = single(pd, [cpu(1.0)])
    lab = labels_of(r)
    assert lab[0] == (0.0, pytest.approx(50.0), 0) and lab[1][2] == R
    assert r.finish == pytest.approx(50.0 + 75.0)
    # cubic R(k) = k³/10⁴: the data limit has degree 3 (numpy roots path)
    req3 = PFunc(np.array([0.0, 100.0]), np.array([[1e-4], [0.0], [0.0], [0.0]]), end=100.0)
    pd3 = req3.compose(PFunc.from_points([0, 100], [0, 100]))
    r = single(pd3, [cpu(1.0)])
    # slope 3t²/10⁴ reaches 1 at t = 100/√3; the CPU then needs 100 - (100/√3)³/10⁴ more
    t1 = 100 / math.sqrt(3)
    assert r.finish == pytest.approx(t1 + 100 - t1 ** 3 / 1e4, rel=1e-8)


def test_usage_matches_allocation_when_resource_bound():
    from _bottlemod_util import external, res, task, workflow
    from condor_rlrep.bottlemod import analyze

    ramp = PFunc.from_points([0, 10, 20], [0, 2, 1])
    a = analyze(workflow(task("A", inputs=[external()], resources=[res(allocation=ramp, per_unit=0.5)])))
    r = a.tasks["A"]
    use = r.usage("cpu")
    for t in (1.0, 5.0, 12.0, 19.0):
        assert use(t) == pytest.approx(ramp(t))
    assert use(r.finish + 1.0) == 0.0
    assert use.integrate(0.0, r.finish) == pytest.approx(0.5 * 100.0)  # Q · P_max


@settings(max_examples=30, deadline=None)
@given(scenario())
def test_progress_matches_fine_time_stepping(sc):
    """The event-driven result is the *largest* feasible progress: compare it
    with a brute-force time-stepped solution (greedy: as fast as allowed)."""
    inp, req, alloc, q = sc
    pd, r = _run(inp, req, alloc, q)
    end = r.finish if r.finish is not None else (r.stalled_at or 0.0)
    horizon = min(end + 10.0, 400.0)
    dt = 0.005
    ts = np.arange(0.0, horizon + dt, dt)
    a_mid = alloc(ts + dt / 2)
    limit = pd(ts)
    breaks = [float(b) for b in q.x]

    def advance(p: float, a: float) -> float:
        # q is piecewise constant in progress: cross its steps exactly within
        # a time step, or the reference's own error at a step (one dt at the
        # old rate) is amplified by the ratio of the q values after it
        left = dt
        while left > 0.0 and a > 0.0:
            qv = q.value(p)
            nxt_b = next((b for b in breaks if b > p), np.inf)
            need = (nxt_b - p) * qv / a
            if need >= left:
                return p + left * a / qv
            p, left = nxt_b, left - need
        return p

    p, ref = 0.0, np.empty(ts.size)
    for k in range(ts.size):
        ref[k] = p
        nxt = advance(p, float(a_mid[k])) if k + 1 < ts.size else p
        p = min(nxt, limit[k + 1] if k + 1 < ts.size else limit[k], 100.0)
    got = r.progress(ts)
    # Euler error: a few steps' worth of the fastest rate, plus P_D's jumps
    # being seen up to one step late by the time-stepped solution
    rate = float(np.max(a_mid)) / min(float(np.min(q.c)) if q.n else q.end, q.end, q.left)
    rate = max(rate, float(np.max(np.abs(pd.derivative()(ts)))))
    tol = 3 * dt * max(rate, 1.0)
    far = np.abs(got - ref) > tol
    # allow disagreement only right at a jump of the data limit
    jumps = np.flatnonzero(np.abs(np.diff(limit)) > tol) + 1
    near_jump = np.zeros(ts.size, dtype=bool)
    for j in jumps:
        near_jump[max(0, j - 2): j + 3] = True
    assert not np.any(far & ~near_jump), (ts[far & ~near_jump][:5], got[far & ~near_jump][:5], ref[far & ~near_jump][:5])


def test_engine_rejects_unsupported_shapes():
    quad = PFunc(np.array([0.0, 1.0]), np.array([[1.0], [0.0], [0.0]]))
    with pytest.raises(ValueError, match="piecewise-linear"):
        single(const(1.0), [(quad, const(1.0))])
    with pytest.raises(ValueError, match="piecewise constant"):
        single(const(1.0), [(const(1.0), PFunc.from_points([0, 1], [1, 2]))])
    with pytest.raises(ValueError, match="max_progress"):
        single(const(1.0), [], pmax=0.0)
