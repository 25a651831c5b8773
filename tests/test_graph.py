"""The dependency graph: virtual nodes, membership, validation, cycles, DOT."""

from __future__ import annotations

import gc
import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _critutil import level_passes, make_workflow, random_dags
from condor_rlrep.errors import CycleError, DagError, EstimateError
from condor_rlrep.dag.dot import generate_dot
from condor_rlrep.dag.graph import VIRTUAL_END, VIRTUAL_START, dependency_graph
from condor_rlrep.dag.nxgraph import build_graph, from_networkx, to_networkx, topological_order

ESTIMATES = {"b": 2.0, "a": 1.0, "c": 3.0, "d": 4.0}
EDGES = {("a", "c"), ("b", "c"), ("c", "d")}


def test_build_graph_shape():
    kinds = {"fin": "FINAL", "svc": "SERVICE", "prov": "PROVISIONER", "sub": "SUBDAG"}
    estimates = {**ESTIMATES, "fin": None, "svc": None, "prov": None, "sub": 5.0}
    workflow = make_workflow(estimates, EDGES, kinds=kinds)
    graph = build_graph(workflow, {**ESTIMATES, "sub": 5.0})
    assert list(graph) == [VIRTUAL_START, "b", "a", "c", "d", "sub", VIRTUAL_END]  # file order
    assert graph.nodes[VIRTUAL_START] == {"estimate": 0.0} == graph.nodes[VIRTUAL_END]
    assert graph.nodes["c"] == {"estimate": 3.0}
    assert set(graph.successors(VIRTUAL_START)) == {"a", "b", "sub"}
    assert set(graph.predecessors(VIRTUAL_END)) == {"d", "sub"}
    assert set(graph.edges) - {e for e in graph.edges if VIRTUAL_START in e or VIRTUAL_END in e} == EDGES


def test_compact_graph_matches_networkx():
    workflow = make_workflow(ESTIMATES, EDGES)
    compact = dependency_graph(workflow, ESTIMATES)
    assert compact.names == ["b", "a", "c", "d"] and compact.estimates.tolist() == [2.0, 1.0, 3.0, 4.0]
    assert set(compact.edges()) == EDGES and compact.edge_count == 3
    assert [compact.names[i] for i in compact.roots()] == ["b", "a"]
    assert [compact.names[i] for i in compact.leaves()] == ["d"]
    assert sorted(compact.names[i] for i in compact.parents(compact.index()["c"])) == ["a", "b"]
    again = from_networkx(build_graph(workflow, ESTIMATES))
    assert set(again.edges()) == set(build_graph(workflow, ESTIMATES).edges)
    assert nx.utils.graphs_equal(to_networkx(compact), build_graph(workflow, ESTIMATES))


def test_edges_with_equal_but_distinct_name_strings():
    # Parsers share one string object per name; other producers may not.
    estimates = {"alpha": 1.0, "beta": 2.0, "gamma": 3.0}
    workflow = make_workflow(estimates, set())
    alpha, gamma = "".join(["al", "pha"]), "".join(["gam", "ma"])
    assert alpha == "alpha" and alpha is not next(iter(workflow.nodes))
    workflow.edges = {(alpha, "beta"), ("beta", gamma)}
    compact = dependency_graph(workflow, estimates)
    assert set(compact.edges()) == {("alpha", "beta"), ("beta", "gamma")}
    workflow.edges.add((gamma, "".join(["gh", "ost"])))
    with pytest.raises(DagError, match="unknown node 'ghost'"):
        dependency_graph(workflow, estimates)


def test_empty_workflow_links_start_to_end():
    graph = build_graph(make_workflow({}, set()), {})
    assert list(graph.edges) == [(VIRTUAL_START, VIRTUAL_END)]


def test_cycle_is_named():
    workflow = make_workflow({"a": 1, "b": 1, "c": 1, "x": 1}, {("x", "a"), ("a", "b"), ("b", "c"), ("c", "a")})
    with pytest.raises(CycleError) as caught:
        dependency_graph(workflow, {"a": 1, "b": 1, "c": 1, "x": 1})
    assert caught.value.cycle == ["a", "b", "c"]
    assert "a -> b -> c -> a" in str(caught.value) and str(caught.value).startswith("test.dag: ")
    with pytest.raises(CycleError):
        build_graph(workflow, {"a": 1, "b": 1, "c": 1, "x": 1})


def test_self_loop_is_a_cycle():
    with pytest.raises(CycleError) as caught:
        dependency_graph(make_workflow({"a": 1}, {("a", "a")}), {"a": 1})
    assert caught.value.cycle == ["a"]


