"""The dependency graph of a workflow, in compact form: what
:mod:`condor_rlrep.criticality` computes φ′ on.

Which nodes belong to the graph (:data:`DEPENDENCY_KINDS`):

* ``JOB`` and ``SUBDAG`` nodes, NOOP and DONE ones included; a node the DAG
  file marks DONE (``JOB … DONE`` or ``DONE node``) has estimate 0, whatever
  its own: DAGMan will not run it, so it lies on no path that takes time and
  does not lengthen CR(W) (issue 23 item 8);
* ``SERVICE`` and ``PROVISIONER`` nodes run beside the workflow, not in it;
* the ``FINAL`` node is left out: DAGMan runs it whatever happens (also after
  a failure or ``condor_rm``), so no replication decision acts on it, and
  counting it would only shift every φ′ by a constant;
* each :class:`~condor_rlrep.dag.model.Join` (``PARENT p1 … pm CHILD c1 …
  cn``) is one vertex with estimate 0 after the nodes, as DAGMan's NOOP join
  node: m + n edges, and L′, earliest starts and φ′ of every node are exactly
  those of the m·n-edge graph (a join adds 0 to every sum and passes every
  max through). Results keyed by node name leave join vertices out.

:func:`dependency_graph` → :class:`DependencyGraph`: integer-indexed
adjacency (CSR arrays, :mod:`.csr`) plus a topological order, built once per
workflow and validated once (estimates, edge ends, cycles). Built and walked
with numpy, level by level, it is many times faster than a networkx graph
(the simulator and the PRE hook pay for it). Importing this module (or
:mod:`condor_rlrep.criticality`) imports neither networkx, numpy nor the DAG
parser package: a hook that only reads a cached
:class:`~condor_rlrep.workflowplan.WorkflowPlan` does not pay for them.

The networkx form (virtual start and end nodes, for display and networkx
algorithms) is :mod:`.nxgraph`; the Graphviz drawing, :mod:`.dot`.
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

from .csr import csr, find_cycle, toposort

if TYPE_CHECKING:  # none of these at run time: see the module docstring
    import numpy as np

    from condor_rlrep.dag.model import Node, Workflow

__all__ = [
    "VIRTUAL_START",
    "VIRTUAL_END",
    "VIRTUAL_NODES",
    "DEPENDENCY_KINDS",
    "DependencyGraph",
    "dependency_nodes",
    "dependency_graph",
    "missing_estimates_error",
    "checked_estimates",
    "ordered_graph",
    "gc_paused",
]

# The networkx form's virtual start and end nodes (.nxgraph), reserved here so
# that no workflow node takes their names. A DAG node name is one
# whitespace-free token, and DAX/WfFormat ids become DAG node names, so names
# with a space never clash with a real node.
VIRTUAL_START = "rlrep start"
VIRTUAL_END = "rlrep end"
VIRTUAL_NODES = frozenset({VIRTUAL_START, VIRTUAL_END})
DEPENDENCY_KINDS = frozenset({"JOB", "SUBDAG"})

_MAX_NAMES_IN_MESSAGE = 10


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


def checked_estimates(names: list[Any], values: list[Any], path: str | None) -> np.ndarray:
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
    nodes = dependency_nodes(workflow)
    names = [node.name for node in nodes]
    try:
        values = checked_estimates(names, [estimates[name] for name in names], path)
    except KeyError:
        raise missing_estimates_error([name for name in names if name not in estimates], path) from None
    done = [i for i, node in enumerate(nodes) if node.done]
    if done:
        values[done] = 0.0  # DAGMan will not run it: it takes no time

    count = len(names)
    ends = _edge_endpoints(workflow, names)
    parent_of, child_of = ends[0::2], ends[1::2]
    joins = workflow.joins
    if joins:
        names, values, parent_of, child_of = _with_joins(workflow, names, values, parent_of, child_of)
    total = len(names)
    child_index, child_offset = csr(parent_of, child_of, total)
    parent_index, parent_offset = csr(child_of, parent_of, total)
    return ordered_graph(names, values, child_index, child_offset, parent_index, parent_offset, path, len(joins))


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


def ordered_graph(
    names: list[Any],
    estimates: np.ndarray,
    child_index: np.ndarray,
    child_offset: np.ndarray,
    parent_index: np.ndarray,
    parent_offset: np.ndarray,
    path: str | None,
    join_count: int = 0,
) -> DependencyGraph:
    """The graph on these CSR arrays, with its topological order (and levels,
    when worth it, :func:`.csr.toposort`); CycleError naming a cycle."""
    import numpy as np

    count = len(names)
    order, bounds, remaining = toposort(child_index, child_offset, np.diff(parent_offset))
    if len(order) != count:
        first_join = count - join_count  # a cycle through a join is one through its parent and child
        found = find_cycle(remaining, parent_index.tolist(), parent_offset.tolist())
        cycle = [names[i] for i in found if i < first_join]
        raise CycleError(
            "dependency cycle: " + " -> ".join(str(name) for name in [*cycle, cycle[0]]), cycle=cycle, path=path
        )
    return DependencyGraph(
        names, estimates, child_index, child_offset, parent_index, parent_offset,
        np.asarray(order, dtype=np.int64), bounds, path, join_count,
    )  # fmt: skip

