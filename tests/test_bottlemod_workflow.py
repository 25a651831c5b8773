"""Workflows: chains, shared links, the paper's example, gain if relieved."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from condor_rlrep.bottlemod import Link, PFunc, analyze, gain_if_relieved, load_model, relieved
from condor_rlrep.errors import ModelError
from _bottlemod_util import const, external, res, task, upstream, workflow

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "bottlemod"
SIZE = 1137486559
LINK = 12481 * 1024
OUT = 80 * 1024 * 1024


def test_streaming_chain_hand_computed():
    # A: CPU-bound at 1/s -> P_A(t) = t. B streams A at up to 2/s: follows A.
    # C streams B at 0.5/s: CPU-bound, finishes at 200.
    wf = workflow(
        task("A", inputs=[external()], resources=[res(allocation=1.0)]),
        task("B", inputs=[upstream("A")], resources=[res(allocation=2.0)]),
        task("C", inputs=[upstream("B")], resources=[res(allocation=0.5)]),
    )
    a = analyze(wf)
    assert a.tasks["A"].finish == pytest.approx(100.0)
    assert a.tasks["B"].finish == pytest.approx(100.0)
    assert [b.label for b in a.tasks["B"].bottlenecks] == ["data:in"]
    assert a.tasks["C"].finish == pytest.approx(200.0)
    assert [b.label for b in a.tasks["C"].bottlenecks] == ["resource:cpu"]
    assert a.makespan == pytest.approx(200.0)
    # slow middle: B at 0.5/s, C at 1/s follows B and ends with it
    wf2 = workflow(
        task("A", inputs=[external()], resources=[res(allocation=1.0)]),
        task("B", inputs=[upstream("A")], resources=[res(allocation=0.5)]),
        task("C", inputs=[upstream("B")], resources=[res(allocation=1.0)]),
    )
    b = analyze(wf2)
    assert b.tasks["C"].finish == pytest.approx(200.0)
    assert [x.label for x in b.tasks["C"].bottlenecks] == ["data:in"]


def test_whole_input_task_waits_for_upstream():
    whole = PFunc.from_points([0, 100, 100], [0, 0, 10])
    wf = workflow(
        task("A", inputs=[external()], resources=[res(allocation=2.0)]),
        task("W", pmax=10.0, inputs=[upstream("A", requirement=whole)], resources=[res(allocation=1.0)]),
    )
    a = analyze(wf)
    assert a.tasks["W"].start == pytest.approx(50.0)
    assert a.tasks["W"].finish == pytest.approx(60.0)
    assert [b.label for b in a.tasks["W"].bottlenecks] == ["data:in", "resource:cpu"]


def test_output_function_and_usage():
    # output only at the end (e.g. a count): downstream can start only then
    out = PFunc.from_points([0, 100, 100], [0, 0, 5])
    wf = workflow(
        task("A", inputs=[external()], resources=[res(allocation=1.0)], output=out),
        task("B", pmax=5.0, inputs=[upstream("A", requirement=PFunc.from_points([0, 5], [0, 5]))],
             resources=[res(allocation=1.0)]),
    )
    a = analyze(wf)
    assert a.tasks["B"].start == pytest.approx(100.0) and a.tasks["B"].finish == pytest.approx(105.0)
    use = a.tasks["A"].usage("cpu")
    assert use(50.0) == pytest.approx(1.0) and use(150.0) == 0.0
    assert use.integrate(0, 200) == pytest.approx(100.0)


def test_shared_link_redistributes_finished_share():
    # two transfers of 100 and 300 units share 10 units/s 1:1; the small one
    # ends at 20, then the big one gets all: 300 - 100 = 200 left at 10/s
    link = Link("net", const(10.0))
    wf = workflow(
        task("small", inputs=[external()], resources=[res("net", link="net", allocation=None)]),
        task("big", pmax=300.0, inputs=[external(source=const(300.0), requirement=PFunc.from_points([0, 300], [0, 300]))],
             resources=[res("net", link="net", allocation=None)]),
        links=[link],
    )
    a = analyze(wf)
    assert a.tasks["small"].finish == pytest.approx(20.0)
    assert a.tasks["big"].finish == pytest.approx(40.0)
    assert a.tasks["big"].allocations["net"](30.0) == pytest.approx(10.0)
    # weights 3:1 for the big one: big gets 7.5/s; small (2.5/s) ends at 40
    wf_w = workflow(
        task("small", inputs=[external()], resources=[res("net", link="net", allocation=None, weight=1)]),
        task("big", pmax=300.0, inputs=[external(source=const(300.0), requirement=PFunc.from_points([0, 300], [0, 300]))],
             resources=[res("net", link="net", allocation=None, weight=3)]),
        links=[link],
    )
    b = analyze(wf_w)
    assert b.tasks["big"].finish == pytest.approx(40.0)  # 300 at 7.5/s
    assert b.tasks["small"].finish == pytest.approx(40.0)


def test_never_finishing_task_in_workflow():
    wf = workflow(task("A", inputs=[external(source=const(60.0))], resources=[res(allocation=1.0)]),
                  task("B", inputs=[upstream("A")], resources=[res(allocation=1.0)]))
    a = analyze(wf)
    assert a.tasks["A"].finish is None and a.tasks["B"].finish is None and a.makespan is None
    last = a.tasks["A"].bottlenecks[-1]
    assert last.end == math.inf and last.label == "data:in" and last.start == pytest.approx(60.0)


def test_gain_if_relieved():
    wf = workflow(task("A", inputs=[external(source=PFunc.from_points([0, 50], [0, 100]))],
                       resources=[res(allocation=1.0)]))
    before = analyze(wf)
    assert before.tasks["A"].finish == pytest.approx(100.0)  # CPU-bound
    g = gain_if_relieved(wf, "A", "resource:cpu", 4.0)
    assert g.finish_after == pytest.approx(50.0)  # now the input limits
    assert g.gain == pytest.approx(50.0)
    assert gain_if_relieved(wf, "A", "data:in", math.inf).gain == pytest.approx(0.0)
    assert gain_if_relieved(wf, "A", "resource:cpu", math.inf).finish_after == pytest.approx(50.0)
    with pytest.raises(ModelError, match="no resource"):
        relieved(wf, "A", "resource:gpu")
    with pytest.raises(ModelError, match="expected"):
        relieved(wf, "A", "cpu")


def test_cycle_and_unknown_references_are_model_errors():
    wf = workflow(task("A", inputs=[upstream("B")], resources=[res()]),
                  task("B", inputs=[upstream("A")], resources=[res()]))
    with pytest.raises(ModelError, match="cycle"):
        analyze(wf)
    with pytest.raises(ModelError, match="unknown task"):
        analyze(workflow(task("A", inputs=[upstream("nope")])))
    with pytest.raises(ModelError, match="piecewise constant"):
        analyze(workflow(task("A", resources=[res(per_unit=PFunc.from_points([0, 1], [1, 2]))])))


# ------------------------------------------------------------- paper example
def _paper(name):
    return analyze(load_model(EXAMPLES / name))


def test_paper_50_50():
    a = _paper("paper_50_50.toml")
    t = a.tasks
    both = SIZE / (LINK / 2)
    assert t["dl1"].finish == pytest.approx(both, rel=1e-9)
    assert t["dl2"].finish == pytest.approx(t["dl1"].finish, rel=1e-12)  # both downloads end together
    assert t["whole"].start == pytest.approx(both, rel=1e-9)
    assert t["whole"].finish == pytest.approx(both + 82.0, rel=1e-9)
    assert t["whole"].bottlenecks[-1].label == "resource:cpu"  # ends CPU-bound after them
    assert [b.label for b in t["stream"].bottlenecks] == ["data:data"]
    assert a.makespan == pytest.approx(both + 82.0, rel=1e-9)
    assert 255 < a.makespan < 265  # the paper measured 4:19.6 ≈ 259.6 s


def test_paper_95_5():
    a = _paper("paper_95_5.toml")
    t = a.tasks
    dl1 = SIZE / (0.95 * LINK)
    assert t["dl1"].finish == pytest.approx(dl1, rel=1e-9)
    # dl2 gets the whole link after dl1: both files through the link in total
    assert t["dl2"].finish == pytest.approx(2 * SIZE / LINK, rel=1e-9)
    assert t["whole"].finish == pytest.approx(dl1 + 82.0, rel=1e-9)
    assert t["whole"].finish < t["dl2"].finish  # CPU work hides behind the second download
    assert a.makespan == pytest.approx(2 * SIZE / LINK, rel=1e-6)
    assert 175 < a.makespan < 181  # the paper measured ≈ 2:58 at 95 %
    assert t["merge"].bottlenecks[-1].label == "data:b"  # ends waiting for the streaming branch


def test_paper_100gb_same_structure():
    a = _paper("paper_50_50_100gb.toml")
    t = a.tasks
    both = 100e9 / (LINK / 2)
    assert t["dl1"].finish == pytest.approx(t["dl2"].finish, rel=1e-12)
    assert t["whole"].finish == pytest.approx(both + 82.0, rel=1e-9)
    assert [b.label for b in t["whole"].bottlenecks] == ["data:data", "resource:cpu"]
    small = _paper("paper_50_50.toml")
    # same number of pieces: the analysis cost does not depend on the data size
    for name in t:
        assert t[name].progress.n == small.tasks[name].progress.n


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(st.floats(1.0, 20.0), st.floats(0.2, 3.0), st.floats(0.2, 3.0), st.floats(1, 9),
       st.sampled_from(["A:data:in", "A:resource:net", "B:resource:net", "C:resource:cpu", "C:data:in"]),
       st.floats(1.0, 5.0))
def test_relieving_never_delays_workflow(cap, cpu_c, arrival, w, which, factor):
    link = Link("net", const(cap))
    wf = workflow(
        task("A", inputs=[external(source=PFunc.from_points([0, 100 / arrival], [0, 100]))],
             resources=[res("net", link="net", allocation=None, weight=w)]),
        task("B", pmax=50.0, inputs=[external(source=const(50.0), requirement=PFunc.from_points([0, 50], [0, 50]))],
             resources=[res("net", link="net", allocation=None, weight=10 - w)]),
        task("C", inputs=[upstream("A")], resources=[res(allocation=cpu_c)]),
        links=[link],
    )
    name, item = which.split(":", 1)
    g = gain_if_relieved(wf, name, item, factor)
    assert g.makespan_before is not None and g.makespan_after is not None
    assert g.makespan_after <= g.makespan_before * (1 + 1e-9)


def test_upstream_output_is_not_extrapolated():
    # A produces 100 units by t = 100 and stops; B would need 150: never finishes,
    # stuck at 100 (a linear extrapolation of A's last piece would "finish" B)
    wf = workflow(
        task("A", inputs=[external()], resources=[res(allocation=1.0)]),
        task("B", pmax=150.0, inputs=[upstream("A", requirement=PFunc.from_points([0, 150], [0, 150]))],
             resources=[res(allocation=5.0)]),
    )
    a = analyze(wf)
    assert a.tasks["A"].finish == pytest.approx(100.0)
    assert a.tasks["B"].finish is None
    assert a.tasks["B"].progress(1e6) == pytest.approx(100.0)
    assert a.tasks["B"].bottlenecks[-1].label == "data:in"


def test_link_user_holds_share_from_its_start():
    # "late" starts at t = 10: until then "early" has the whole link (10/s)
    link = Link("net", const(10.0))
    wf = workflow(
        task("early", inputs=[external()], resources=[res("net", link="net", allocation=None)]),
        task("late", inputs=[external()], resources=[res("net", link="net", allocation=None)], start=10.0),
        links=[link],
    )
    a = analyze(wf)
    # early: 100 by t = 10, done -> late alone at 10/s from t = 10
    assert a.tasks["early"].finish == pytest.approx(10.0)
    assert a.tasks["late"].finish == pytest.approx(20.0)
    wf2 = workflow(
        task("early", pmax=150.0, inputs=[external(source=const(150.0), requirement=PFunc.from_points([0, 150], [0, 150]))],
             resources=[res("net", link="net", allocation=None)]),
        task("late", inputs=[external()], resources=[res("net", link="net", allocation=None)], start=10.0),
        links=[link],
    )
    b = analyze(wf2)
    # early: 100 by t = 10, the other 50 at 5/s -> 20; late: 50 by t = 20, 50 at 10/s -> 25
    assert b.tasks["early"].finish == pytest.approx(20.0)
    assert b.tasks["late"].finish == pytest.approx(25.0)
