"""The simulator benchmark's bare-loop reference (benchmarks/sim_heapq_model.py)
re-implements the model from scratch; it must stay the same model as ours,
or its speed is no anchor. Fed the same seeds it gives our results exactly;
the SimPy version (needs the ``bench`` extra) agrees statistically."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_sim import ours_output  # noqa: E402
from sim_heapq_model import run_heapq_model  # noqa: E402
from sim_model_inputs import model_input  # noqa: E402

from condor_rlrep.sim.generator import generate_trace  # noqa: E402
from condor_rlrep.sim.config import SimConfig  # noqa: E402
from condor_rlrep.sim.run import simulate  # noqa: E402


@pytest.fixture(scope="module")
def week():
    return generate_trace("newcastle-2010", days=7, seed=5)


@pytest.mark.parametrize("feed", ["stream", "heap"])
@pytest.mark.parametrize(("policy", "workflows"), [("single", ("figure1",)), ("fixed:3", ("figure1",)),
                                                   ("rl:3", ("figure1",)), ("rl:2", ("montage", "figure1:3"))])
def test_bare_loop_is_our_model_exactly(week, feed, policy, workflows):
    config = SimConfig(workflows=workflows, fraction=0.2, policy=policy, phi=0.3, seed=4)
    ours = ours_output(simulate(week, config))
    bare = run_heapq_model(model_input(week, config), feed)
    assert ours.key() == bare.key()
    assert bare.stale_pops == ours.stale_pops > 0


def test_simpy_model_agrees_statistically(week):
    pytest.importorskip("simpy")
    from sim_simpy_model import run_simpy_model

    config = SimConfig(fraction=0.2, policy="rl:3", phi=0.3, seed=4)
    ours = ours_output(simulate(week, config))
    other = run_simpy_model(model_input(week, config))
    assert other.workflows == ours.workflows and other.tasks == ours.tasks
    assert abs(other.events - ours.events) < 0.002 * ours.events
    for p in (0.1, 1.0):
        assert abs(other.within[p] - ours.within[p]) < 0.05 * ours.workflows
    assert abs(other.replica_submissions - ours.replica_submissions) < 0.05 * ours.replica_submissions
