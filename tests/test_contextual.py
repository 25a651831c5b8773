"""The contextual-bandit replica policies ``linucb:R`` and ``lints:R``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from _simutil import make_trace, poisson_trace
from condor_rlrep.cli.main import cli
from condor_rlrep.errors import InputError
from condor_rlrep.policyspec import live_spec, parse_spec
from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.contextual import ContextPolicy, RidgeArms, context, context_array, context_names
from condor_rlrep.sim.policies import depends_on_phi
from condor_rlrep.sim.policy_registry import parse_policy
from condor_rlrep.sim.run import simulate

MONDAY = 4 * 86400.0  # local seconds of 1970-01-05 00:00, a Monday
FIGURE1 = Path(__file__).resolve().parents[1] / "examples" / "figure1" / "figure1.dag"


# -- features ------------------------------------------------------------------
def test_context_by_hand():
    names = context_names(2)
    x = dict(zip(names, context(MONDAY + 6 * 3600.0, 1.5, 0.25, 0.4, [math.inf, 1800.0], True, 2)))
    assert len(names) == 14 + 2 * 6
    # 06:00 on Monday: a quarter of the day, 6/168 of the week
    assert (x["day_sin"], x["day_cos"]) == pytest.approx((1.0, 0.0), abs=1e-12)
    assert (x["day2_sin"], x["day2_cos"]) == pytest.approx((0.0, -1.0), abs=1e-12)
    assert x["week_sin"] == pytest.approx(math.sin(2 * math.pi * 6 / 168))
    assert (x["phi"], x["phi_over_1"], x["estimate_share"], x["free"], x["reboot"]) == (1.0, 0.5, 0.25, 0.4, 1.0)
    # never used since the trace began (inf) is idle for more than a day; 30 min is < 1 h
    assert [k for k in names if k.startswith("idle") and x[k] == 1.0] == ["idle1_ge1d", "idle2_lt1h"]
    clipped = context(MONDAY, 7.0, 1.0, 0.0, [899.0], False, 3)
    assert clipped[9:11] == [1.0, 1.0]  # φ′ clipped at 2
    assert clipped[14:] == [1.0] + [0.0] * 17  # < 15 min; no machine for replicas 2 and 3: all zero
    assert context(MONDAY, -0.3, 1.0, 0.0, [], False, 1)[9:11] == [0.0, 0.0]


def test_context_array_by_hand_at_the_bucket_edges():
    x = context_array(MONDAY + 6 * 3600.0, 1.5, 0.25, 0.4, [86400.0, 900.0, 899.0], False, 3)
    assert isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == (14 + 3 * 6,)
    assert x[[0, 9, 10, 11, 12, 13]].tolist() == [1.0, 1.0, 0.5, 0.25, 0.4, 0.0]
    # an idle time on an edge is in the bucket above it: exactly a day is ≥ 1 day, 15 min is < 1 h
    names = context_names(3)
    assert [names[i] for i in np.flatnonzero(x[14:]) + 14] == ["idle1_ge1d", "idle2_lt1h", "idle3_lt15m"]
    assert x.tolist() == context(MONDAY + 6 * 3600.0, 1.5, 0.25, 0.4, [86400.0, 900.0, 899.0], False, 3)
    nan = context_array(MONDAY, 0.5, 1.0, 0.0, [math.nan, 10.0], False, 1)  # one replica: idle[1] unused
    assert nan[14:].tolist() == [0.0] * 5 + [1.0]


@settings(max_examples=50, deadline=None)
@given(st.floats(0, 1e9), st.floats(-5, 50), st.floats(0, 1), st.floats(0, 1),
       st.lists(st.floats(0, 1e7), max_size=4), st.booleans(), st.integers(1, 4))
def test_context_is_bounded_with_one_bucket_per_machine(t, phi, share, free, idle, reboot, r):
    x = context(t, phi, share, free, sorted(idle, reverse=True), reboot, r)
    assert len(x) == len(context_names(r)) and all(-1.0 <= v <= 1.0 for v in x)
    hot = np.asarray(x[14:]).reshape(r, 6).sum(axis=1)
    assert hot.tolist() == [1.0 if i < len(idle) else 0.0 for i in range(r)]


# -- the ridge regression ------------------------------------------------------
def test_ridge_update_equals_a_hand_computed_ridge():
    arms = RidgeArms(2, 2, lam=1.0)
    arms.update(0, np.array([1.0, 0.0]), 1.0)
    arms.update(0, np.array([1.0, 1.0]), -5.0)
    arms.update(1, np.array([0.0, 1.0]), 0.5)
    # action 0: A = I + [1 0; 0 0] + [1 1; 1 1] = [3 1; 1 2], b = (1 − 5, −5) = (−4, −5)
    # A⁻¹ = [2 −1; −1 3] / 5, θ = A⁻¹ b = ((−8 + 5)/5, (4 − 15)/5) = (−0.6, −2.2)
    np.testing.assert_allclose(arms.a[0], [[3, 1], [1, 2]])
    np.testing.assert_allclose(arms.inv[0], np.array([[2, -1], [-1, 3]]) / 5, atol=1e-15)
    np.testing.assert_allclose(arms.theta[0], [-0.6, -2.2], atol=1e-15)
    # action 1: A = [1 0; 0 2], b = (0, 0.5), θ = (0, 0.25); untouched before: θ = 0
    np.testing.assert_allclose(arms.theta[1], [0.0, 0.25])
    means, widths = arms.means_widths(np.array([1.0, 1.0]))
    np.testing.assert_allclose(means, [-2.8, 0.25])
    # xᵀA⁻¹x: (2 − 1 − 1 + 3)/5 = 0.6 and 1 + 0.5
    np.testing.assert_allclose(widths, [math.sqrt(0.6), math.sqrt(1.5)])
    assert arms.counts.tolist() == [2, 1]
    arms.means_widths(np.array([0.0, 0.0]))  # scores() reuses its arrays; means_widths' results stay
    np.testing.assert_allclose(means, [-2.8, 0.25])
    np.testing.assert_allclose(widths, [math.sqrt(0.6), math.sqrt(1.5)])


def test_a_is_the_sum_of_the_products_in_their_order():
    arms = RidgeArms(2, 2, lam=1.0)
    arms.update(0, np.array([1.0, 2.0]), 0.0)
    arms.update(0, np.array([3.0, -1.0]), 0.0)
    # I + [1 2; 2 4] + [9 −3; −3 1]; action 1 untouched
    assert arms.a.tolist() == [[[11.0, -1.0], [-1.0, 6.0]], [[1.0, 0.0], [0.0, 1.0]]]
    xs = np.random.default_rng(5).uniform(-1, 1, (2100, 2)) * [1e-8, 1e8]
    expected = arms.a[0].copy()
    for i, x in enumerate(xs):
        arms.update(0, x, 0.0)
        expected += x[:, None] * x
        if i in (0, 700, 2099):  # mid-way, and past two exact inverses
            assert arms.a[0].tobytes() == expected.tobytes()


def test_forgetting_by_hand():
    arms = RidgeArms(1, 1, lam=2.0, forget=0.5)
    arms.update(0, np.array([1.0]), 1.0)  # A = 0.5·2 + 0.5·2 + 1 = 3, b = 1
    arms.update(0, np.array([2.0]), 0.5)  # A = 0.5·3 + 1 + 4 = 6.5, b = 0.5 + 1 = 1.5
    assert arms.a[0, 0, 0] == pytest.approx(6.5) and arms.theta[0, 0] == pytest.approx(1.5 / 6.5)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3000))
def test_rank_one_updates_match_the_exact_ridge(seed, n):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 5))
    r = rng.uniform(-5, 1, n)
    arms = RidgeArms(1, 5, lam=0.5)
    for row, value in zip(x, r):
        arms.update(0, row, float(value))
    a = 0.5 * np.eye(5) + x.T @ x
    np.testing.assert_allclose(arms.theta[0], np.linalg.solve(a, x.T @ r), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(arms.inv[0], np.linalg.inv(a), rtol=1e-9, atol=1e-12)


def test_decisions_pick_the_best_score_ties_to_fewer():
    policy = ContextPolicy("linucb:3", 3, alpha=0.0)
    x = np.zeros(policy.dim)
    x[0] = 1.0
    assert policy.decide(x) == 1  # nothing learnt: all tie
    policy.update(x, 1, -5.0)
    policy.update(x, 3, 0.3)
    assert policy.decide(x) == 3  # 0.3/2 beats 0 (action 2) and −2.5
    assert policy.decide(x, 2) == 2  # two free machines: the best of 1 and 2
    wide = ContextPolicy("linucb:3", 3, alpha=10.0)
    wide.update(x, 1, 1.0)
    wide.update(x, 1, 1.0)
    assert wide.decide(x) == 2  # unexplored: √1 = 1 of width against √(1/3)


# -- specs ---------------------------------------------------------------------
def test_specs_parse_round_trip_and_are_simulator_only():
    spec = parse_spec("lints:3,alpha=0.5,forget=0.999")
    assert (spec.kind, spec.count, dict(spec.options)) == ("lints", 3, {"alpha": 0.5, "forget": 0.999})
    assert parse_spec(spec.text) == spec and parse_spec("linucb:2,alpha=0.50") == parse_spec("linucb:2,alpha=0.5")
    assert spec.prefers_idle and spec.depends_on_phi and depends_on_phi("linucb:3")
    policy = parse_policy("linucb:4,alpha=0.2,lam=3")
    assert isinstance(policy, ContextPolicy) and (policy.max_replicas, policy.alpha, policy.lam) == (4, 0.2, 3.0)
    assert parse_policy("lints:2").thompson and not policy.thompson
    for bad, words in (("linucb:3,target=0.9", "unknown option 'target'"), ("idle-linucb:3", "drop idle-"),
                       ("lints:0", ">= 1"), ("linucb:3,alpha=x", "must be a number"),
                       ("linucb:3,alpha=-1", "alpha must be"), ("lints:3,forget=0", "forget must"),
                       ("linucb:3,lam=0", "lam must")):
        with pytest.raises(InputError, match=words):
            parse_policy(bad)
    for text in ("linucb:3", "lints:2,alpha=0.5"):
        with pytest.raises(InputError) as refused:
            live_spec(text)
        assert f"'{text}'" in str(refused.value) and "simulator-only" in str(refused.value)
        assert "\n" not in str(refused.value)


def test_instrument_refuses_them_in_one_line(tmp_path):
    for policy in ("linucb:3", "lints:3,alpha=0.3"):
        refused = CliRunner().invoke(cli, ["instrument", str(FIGURE1), "-o", str(tmp_path / "x.dag"),
                                           "--policy", policy])
        assert refused.exit_code == 2, refused.output
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and f"'{policy}'" in lines[0] and "simulator-only" in lines[0]
    assert not (tmp_path / "x.dag").exists()


# -- whole runs ----------------------------------------------------------------
def _trace(seed: int = 7):
    rng = np.random.default_rng(seed)
    return poisson_trace(rng, machines=40, rate=1 / 6000, length=5e5, session=1800, jobs=160,
                         job_length=600, job_window=(0, 4e5))


@pytest.mark.parametrize("policy", ["linucb:3", "lints:3,alpha=0.5"])
def test_a_short_run_keeps_the_invariants_and_is_deterministic(policy):
    trace = _trace()
    config = SimConfig(fraction=0.5, policy=policy, phi=0.3, seed=4)
    result = simulate(trace, config)
    t = result.tasks
    assert result.workflows == 80 and result.completed > 70
    assert ((t["replicas"] >= 1) & (t["replicas"] <= 3)).all() and (t["replicas"] > 1).any()
    assert (t["replicas"][t["phi_prime"] < 0] == 1).all()
    assert t["good_j"].sum() + t["bad_j"].sum() == pytest.approx(result.extra["workflow_invocation_energy_j"],
                                                                rel=1e-9)
    # what was learnt: every judged decision that was not late
    learnt = (t["phi_prime"] >= 0) & ~np.isnan(t["reward"])
    assert (t["state"][learnt] == np.flatnonzero(learnt)).all()
    again = simulate(trace, config)
    for name in t:
        np.testing.assert_array_equal(again.tasks[name], t[name], err_msg=name)


def _new_future(trace, cut: float, seed: int, n: int):
    """``trace`` with its logins starting at or after ``cut`` replaced by ``n`` random ones."""
    rng = np.random.default_rng(seed)
    keep = trace.login_start < cut
    starts = np.concatenate([trace.login_start[keep], rng.uniform(cut, trace.length, n)])
    ends = np.concatenate([trace.login_end[keep], starts[keep.sum():] + rng.uniform(1, 7200, n)])
    machines = np.concatenate([trace.login_machine[keep], rng.integers(0, trace.machine_count, n)])
    return make_trace(machines=trace.machine_count, length=trace.length, login_machine=machines,
                      login_start=starts, login_end=ends, job_submit=trace.job_submit,
                      job_duration=trace.job_duration)


@settings(max_examples=8, deadline=None)
@given(st.floats(5e4, 3.5e5), st.integers(0, 2**16), st.integers(0, 400),
       st.sampled_from(["linucb:3,alpha=2", "lints:3"]))
def test_decisions_use_only_the_past(cut, seed, n, policy):
    """Changing the owners' logins after a moment changes no decision made
    before it (nor the replicas' outcomes judged before it)."""
    trace = _trace()
    config = SimConfig(fraction=0.5, policy=policy, phi=0.2, seed=3, reboot_hour=None)
    a, b = simulate(trace, config).tasks, simulate(_new_future(trace, cut, seed, n), config).tasks
    before_a, before_b = a["submit"] < cut, b["submit"] < cut
    assert before_a.sum() == before_b.sum() > 0
    for name in ("submit", "phi_prime", "replicas", "state"):
        np.testing.assert_array_equal(a[name][before_a], b[name][before_b], err_msg=name)


def test_the_future_does_change_later_decisions():  # so that the property above is not vacuous
    trace = _trace()
    config = SimConfig(fraction=0.5, policy="linucb:3,alpha=2", phi=0.2, seed=3, reboot_hour=None)
    a, b = simulate(trace, config).tasks, simulate(_new_future(trace, 2e5, 1, 300), config).tasks
    n = min(len(a["replicas"]), len(b["replicas"]))
    assert (a["replicas"][:n] != b["replicas"][:n]).sum() > 20


def test_simulate_cli_runs_them(tmp_path):
    from condor_rlrep.sim.trace_io import write_trace

    rng = np.random.default_rng(8)
    trace = poisson_trace(rng, machines=40, rate=1 / 5000, length=3e5, session=1200, jobs=100,
                          job_length=900, job_window=(0, 2e5))
    write_trace(trace, tmp_path / "t")
    for policy in ("linucb:3,alpha=0.5", "lints:2"):
        result = CliRunner().invoke(cli, ["simulate", "--trace", str(tmp_path / "t"), "--policy", policy,
                                          "--fraction", "0.3", "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert summary["policy"] == policy and summary["workflows"] == 30
