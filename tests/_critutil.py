"""Helpers for the graph / criticality / estimates tests (owned with them)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from hypothesis import strategies as st

from condor_rlrep.dag.model import ESTIMATE_MACRO, Node, VarAssignment, Workflow


def make_workflow(
    estimates: Mapping[str, float | None],
    edges: Iterable[tuple[str, str]],
    *,
    kinds: Mapping[str, str] | None = None,
    noop: Iterable[str] = (),
    path: str | None = "test.dag",
) -> Workflow:
    """A workflow whose nodes (in ``estimates`` order) carry VARS rlrep_estimate
    (None: no estimate at all)."""
    noop = set(noop)
    workflow = Workflow(source_path=path)
    for line, (name, value) in enumerate(estimates.items(), 1):
        node = Node(name, kind=(kinds or {}).get(name, "JOB"), submit="job.sub", noop=name in noop)
        if value is not None:
            node.vars.append(VarAssignment(ESTIMATE_MACRO, repr(float(value))))
        node.source_path, node.source_line = path, line
        workflow.nodes[name] = node
    workflow.edges = set(edges)
    return workflow


@st.composite
def random_dags(draw, max_nodes: int = 12, integer_estimates: bool = True):
    """``(estimates, edges)``: a random DAG with positive estimates.

    Names are shuffled so that file order is not a topological order.
    Integer estimates keep every sum and the φ′ comparisons exact.
    """
    count = draw(st.integers(min_value=1, max_value=max_nodes))
    names = draw(st.permutations([f"n{i}" for i in range(count)]))
    pairs = [(i, j) for i in range(count) for j in range(i + 1, count)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=3 * count)) if pairs else []
    if integer_estimates:
        values = draw(st.lists(st.integers(min_value=1, max_value=1000), min_size=count, max_size=count))
    else:
        values = draw(
            st.lists(st.floats(min_value=1e-3, max_value=1e5, allow_nan=False), min_size=count, max_size=count)
        )
    # topological rank i -> name names[i]; file order is sorted(names) order below
    estimates = {names[i]: float(values[i]) for i in sorted(range(count), key=lambda i: names[i])}
    edges = {(names[i], names[j]) for i, j in chosen}
    return estimates, edges


@contextmanager
def level_passes(enabled: bool) -> Iterator[None]:
    """Force graphs built inside to use (or not) the level-wise numpy passes."""
    from condor_rlrep.dag import csr

    saved = csr.NUMPY_MIN_NODES, csr.NUMPY_MIN_LEVEL_WIDTH
    csr.NUMPY_MIN_NODES, csr.NUMPY_MIN_LEVEL_WIDTH = (0, 1) if enabled else (10**18, 1)
    try:
        yield
    finally:
        csr.NUMPY_MIN_NODES, csr.NUMPY_MIN_LEVEL_WIDTH = saved
