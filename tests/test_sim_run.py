"""Workflows in the simulator: φ′, replicas, energy, metrics, determinism."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from _simutil import make_trace, poisson_trace
from condor_rlrep.errors import InputError
from condor_rlrep.sim import outputs as outputs_module
from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.metrics import p_of_workflow, within_counts
from condor_rlrep.sim.outputs import write_outputs
from condor_rlrep.sim.result import result_for_phi
from condor_rlrep.sim.run import simulate
from condor_rlrep.sim.workflows import (
    FIGURE1_TASK_SECONDS,
    MONTAGE_RUNTIME_SCALE,
    figure1_workflow,
    inject,
    load_template,
    make_template,
    montage_workflow,
    parse_workflow_spec,
)

L = FIGURE1_TASK_SECONDS


def quiet_trace(workflows: int, machines: int = 50, gap: float = 20_000.0):
    """No logins: every workflow runs to plan."""
    return make_trace(machines=machines, length=gap * (workflows + 2),
                      job_submit=np.arange(workflows) * gap + 100.0, job_duration=np.full(workflows, 60.0))


def test_figure1_template_plan():
    tpl = make_template(figure1_workflow(), name="figure1", phi=0.1)
    assert tpl.critical_path_seconds == 4 * L
    assert tpl.deadline_offset == pytest.approx(1.1 * 4 * L)
    assert sorted(tpl.tasks) == list("ABCDEFGH")
    assert sorted(tpl.tasks[i] for i in tpl.roots) == ["A", "B", "C"]
    # φ′ at s(W): (d − s)/L′ − 1; C's remaining path is C→F→H (3 tasks)
    assert tpl.plan.phi_prime("A", 0.0) == pytest.approx(0.1)
    assert tpl.plan.phi_prime("C", 0.0) == pytest.approx(1.1 * 4 / 3 - 1)


def test_undisturbed_workflows_finish_on_the_critical_path():
    trace = quiet_trace(5)
    result = simulate(trace, SimConfig(fraction=1.0, policy="single", phi=0.1, reboot_hour=None))
    assert result.workflows == 5 and result.completed == 5
    np.testing.assert_allclose(result.wf_p, 0.0, atol=1e-12)
    assert result.within[0.1] == 5
    t = result.tasks
    assert len(t["submit"]) == 40 and t["success"].all()
    roots = t["submit"] == np.repeat(result.wf_start, 8)[: len(t["submit"])]
    assert roots.sum() >= 15  # A, B, C of each workflow at s(W)
    # φ′ of each task at its real submission time equals the plan's
    tpl = make_template(figure1_workflow(), name="figure1", phi=0.1)
    for w, node, submit, phi in zip(t["workflow"], t["node"], t["submit"], t["phi_prime"]):
        name = result.task_names[0][node]
        assert phi == pytest.approx(tpl.plan.phi_prime(name, submit - result.wf_start[w]))
    assert result.energy_kwh["good"] == pytest.approx(40 * L * 100.0 / 3.6e6)
    assert result.energy_kwh["bad"] == 0.0


def test_tied_replicas_first_wins_rest_removed_as_bad_energy():
    trace = quiet_trace(3)
    result = simulate(trace, SimConfig(fraction=1.0, policy="fixed:2", phi=0.1, reboot_hour=None))
    t = result.tasks
    assert (t["replicas"] == 2).all() and (t["invocations"] == 2).all()
    # Both replicas run the full L; the loser is removed at the winner's finish.
    np.testing.assert_allclose(t["good_j"], L * 100.0)
    np.testing.assert_allclose(t["bad_j"], L * 100.0)
    np.testing.assert_allclose(t["sigma"], 0.5)  # bad / (a · D · Ξ) = 1/2
    np.testing.assert_allclose(t["reward"], 0.5)
    np.testing.assert_allclose(result.wf_p, 0.0, atol=1e-12)


def test_energy_adds_up_and_rl_learns():
    rng = np.random.default_rng(3)
    trace = poisson_trace(rng, machines=60, rate=1 / 5000, length=4e5, session=900, jobs=150,
                          job_length=600, job_window=(0, 3e5))
    result = simulate(trace, SimConfig(fraction=0.5, policy="rl:3", phi=0.3, seed=2))
    t = result.tasks
    assert result.workflows == 75
    assert t["good_j"].sum() + t["bad_j"].sum() == pytest.approx(result.extra["workflow_invocation_energy_j"],
                                                                rel=1e-9)
    assert result.energy_kwh["total"] == pytest.approx(result.energy_kwh["good"] + result.energy_kwh["bad"])
    assert set(np.unique(t["replicas"])) <= {1, 2, 3}
    assert result.agent.rewards_seen == int(np.count_nonzero(~np.isnan(t["reward"])))
    assert result.evictions["workflow"] == int(t["evictions"].sum()) - result.evictions["reboot_workflow"]


def _task_times(policy: str, seed: int, workflows: int):
    rng = np.random.default_rng(seed)
    length = 80 * 86400.0
    trace = poisson_trace(rng, machines=120, rate=1 / 3600, length=length, session=1.0, jobs=workflows,
                          job_length=60.0, job_window=(0, length - 2e5))
    result = simulate(trace, SimConfig(workflows=("figure1@1.875",), fraction=1.0, policy=policy,
                                       reboot_hour=None, seed=seed))
    t = result.tasks
    return t["finish"] - t["submit"]


def test_replicas_complete_like_the_minimum_of_k_runs():
    # L = 1.875 × 32 min = 3600 s, λ = 1/3600: λL = 1.
    single = _task_times("single", 11, 700)
    assert abs(single.mean() / ((math.e - 1) * 3600) - 1) < 0.03
    k = 3
    triple = _task_times(f"fixed:{k}", 12, 400)
    xs = np.sort(np.concatenate([single, triple]))
    f_single = np.searchsorted(np.sort(single), xs, side="right") / len(single)
    predicted = 1 - (1 - f_single) ** k
    observed = np.searchsorted(np.sort(triple), xs, side="right") / len(triple)
    distance = np.max(np.abs(observed - predicted))
    assert distance < 0.04, distance
    # and it is not the single-run distribution
    assert np.max(np.abs(observed - f_single)) > 0.2


def test_same_seed_byte_identical_outputs(tmp_path):
    rng = np.random.default_rng(5)
    trace = poisson_trace(rng, machines=40, rate=1 / 4000, length=3e5, session=1200, jobs=120,
                          job_length=900, job_window=(0, 2e5))
    config = SimConfig(fraction=0.4, policy="rl:3", phi=0.2, seed=9)
    write_outputs(simulate(trace, config), tmp_path / "a")
    write_outputs(simulate(trace, config), tmp_path / "b")
    write_outputs(simulate(trace, SimConfig(fraction=0.4, policy="rl:3", phi=0.2, seed=10)), tmp_path / "c")
    names = sorted(os.listdir(tmp_path / "a"))
    assert names == ["completion.csv", "summary.json", "tasks.csv", "workflows.csv"]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert (tmp_path / "a" / "tasks.csv").read_bytes() != (tmp_path / "c" / "tasks.csv").read_bytes()


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    trace = quiet_trace(2)
    result = simulate(trace, SimConfig(fraction=1.0, reboot_hour=None))
    calls = []
    real = outputs_module._csv

    def flaky(path, header, columns):
        calls.append(path)
        if len(calls) == 2:
            raise OSError("disk full")
        real(path, header, columns)

    monkeypatch.setattr(outputs_module, "_csv", flaky)
    with pytest.raises(OSError):
        write_outputs(result, tmp_path / "out")
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(outputs_module, "_csv", real)
    write_outputs(result, tmp_path / "out")
    write_outputs(result, tmp_path / "out")  # replaces an existing folder whole
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_oracle_runs_one_replica_when_a_machine_stays_free():
    trace = quiet_trace(3)
    result = simulate(trace, SimConfig(fraction=1.0, policy="oracle:3", reboot_hour=None))
    assert (result.tasks["replicas"] == 1).all()
    assert result.energy_kwh["bad"] == 0.0
    # A login on every machine every 600 s: no machine stays free for a
    # 32-minute task, so the oracle falls back to R replicas.
    starts = [m * 20.0 + 600.0 * j for m in range(30) for j in range(200)]
    machines = [m for m in range(30) for _ in range(200)]
    busy = make_trace(machines=30, length=120_000, login_machine=machines, login_start=starts,
                      login_end=np.asarray(starts) + 1.0, job_submit=[100.0, 5000.0], job_duration=[60, 60])
    r2 = simulate(busy, SimConfig(fraction=1.0, policy="oracle:3", reboot_hour=None))
    assert len(r2.tasks["replicas"]) == 6 and (r2.tasks["replicas"] == 3).all()
    assert r2.completed == 0


def test_inject_is_exact_and_policy_independent():
    rng1, rng2 = np.random.default_rng(4), np.random.default_rng(4)
    m1, w1 = inject(1000, 0.1, [1.0, 3.0], rng1)
    m2, w2 = inject(1000, 0.1, [1.0, 3.0], rng2)
    assert m1.sum() == 100 and (m1 == m2).all() and (w1 == w2).all()
    assert set(np.unique(w1[m1])) == {0, 1} and (w1[~m1] == -1).all()


def test_metrics_p_and_within():
    p = p_of_workflow(np.array([0.0, 10.0, 0.0]), np.array([100.0, 160.0, np.nan]), np.array([100.0, 100.0, 50.0]))
    assert p[0] == 0.0 and p[1] == pytest.approx(0.5) and math.isnan(p[2])
    assert within_counts(p, (0.1, 0.5, 1.0)) == {0.1: 1, 0.5: 2, 1.0: 2}


def test_workflow_specs_and_montage():
    assert parse_workflow_spec("figure1") == ("figure1", None, 1.0)
    assert parse_workflow_spec("montage@60:2.5") == ("montage", 60.0, 2.5)
    assert parse_workflow_spec("dir/my.dag:3") == ("dir/my.dag", None, 3.0)
    with pytest.raises(InputError):
        parse_workflow_spec("figure1:0")
    wf = montage_workflow()
    # the shared Montage_25 DAX: 25 tasks, 45 edges (one of its mDiffFit has a
    # single parent; the generator's rule gives every mDiffFit two)
    assert len(wf.nodes) == 25 and len(wf.edges) == 46
    tpl = make_template(wf, name="montage", phi=0.5)
    assert sorted(tpl.tasks[i] for i in tpl.roots) == [f"mProjectPP_{i}" for i in range(5)]
    # CR: mProjectPP → mDiffFit → mConcatFit → mBgModel → mBackground → mImgTbl → mAdd → mShrink → mJPEG
    assert tpl.critical_path_seconds == pytest.approx(13.59 + 10.59 + 0.72 + 1.17 + 10.74 + 1.39 + 30.11 + 12.21 + 0.45)
    scaled, _ = load_template("montage", phi=0.5)
    assert scaled.critical_path_seconds == pytest.approx(MONTAGE_RUNTIME_SCALE * tpl.critical_path_seconds)


def test_bad_config_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        SimConfig(fraction=1.5)
    with pytest.raises(InputError):
        SimConfig(phi=-2)
    trace = quiet_trace(2)
    with pytest.raises(InputError):
        simulate(trace, SimConfig(policy="fixed"))
    with pytest.raises(InputError):
        simulate(trace, SimConfig(workflows=(str(tmp_path / "missing.dag"),)))
    broken = make_trace(machines=1, length=100, login_machine=[0], login_start=[50], login_end=[40],
                        job_submit=[0], job_duration=[10])
    with pytest.raises(InputError, match="ends before it starts"):
        simulate(broken, SimConfig())
    bad = tmp_path / "bad.dag"
    bad.write_text("JOB A a.sub\nPARENT A CHILD B\n")
    with pytest.raises(InputError):
        simulate(trace, SimConfig(workflows=(str(bad),), fraction=1.0))


def test_shared_montage_dax_runs_as_a_workflow_file():
    data = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    dax = data / "dax" / "Montage_25.xml"
    if not dax.is_file():
        pytest.skip("shared data not available")
    trace = quiet_trace(3, gap=80_000.0)
    result = simulate(trace, SimConfig(workflows=(f"{dax}@100",), fraction=1.0, seed=4, reboot_hour=None))
    assert result.completed == 3 and result.template_names == ["Montage_25"]
    np.testing.assert_allclose(result.wf_p, 0.0, atol=1e-9)
    # critical path of the DAX (docs/sources.md §3.2: 46.5 s) × 100
    assert result.wf_critical_path[0] == pytest.approx(4650, rel=0.01)
    assert len(result.tasks["submit"]) == 3 * 25


def test_progress_reaches_one_monotonically():
    seen = []
    simulate(quiet_trace(3), SimConfig(fraction=1.0, reboot_hour=None), progress=seen.append)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)


def test_current_task_mode_uses_phi_double_prime():
    result = simulate(quiet_trace(2), SimConfig(fraction=1.0, phi=0.1, phi_mode="current", reboot_hour=None))
    t = result.tasks
    names = [result.task_names[0][n] for n in t["node"]]
    first_a = names.index("A")
    # φ″ = (d − s_t − max_{j∈C} L′_j)/e_t − 1 = (1.1·4L − 3L)/L − 1 at s(W)
    assert t["phi_prime"][first_a] == pytest.approx(0.4)


def _same_result(a, b) -> None:
    for name in ("wf_template", "wf_trace_job", "wf_start", "wf_finish", "wf_critical_path", "wf_deadline", "wf_p",
                 "wf_good_j", "wf_bad_j", "wf_replicas", "wf_evictions"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name, strict=True)
    assert a.tasks.keys() == b.tasks.keys()
    for name in a.tasks:
        np.testing.assert_array_equal(a.tasks[name], b.tasks[name], err_msg=name, strict=True)
    assert a.within == b.within and a.energy_kwh == b.energy_kwh and a.evictions == b.evictions
    assert a.events == b.events and a.config == b.config


@pytest.mark.parametrize("policy", ["single", "fixed:2", "oracle:2"])
def test_a_phi_independent_run_is_rejudged_bit_for_bit(tmp_path, policy):
    # Busy enough that tasks miss deadlines at small φ; a DAG with a NOOP
    # node (a jobless task) beside the Figure-1 workflow.
    dag = tmp_path / "noop.dag"
    dag.write_text("JOB A a.sub\nJOB B b.sub NOOP\nJOB C c.sub\nPARENT A CHILD B\nPARENT B CHILD C\n")
    rng = np.random.default_rng(8)
    trace = poisson_trace(rng, machines=30, rate=1 / 3000, length=4e5, session=900, jobs=160,
                          job_length=900, job_window=(0, 3e5))
    base = dict(workflows=("figure1", f"{dag}:0.5"), fraction=0.5, policy=policy, seed=6, default_estimate=1500.0,
                days=3.2)  # cut short: some tasks are still open at the end
    once = simulate(trace, SimConfig(phi=0.1, **base))
    for phi in (0.1, 0.4, 2.0):
        direct = simulate(trace, SimConfig(phi=phi, **base))
        rejudged = result_for_phi(once, phi)
        _same_result(rejudged, direct)
        write_outputs(direct, tmp_path / f"direct-{phi}")
        write_outputs(rejudged, tmp_path / f"rejudged-{phi}")
        for name in ("workflows.csv", "tasks.csv", "completion.csv", "summary.json"):
            assert (tmp_path / f"direct-{phi}" / name).read_bytes() == (tmp_path / f"rejudged-{phi}" / name).read_bytes()
    assert not once.tasks["success"].all()  # the deadlines did bite
    assert np.isnan(once.tasks["finish"]).any() and (once.tasks["replicas"] == 0).any()
    with pytest.raises(ValueError, match="depends on phi"):
        result_for_phi(simulate(trace, SimConfig(phi=0.1, **{**base, "policy": "rl:2"})), 0.5)
