"""Integer graphs as CSR arrays, and the passes that order them.

A graph over vertices ``0 … n−1`` is two numpy int64 arrays per direction
(compressed sparse rows): the neighbours of ``i`` are
``index[offset[i]:offset[i+1]]``. No names, estimates or workflows here:
:mod:`.graph` builds its :class:`~.graph.DependencyGraph` on these arrays,
:mod:`condor_rlrep.criticality` walks them level by level with
:func:`gather`, and the DAG parser checks big DAGs for cycles with
:func:`is_acyclic`.

Topological order is Kahn's algorithm, run one of two ways: a whole level
(every vertex whose longest chain of ancestors has k edges) at a time in
numpy, or one vertex at a time in plain Python. Level-wise numpy passes cost
~0.1 ms per level, plain loops ~1 µs per vertex and edge, so numpy wins for
graphs of at least :data:`NUMPY_MIN_NODES` vertices whose levels hold at least
:data:`NUMPY_MIN_LEVEL_WIDTH` vertices on average (module attributes, so that
tests can force either path).

numpy is imported inside each function: importing this module costs nothing
(the warm PRE hook imports it through :mod:`condor_rlrep.criticality`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "NUMPY_MIN_NODES",
    "NUMPY_MIN_LEVEL_WIDTH",
    "csr",
    "gather",
    "toposort",
    "find_cycle",
    "is_acyclic",
]

NUMPY_MIN_NODES = 1024
NUMPY_MIN_LEVEL_WIDTH = 64


def csr(key: np.ndarray, value: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR adjacency (index, offset) of the unique pairs ``key[k] → value[k]``,
    each row sorted."""
    import numpy as np

    # Sorting by (key, value) makes the adjacency independent of edge-set order.
    by_key = np.argsort(key * max(count, 1) + value)  # (key, value) pairs are unique
    offsets = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(key, minlength=count), out=offsets[1:])
    return value[by_key], offsets


def _csr_multi(key: np.ndarray, value: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR adjacency of possibly repeated ``(key, value)`` pairs, vertices
    below 2**31 (each row in ascending order)."""
    import numpy as np

    # One sort of the pairs as int64 numbers: numpy's plain sort of int64 is
    # about ten times faster than the stable argsort of the keys this was.
    pairs = np.sort((key << 32) | value)
    offsets = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(key, minlength=count), out=offsets[1:])
    return pairs & 0xFFFFFFFF, offsets


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


def toposort(
    child_index: np.ndarray, child_offset: np.ndarray, indegree: np.ndarray
) -> tuple[np.ndarray | list[int], np.ndarray | None, list[int]]:
    """``(order, level_bounds, remaining)`` of the graph with these children
    and in-degrees: vertices parents first; ``order[level_bounds[k]:level_bounds[k+1]]``
    is level ``k`` (None when the plain loop ran: a small graph, or a deep and
    narrow one); ``remaining`` the in-degrees left, non-zero on and after a
    cycle. ``order`` holds every vertex exactly when the graph is acyclic.
    """
    count = len(indegree)
    if count >= NUMPY_MIN_NODES:
        levels = _levels(child_index, child_offset, indegree.copy(), max_levels=count // NUMPY_MIN_LEVEL_WIDTH + 1)
        if levels is not None:
            return levels
    order, remaining = _kahn(child_index.tolist(), child_offset.tolist(), indegree.tolist())
    return order, None, remaining


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


def find_cycle(indegree: list[int], parent_index: list[int], parent_offset: list[int]) -> list[int]:
    """One cycle, as vertices from its lowest-numbered one, of a graph that
    Kahn's algorithm left with ``indegree`` (the ``remaining`` of :func:`toposort`)."""
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
