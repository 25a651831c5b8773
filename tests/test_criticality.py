"""L′ (eq. 5), CR(W), the deadline (eq. 2), φ′ and φ″ (§4.3) — by hand and by property."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _critutil import level_passes, make_workflow, random_dags
from condor_rlrep.criticality import (
    critical_path,
    critical_path_length,
    deadline,
    earliest_start,
    phi_double_prime,
    phi_prime,
    remaining_critical_path,
)
from condor_rlrep.workflowplan import WorkflowPlan, plan_workflow
from condor_rlrep.errors import CycleError
from condor_rlrep.dag.graph import VIRTUAL_END, VIRTUAL_START, dependency_graph
from condor_rlrep.dag.nxgraph import build_graph

# A Figure-1-like workflow: S -> A, B, C; F needs C and D; T after G and H.
FIG1_ESTIMATES = {"A": 600, "B": 1200, "C": 300, "D": 300, "E": 900, "F": 600, "G": 300, "H": 1200}
FIG1_EDGES = {("A", "D"), ("A", "E"), ("B", "E"), ("C", "F"), ("D", "F"), ("E", "G"), ("F", "G"), ("F", "H")}
# By hand: L'_t = e_t + max over children (eq. 5).
FIG1_L = {"G": 300, "H": 1200, "F": 1800, "E": 1200, "D": 2100, "C": 2100, "B": 2400, "A": 2700}
FIG1_ES = {"A": 0, "B": 0, "C": 0, "D": 600, "E": 1200, "F": 900, "G": 2100, "H": 1500}
FIG1_MAX_CHILD = {"A": 2100, "B": 1200, "C": 1800, "D": 1800, "E": 300, "F": 1200, "G": 0, "H": 0}
FIG1_CR = 2700  # A -> D -> F -> H = 600 + 300 + 600 + 1200


def _fig1_plan(phi: float = 0.5, start: float = 0.0, compact: bool = True) -> WorkflowPlan:
    workflow = make_workflow(FIG1_ESTIMATES, FIG1_EDGES)
    graph = dependency_graph if compact else build_graph
    return plan_workflow(graph(workflow, FIG1_ESTIMATES), phi, start)


@pytest.mark.parametrize("compact", [True, False])
def test_fig1_by_hand(compact):
    plan = _fig1_plan(compact=compact)
    assert plan.remaining == FIG1_L
    assert plan.earliest_start == FIG1_ES
    assert plan.max_child_remaining == FIG1_MAX_CHILD
    assert plan.critical_path_seconds == FIG1_CR
    assert plan.critical_path == ("A", "D", "F", "H")
    assert plan.deadline == 1.5 * 2700 == 4050  # eq. 2 with s(W) = 0
    phi1 = plan.planned_phi_prime()
    # (d - es)/L' - 1
    assert phi1["A"] == 0.5
    assert phi1["B"] == pytest.approx(4050 / 2400 - 1)
    assert phi1["D"] == pytest.approx(3450 / 2100 - 1)
    assert phi1["E"] == pytest.approx(2850 / 1200 - 1) == pytest.approx(1.375)
    assert phi1["G"] == pytest.approx(5.5)
    phi2 = plan.planned_phi_double_prime()
    # (d - es - max child L')/e - 1
    assert phi2["A"] == pytest.approx((4050 - 2100) / 600 - 1) == pytest.approx(2.25)
    assert phi2["D"] == pytest.approx((4050 - 600 - 1800) / 300 - 1) == pytest.approx(4.5)
    assert phi2["H"] == pytest.approx((4050 - 1500) / 1200 - 1)


def test_fig1_later_start_and_late_submission():
    plan = _fig1_plan(phi=1.0, start=10_000.0)
    assert plan.deadline == 2 * 2700 + 10_000
    # H submitted an hour after its planned 11500: 300 s left for 1200 s of work
    assert plan.phi_prime("H", 10_000 + 1500 + 3600) == pytest.approx((15_400 - 15_100) / 1200 - 1)
    assert plan.phi_prime("H", 15_100) < 0  # behind schedule
    assert plan.phi_double_prime("F", 10_900) == pytest.approx((15_400 - 10_900 - 1200) / 600 - 1)
    assert plan.criticality("F", 10_900, "current") == plan.phi_double_prime("F", 10_900)
    assert plan.criticality("F", 10_900) == plan.phi_prime("F", 10_900)
    with pytest.raises(ValueError):
        plan.criticality("F", 0.0, "sideways")  # type: ignore[arg-type]


def test_networkx_functions_keep_virtual_nodes():
    graph = build_graph(make_workflow(FIG1_ESTIMATES, FIG1_EDGES), FIG1_ESTIMATES)
    remaining = remaining_critical_path(graph)
    assert remaining[VIRTUAL_START] == FIG1_CR and remaining[VIRTUAL_END] == 0
    assert {k: v for k, v in remaining.items() if k in FIG1_L} == FIG1_L
    starts = earliest_start(graph)
    assert starts[VIRTUAL_END] == FIG1_CR and starts["G"] == 2100
    assert critical_path(graph, remaining) == ["A", "D", "F", "H"]
    assert critical_path_length(graph, remaining) == FIG1_CR
    assert "weight" not in graph.nodes["A"] and set(graph.nodes["A"]) == {"estimate"}  # nothing written


def test_formulas():
    assert deadline(0.5, 100.0, 1000.0) == 1150.0
    assert phi_prime(1150.0, 1000.0, 100.0) == 0.5
    assert phi_prime(1150.0, 1100.0, 100.0) == pytest.approx(-0.5)
    assert phi_double_prime(1150.0, 1000.0, 50.0, 60.0) == pytest.approx(90 / 50 - 1)
    assert phi_double_prime(1150.0, 1000.0, 50.0, 0.0) == pytest.approx(2.0)


def test_zero_denominators_follow_one_rule():
    # No work left: never late unless the deadline has passed.
    assert phi_prime(10.0, 5.0, 0.0) == math.inf
    assert phi_prime(10.0, 10.0, 0.0) == math.inf
    assert phi_prime(10.0, 11.0, 0.0) == -math.inf
    assert phi_double_prime(10.0, 5.0, 0.0, 5.0) == math.inf
    assert phi_double_prime(10.0, 5.0, 0.0, 6.0) == -math.inf
    workflow = make_workflow({"a": 10, "z": None}, {("a", "z")}, noop={"z"})
    plan = plan_workflow(dependency_graph(workflow, {"a": 10.0, "z": 0.0}), 0.0)
    assert plan.phi_prime("z", 10.0) == math.inf and plan.phi_prime("z", 10.5) == -math.inf
    assert plan.phi_double_prime("z", 10.0) == math.inf and plan.phi_double_prime("z", 11.0) == -math.inf
    assert plan.planned_phi_prime()["z"] == math.inf
    assert plan.planned_phi_double_prime()["z"] == math.inf


@pytest.mark.parametrize("phi", [-1.0, -2.0, math.nan, math.inf])
def test_bad_phi(phi):
    with pytest.raises(ValueError):
        deadline(phi, 10.0, 0.0)
    with pytest.raises(ValueError):
        _fig1_plan(phi=phi)


def test_bad_start():
    with pytest.raises(ValueError):
        _fig1_plan(start=math.nan)


def test_rebase_phi_and_cache_round_trip():
    plan = _fig1_plan()
    moved = plan.rebased(100.0)
    assert moved.deadline == 4150 and moved.phi_prime("A", 100.0) == 0.5
    assert plan.with_phi(1.0).deadline == 5400
    copy = WorkflowPlan.from_dict(json.loads(json.dumps(plan.to_dict())))
    assert copy == plan and copy != moved
    assert copy.phi_prime("D", 600.0) == plan.phi_prime("D", 600.0)
    assert len(plan) == 8 and "D" in plan and "rlrep start" not in plan
    assert moved.planned_submit_time("G") == 2200.0
    assert "deadline=4050.0" in repr(plan)
    with pytest.raises(ValueError):
        plan.rebased(math.inf)


def test_empty_workflow():
    plan = plan_workflow(dependency_graph(make_workflow({}, set()), {}), 0.5, start=7.0)
    assert plan.critical_path_seconds == 0 and plan.deadline == 7.0 and plan.critical_path == ()
    nx_plan = plan_workflow(build_graph(make_workflow({}, set()), {}), 0.5, start=7.0)
    assert nx_plan.remaining == {} and nx_plan.deadline == 7.0


def test_ties_go_to_file_order():
    estimates = {"x": 5, "b": 10, "a": 10, "y": 5}
    for edges in ([("x", "b"), ("x", "a"), ("b", "y"), ("a", "y")], [("a", "y"), ("b", "y"), ("x", "a"), ("x", "b")]):
        workflow = make_workflow(estimates, edges)
        assert plan_workflow(dependency_graph(workflow, estimates), 0.1).critical_path == ("x", "b", "y")
        assert plan_workflow(build_graph(workflow, estimates), 0.1).critical_path == ("x", "b", "y")


def test_cycle_in_networkx_graph():
    graph = nx.DiGraph([("a", "b"), ("b", "a")])
    nx.set_node_attributes(graph, 1.0, "estimate")
    with pytest.raises(CycleError):
        plan_workflow(graph, 0.5)


def test_custom_weight_attribute():
    graph = nx.DiGraph([("a", "b")])
    nx.set_node_attributes(graph, {"a": 2.0, "b": 3.0}, "cost")
    assert remaining_critical_path(graph, weight="cost") == {"a": 5.0, "b": 3.0}


def _weighted_on_edges(graph: nx.DiGraph, nodes) -> nx.DiGraph:
    """Node weights moved onto edges, plus a sink so the last node's weight counts."""
    moved = nx.DiGraph()
    sub = graph.subgraph(nodes)
    for u in sub:
        moved.add_edge(u, "sink", w=sub.nodes[u]["estimate"])
    for u, v in sub.edges:
        moved.add_edge(u, v, w=sub.nodes[u]["estimate"])
    return moved


