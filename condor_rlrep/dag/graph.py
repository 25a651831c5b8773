"""The dependency graph of a workflow: compact form and networkx form.

Which nodes belong to the graph (:data:`DEPENDENCY_KINDS`):

* ``JOB`` and ``SUBDAG`` nodes, NOOP and DONE ones included: a DONE node
  (rescue DAG) still counts towards CR(W), so that a rerun keeps the
  deadline of the original run (s(W) is kept across reruns too);
* ``SERVICE`` and ``PROVISIONER`` nodes run beside the workflow, not in it;
* the ``FINAL`` node is left out: DAGMan runs it whatever happens (also after
  a failure or ``condor_rm``), so no replication decision acts on it, and
  counting it would only shift every φ′ by a constant;
* each :class:`~condor_rlrep.dag.model.Join` (``PARENT p1 … pm CHILD c1 …
  cn``) is one vertex with estimate 0 after the nodes, as DAGMan's NOOP join
  node: m + n edges, and L′, earliest starts and φ′ of every node are exactly
  those of the m·n-edge graph (a join adds 0 to every sum and passes every
  max through). Results keyed by node name leave join vertices out.

Two forms, one validation:

* :func:`dependency_graph` → :class:`DependencyGraph`: integer-indexed
  adjacency (CSR lists) plus a topological order, built once per workflow;
  what :mod:`condor_rlrep.criticality` computes on. Built and walked with
  numpy, level by level, it is many times faster than a networkx graph
  (the simulator and the PRE hook pay for it). Importing this module (or
  :mod:`condor_rlrep.criticality`) imports neither networkx, numpy nor the
  DAG parser package: a hook that only reads a cached
  :class:`~condor_rlrep.criticality.WorkflowPlan` does not pay for them.
* :func:`build_graph` → :class:`networkx.DiGraph` with the virtual start node
  ``S`` before every root and virtual end node ``T`` after every leaf (both
  with estimate 0, §2 of the replication paper) and ``e_t`` in the node
  attribute ``"estimate"``: for display, DOT output and networkx algorithms.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

from condor_rlrep.errors import CycleError, DagError, EstimateError

if TYPE_CHECKING:  # none of these at run time: see the module docstring
    import networkx as nx
    import numpy as np

    from condor_rlrep.dag.model import Node, Workflow

__all__ = [
    "VIRTUAL_START",
    "VIRTUAL_END",
    "VIRTUAL_NODES",
    "ESTIMATE_ATTR",
    "DEPENDENCY_KINDS",
    "DependencyGraph",
    "dependency_nodes",
    "dependency_graph",
    "as_dependency_graph",
    "build_graph",
    "topological_order",
    "missing_estimates_error",
    "generate_dot",
    "is_acyclic",
]

# A DAG node name is one whitespace-free token, and DAX/WfFormat ids become
# DAG node names, so names with a space never clash with a real node.
VIRTUAL_START = "rlrep start"
VIRTUAL_END = "rlrep end"
VIRTUAL_NODES = frozenset({VIRTUAL_START, VIRTUAL_END})
ESTIMATE_ATTR = "estimate"
DEPENDENCY_KINDS = frozenset({"JOB", "SUBDAG"})

_MAX_NAMES_IN_MESSAGE = 10

# Level-wise numpy passes cost ~0.1 ms per level; plain loops ~1 µs per node
# and edge. Use numpy for graphs this large whose levels hold this many nodes
# on average (module attributes so that tests can force either path).
NUMPY_MIN_NODES = 1024
NUMPY_MIN_LEVEL_WIDTH = 64


@dataclass(frozen=True, slots=True, eq=False)
class DependencyGraph:
    """An acyclic dependency graph over nodes ``0 … n−1`` (treat as read-only).

    ``names[i]`` is node ``i`` (file order), ``estimates[i]`` its ``e_t``.
    The last ``join_count`` vertices are join vertices (named like DAGMan's
    join nodes, estimate 0; see the module docstring), the others the
    workflow's nodes (:attr:`node_count`).
    Children of ``i`` are ``child_index[child_offset[i]:child_offset[i+1]]``
    (CSR, numpy int64 arrays), parents likewise. ``order`` holds every node,
    parents first. ``level_bounds``: ``order[level_bounds[k]:level_bounds[k+1]]``
    are the nodes whose longest chain of ancestors has ``k`` edges — or None
    when the graph is too deep (few nodes per level) for level-wise numpy
    passes to pay off. No virtual start/end nodes: a node without parents is
    a root.
    """

    names: list[Any]
    estimates: np.ndarray
    child_index: np.ndarray
    child_offset: np.ndarray
    parent_index: np.ndarray
    parent_offset: np.ndarray
    order: np.ndarray
    level_bounds: np.ndarray | None
    source_path: str | None = None
    join_count: int = 0

    def __len__(self) -> int:
        """Vertices, join vertices included."""
        return len(self.names)

    @property
    def node_count(self) -> int:
        """The workflow's nodes: vertices ``0 … node_count − 1``."""
        return len(self.names) - self.join_count

    @property
    def node_names(self) -> list[Any]:
        """Names of the workflow's nodes (no join vertices)."""
        return self.names[: self.node_count] if self.join_count else self.names

    @property
    def edge_count(self) -> int:
        """Edges stored (m + n per join)."""
        return len(self.child_index)

    def children(self, i: int) -> list[int]:
        return self.child_index[self.child_offset[i] : self.child_offset[i + 1]].tolist()

    def parents(self, i: int) -> list[int]:
        return self.parent_index[self.parent_offset[i] : self.parent_offset[i + 1]].tolist()

    def index(self) -> dict[Any, int]:
        """Node name → index (built on each call; keep it if you need it often)."""
        return {name: i for i, name in enumerate(self.names)}

    def edges(self) -> Iterator[tuple[Any, Any]]:
        """``(parent, child)`` name pairs as stored (to and from join vertices),
        grouped by parent in vertex order."""
        import numpy as np

        names = self.names
        parents = np.repeat(np.arange(len(names)), np.diff(self.child_offset)).tolist()
        return zip(map(names.__getitem__, parents), map(names.__getitem__, self.child_index.tolist()))

    def dependencies(self) -> Iterator[tuple[Any, Any]]:
        """``(parent, child)`` pairs between nodes, joins expanded (m·n each):
        the edges of the equivalent graph without join vertices."""
        if not self.join_count:
            yield from self.edges()
            return
        names, first_join = self.names, self.node_count
        for parent in range(first_join):
            for child in self.children(parent):
                if child < first_join:
                    yield names[parent], names[child]
        for join in range(first_join, len(names)):
            kids = [names[c] for c in self.children(join)]
            for parent in self.parents(join):
                for child in kids:
                    yield names[parent], child

    def roots(self) -> list[int]:
        import numpy as np

        return np.flatnonzero(np.diff(self.parent_offset) == 0).tolist()

    def leaves(self) -> list[int]:
        import numpy as np

        return np.flatnonzero(np.diff(self.child_offset) == 0).tolist()

    def to_networkx(self) -> nx.DiGraph:
        """The networkx form with virtual start/end nodes (see :func:`build_graph`);
        joins are expanded into their m·n edges there (no join vertices)."""
        import networkx as nx

        names = self.node_names
        graph = nx.DiGraph()
        with gc_paused():
            graph.add_node(VIRTUAL_START, **{ESTIMATE_ATTR: 0.0})
            graph.add_nodes_from((name, {ESTIMATE_ATTR: value}) for name, value in zip(names, self.estimates.tolist()))
            graph.add_node(VIRTUAL_END, **{ESTIMATE_ATTR: 0.0})
            graph.add_edges_from(self.dependencies())
            graph.add_edges_from((VIRTUAL_START, names[i]) for i in self.roots())
            graph.add_edges_from((names[i], VIRTUAL_END) for i in self.leaves())
        if not names:
            graph.add_edge(VIRTUAL_START, VIRTUAL_END)
        return graph

    @classmethod
    def from_networkx(cls, graph: Any, weight: str | None = ESTIMATE_ATTR) -> DependencyGraph:
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
            estimates = _checked_estimates(names, values, None)
        index = {name: i for i, name in enumerate(names)}.__getitem__
        with gc_paused():
            child_index, child_offset = _csr_from_adjacency(graph._succ, names, index)
            parent_index, parent_offset = _csr_from_adjacency(graph._pred, names, index)
        return _ordered(names, estimates, child_index, child_offset, parent_index, parent_offset, None)


