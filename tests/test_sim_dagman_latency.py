"""The simulator's DAGMan latency knob (``SimConfig.dagman_latency``,
``--dagman-latency``): a task is decided and submitted that many seconds
after it became ready (its workflow arrived or its last parent finished),
against hand-computed times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _simutil import make_trace
from condor_rlrep.errors import InputError
from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.engine import Engine, EngineConfig
from condor_rlrep.sim.run import simulate
from condor_rlrep.sim.workflows import FIGURE1_TASK_SECONDS, figure1_workflow, make_template

T = FIGURE1_TASK_SECONDS


def _quiet(workflows: int, gap: float = 20_000.0):
    return make_trace(machines=50, length=gap * (workflows + 2),
                      job_submit=np.arange(workflows) * gap + 100.0, job_duration=np.full(workflows, 60.0))


def _submit_times(result) -> dict[tuple[int, str], float]:
    t = result.tasks
    return {(int(w), result.task_names[0][int(n)]): float(s) for w, n, s in zip(t["workflow"], t["node"], t["submit"])}


@pytest.mark.parametrize("latency", [7.5, 30.0])
def test_each_of_figure1s_four_levels_waits_the_latency(latency):
    # Figure 1's levels: {A,B,C} → {D,E} → {F,G} → H. With latency L every
    # level is submitted L after the one before ended, and the first L after
    # the arrival: makespan 4·T + 4·L, p(W) = 4L / 4T.
    result = simulate(_quiet(3), SimConfig(fraction=1.0, policy="single", phi=0.1, reboot_hour=None,
                                           dagman_latency=latency))
    assert result.completed == 3
    np.testing.assert_allclose(result.wf_p, latency / T, rtol=0, atol=1e-12)
    for w, s in enumerate(result.wf_start):
        sub = _submit_times(result)
        for name, level in (("A", 0), ("B", 0), ("C", 0), ("D", 1), ("E", 1), ("F", 2), ("G", 2), ("H", 3)):
            assert sub[(w, name)] == pytest.approx(s + level * (T + latency) + latency, abs=1e-9), name
        assert result.wf_finish[w] - s == pytest.approx(4 * T + 4 * latency, abs=1e-9)


def test_the_decision_sees_the_delayed_submission_time():
    # φ′ is computed when the task is submitted (the PRE hook runs then):
    # a root at s + L has (d − s − L) / L′ − 1 = (1.1·4T − L) / 4T − 1.
    latency = 60.0
    result = simulate(_quiet(1), SimConfig(fraction=1.0, policy="single", phi=0.1, reboot_hour=None,
                                           dagman_latency=latency))
    t = result.tasks
    names = [result.task_names[0][int(n)] for n in t["node"]]
    phi_a = float(t["phi_prime"][names.index("A")])
    assert phi_a == pytest.approx((1.1 * 4 * T - latency) / (4 * T) - 1)
    tpl = make_template(figure1_workflow(), name="figure1", phi=0.1)
    assert phi_a < tpl.plan.phi_prime("A", 0.0)


def test_latency_pushes_a_task_into_an_owners_session():
    # One machine, one workflow arriving at 100 s, an owner from 150 s to
    # 250 s. No latency: a root starts at 100 and the owner evicts it at 150.
    # L = 200 s: the roots are submitted at 300, after the owner left.
    trace = make_trace(machines=1, length=40_000.0, login_machine=[0], login_start=[150.0], login_end=[250.0],
                       job_submit=[100.0], job_duration=[60.0])
    base = SimConfig(fraction=1.0, policy="single", phi=0.1, reboot_hour=None)
    now = simulate(trace, base)
    later = simulate(trace, SimConfig(**{**base.to_dict(), "workflows": ("figure1",), "p_grid": base.p_grid,
                                         "dagman_latency": 200.0}))
    assert int(now.wf_evictions.sum()) == 1
    assert int(later.wf_evictions.sum()) == 0
    first = min(_submit_times(later).values())
    assert first == pytest.approx(300.0)


def test_zero_latency_changes_nothing_and_is_not_recorded():
    trace = _quiet(2)
    plain = simulate(trace, SimConfig(fraction=1.0, policy="fixed:2", phi=0.1, reboot_hour=None))
    zero = simulate(trace, SimConfig(fraction=1.0, policy="fixed:2", phi=0.1, reboot_hour=None, dagman_latency=0.0))
    np.testing.assert_array_equal(plain.wf_finish, zero.wf_finish)
    assert "dagman_latency" not in zero.config.to_dict()  # summary.json as before the knob
    assert SimConfig(dagman_latency=2.5).to_dict()["dagman_latency"] == 2.5


def test_latency_samples_are_drawn_per_task_and_change_nothing_else():
    # one sample: every task waits it, exactly as the same mean latency; the run's other streams are untouched
    trace = _quiet(3)
    mean = simulate(trace, SimConfig(fraction=1.0, policy="fixed:2", phi=0.1, reboot_hour=None, dagman_latency=7.5))
    drawn = simulate(trace, SimConfig(fraction=1.0, policy="fixed:2", phi=0.1, reboot_hour=None,
                                      dagman_latency=7.5, dagman_latency_samples=(7.5,)))
    np.testing.assert_array_equal(mean.wf_finish, drawn.wf_finish)
    assert drawn.config.to_dict()["dagman_latency_samples"] == [7.5]
    assert "dagman_latency_samples" not in mean.config.to_dict()
    # two samples: each task waits one of them after becoming ready; both occur, same seed same draws
    two = SimConfig(fraction=1.0, policy="fixed:2", phi=0.1, reboot_hour=None, dagman_latency_samples=(0.0, 30.0))
    first, again = simulate(trace, two), simulate(trace, two)
    np.testing.assert_array_equal(first.tasks["submit"], again.tasks["submit"])
    waits = set()
    for (w, name), submitted in _submit_times(first).items():
        wf = figure1_workflow()
        parents = [p for p, c in wf.edges if c == name]
        ready = (100.0 + w * 20_000.0) if not parents else max(
            float(f) for (w2, n2), f in _finish_times(first).items() if w2 == w and n2 in parents)
        waits.add(round(submitted - ready, 6))
    assert waits == {0.0, 30.0}


def _finish_times(result) -> dict[tuple[int, str], float]:
    t = result.tasks
    return {(int(w), result.task_names[0][int(n)]): float(f) for w, n, f in zip(t["workflow"], t["node"], t["finish"])}


@pytest.mark.parametrize("bad", [(-1.0,), (float("nan"),), (1.0, float("inf"))])
def test_bad_latency_samples_are_refused(bad):
    with pytest.raises(InputError, match="latency samples"):
        SimConfig(dagman_latency_samples=bad)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_bad_latency_is_refused(bad):
    with pytest.raises(InputError, match="DAGMan latency"):
        SimConfig(dagman_latency=bad)


def test_call_at_runs_in_time_order_and_before_stream_events_at_its_time():
    # Job 0 (60 s) submitted at 0 on the only machine ends at 60; a login at
    # 100. A timer at 59 sees the machine busy, at 61 free, at 100 free (the
    # login, a stream event at the same time, goes after it).
    trace = make_trace(machines=1, length=1000.0, login_machine=[0], login_start=[100.0], login_end=[200.0],
                       job_submit=[0.0], job_duration=[60.0])
    engine = Engine(trace, EngineConfig(reboot_hour=None), np.random.default_rng(0))
    seen: list[tuple[float, int, int]] = []

    def note(t: float) -> None:
        seen.append((t, engine.nfree, engine.logged[0]))

    engine.call_at(59.0, note)
    engine.call_at(61.0, note)
    engine.call_at(100.0, note)
    engine.call_at(500.0, note)  # after the last stream event: the tail of the run
    engine.call_at(2000.0, note)  # after the end: never called
    engine.run()
    assert seen == [(59.0, 0, 0), (61.0, 1, 0), (100.0, 1, 0), (500.0, 1, 0)]
    assert engine.stats.stale_pops == 0


CLI = str(Path(sys.executable).parent / "condor-rlrep")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)


def test_cli_takes_the_knob_and_refuses_a_negative_one(tmp_path):
    out = tmp_path / "run"
    ok = cli("simulate", "--preset", "newcastle-2010", "--days", "1", "--fraction", "0.05",
             "--dagman-latency", "3", "-o", str(out))
    assert ok.returncode == 0, ok.stderr
    assert json.loads((out / "summary.json").read_text())["config"]["dagman_latency"] == 3.0
    bad = cli("simulate", "--preset", "newcastle-2010", "--days", "1", "--dagman-latency", "-1")
    assert bad.returncode != 0
    assert "--dagman-latency" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_an_experiment_run_takes_the_knob():
    from condor_rlrep.sweep.execute import _config

    assert _config({"policy": "single", "dagman_latency": 3.0}).dagman_latency == 3.0
    assert _config({"policy": "single"}).dagman_latency == 0.0


def test_start_samples_move_the_decision_before_the_submission():
    # live, PRE decides and the replicas then wait to start: with a drawn latency of 30 s of which 20 s come
    # after the decision, a root task is decided 10 s after its arrival at 100 (as with a 10-s latency and
    # no split) and submitted at 130
    trace = _quiet(2)
    split = simulate(trace, SimConfig(fraction=1.0, policy="fixed:2", phi=0.1, reboot_hour=None,
                                      dagman_latency_samples=(30.0,), dagman_start_samples=(20.0,)))
    early = simulate(trace, SimConfig(fraction=1.0, policy="fixed:2", phi=0.1, reboot_hour=None, dagman_latency=10.0))
    late = simulate(trace, SimConfig(fraction=1.0, policy="fixed:2", phi=0.1, reboot_hour=None,
                                     dagman_latency_samples=(30.0,)))
    roots = [(w, n) for w, n in _submit_times(split) if n in ("A", "B", "C")]
    assert len(roots) == 6
    phi = {name: _phis(r) for name, r in (("split", split), ("early", early), ("late", late))}
    for key in roots:
        assert _submit_times(split)[key] == _submit_times(late)[key] == 100.0 + key[0] * 20_000.0 + 30.0
        assert phi["split"][key] == pytest.approx(phi["early"][key])
        assert phi["split"][key] > phi["late"][key]  # 20 s more slack than a decision at submission
    assert split.config.to_dict()["dagman_start_samples"] == [20.0]
    assert "dagman_start_samples" not in late.config.to_dict()


def _phis(result) -> dict[tuple[int, str], float]:
    t = result.tasks
    return {(int(w), result.task_names[0][int(n)]): float(p) for w, n, p in zip(t["workflow"], t["node"], t["phi_prime"])}


@pytest.mark.parametrize("latency, start", [((30.0,), (40.0,)), ((30.0, 5.0), (1.0,)), ((30.0,), (-1.0,)),
                                            ((), (1.0,))])
def test_bad_start_samples_are_refused(latency, start):
    with pytest.raises(InputError, match="start sample"):
        SimConfig(dagman_latency_samples=latency, dagman_start_samples=start)
