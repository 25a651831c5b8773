"""The networkx form of a dependency graph, and conversions between it and
the compact :class:`~.graph.DependencyGraph`.

:func:`build_graph` → :class:`networkx.DiGraph` with the virtual start node
``S`` (:data:`~.graph.VIRTUAL_START`) before every root and virtual end node
``T`` after every leaf (both with estimate 0, §2 of the replication paper)
and ``e_t`` in the node attribute ``"estimate"`` (:data:`ESTIMATE_ATTR`):
for display, DOT output and networkx algorithms. Joins are expanded there
into their m·n edges (no join vertices).

What computes on either form (:mod:`condor_rlrep.criticality`,
:func:`topological_order`) takes it through :func:`as_dependency_graph`, so
there is one implementation, on the compact form. networkx is imported only
when a networkx graph is built; importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from condor_rlrep.errors import EstimateError

from .graph import (
    VIRTUAL_END,
    VIRTUAL_START,
    DependencyGraph,
    checked_estimates,
    dependency_graph,
    gc_paused,
    ordered_graph,
)

if TYPE_CHECKING:  # none of these at run time: see the module docstring
    import networkx as nx
    import numpy as np

    from condor_rlrep.dag.model import Workflow

__all__ = ["ESTIMATE_ATTR", "build_graph", "to_networkx", "from_networkx", "as_dependency_graph", "topological_order"]

ESTIMATE_ATTR = "estimate"


def as_dependency_graph(graph: Any, weight: str | None = ESTIMATE_ATTR) -> DependencyGraph:
    """``graph`` itself if compact already, else :func:`from_networkx`
    (``weight=None``: structure only, every estimate 0)."""
    if isinstance(graph, DependencyGraph):
        return graph
    return from_networkx(graph, weight)


def topological_order(graph: Any) -> list[Any]:
    """Node names of a DependencyGraph or networkx DiGraph, parents first."""
    compact = as_dependency_graph(graph, None)
    names = compact.names
    first_join = compact.node_count
    return [names[i] for i in compact.order.tolist() if i < first_join]


def build_graph(workflow: Workflow, estimates: Mapping[str, float]) -> nx.DiGraph:
    """The networkx dependency graph of ``workflow`` with virtual start/end nodes.

    Node attribute ``"estimate"`` holds ``e_t``; ``S`` → every root, every leaf
    → ``T``, both virtual nodes with estimate 0; nodes in file order. Same
    validation and errors as :func:`.graph.dependency_graph`.
    """
    return to_networkx(dependency_graph(workflow, estimates))


def to_networkx(compact: DependencyGraph) -> nx.DiGraph:
    """The networkx form of ``compact`` with virtual start/end nodes (see
    :func:`build_graph`); joins are expanded into their m·n edges there."""
    import networkx as nx

    names = compact.node_names
    graph = nx.DiGraph()
    with gc_paused():
        graph.add_node(VIRTUAL_START, **{ESTIMATE_ATTR: 0.0})
        graph.add_nodes_from((name, {ESTIMATE_ATTR: value}) for name, value in zip(names, compact.estimates.tolist()))
        graph.add_node(VIRTUAL_END, **{ESTIMATE_ATTR: 0.0})
        graph.add_edges_from(compact.dependencies())
        graph.add_edges_from((VIRTUAL_START, names[i]) for i in compact.roots())
        graph.add_edges_from((names[i], VIRTUAL_END) for i in compact.leaves())
    if not names:
        graph.add_edge(VIRTUAL_START, VIRTUAL_END)
    return graph


def from_networkx(graph: Any, weight: str | None = ESTIMATE_ATTR) -> DependencyGraph:
    """The compact form of a networkx DiGraph whose nodes carry ``weight``.

    Every node of ``graph`` is kept (virtual start/end nodes too, as
    ordinary nodes); ``weight=None`` keeps the structure only (every
    estimate 0). Raises :class:`EstimateError` for a missing or bad
    weight and :class:`CycleError` for a cycle.
    """
    import numpy as np

    names = list(graph._node)
    if weight is None:
        estimates = np.zeros(len(names))
    else:
        values = []
        for name, data in graph._node.items():
            if weight not in data:
                raise EstimateError(f"node {name} has no {weight!r} attribute")
            values.append(data[weight])
        estimates = checked_estimates(names, values, None)
    index = {name: i for i, name in enumerate(names)}.__getitem__
    with gc_paused():
        child_index, child_offset = _csr_from_adjacency(graph._succ, names, index)
        parent_index, parent_offset = _csr_from_adjacency(graph._pred, names, index)
    return ordered_graph(names, estimates, child_index, child_offset, parent_index, parent_offset, None)


def _csr_from_adjacency(adjacency: Mapping[Any, Any], names: list[Any], index: Any) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    flat: list[int] = []
    offsets = [0]
    for name in names:
        flat.extend(map(index, adjacency[name]))
        offsets.append(len(flat))
    return np.array(flat, dtype=np.int64), np.array(offsets, dtype=np.int64)