@settings(max_examples=60, deadline=None)
@given(random_dags())
def test_remaining_is_critical_path_of_descendants(dag):
    estimates, edges = dag
    graph = build_graph(make_workflow(estimates, edges), estimates)
    remaining = remaining_critical_path(graph)
    starts = earliest_start(graph)
    for node in estimates:
        below = nx.descendants(graph, node) | {node}
        below.discard(VIRTUAL_END)
        assert remaining[node] == nx.dag_longest_path_length(_weighted_on_edges(graph, below), weight="w")
        above = (nx.ancestors(graph, node) - {VIRTUAL_START}) | {node}
        longest_to = nx.dag_longest_path_length(_weighted_on_edges(graph, above), weight="w")
        assert starts[node] == longest_to - estimates[node]


@settings(max_examples=80, deadline=None)
@given(random_dags(), st.sampled_from([0.0, 0.25, 0.5, 1.0, 3.0]), st.sampled_from([0.0, 1024.0]))
def test_planned_phi_prime_at_least_phi(dag, phi, start):
    estimates, edges = dag
    plan = plan_workflow(dependency_graph(make_workflow(estimates, edges), estimates), phi, start)
    cr = plan.critical_path_seconds
    planned = plan.planned_phi_prime()
    for node, value in planned.items():
        es, rem = plan.earliest_start[node], plan.remaining[node]
        assert es + rem <= cr
        assert value >= phi
        # φ′ − φ = [(φ+1)(CR − L′ − es) + φ·es] / L′: zero iff both terms are.
        on_time_path = es + rem == cr
        expected_equal = on_time_path and es == 0 if phi > 0 else on_time_path
        assert (value == phi) == expected_equal, (node, value, es, rem, cr)
    # the critical path's first node starts the workflow and has φ′ = φ exactly
    assert planned[plan.critical_path[0]] == phi
    assert sum(estimates[n] for n in plan.critical_path) == cr
    for parent, child in zip(plan.critical_path, plan.critical_path[1:]):
        assert (parent, child) in edges


