"""Policies beyond the paper: idle placement, the survival model, reactive replicas."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _simutil import make_trace, poisson_trace
from condor_rlrep.errors import InputError
from condor_rlrep.sim.beyond import IdlePolicy, ModelPolicy
from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.engine import CANCELLED, DONE, Engine, EngineConfig
from condor_rlrep.sim.placement import IdleClock, hour_of_week
from condor_rlrep.sim.policies import depends_on_phi
from condor_rlrep.sim.policy_registry import parse_policy
from condor_rlrep.sim.run import simulate
from condor_rlrep.survival.model import SurvivalModel, replicas_for_target
from condor_rlrep.sim.workflows import FIGURE1_TASK_SECONDS

L = FIGURE1_TASK_SECONDS


# -- formulas against hand-computed values ------------------------------------
def test_replicas_for_target_by_hand():
    assert replicas_for_target([0.9, 0.8, 0.5], 0.9) == 1  # 0.9 >= 0.9
    assert replicas_for_target([0.9, 0.8, 0.5], 0.95) == 2  # 1 - 0.1·0.2 = 0.98
    assert replicas_for_target([0.9, 0.8, 0.5], 0.985) == 3  # 1 - 0.1·0.2·0.5 = 0.99
    assert replicas_for_target([0.9, 0.8, 0.5], 0.995) == 3  # none reach it: all
    assert replicas_for_target([], 0.9) == 1


def test_survival_model_by_hand():
    model = SurvivalModel((900.0, 3600.0), prior_seconds=1000.0, prior_rate=1e-4)
    assert [model.bucket(x) for x in (0, 899.9, 900, 3599, 3600, math.inf)] == [0, 0, 1, 1, 2, 2]
    assert model.hazard(3, 1) == pytest.approx(1e-4)  # the prior all the way up
    model.record(5, 2, 9000.0, True)
    # week (1 + 1000·1e-4)/(9000 + 1000) = 1.1e-4; hour 5 (1 + 0.11)/10000;
    # cell (1 + 0.111)/10000
    assert model.hazard(5, 2) == pytest.approx(1.111e-4)
    assert model.hazard(5, 0) == pytest.approx((0 + 1000 * 1.11e-4) / 1000)
    assert model.hazard(6, 0) == pytest.approx(1.1e-4)
    assert model.survival(5, 2, 3600.0) == pytest.approx(math.exp(-1.111e-4 * 3600))
    model.record(5, 2, 1000.0, False)  # censored: exposure only
    assert model.hazard(5, 2) < 1.111e-4
    with pytest.raises(ValueError):
        model.record(0, 0, -1.0, False)
    with pytest.raises(ValueError):
        SurvivalModel((10.0, 5.0))


def test_idle_clock_by_hand():
    # machine 0: sessions ending 100 and 300; machine 1: ending 200; machine 2: never
    clock = IdleClock(np.array([0, 1, 0]), np.array([100.0, 200.0, 300.0]), 3)
    np.testing.assert_array_equal(clock.last_logout(np.array([0, 1, 2]), 250.0), [100.0, 200.0, -np.inf])
    np.testing.assert_array_equal(clock.last_logout(np.array([0]), 300.0), [300.0])
    machines, idle = clock.longest_idle([0, 1, 2], 350.0, 2)
    assert machines.tolist() == [2, 1] and idle.tolist() == [math.inf, 150.0]
    assert clock.longest_idle([1, 0], 350.0, 1)[0].tolist() == [1]
    assert clock.longest_idle([0, 1], 350.0, 5)[0].tolist() == [1, 0]
    with pytest.raises(ValueError, match="forwards"):
        clock.last_logout(np.array([0]), 10.0)
    with pytest.raises(ValueError):
        IdleClock(np.array([3]), np.array([1.0]), 3)


def test_hour_of_week():
    monday = 4 * 86400.0  # 1970-01-05 was a Monday
    assert hour_of_week(monday) == 0
    assert hour_of_week(monday + 13.5 * 3600) == 13
    assert hour_of_week(monday + 6 * 86400 + 23.5 * 3600) == 167
    assert hour_of_week(monday + 7 * 86400) == 0


# -- properties ----------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), max_size=6), st.floats(0.0, 0.999))
def test_replicas_for_target_is_the_fewest(survivals, target):
    k = replicas_for_target(survivals, target)
    assert 1 <= k <= max(1, len(survivals))

    def reach(n):
        return 1.0 - math.prod(1.0 - s for s in survivals[:n])

    if k < len(survivals) or (survivals and reach(k) >= target):
        assert reach(k) >= target - 1e-12
    assert all(reach(n) < target for n in range(1, k))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 1000)), max_size=30),
    st.lists(st.integers(0, 1100), min_size=1, max_size=8),
    st.sampled_from([1, 2, 3, 1 << 16]),
)
def test_idle_clock_matches_brute_force(logins, queries, block):
    import condor_rlrep.sim.placement as placement

    machines = np.array([m for m, _ in logins], dtype=np.int64)
    ends = np.array([e for _, e in logins], dtype=np.float64)
    real = placement._BLOCK
    placement._BLOCK = block  # logouts walked a few at a time: every block edge
    try:
        clock = IdleClock(machines, ends, 5)
    finally:
        placement._BLOCK = real
    for now in sorted(queries):
        expected = [max((e for m, e in logins if m == k and e <= now), default=-math.inf) for k in range(5)]
        placement._BLOCK = block
        try:
            assert clock.last_logout(np.arange(5), float(now)).tolist() == expected
        finally:
            placement._BLOCK = real
        assert clock.last_list == expected
        top, idle = clock.longest_idle(list(range(5)), float(now), 3)
        assert len(top) == 3 and list(idle) == sorted(idle, reverse=True)
        assert min(idle) >= max(now - np.array(expected)[np.setdiff1d(np.arange(5), top)], default=-math.inf)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 167), st.integers(0, 5), st.floats(0, 1e4), st.booleans()), max_size=20),
       st.integers(0, 167), st.integers(0, 5), st.floats(0, 1e5), st.floats(0, 1e5))
def test_survival_is_a_probability_falling_with_length(records, hour, bucket, a, b):
    model = SurvivalModel()
    for r in records:
        model.record(*r)
    short, long_ = sorted((a, b))
    s_short, s_long = model.survival(hour, bucket, short), model.survival(hour, bucket, long_)
    assert 0.0 < s_long <= s_short <= 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 167), st.one_of(st.none(), st.integers(0, 5)), st.floats(0, 1e4),
                          st.booleans()), max_size=20),
       st.integers(0, 167), st.lists(st.one_of(st.floats(0, 2e5), st.just(math.inf)), max_size=4),
       st.floats(-0.5, 1.5), st.floats(0, 3e4), st.floats(0, 1e5), st.sampled_from([0.5, 0.9, 0.99]))
def test_the_simulators_count_is_choose_replicas_count(records, hour, idle, phi, estimate, reboot_in, target):
    """replica_count (the per-task path) and SurvivalModel.survivals give
    bit for bit what choose_replicas and survival give, and bucket what the
    edge-by-edge walk gave."""
    from condor_rlrep.survival.model import choose_replicas, replica_count

    model = SurvivalModel()
    for r in records:
        model.record(*r)
    for x in idle + [0.0, 900.0, 899.99, 86400.0, -1.0, math.nan]:
        assert model.bucket(x) == next((b for b, edge in enumerate(model.edges) if x < edge), len(model.edges))
    buckets = [model.bucket(t) for t in idle]
    for b in buckets + [None]:
        assert model.survivals(hour, [b], estimate) == [model.survival(hour, b, estimate)]
    want = choose_replicas(model, hour, phi, estimate, buckets, target=target, hi=1.0, reboot_in=reboot_in)
    assert replica_count(model, hour, phi, estimate, idle, target=target, hi=1.0, reboot_in=reboot_in) == want.replicas
    if want.survivals:
        assert list(want.survivals) == [model.survival(hour, b, estimate) for b in buckets]


# -- specs ---------------------------------------------------------------------
def test_specs_parse_and_phi_dependence():
    p = parse_policy("idle-fixed:2")
    assert isinstance(p, IdlePolicy) and p.max_replicas == 2 and p.choose(3, 0.1)[0] == 2
    assert parse_policy("idle-single").max_replicas == 1
    assert parse_policy("idle-rl:3").agent.config.max_replicas == 3
    m = parse_policy("model:3,target=0.9,hi=0.5")
    assert isinstance(m, ModelPolicy) and (m.max_replicas, m.target, m.hi, m.reactive) == (3, 0.9, 0.5, False)
    r = parse_policy("react:4")
    assert (r.use_model, r.reactive, r.max_replicas) == (False, True, 4)
    assert parse_policy("model-react:3").reactive and parse_policy("model-react:3").use_model
    assert not depends_on_phi("idle-fixed:2") and not depends_on_phi("react:3")
    assert depends_on_phi("idle-rl:3") and depends_on_phi("model:3")
    for bad in ("idle-model:3", "model:3,foo=1", "react:3,target=0.9", "model:0", "model:3,target=1.5",
                "model:3,target=x", "idle-bogus"):
        with pytest.raises(InputError):
            parse_policy(bad)


def test_model_plan_rules():
    policy = ModelPolicy("model:3", 3, target=0.95, hi=1.0)
    idle = np.array([1e5, 1e5, 1e5])
    assert policy.plan(0, -0.2, L, idle, 1e9, 1) == (1, 0)  # already late
    assert policy.plan(0, 1.5, L, idle, 1e9, 1) == (1, 0)  # slack for a rerun
    assert policy.plan(0, 0.1, L, idle, L / 2, 1) == (1, 0)  # the reboot kills every run
    assert policy.plan(0, 0.1, L, idle[:0], 1e9, 1) == (1, 0)  # no free machine
    # the prior rate 1/8 h: one 32-min replica survives with exp(-1/15) = 0.936
    assert policy.plan(0, 0.1, L, idle, 1e9, 1) == (2, 0)
    react = ModelPolicy("react:3", 3, use_model=False, reactive=True)
    assert react.plan(0, 0.1, L, idle, 1e9, 1) == (1, 2)


# -- the engine's held replicas ------------------------------------------------
def test_held_jobs_wait_until_released():
    trace = make_trace(machines=3, length=10_000.0)
    engine = Engine(trace, EngineConfig(reboot_hour=None), np.random.default_rng(0))
    first = engine.submit(100.0, 0, 0.0, machine=1)
    held = engine.hold_many(100.0, 0, 0.0, 2)
    assert list(held) == [first + 1, first + 2] and engine.nfree == 2
    engine.release(held[0], 0.0, machine=2)
    assert engine.nfree == 1
    engine.release(held[0], 0.0)  # a second release is a no-op
    assert engine.nfree == 1
    engine.cancel(held[1], 0.0)
    with pytest.raises(ValueError, match="not free"):
        engine.release(engine.hold_many(5.0, 0, 0.0, 1)[0], 0.0, machine=1)  # busy with ``first``
    engine.run()
    assert engine.jstate[held[0]] == DONE and engine.jstate[held[1]] == CANCELLED
    assert engine.jfirst[held[1]] == -1  # never ran


# -- whole runs ----------------------------------------------------------------
def test_idle_placement_finds_the_machines_nobody_uses():
    # 20 machines with a 1-s login every 300 s, 6 that nobody touches
    busy = 20
    starts = [m * 13.0 + 300.0 * j for m in range(busy) for j in range(2000)]
    machines = [m for m in range(busy) for _ in range(2000)]
    trace = make_trace(machines=busy + 6, length=590_000.0, login_machine=machines, login_start=starts,
                       login_end=np.asarray(starts) + 1.0, job_submit=np.arange(20) * 25_000.0 + 500.0,
                       job_duration=np.full(20, 60.0))
    idle = simulate(trace, SimConfig(fraction=1.0, policy="idle-single", reboot_hour=None, seed=3))
    assert idle.completed == 20 and int(idle.tasks["evictions"].sum()) == 0
    np.testing.assert_allclose(idle.wf_p, 0.0, atol=1e-12)
    plain = simulate(trace, SimConfig(fraction=1.0, policy="single", reboot_hour=None, seed=3))
    assert int(plain.tasks["evictions"].sum()) > 20


@pytest.mark.parametrize("policy", ["idle-fixed:2", "idle-rl:3", "model:3", "react:3", "model-react:3,target=0.8"])
def test_runs_keep_the_invariants(policy):
    rng = np.random.default_rng(7)
    trace = poisson_trace(rng, machines=40, rate=1 / 6000, length=5e5, session=1800, jobs=200,
                          job_length=600, job_window=(0, 4e5))
    result = simulate(trace, SimConfig(fraction=0.5, policy=policy, phi=0.3, seed=4))
    t = result.tasks
    R = parse_policy(policy).max_replicas
    assert result.workflows == 100 and result.completed > 90
    assert t["good_j"].sum() + t["bad_j"].sum() == pytest.approx(result.extra["workflow_invocation_energy_j"],
                                                                rel=1e-9)
    assert ((t["replicas"] >= 1) & (t["replicas"] <= R)).all()
    if policy.startswith("react"):
        # every replica after the first was released by an eviction
        assert (t["replicas"] - 1 <= t["evictions"]).all()
        assert (t["replicas"] > 1).any()
    assert (t["invocations"] >= t["replicas"]).all()
    if policy.startswith("model"):
        late = t["phi_prime"] < 0
        assert (t["replicas"][late] == 1).all()


def test_a_reactive_task_gets_a_replica_per_eviction():
    # one machine evicted at 600 s; the held replica must start then on the other
    trace = make_trace(machines=3, length=100_000.0, login_machine=[0, 1, 2], login_start=[0.0, 0.0, 700.0],
                       login_end=[10.0, 20.0, 800.0], job_submit=[100.0], job_duration=[60.0])
    result = simulate(trace, SimConfig(workflows=("figure1@0.5",), fraction=1.0, policy="react:2",
                                       reboot_hour=None, seed=1))
    t = result.tasks
    first = int(np.argmin(t["submit"]))
    # the first task lands on machine 2 (idle for ever at 100 s), is evicted
    # at 700 s; the held replica starts then; the evicted one is requeued.
    assert t["replicas"][first] == 2 and t["evictions"][first] == 1
    assert t["invocations"][first] == 3  # evicted run, its requeued run, the released replica
    assert result.completed == 1


def test_simulate_cli_runs_the_new_policies(tmp_path):
    from click.testing import CliRunner

    from condor_rlrep.cli.main import cli
    from condor_rlrep.sim.trace_io import write_trace

    rng = np.random.default_rng(8)
    trace = poisson_trace(rng, machines=40, rate=1 / 5000, length=3e5, session=1200, jobs=100,
                          job_length=900, job_window=(0, 2e5))
    write_trace(trace, tmp_path / "t")
    for policy in ("idle-fixed:2", "model:3,target=0.9", "react:2"):
        result = CliRunner().invoke(cli, ["simulate", "--trace", str(tmp_path / "t"), "--policy", policy,
                                          "--fraction", "0.3", "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert summary["policy"] == policy and summary["workflows"] == 30
    bad = CliRunner().invoke(cli, ["simulate", "--trace", str(tmp_path / "t"), "--policy", "model:3,foo=2"])
    assert bad.exit_code == 2 and "unknown option 'foo'" in bad.output


# -- the incremental idle order against the full sort ---------------------------
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), grid=st.sampled_from([1.0, 600.0, 3600.0]),
       choice=st.sampled_from(["random", "efficient", "slot-order"]), policy=st.sampled_from(["model:3", "idle-fixed:2", "react:3",
                                                                                  "linucb:3"]))
def test_idle_order_answers_as_the_full_sort(seed, grid, choice, policy):
    """Every query of a run: IdleOrder.top (incremental) equals
    IdleClock.longest_idle over all free machines (the sort it replaced),
    with logouts on a coarse grid (many equal idle times), sessions of zero
    length, machines nobody uses, and several power classes."""
    from condor_rlrep.sim.placement import IdleOrder

    rng = np.random.default_rng(seed)
    machines = 30
    n = 600
    lm = rng.integers(0, machines - 4, n)  # the last 4 never used: idle for ever
    ls = np.floor(rng.uniform(0.0, 4e5, n) / grid) * grid
    le = ls + np.floor(rng.choice([0.0, 1800.0, 7200.0], n) / grid) * grid
    trace = make_trace(machines=machines, length=5e5, login_machine=lm, login_start=ls, login_end=le,
                       job_submit=np.sort(np.floor(rng.uniform(0, 4e5, 120) / grid) * grid),
                       job_duration=np.full(120, 3600.0),  # completions on the grid: at logins' times
                       watts=rng.choice([80.0, 100.0], machines))
    # completions on the grid meet sessions of zero length at the same
    # moment, before the engine has reached them (IdleOrder's docstring)
    queries = []
    real = IdleOrder.top

    def both(self, now, count):
        machines, idle = got = real(self, now, count)
        want = self.clock.longest_idle(self._engine.free_machines(), now, count, self._engine.cls)
        assert (machines, idle) == (want[0].tolist(), want[1].tolist()), (now, count)
        queries.append(len(set(idle)) < len(idle))
        return got

    IdleOrder.top = both
    try:
        simulate(trace, SimConfig(fraction=0.6, policy=policy, phi=0.3, seed=seed % 1000, machine_choice=choice))
    finally:
        IdleOrder.top = real
    assert queries  # the runner asked


def test_equal_idle_times_go_by_power_class_then_a_fixed_scatter():
    """The tie rule is the model's own, not a sort's choice: the same on every CPU,
    and not the machine number (machines are numbered room by room)."""
    from condor_rlrep.sim.placement import tie_rank

    # Knuth's multiplicative hash by hand: m * 2654435761 mod 2**32
    assert [tie_rank(m) for m in range(4)] == [0, 2654435761, 1013904226, 3668339987]
    assert len({tie_rank(m) for m in range(5000)}) == 5000
    clock = IdleClock(np.array([0, 1, 2, 3]), np.array([100.0, 100.0, 100.0, 50.0]), 5)
    # idle: 4 for ever, 3 150 s, 0/1/2 100 s; ranks 0 < 2 < 1 among 0..2
    classes = [1, 0, 0, 0, 1]
    assert clock.longest_idle([3, 2, 0, 1, 4], 200.0, 5, classes)[0].tolist() == [4, 3, 2, 1, 0]
    assert clock.longest_idle([0, 2, 1], 200.0, 2, classes)[0].tolist() == [2, 1]
    assert clock.longest_idle([1, 2, 0], 200.0, 2)[0].tolist() == [0, 2]  # one class: by the scatter
