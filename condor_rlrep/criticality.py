"""How critical a task is to its workflow's deadline: L′, CR(W), d, φ′ and φ″.

Definitions follow §4.1 and §4.3 of the replication paper (McGough & Forshaw):

* ``L′_t = e_t + max_{j ∈ C_t} L′_j`` (eq. 5; max over no children = 0):
  the estimated local critical path from ``t`` to the end of the workflow;
  ``CR(W) = L′_S`` for the virtual start node ``S``.
* ``d = (φ + 1)·CR(W) + s(W)`` (eq. 2): the workflow's deadline.
* balanced ("all remaining tasks balanced"): ``φ′ = (d − s_t)/L′_t − 1``;
* current ("balance on current task"):
  ``φ″ = (d − s_t − max_{j ∈ C_t} L′_j)/e_t − 1``.

Zero denominators (``L′_t = 0`` or ``e_t = 0``: NOOP nodes and chains of
them) take no time, so they cannot make the workflow late: the value is
``+inf`` when the numerator (the time left) is ≥ 0 and ``-inf`` when the
deadline has already passed. Every function here applies this one rule.

The algorithms take a DiGraph and the *name* of the node attribute holding
``e_t`` and return new dicts; they never write onto the graph. They walk the
compact graph level by level with numpy (O(V + E), no networkx import).
:class:`~condor_rlrep.workflowplan.WorkflowPlan` precomputes them per
workflow so that the simulator and the live PRE hook get φ′/φ″ of a node
from two dict lookups.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from condor_rlrep.errors import InputError
from condor_rlrep.dag.csr import gather
from condor_rlrep.dag.graph import VIRTUAL_NODES, DependencyGraph
from condor_rlrep.dag.nxgraph import ESTIMATE_ATTR, as_dependency_graph

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "PhiError",
    "check_phi",
    "PhiMode",
    "PHI_MODES",
    "DEFAULT_PHI",
    "remaining_critical_path",
    "earliest_start",
    "critical_path",
    "critical_path_length",
    "deadline",
    "phi_prime",
    "phi_double_prime",
    "forward_pass",
    "backward_pass",
    "critical_path_indices",
    "ratio_minus_one",
]

PhiMode = Literal["balanced", "current"]
PHI_MODES: tuple[PhiMode, ...] = ("balanced", "current")
DEFAULT_PHI = 0.5
"""The contingency φ when none is given, the same for every command, the
hooks and the simulator: the middle of the paper's range (0.1–1.0) and of
the agent's binned φ′ range (n = 10 bins up to P = 1), so that a task on
time starts in a bin with room either side. 1.0 starts every on-time task in
the top bins (nothing to learn from); 0.1 puts a task late by 10 % of the
critical path, routine on a shared pool, at φ′ ≤ 0, where the live default
is one replica."""

_INF = math.inf


def remaining_critical_path(graph: Any, weight: str = ESTIMATE_ATTR) -> dict[Any, float]:
    """``L′_t`` for every node (eq. 5), in one reverse-topological O(V + E) pass.

    ``graph``: a networkx DiGraph (node attribute ``weight`` = ``e_t``) or a
    :class:`~condor_rlrep.dag.graph.DependencyGraph`. Raises
    :class:`~condor_rlrep.errors.CycleError` on a cycle.
    """
    compact = as_dependency_graph(graph, weight)
    remaining, _ = backward_pass(compact)
    return dict(zip(compact.node_names, remaining.tolist()))


def earliest_start(graph: Any, weight: str = ESTIMATE_ATTR) -> dict[Any, float]:
    """Earliest start of every node relative to s(W) when every task takes
    its estimate: 0 for roots, else ``max_{p ∈ parents} (es_p + e_p)``."""
    compact = as_dependency_graph(graph, weight)
    return dict(zip(compact.node_names, forward_pass(compact).tolist()))


def forward_pass(graph: DependencyGraph) -> np.ndarray:
    """Earliest starts, indexed like ``graph.names``."""
    import numpy as np

    weights = graph.estimates
    if graph.level_bounds is not None:
        start = np.zeros(len(weights))
        finish = weights.copy()
        order, bounds = graph.order, graph.level_bounds
        for level in range(1, len(bounds) - 1):  # level 0: roots start at 0
            nodes = order[bounds[level] : bounds[level + 1]]
            parents, counts = gather(graph.parent_index, graph.parent_offset, nodes)
            begin = np.maximum.reduceat(finish[parents], np.cumsum(counts) - counts)
            start[nodes] = begin
            finish[nodes] = begin + weights[nodes]
        return start
    # small or deep graphs: one plain loop, same arithmetic
    weight_list = weights.tolist()
    parent_index = graph.parent_index.tolist()
    offset = graph.parent_offset.tolist()
    start_list = [0.0] * len(weight_list)
    finish_list = list(weight_list)
    finish_of = finish_list.__getitem__
    for i in graph.order.tolist():
        first, last = offset[i], offset[i + 1]
        if first != last:
            begin = max(map(finish_of, parent_index[first:last]))
            start_list[i] = begin
            finish_list[i] = begin + weight_list[i]
    return np.array(start_list)


def backward_pass(graph: DependencyGraph) -> tuple[np.ndarray, np.ndarray]:
    """``(L′, max_{j ∈ C_t} L′_j)`` of every node, indexed like ``graph.names``."""
    import numpy as np

    weights = graph.estimates
    if graph.level_bounds is not None:
        remaining = weights.copy()  # right for leaves
        max_child = np.zeros(len(weights))
        order, bounds = graph.order, graph.level_bounds
        for level in range(len(bounds) - 2, -1, -1):
            nodes = order[bounds[level] : bounds[level + 1]]
            children, counts = gather(graph.child_index, graph.child_offset, nodes)
            if not children.size:
                continue
            inner = counts > 0  # reduceat needs non-empty segments
            nodes = nodes[inner]
            tail = np.maximum.reduceat(remaining[children], (np.cumsum(counts) - counts)[inner])
            max_child[nodes] = tail
            remaining[nodes] = weights[nodes] + tail
        return remaining, max_child
    # small or deep graphs: one plain loop, same arithmetic
    weight_list = weights.tolist()
    child_index = graph.child_index.tolist()
    offset = graph.child_offset.tolist()
    remaining_list = list(weight_list)
    max_child_list = [0.0] * len(weight_list)
    remaining_of = remaining_list.__getitem__
    for i in reversed(graph.order.tolist()):
        first, last = offset[i], offset[i + 1]
        if first != last:
            tail = max(map(remaining_of, child_index[first:last]))
            max_child_list[i] = tail
            remaining_list[i] = weight_list[i] + tail
    return np.array(remaining_list), np.array(max_child_list)


def critical_path_length(graph: Any, remaining: Mapping[Any, float]) -> float:
    """``CR(W) = L′_S``: the largest ``L′`` of a root (0 for an empty graph).

    With a virtual start node that root is ``S`` itself.
    """
    compact = as_dependency_graph(graph, None)
    names = compact.names
    return max((remaining[names[i]] for i in compact.roots()), default=0.0)


def critical_path(graph: Any, remaining: Mapping[Any, float]) -> list[Any]:
    """The nodes of one critical path, first to last, virtual nodes excluded.

    Follows the child of largest ``L′`` from the root of largest ``L′``; ties
    go to the node that comes first in the graph (file order for graphs built
    from a workflow), so the result does not depend on edge order.
    """
    compact = as_dependency_graph(graph, None)
    names = compact.names
    path = critical_path_indices(compact, [remaining[name] for name in compact.node_names])
    return [names[i] for i in path if names[i] not in VIRTUAL_NODES]


def critical_path_indices(graph: DependencyGraph, remaining: list[float]) -> list[int]:
    """Node indices of the critical path (``remaining``: L′ of the nodes)."""
    first_join = graph.node_count

    def first_max(candidates: list[int]) -> int:
        best = max(remaining[i] for i in candidates)
        return min(i for i in candidates if remaining[i] == best)

    def real_children(i: int) -> list[int]:
        # a join vertex stands for its children: choose among them, as in the m·n-edge graph
        children = graph.children(i)
        if graph.join_count and max(children, default=-1) >= first_join:
            children = [k for c in children for k in (graph.children(c) if c >= first_join else (c,))]
        return children

    roots = graph.roots()
    if not roots:
        return []
    current = first_max(roots)
    path = [current]
    while children := real_children(current):
        current = first_max(children)
        path.append(current)
    return path


def deadline(phi: float, cr: float, start: float) -> float:
    """``d = (φ + 1)·CR(W) + s(W)`` (eq. 2)."""
    check_phi(phi)
    return (phi + 1.0) * cr + start


def ratio_minus_one(time_left: float, denominator: float) -> float:
    if denominator > 0:
        return time_left / denominator - 1.0
    return _INF if time_left >= 0 else -_INF


def phi_prime(deadline: float, submit_time: float, remaining: float) -> float:
    """Balanced criticality ``φ′ = (d − s_t)/L′_t − 1`` (§4.3)."""
    return ratio_minus_one(deadline - submit_time, remaining)


def phi_double_prime(deadline: float, submit_time: float, estimate: float, max_child_remaining: float) -> float:
    """Current-task criticality ``φ″ = (d − s_t − max_{j∈C_t} L′_j)/e_t − 1`` (§4.3).

    ``max_child_remaining`` is 0 for a node without children.
    """
    return ratio_minus_one(deadline - submit_time - max_child_remaining, estimate)


class PhiError(InputError, ValueError):
    """A contingency φ that is not a finite number > −1 (or below a caller's minimum)."""


def check_phi(phi: object, minimum: float | None = None) -> float:
    """The contingency φ as a float: the one check of φ, for the library and every command.

    φ must be a finite number > −1 (d = (φ+1)·CR(W) + s(W) must lie after
    s(W)), and ≥ ``minimum`` when one is given. NaN and ±inf are refused;
    so are strings and booleans. Raises :class:`PhiError` (an
    :class:`~condor_rlrep.errors.InputError` and a ``ValueError``).
    """
    if isinstance(phi, bool) or not isinstance(phi, (int, float)):
        raise PhiError(f"the contingency φ must be a number, got {phi!r}")
    try:
        value = float(phi)
    except OverflowError:
        value = _INF
    if not -1.0 < value < _INF:  # NaN fails this too
        raise PhiError(f"the contingency φ must be a finite number > -1, got {phi!r}")
    if minimum is not None and not value >= minimum:
        raise PhiError(f"the contingency φ must be >= {minimum:g} here, got {phi!r}")
    return value