@settings(max_examples=40, deadline=None)
@given(random_dags(integer_estimates=False), st.floats(min_value=0.0, max_value=5.0))
def test_planned_phi_prime_at_least_phi_float_estimates(dag, phi):
    estimates, edges = dag
    plan = plan_workflow(dependency_graph(make_workflow(estimates, edges), estimates), phi)
    for node, value in plan.planned_phi_prime().items():
        # (d − es) cancels: its rounding error is relative to d, not to L′
        tolerance = 1e-12 * (1 + phi) * plan.critical_path_seconds / plan.remaining[node]
        assert value >= phi - tolerance
        assert value == pytest.approx(phi_prime(plan.deadline, plan.earliest_start[node], plan.remaining[node]))
    for node, value in plan.planned_phi_double_prime().items():
        assert value == pytest.approx(
            phi_double_prime(plan.deadline, plan.earliest_start[node], estimates[node], plan.max_child_remaining[node])
        )
        # with φ′ ≥ 0, the current task's own slack is never smaller than the balanced one
        tolerance = 1e-12 * (1 + phi) * plan.critical_path_seconds / estimates[node]
        assert value >= plan.planned_phi_prime()[node] - tolerance


@settings(max_examples=60, deadline=None)
@given(random_dags(integer_estimates=False), st.floats(min_value=0.0, max_value=5.0))
def test_level_passes_equal_loops(dag, phi):
    estimates, edges = dag
    workflow = make_workflow(estimates, edges)
    plans = []
    for levels in (True, False):
        with level_passes(levels):
            plans.append(plan_workflow(dependency_graph(workflow, estimates), phi))
    assert plans[0] == plans[1]  # bit for bit: the same max and + on the same operands


def test_fig1_on_level_passes():
    with level_passes(True):
        graph = dependency_graph(make_workflow(FIG1_ESTIMATES, FIG1_EDGES), FIG1_ESTIMATES)
    assert graph.level_bounds is not None
    plan = plan_workflow(graph, 0.5)
    assert plan.remaining == FIG1_L and plan.earliest_start == FIG1_ES and plan.max_child_remaining == FIG1_MAX_CHILD


def test_importing_criticality_stays_lean():
    # The warm PRE hook may read a cached WorkflowPlan: no numpy, networkx or parser.
    code = (
        "import sys, condor_rlrep.criticality; "
        "print(sorted(m for m in ('numpy', 'networkx', 'condor_rlrep.dag.parser', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
