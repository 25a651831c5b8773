"""A workflow's criticality precomputed once: :func:`plan_workflow` runs the
passes of :mod:`condor_rlrep.criticality` (L′, earliest starts, CR(W), the
deadline) and keeps their results per node, so that the simulator and the
live PRE hook get φ′ or φ″ of a node (eqs. 2, 5 and §4.3 of the replication
paper; ``docs/model.md``) from one dict lookup and a subtraction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from condor_rlrep.criticality import (
    PHI_MODES,
    PhiMode,
    backward_pass,
    check_phi,
    critical_path_indices,
    deadline,
    forward_pass,
    ratio_minus_one,
)
from condor_rlrep.dag.graph import VIRTUAL_NODES
from condor_rlrep.dag.nxgraph import ESTIMATE_ATTR, as_dependency_graph

__all__ = ["WorkflowPlan", "plan_workflow"]


class WorkflowPlan:
    """Everything φ′/φ″ need for one workflow, computed once by :func:`plan_workflow`.

    Per-node values cover the workflow's nodes only (no virtual start/end);
    times are seconds, ``earliest_start`` relative to ``start`` = s(W).
    They are kept as lists aligned with :attr:`names` plus one name → index
    dict, so :meth:`phi_prime` / :meth:`phi_double_prime` cost one dict
    lookup; the per-node dicts (:attr:`remaining` …) are built on first use.
    Many runs of the same DAG share one plan: :meth:`rebased` moves it to
    another s(W) in O(1) (the per-node data are shared: read-only).

    At its planned submit time every node has φ′ ≥ φ (for φ ≥ 0), with
    equality exactly for the nodes with earliest start 0 and ``L′ = CR(W)``
    (for φ > 0; for φ = 0, for every node on a critical path).
    """

    __slots__ = (
        "phi", "start", "critical_path_seconds", "deadline", "critical_path", "names",
        "_index", "_estimate", "_remaining", "_earliest", "_max_child", "_dicts",
    )  # fmt: skip

    phi: float
    start: float
    critical_path_seconds: float
    """CR(W) = L′_S."""
    deadline: float
    """d = (φ + 1)·CR(W) + s(W) (eq. 2)."""
    critical_path: tuple[Any, ...]
    names: tuple[Any, ...]

    def __init__(
        self,
        *,
        phi: float,
        start: float,
        critical_path_seconds: float,
        critical_path: tuple[Any, ...],
        names: list[Any] | tuple[Any, ...],
        estimate: list[float],
        remaining: list[float],
        earliest_start: list[float],
        max_child_remaining: list[float],
        index: dict[Any, int] | None = None,
    ) -> None:
        """Per-node lists are aligned with ``names`` (trusted, not copied)."""
        self.phi = float(phi)
        self.start = float(start)
        self.critical_path_seconds = float(critical_path_seconds)
        self.deadline = deadline(phi, critical_path_seconds, start)
        self.critical_path = tuple(critical_path)
        self.names = tuple(names)
        self._index = index if index is not None else {name: i for i, name in enumerate(self.names)}
        self._estimate = estimate
        self._remaining = remaining
        self._earliest = earliest_start
        self._max_child = max_child_remaining
        self._dicts: dict[str, dict[Any, float]] = {}

    def _as_dict(self, key: str, values: list[float]) -> dict[Any, float]:
        if key not in self._dicts:
            self._dicts[key] = dict(zip(self.names, values))
        return self._dicts[key]

    @property
    def estimate(self) -> dict[Any, float]:
        """``e_t`` per node (read-only)."""
        return self._as_dict("estimate", self._estimate)

    @property
    def remaining(self) -> dict[Any, float]:
        """``L′_t`` per node (eq. 5; read-only)."""
        return self._as_dict("remaining", self._remaining)

    @property
    def earliest_start(self) -> dict[Any, float]:
        """Earliest start per node, relative to s(W) (read-only)."""
        return self._as_dict("earliest", self._earliest)

    @property
    def max_child_remaining(self) -> dict[Any, float]:
        """``max_{j ∈ C_t} L′_j`` per node (0 without children; read-only)."""
        return self._as_dict("max_child", self._max_child)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, node: object) -> bool:
        return node in self._index

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WorkflowPlan):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"WorkflowPlan(phi={self.phi!r}, start={self.start!r}, critical_path_seconds="
            f"{self.critical_path_seconds!r}, deadline={self.deadline!r}, nodes={len(self.names)}, "
            f"critical_path={self.critical_path!r})"
        )

    def phi_prime(self, node: Any, submit_time: float) -> float:
        """Balanced φ′ of ``node`` submitted at ``submit_time`` (absolute)."""
        remaining = self._remaining[self._index[node]]
        time_left = self.deadline - submit_time
        if remaining > 0:
            return time_left / remaining - 1.0
        return math.inf if time_left >= 0 else -math.inf

    def phi_double_prime(self, node: Any, submit_time: float) -> float:
        """Current-task φ″ of ``node`` submitted at ``submit_time`` (absolute)."""
        i = self._index[node]
        estimate = self._estimate[i]
        time_left = self.deadline - submit_time - self._max_child[i]
        if estimate > 0:
            return time_left / estimate - 1.0
        return math.inf if time_left >= 0 else -math.inf

    def criticality(self, node: Any, submit_time: float, mode: PhiMode = "balanced") -> float:
        """φ′ (``mode="balanced"``, the default) or φ″ (``"current"``)."""
        if mode == "balanced":
            return self.phi_prime(node, submit_time)
        if mode == "current":
            return self.phi_double_prime(node, submit_time)
        raise ValueError(f"unknown criticality mode {mode!r}; expected one of {PHI_MODES}")

    def planned_submit_time(self, node: Any) -> float:
        """``s(W) + earliest start``: when ``node`` starts if all goes to plan."""
        return self.start + self._earliest[self._index[node]]

    def planned_phi_prime(self) -> dict[Any, float]:
        """φ′ of every node at its planned submit time (see the class docstring)."""
        return dict(zip(self.names, self._planned_phi_prime()))

    def planned_phi_double_prime(self) -> dict[Any, float]:
        """φ″ of every node at its planned submit time."""
        return dict(zip(self.names, self._planned_phi_double_prime()))

    def _planned_phi_prime(self) -> list[float]:
        time_left = self.deadline - self.start
        return [
            (time_left - es) / rem - 1.0 if rem > 0 else ratio_minus_one(time_left - es, rem)
            for es, rem in zip(self._earliest, self._remaining)
        ]

    def _planned_phi_double_prime(self) -> list[float]:
        time_left = self.deadline - self.start
        return [
            (time_left - es - tail) / e - 1.0 if e > 0 else ratio_minus_one(time_left - es - tail, e)
            for es, tail, e in zip(self._earliest, self._max_child, self._estimate)
        ]

    def columns(self) -> dict[str, list[float]]:
        """Every per-node value as a list aligned with :attr:`names` (read-only):
        ``estimate``, ``remaining``, ``earliest_start``, ``max_child_remaining``
        and the planned ``phi_prime`` / ``phi_double_prime``. For callers that
        walk all nodes in order: no name → value dict is built."""
        return {
            "estimate": self._estimate,
            "remaining": self._remaining,
            "earliest_start": self._earliest,
            "max_child_remaining": self._max_child,
            "phi_prime": self._planned_phi_prime(),
            "phi_double_prime": self._planned_phi_double_prime(),
        }

    def _copy(self, phi: float, start: float) -> WorkflowPlan:
        return WorkflowPlan(
            phi=phi,
            start=start,
            critical_path_seconds=self.critical_path_seconds,
            critical_path=self.critical_path,
            names=self.names,
            estimate=self._estimate,
            remaining=self._remaining,
            earliest_start=self._earliest,
            max_child_remaining=self._max_child,
            index=self._index,
        )

    def rebased(self, start: float) -> WorkflowPlan:
        """The same plan for a workflow that started at ``start`` (s(W))."""
        if not math.isfinite(start):
            raise ValueError(f"the workflow start s(W) must be finite, got {start!r}")
        return self._copy(self.phi, start)

    def with_phi(self, phi: float) -> WorkflowPlan:
        """The same plan for another contingency φ."""
        return self._copy(phi, self.start)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable form (all values finite), for caches."""
        return {
            "phi": self.phi,
            "start": self.start,
            "critical_path_seconds": self.critical_path_seconds,
            "critical_path": list(self.critical_path),
            "names": list(self.names),
            "estimate": list(self._estimate),
            "remaining": list(self._remaining),
            "earliest_start": list(self._earliest),
            "max_child_remaining": list(self._max_child),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkflowPlan:
        """Inverse of :meth:`to_dict` (trusted input: a cache we wrote)."""
        return cls(
            phi=data["phi"],
            start=data["start"],
            critical_path_seconds=data["critical_path_seconds"],
            critical_path=tuple(data["critical_path"]),
            names=data["names"],
            estimate=[float(v) for v in data["estimate"]],
            remaining=[float(v) for v in data["remaining"]],
            earliest_start=[float(v) for v in data["earliest_start"]],
            max_child_remaining=[float(v) for v in data["max_child_remaining"]],
        )


def plan_workflow(graph: Any, phi: float, start: float = 0.0, weight: str = ESTIMATE_ATTR) -> WorkflowPlan:
    """Compute L′, earliest starts, CR(W), d and max child L′ of every node.

    ``graph``: a :class:`~condor_rlrep.dag.graph.DependencyGraph` (fastest) or a
    networkx DiGraph such as :func:`~condor_rlrep.dag.nxgraph.build_graph` returns
    (virtual start/end nodes optional); ``phi`` the user's contingency
    (finite, > -1); ``start`` = s(W). O(V + E). Raises
    :class:`~condor_rlrep.errors.CycleError` on a cycle.
    """
    check_phi(phi)
    if not math.isfinite(start):
        raise ValueError(f"the workflow start s(W) must be finite, got {start!r}")
    compact = as_dependency_graph(graph, weight)
    names = compact.names
    remaining_array, max_child_array = backward_pass(compact)
    remaining = remaining_array.tolist()
    cr = max((remaining[i] for i in compact.roots()), default=0.0)
    path = [names[i] for i in critical_path_indices(compact, remaining) if names[i] not in VIRTUAL_NODES]
    columns = [compact.estimates.tolist(), remaining, forward_pass(compact).tolist(), max_child_array.tolist()]
    if compact.join_count:  # join vertices come last: keep the nodes
        names = compact.node_names
        columns = [column[: len(names)] for column in columns]
    if not VIRTUAL_NODES.isdisjoint(names):  # a networkx graph from build_graph
        keep = [i for i, name in enumerate(names) if name not in VIRTUAL_NODES]
        names = [names[i] for i in keep]
        columns = [[column[i] for i in keep] for column in columns]
    estimate, remaining, earliest, max_child = columns
    return WorkflowPlan(
        phi=phi,
        start=start,
        critical_path_seconds=cr,
        critical_path=tuple(path),
        names=names,
        estimate=estimate,
        remaining=remaining,
        earliest_start=earliest,
        max_child_remaining=max_child,
    )

