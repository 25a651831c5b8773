"""The simulator's measured-workflow latency knob (``SimConfig.latency_workflows``,
``latency_neighbours``): every simulated workflow takes the per-node delays
of one measured workflow that arrived near it — each task waits its node's
latency (decided its ``after`` part before the submission) and each
replica runs the node's run excess longer — against hand-computed times."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _simutil import make_trace
from condor_rlrep.errors import InputError
from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.run import simulate
from condor_rlrep.sim.workflows import FIGURE1_TASK_SECONDS, figure1_workflow, make_template

T = FIGURE1_TASK_SECONDS
GAP = 20_000.0


def _quiet(workflows: int):
    # 50 machines without owners; workflow w arrives at 100 + w·20,000 s
    return make_trace(machines=50, length=GAP * (workflows + 2),
                      job_submit=np.arange(workflows) * GAP + 100.0, job_duration=np.full(workflows, 60.0))


def _config(measured, policy: str = "single", neighbours: int = 2) -> SimConfig:
    return SimConfig(fraction=1.0, policy=policy, phi=0.1, reboot_hour=None, latency_workflows=measured,
                     latency_neighbours=neighbours)


def _by_node(result, column: str) -> dict[tuple[int, str], float]:
    t = result.tasks
    return {(int(w), result.task_names[0][int(n)]): float(v) for w, n, v in zip(t["workflow"], t["node"], t[column])}


# one measured workflow arriving at 100: (node, latency, after, run excess)
HAND = (100.0, (("A", 1.0, 0.0, 2.0), ("B", 2.0, 0.0, 0.0), ("C", 3.0, 0.0, 0.0), ("D", 4.0, 0.0, 1.0),
                ("E", 5.0, 0.0, 0.0), ("F", 6.0, 0.0, 0.0), ("G", 7.0, 0.0, 0.0), ("H", 8.0, 0.0, 3.0)))


def test_each_task_waits_its_nodes_latency_and_runs_its_excess_longer():
    # from the arrival at 100 (t = T): A submitted at 1, ends 1 + t + 2 = t + 3; B at 2, ends t + 2; C at 3,
    # ends t + 3; D (A) at t + 3 + 4, ends 2t + 7 + 1 = 2t + 8; E (A, B: t + 3) at t + 8, ends 2t + 8;
    # F (C, D: 2t + 8) at 2t + 14, ends 3t + 14; G (D, E) at 2t + 15, ends 3t + 15;
    # H (F, G: 3t + 15) at 3t + 23, ends 4t + 23 + 3 = 4t + 26: p(W) = 26 / 4t
    result = simulate(_quiet(1), _config((HAND,)))
    t = T
    submit = {name: s - 100.0 for (w, name), s in _by_node(result, "submit").items()}
    finish = {name: f - 100.0 for (w, name), f in _by_node(result, "finish").items()}
    assert submit == pytest.approx({"A": 1, "B": 2, "C": 3, "D": t + 7, "E": t + 8, "F": 2 * t + 14,
                                    "G": 2 * t + 15, "H": 3 * t + 23})
    assert finish == pytest.approx({"A": t + 3, "B": t + 2, "C": t + 3, "D": 2 * t + 8, "E": 2 * t + 8,
                                    "F": 3 * t + 14, "G": 3 * t + 15, "H": 4 * t + 26})
    assert result.wf_p[0] == pytest.approx(26 / (4 * t))
    # the replicas ran the excess: 8 runs of t plus 2 + 1 + 3 s, at the machines' watts
    plain = simulate(_quiet(1), _config(((100.0, tuple((n, lat, a, 0.0) for n, lat, a, _ in HAND[1])),)))
    assert result.wf_good_j[0] / plain.wf_good_j[0] == pytest.approx((8 * t + 6) / (8 * t))


def test_a_node_the_measured_workflow_lacks_takes_one_of_its_others():
    # the measured workflow knows only A (5 s, run excess 0): every node waits 5 s, four levels: p = 20 / 4t
    result = simulate(_quiet(1), _config(((100.0, (("A", 5.0, 0.0, 0.0),)),)))
    assert result.wf_p[0] == pytest.approx(20 / (4 * T))


def test_a_workflow_takes_the_delays_of_one_of_its_nearest_measured_workflows():
    # measured: every node 1 s at arrival 100, every node 9 s at 20,100; simulated workflows arrive at 100
    # and 20,100. One neighbour: each takes its own time's delays (4 levels: p = 4 / 4t and 36 / 4t);
    # two neighbours: each draws one of both.
    fast = (100.0, tuple((n, 1.0, 0.0, 0.0) for n in "ABCDEFGH"))
    slow = (100.0 + GAP, tuple((n, 9.0, 0.0, 0.0) for n in "ABCDEFGH"))
    near = simulate(_quiet(2), _config((slow, fast), neighbours=1))
    assert near.wf_p == pytest.approx([4 / (4 * T), 36 / (4 * T)])
    drawn = set()
    for seed in range(8):
        both = simulate(_quiet(2), SimConfig(**{**_config((fast, slow)).__dict__, "seed": seed}))
        drawn.update(round(float(p) * 4 * T, 6) for p in both.wf_p)
    assert drawn == {4.0, 36.0}


def test_the_decision_comes_before_the_after_part():
    # a root waits 30 s of which 20 s after its decision: decided 10 s after its arrival, as with a 10-s
    # latency (dagman_latency = 10), and submitted 30 s after it
    measured = ((100.0, tuple((n, 30.0, 20.0, 0.0) for n in "ABCDEFGH")),)
    split = simulate(_quiet(1), _config(measured))
    early = simulate(_quiet(1), SimConfig(fraction=1.0, policy="single", phi=0.1, reboot_hour=None, dagman_latency=10.0))
    assert _by_node(split, "submit")[(0, "A")] == pytest.approx(130.0)
    assert _by_node(split, "phi_prime")[(0, "A")] == pytest.approx(_by_node(early, "phi_prime")[(0, "A")])
    tpl = make_template(figure1_workflow(), name="figure1", phi=0.1)
    assert _by_node(split, "phi_prime")[(0, "A")] == pytest.approx(tpl.criticality("A", 10.0))


def test_the_knob_off_records_what_runs_recorded_before_it_and_on_is_json():
    assert "latency_workflows" not in SimConfig().to_dict() and "latency_neighbours" not in SimConfig().to_dict()
    record = _config((HAND,), neighbours=3).to_dict()
    assert record["latency_neighbours"] == 3
    assert json.loads(json.dumps(record))["latency_workflows"][0] == [100.0, [list(node) for node in HAND[1]]]


@pytest.mark.parametrize("measured, neighbours, message", [
    (((100.0, (("A", 1.0, 2.0, 0.0),)),), 2, "between 0 and it"),
    (((100.0, (("A", -1.0, 0.0, 0.0),)),), 2, "node 'A'"),
    (((100.0, (("A", 1.0, 0.0, float("nan")),)),), 2, "run excess"),
    (((float("inf"), (("A", 1.0, 0.0, 0.0),)),), 2, "arrival"),
    (((100.0, ()),), 2, "no node"),
    (((100.0, (("A", 1.0, 0.0, 0.0),)),), 0, "neighbours"),
])
def test_bad_measured_workflows_are_refused(measured, neighbours, message):
    with pytest.raises(InputError, match=message):
        SimConfig(latency_workflows=measured, latency_neighbours=neighbours)


def test_measured_workflows_and_latency_samples_are_not_given_together():
    with pytest.raises(InputError, match="not both"):
        SimConfig(latency_workflows=((100.0, (("A", 1.0, 0.0, 0.0),)),), dagman_latency_samples=(1.0,))