def _csr_from_adjacency(adjacency: Mapping[Any, Any], names: list[Any], index: Any) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    flat: list[int] = []
    offsets = [0]
    for name in names:
        flat.extend(map(index, adjacency[name]))
        offsets.append(len(flat))
    return np.array(flat, dtype=np.int64), np.array(offsets, dtype=np.int64)


def dependency_nodes(workflow: Workflow) -> list[Node]:
    """The nodes of ``workflow`` that form its dependency graph, in file order."""
    return [node for node in workflow.nodes.values() if node.kind in DEPENDENCY_KINDS]


def missing_estimates_error(names: Sequence[str], path: str | None = None) -> EstimateError:
    """The one error for nodes without an estimate: their count and up to 10 names."""
    shown = ", ".join(names[:_MAX_NAMES_IN_MESSAGE])
    if len(names) > _MAX_NAMES_IN_MESSAGE:
        shown += f", … ({len(names) - _MAX_NAMES_IN_MESSAGE} more)"
    noun = "node has" if len(names) == 1 else "nodes have"
    return EstimateError(
        f"{len(names)} {noun} no runtime estimate: {shown} (set VARS rlrep_estimate, "
        "or pass --estimates FILE or --default-estimate DURATION)",
        path=path,
    )


def _checked_estimate(name: Any, value: Any, path: str | None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < math.inf:
        raise EstimateError(f"node {name}: estimate {value!r} is not a finite number of seconds >= 0", path=path)
    return float(value)


def _checked_estimates(names: list[Any], values: list[Any], path: str | None) -> np.ndarray:
    import numpy as np

    if set(map(type, values)) <= {float, int}:  # the common case, checked in bulk
        array = np.asarray(values, dtype=np.float64)
        if bool(np.all((array >= 0.0) & (array < math.inf))):
            return array
    return np.array([_checked_estimate(name, value, path) for name, value in zip(names, values)], dtype=np.float64)


@contextmanager
def gc_paused() -> Iterator[None]:
    # Building 10^5 small containers triggers the cyclic collector over and
    # over while nothing is collectable; pausing it halves build time.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def dependency_graph(workflow: Workflow, estimates: Mapping[str, float]) -> DependencyGraph:
    """The compact, validated, topologically ordered graph of ``workflow``.

    ``estimates`` maps every node of :func:`dependency_nodes` to ``e_t``
    (finite, ≥ 0 seconds); extra keys are ignored. Raises
    :class:`EstimateError` for a missing or bad estimate, :class:`DagError`
    for an edge naming an unknown or non-dependency node or a node named like
    a virtual node, and :class:`CycleError` naming a cycle.
    """
    path = workflow.source_path
    clash = VIRTUAL_NODES.intersection(workflow.nodes)
    if clash:
        raise DagError(f"node name {sorted(clash)[0]!r} is reserved for condor-rlrep's virtual nodes", path=path)
    names = [node.name for node in dependency_nodes(workflow)]
    try:
        values = _checked_estimates(names, [estimates[name] for name in names], path)
    except KeyError:
        raise missing_estimates_error([name for name in names if name not in estimates], path) from None

    count = len(names)
    ends = _edge_endpoints(workflow, names)
    parent_of, child_of = ends[0::2], ends[1::2]
    joins = workflow.joins
    if joins:
        names, values, parent_of, child_of = _with_joins(workflow, names, values, parent_of, child_of)
    total = len(names)
    child_index, child_offset = _csr(parent_of, child_of, total)
    parent_index, parent_offset = _csr(child_of, parent_of, total)
    return _ordered(names, values, child_index, child_offset, parent_index, parent_offset, path, len(joins))


def _with_joins(
    workflow: Workflow, names: list[str], values: np.ndarray, parent_of: np.ndarray, child_of: np.ndarray
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Append one vertex per join (estimate 0) and its m + n edges."""
    import numpy as np

    joins = workflow.joins
    count = len(names)
    join_names = [join.name for join in joins]
    taken = set(workflow.nodes)
    for join in joins:
        if join.name in taken:
            raise DagError(f"join {join.name!r} has the name of a node or of another join",
                           path=join.source_path or workflow.source_path, line=join.source_line)
        taken.add(join.name)
    members = [name for join in joins for name in (*join.parents, *join.children)]
    try:
        ends = _name_indices(names, members)
    except KeyError:
        known = set(names)
        join, name = next((j, n) for j in joins for n in (*j.parents, *j.children) if n not in known)
        node = workflow.nodes.get(name)
        what = f"{node.kind} node {name!r}, which cannot have dependencies" if node else f"unknown node {name!r}"
        raise DagError(f"join {join.name} names {what}", path=join.source_path or workflow.source_path,
                       line=join.source_line) from None
    vertex = np.arange(count, count + len(joins), dtype=np.int64)
    n_parents = np.fromiter((len(j.parents) for j in joins), np.int64, len(joins))
    n_children = np.fromiter((len(j.children) for j in joins), np.int64, len(joins))
    is_parent = np.repeat(np.tile([True, False], len(joins)), np.ravel(np.column_stack([n_parents, n_children])))
    join_parents, join_children = ends[is_parent], ends[~is_parent]
    parent_of = np.concatenate([parent_of, join_parents, np.repeat(vertex, n_children)])
    child_of = np.concatenate([child_of, np.repeat(vertex, n_parents), join_children])
    return names + join_names, np.concatenate([values, np.zeros(len(joins))]), parent_of, child_of


def _name_indices(names: list[str], wanted: list[str]) -> np.ndarray:
    """Indices in ``names`` of the names in ``wanted`` (KeyError for one not there)."""
    import numpy as np

    # Parsers hand out one string object per node name, shared by its edges,
    # so matching object identities (id(), sorted + searchsorted) maps names
    # to indices without hashing: dict lookups of 6·10^5 strings scattered in
    # memory cost ~10× more. Names that are equal but not identical fall back
    # to the dict.
    name_ids = np.fromiter(map(id, names), np.int64, len(names))
    sorter = np.argsort(name_ids)
    sorted_ids = name_ids[sorter]
    wanted_ids = np.fromiter(map(id, wanted), np.int64, len(wanted))
    if not len(names):
        if wanted:
            raise KeyError(wanted[0])
        return np.zeros(0, np.int64)
    position = np.minimum(np.searchsorted(sorted_ids, wanted_ids), len(names) - 1)
    found = sorted_ids[position] == wanted_ids
    ends = sorter[position]
    if not found.all():
        index = {name: i for i, name in enumerate(names)}
        ends[~found] = [index[wanted[k]] for k in np.flatnonzero(~found).tolist()]
    return ends


def _edge_endpoints(workflow: Workflow, names: list[str]) -> np.ndarray:
    """``[parent0, child0, parent1, child1, …]`` as node indices."""
    try:
        return _name_indices(names, list(chain.from_iterable(workflow.edges)))
    except KeyError:
        _raise_bad_endpoint(workflow, {name: i for i, name in enumerate(names)})
        raise


def _csr(key: np.ndarray, value: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    # Sorting by (key, value) makes the adjacency independent of edge-set order.
    by_key = np.argsort(key * max(count, 1) + value)  # (key, value) pairs are unique
    offsets = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(key, minlength=count), out=offsets[1:])
    return value[by_key], offsets


def _raise_bad_endpoint(workflow: Workflow, index: Mapping[str, int]) -> None:
    bad = sorted(edge for edge in workflow.edges if edge[0] not in index or edge[1] not in index)
    parent, child = bad[0]
    name = parent if parent not in index else child
    node = workflow.nodes.get(name)
    if node is None:
        raise DagError(f"edge {parent} -> {child} names unknown node {name!r}", path=workflow.source_path)
    raise DagError(
        f"edge {parent} -> {child}: {node.kind} node {name!r} cannot have dependencies",
        path=node.source_path or workflow.source_path,
        line=node.source_line,
    )


def gather(index: np.ndarray, offset: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR neighbours of ``nodes``, concatenated, and how many each has."""
    import numpy as np

    starts = offset[nodes]
    counts = offset[nodes + 1] - starts
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64), counts
    shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return index[shift + np.arange(total)], counts


def _ordered(
    names: list[Any],
    estimates: np.ndarray,
    child_index: np.ndarray,
    child_offset: np.ndarray,
    parent_index: np.ndarray,
    parent_offset: np.ndarray,
    path: str | None,
    join_count: int = 0,
) -> DependencyGraph:
    """Add a topological order (and levels, when worth it); CycleError on a cycle."""
    import numpy as np

    count = len(names)
    indegree = np.diff(parent_offset)
    levels = None
    if count >= NUMPY_MIN_NODES:
        levels = _levels(child_index, child_offset, indegree.copy(), max_levels=count // NUMPY_MIN_LEVEL_WIDTH + 1)
    if levels is None:  # small, or deep and narrow: plain Python loops are cheaper
        order, remaining = _kahn(child_index.tolist(), child_offset.tolist(), indegree.tolist())
        bounds = None
    else:
        order, bounds, remaining = levels
    if len(order) != count:
        first_join = count - join_count  # a cycle through a join is one through its parent and child
        found = _find_cycle(remaining, parent_index.tolist(), parent_offset.tolist())
        cycle = [names[i] for i in found if i < first_join]
        raise CycleError(
            "dependency cycle: " + " -> ".join(str(name) for name in [*cycle, cycle[0]]), cycle=cycle, path=path
        )
    return DependencyGraph(
        names, estimates, child_index, child_offset, parent_index, parent_offset,
        np.asarray(order, dtype=np.int64), bounds, path, join_count,
    )  # fmt: skip


def is_acyclic(count: int, parent_of: np.ndarray, child_of: np.ndarray) -> bool:
    """Whether vertices ``0 … count−1`` with the edges ``parent_of[k] → child_of[k]``
    (int64 arrays; repeats allowed) have no cycle: Kahn's algorithm a level at
    a time in numpy, or in plain Python for deep, narrow graphs."""
    import numpy as np

    child_index, child_offset = _csr_multi(parent_of, child_of, count)
    indegree = np.bincount(child_of, minlength=count)
    levels = _levels(child_index, child_offset, indegree.copy(), max_levels=count // NUMPY_MIN_LEVEL_WIDTH + 1)
    if levels is not None:
        return len(levels[0]) == count
    order, _ = _kahn(child_index.tolist(), child_offset.tolist(), indegree.tolist())
    return len(order) == count


def _csr_multi(key: np.ndarray, value: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR adjacency of possibly repeated ``(key, value)`` pairs (a stable sort by key)."""
    import numpy as np

    by_key = np.argsort(key, kind="stable")
    offsets = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(key, minlength=count), out=offsets[1:])
    return value[by_key], offsets


def _levels(
    child_index: np.ndarray, child_offset: np.ndarray, indegree: np.ndarray, max_levels: int
) -> tuple[np.ndarray, np.ndarray, list[int]] | None:
    """Kahn's algorithm one whole level at a time, in numpy.

    None once there are more than ``max_levels`` levels (per-level overhead
    would exceed the plain loop's cost).
    """
    import numpy as np

    frontier = np.flatnonzero(indegree == 0)
    chunks = []
    bounds = [0]
    while frontier.size:
        if len(chunks) == max_levels:
            return None
        chunks.append(frontier)
        bounds.append(bounds[-1] + frontier.size)
        children, _ = gather(child_index, child_offset, frontier)
        if not children.size:
            break
        reached, times = np.unique(children, return_counts=True)
        indegree[reached] -= times
        frontier = reached[indegree[reached] == 0]
    order = np.concatenate(chunks) if chunks else np.zeros(0, np.int64)
    return order, np.asarray(bounds, dtype=np.int64), indegree.tolist()


def _kahn(child_index: list[int], child_offset: list[int], indegree: list[int]) -> tuple[list[int], list[int]]:
    order = [i for i, degree in enumerate(indegree) if degree == 0]
    append = order.append
    for i in order:  # grows while we walk it
        for child in child_index[child_offset[i] : child_offset[i + 1]]:
            degree = indegree[child] - 1
            indegree[child] = degree
            if degree == 0:
                append(child)
    return order, indegree


def _find_cycle(indegree: list[int], parent_index: list[int], parent_offset: list[int]) -> list[int]:
    # After Kahn, every node left with indegree > 0 has a parent also left;
    # walking to the lowest-numbered such parent must close a cycle.
    current = next(i for i, degree in enumerate(indegree) if degree > 0)
    seen: dict[int, int] = {}
    walk: list[int] = []
    while current not in seen:
        seen[current] = len(walk)
        walk.append(current)
        current = min(p for p in parent_index[parent_offset[current] : parent_offset[current + 1]] if indegree[p] > 0)
    cycle = walk[seen[current] :]
    cycle.reverse()  # the walk went child -> parent
    first = cycle.index(min(cycle))
    return cycle[first:] + cycle[:first]


def as_dependency_graph(graph: Any, weight: str | None = ESTIMATE_ATTR) -> DependencyGraph:
    """``graph`` itself if compact already, else :meth:`DependencyGraph.from_networkx`
    (``weight=None``: structure only, every estimate 0)."""
    if isinstance(graph, DependencyGraph):
        return graph
    return DependencyGraph.from_networkx(graph, weight)


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
    validation and errors as :func:`dependency_graph`.
    """
    return dependency_graph(workflow, estimates).to_networkx()


def _dot_id(text: Any) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def generate_dot(
    graph: DependencyGraph,
    *,
    name: str = "workflow",
    labels: Mapping[Any, str] | None = None,
    highlight: Sequence[Any] = (),
) -> Iterator[str]:
    """Lines of a Graphviz DOT description of ``graph`` (no virtual nodes;
    join vertices as small dots, as DAGMan's DOT files show its join nodes).

    ``labels``: extra text per node, shown under its name (Graphviz ``\\n``
    escapes allowed). ``highlight``: a path of node names drawn in red with its
    edges, e.g. the critical path.
    """
    names = graph.node_names
    marked = set(highlight)
    path_edges = set(zip(highlight, highlight[1:]))
    yield f"digraph {_dot_id(name)} {{"
    yield "  rankdir=TB;"
    yield '  node [shape=box, style=rounded, fontname="Helvetica"];'
    for join in graph.names[graph.node_count :]:
        yield f"  {_dot_id(join)} [shape=point, width=0.08, tooltip={_dot_id(join)}];"
    for node in names:
        text = str(node).replace("\\", "\\\\").replace('"', '\\"')
        if labels and node in labels:
            text += "\\n" + labels[node].replace('"', '\\"')
        style = ", color=red, penwidth=2" if node in marked else ""
        yield f'  {_dot_id(node)} [label="{text}"{style}];'
    for parent, child in graph.edges():
        style = " [color=red, penwidth=2]" if (parent, child) in path_edges else ""
        yield f"  {_dot_id(parent)} -> {_dot_id(child)}{style};"
    yield "}"
