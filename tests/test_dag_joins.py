"""Many-to-many dependencies as DAGMan's join nodes, and parser costs that do not depend on line order."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.workflowplan import plan_workflow
from condor_rlrep.dag import Join, Workflow, parse_dag, write_dag_lines
from condor_rlrep.errors import CycleError, DagError
from condor_rlrep.dag.dot import generate_dot
from condor_rlrep.dag.graph import dependency_graph
from condor_rlrep.dag.nxgraph import build_graph, topological_order


def jobs(*names: str) -> list[str]:
    return [f"JOB {n} x.sub" for n in names]


def test_join_only_with_several_parents_and_several_children():
    wf = parse_dag([*jobs("a", "b", "c", "d"), "PARENT a b CHILD c d", "PARENT a CHILD b c", "PARENT a a CHILD d c"])
    assert wf.joins == [Join("_condor_join_node0", ("a", "b"), ("c", "d"))]
    assert wf.joins[0].source_line == 5
    # one parent (after repeats are dropped): plain edges
    assert wf.edges == {("a", "b"), ("a", "c"), ("a", "d")}
    assert wf.dependency_pairs() == {("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d")}


def test_weak_join_and_writer_round_trip():
    wf = parse_dag([*jobs("d", "c", "b", "a"), "WEAK PARENT b a CHILD c d"])
    # parents and children in node (file) order, as DAGMan sorts them
    assert wf.joins == [Join("_condor_join_node0", ("b", "a"), ("d", "c"), weak=True)]
    lines = list(write_dag_lines(wf))
    assert lines[-1] == "WEAK PARENT b a CHILD d c"
    assert parse_dag(lines) == wf


def test_join_cost_is_m_plus_n():
    m = 600
    lines = [*jobs(*(f"p{i}" for i in range(m))), *jobs(*(f"c{i}" for i in range(m)))]
    lines.append("PARENT " + " ".join(f"p{i}" for i in range(m)) + " CHILD " + " ".join(f"c{i}" for i in range(m)))
    wf = parse_dag(lines)
    assert not wf.edges and len(wf.joins) == 1
    graph = dependency_graph(wf, dict.fromkeys(wf.nodes, 1.0))
    assert graph.edge_count == 2 * m and graph.join_count == 1 and graph.node_count == 2 * m
    plan = plan_workflow(graph, 0.0)
    assert plan.critical_path_seconds == 2 and len(plan.names) == 2 * m  # no join vertex in the plan
    assert plan.earliest_start["c7"] == 1 and plan.remaining["p3"] == 2


def test_cycle_through_a_join_names_real_nodes_and_the_line():
    with pytest.raises(CycleError) as err:
        parse_dag([*jobs("a", "b", "c", "d"), "PARENT a b CHILD c d", "PARENT d CHILD a"], path="w.dag")
    assert "_condor_join" not in " -> ".join(err.value.cycle)
    assert set(err.value.cycle) <= {"a", "b", "c", "d"} and err.value.line in (5, 6)
    assert str(err.value).startswith("w.dag:")


def test_join_name_taken_by_a_node_is_refused_as_dagman_does():
    with pytest.raises(DagError, match="_condor_join_node0.*rename the node"):
        parse_dag([*jobs("a", "b", "c", "_condor_join_node0"), "PARENT a b CHILD c _condor_join_node0"])


def test_dot_shows_joins_as_points():
    wf = parse_dag([*jobs("a", "b", "c", "d"), "PARENT a b CHILD c d"])
    text = "\n".join(generate_dot(dependency_graph(wf, dict.fromkeys(wf.nodes, 1.0))))
    assert '"_condor_join_node0" [shape=point' in text and '"a" -> "_condor_join_node0";' in text


@st.composite
def join_workflows(draw) -> Workflow:
    n = draw(st.integers(2, 14))
    names = [f"n{i}" for i in draw(st.permutations(range(n)))]  # file order unrelated to the partial order
    rank = {name: i for i, name in enumerate(sorted(names, key=lambda s: int(s[1:])))}
    lines = jobs(*names)
    for _ in range(draw(st.integers(0, 8))):
        cut = draw(st.integers(1, n - 1))
        low = [m for m in names if rank[m] < cut]
        high = [m for m in names if rank[m] >= cut]
        ps = draw(st.lists(st.sampled_from(low), min_size=1, max_size=4))
        cs = draw(st.lists(st.sampled_from(high), min_size=1, max_size=4))
        lines.append(f"PARENT {' '.join(ps)} CHILD {' '.join(cs)}")
    wf = parse_dag(draw(st.permutations(lines)))
    return wf


@settings(max_examples=150, deadline=None)
@given(join_workflows(), st.lists(st.floats(0, 1000), min_size=14, max_size=14), st.floats(0, 2))
def test_plan_with_joins_equals_plan_of_the_expanded_graph(wf, values, phi):
    estimates = {name: values[i] for i, name in enumerate(wf.nodes)}
    flat = Workflow(nodes=wf.nodes, edges=wf.dependency_pairs())
    with_joins = plan_workflow(dependency_graph(wf, estimates), phi)
    expanded = plan_workflow(dependency_graph(flat, estimates), phi)
    assert with_joins.to_dict() == expanded.to_dict()  # exactly: a join adds 0 and passes max through
    assert with_joins.planned_phi_double_prime() == expanded.planned_phi_double_prime()
    assert set(build_graph(wf, estimates).edges) == set(build_graph(flat, estimates).edges)
    order = topological_order(dependency_graph(wf, estimates))
    position = {name: i for i, name in enumerate(order)}
    assert sorted(order) == sorted(wf.nodes) and all(position[p] < position[c] for p, c in flat.edges)


def _random_dag(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = jobs(*(f"n{i}" for i in range(n)))
    lines += [f"PARENT n{p} CHILD n{i}" for i in range(1, n) for p in rng.sample(range(i), min(i, 3))]
    lines += [f'VARS n{i} rlrep_estimate="{i}"' for i in range(n)]
    return lines


def test_line_order_does_not_change_the_workflow():
    lines = _random_dag(3000, 1)
    grouped = parse_dag(lines)
    shuffled_lines = list(lines)
    random.Random(2).shuffle(shuffled_lines)
    shuffled = parse_dag(shuffled_lines)
    assert shuffled.edges == grouped.edges
    assert {n: v.vars for n, v in shuffled.nodes.items()} == {n: v.vars for n, v in grouped.nodes.items()}


def test_shuffled_cycle_is_found():
    lines = _random_dag(5000, 3) + ["PARENT n4999 CHILD n0"]
    random.Random(4).shuffle(lines)
    with pytest.raises(CycleError) as err:
        parse_dag(lines, path="big.dag")
    assert err.value.line == lines.index("PARENT n4999 CHILD n0") + 1 or "n0" in err.value.cycle


def test_nested_splices_any_depth():
    files = {f"s{k}.dag": ["JOB n x.sub", f"SPLICE s s{k + 1}.dag", "PARENT n CHILD s"] for k in range(600)}
    files["s600.dag"] = ["JOB last x.sub"]
    wf = parse_dag(["SPLICE top s0.dag"], include_loader=lambda p: files[p.rsplit("/", 1)[-1]])
    assert len(wf.nodes) == 601 and "top+" + "s+" * 600 + "last" in wf.nodes