def test_missing_estimates_are_counted_and_named():
    names = {f"n{i:02d}": None for i in range(13)}
    with pytest.raises(EstimateError) as caught:
        build_graph(make_workflow(names, set()), {"n05": 1.0})
    message = str(caught.value)
    assert message.startswith("test.dag: 12 nodes have no runtime estimate: n00, n01")
    assert "n11" not in message and "(2 more)" in message
    with pytest.raises(EstimateError, match="1 node has no runtime estimate: c"):
        dependency_graph(make_workflow(ESTIMATES, EDGES), {"a": 1, "b": 1, "d": 1})


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "10", None, True])
def test_bad_estimate_values(bad):
    with pytest.raises(EstimateError, match="node c: estimate"):
        dependency_graph(make_workflow(ESTIMATES, EDGES), {**ESTIMATES, "c": bad})


def test_edges_to_unknown_or_final_nodes():
    with pytest.raises(DagError, match="names unknown node 'ghost'"):
        dependency_graph(make_workflow(ESTIMATES, EDGES | {("a", "ghost")}), ESTIMATES)
    workflow = make_workflow({**ESTIMATES, "fin": None}, EDGES | {("d", "fin")}, kinds={"fin": "FINAL"})
    with pytest.raises(DagError, match="FINAL node 'fin' cannot have dependencies"):
        dependency_graph(workflow, ESTIMATES)


def test_reserved_names():
    with pytest.raises(DagError, match="reserved"):
        dependency_graph(make_workflow({VIRTUAL_END: 1.0}, set()), {VIRTUAL_END: 1.0})


def test_garbage_collector_state_is_restored():
    assert gc.isenabled()
    to_networkx(dependency_graph(make_workflow(ESTIMATES, EDGES), ESTIMATES))
    assert gc.isenabled()
    gc.disable()
    try:
        build_graph(make_workflow(ESTIMATES, EDGES), ESTIMATES)
        assert not gc.isenabled()
    finally:
        gc.enable()


@settings(max_examples=60, deadline=None)
@given(random_dags(), st.booleans())
def test_topological_order(dag, levels):
    estimates, edges = dag
    workflow = make_workflow(estimates, edges)
    with level_passes(levels):
        graphs = (dependency_graph(workflow, estimates), build_graph(workflow, estimates))
    assert (graphs[0].level_bounds is not None) == levels
    for graph in graphs:
        order = topological_order(graph)
        position = {name: i for i, name in enumerate(order)}
        assert len(order) == len(position) == len(graph)
        assert all(position[p] < position[c] for p, c in edges)
    compact = graphs[0]
    if levels:  # level k: longest chain of ancestors has k edges
        bounds = compact.level_bounds.tolist()
        level = {}
        for k in range(len(bounds) - 1):
            for i in compact.order[bounds[k] : bounds[k + 1]].tolist():
                level[i] = k
        for i in range(len(compact)):
            parents = compact.parents(i)
            assert level[i] == (1 + max(level[p] for p in parents) if parents else 0)


@pytest.mark.parametrize("levels", [True, False])
def test_cycles_found_on_both_paths(levels):
    workflow = make_workflow({"a": 1, "b": 1, "c": 1, "x": 1}, {("x", "a"), ("a", "b"), ("b", "c"), ("c", "b")})
    with level_passes(levels), pytest.raises(CycleError) as caught:
        dependency_graph(workflow, dict.fromkeys("abcx", 1.0))
    assert caught.value.cycle == ["b", "c"]


def test_deep_graphs_fall_back_to_loops():
    count = 3000  # a chain: 3000 levels of one node
    names = {f"t{i}": 1.0 for i in range(count)}
    workflow = make_workflow(names, {(f"t{i}", f"t{i + 1}") for i in range(count - 1)})
    compact = dependency_graph(workflow, names)
    assert compact.level_bounds is None and compact.order.tolist() == list(range(count))
    wide = make_workflow(names, {("t0", f"t{i}") for i in range(1, count)})
    assert dependency_graph(wide, names).level_bounds.tolist() == [0, 1, count]


def test_dot_output_escapes_and_highlights():
    estimates = {'say "hi"': 1.0, "b": 2.0, "c": 1.0}
    workflow = make_workflow(estimates, {('say "hi"', "b"), ("b", "c"), ('say "hi"', "c")})
    lines = list(generate_dot(dependency_graph(workflow, estimates), name="w", labels={"b": "e=2"},
                              highlight=['say "hi"', "b", "c"]))
    assert lines[0] == 'digraph "w" {' and lines[-1] == "}"
    assert '  "say \\"hi\\"" [label="say \\"hi\\"", color=red, penwidth=2];' in lines
    assert '  "b" [label="b\\ne=2", color=red, penwidth=2];' in lines
    assert '  "say \\"hi\\"" -> "b" [color=red, penwidth=2];' in lines
    assert '  "say \\"hi\\"" -> "c";' in lines
    assert not any(VIRTUAL_START in line for line in lines)
