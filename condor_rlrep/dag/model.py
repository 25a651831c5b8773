"""The in-memory workflow model every format is read into.

A :class:`Workflow` keeps everything a later writer needs (scripts, VARS,
retries, categories, DAG-wide commands ...) so that a DAG survives
``parse → write → parse`` unchanged, and carries what the other formats know
(runtimes, file sizes) so that φ′ can be computed from any of them.

Node names are final names: spliced nodes are stored under ``splice+node``.
Dependencies are ``(parent, child)`` pairs between node names in
:attr:`Workflow.edges` (splices are already resolved to their initial/terminal
nodes), plus :attr:`Workflow.joins`: a ``PARENT p1 … pm CHILD c1 … cn`` with
m > 1 and n > 1 is kept as DAGMan keeps it (since 8.9.4), one hidden NOOP *join
node* with m + n edges, not m·n pairs (a 3000 × 3000 line would be 9·10^6).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "JOIN_PREFIX",
    "Join",
    "NodeKind",
    "Script",
    "VarAssignment",
    "FileUse",
    "Node",
    "Workflow",
    "ESTIMATE_MACRO",
    "BOTTLEMOD_MACRO",
]

# VARS macro names the plugin reads its per-node inputs from.
ESTIMATE_MACRO = "rlrep_estimate"
BOTTLEMOD_MACRO = "rlrep_bottlemod"

NodeKind = Literal["JOB", "FINAL", "SERVICE", "PROVISIONER", "SUBDAG"]

# DAGMan names its join nodes _condor_join_node0, 1, … (one counter per
# condor_dagman process; inside a splice the name gets the splice prefix).
JOIN_PREFIX = "_condor_join_node"


@dataclass(eq=True, slots=True)
class Script:
    """One ``SCRIPT`` line of a node (PRE, POST or HOLD)."""

    kind: Literal["PRE", "POST", "HOLD"]
    executable: str
    arguments: list[str] = field(default_factory=list)
    defer_status: int | None = None
    defer_seconds: int | None = None
    debug_file: str | None = None
    debug_type: Literal["STDOUT", "STDERR", "ALL"] | None = None

    @property
    def argv(self) -> list[str]:
        return [self.executable, *self.arguments]


@dataclass(eq=True, slots=True)
class VarAssignment:
    """One ``key="value"`` of a VARS line, with its placement."""

    key: str
    value: str
    placement: Literal["PREPEND", "APPEND"] | None = None  # None: DAGMan's default


@dataclass(eq=True, slots=True)
class FileUse:
    """A file a task reads or writes (DAX/WfFormat), with its size in bytes."""

    name: str
    link: Literal["input", "output"]
    size: float | None = None


@dataclass(eq=True, frozen=True)
class Join:
    """A dependency of every child on every parent, through one hidden join node.

    ``parents`` and ``children`` are distinct node names (at least two each)
    in workflow order. ``weak``: the line was ``WEAK PARENT`` (the children
    need the parents finished, not succeeded). ``name`` is the join node's
    name as DAGMan gives it; it is a label, not part of a join's identity
    (re-reading a written workflow may number joins differently).
    """

    name: str = field(compare=False)
    parents: tuple[str, ...]
    children: tuple[str, ...]
    weak: bool = False
    source_path: str | None = field(default=None, compare=False)
    source_line: int | None = field(default=None, compare=False)


@dataclass(eq=True, slots=True)
class Node:
    """A workflow node: a DAGMan JOB/FINAL/SERVICE/PROVISIONER/SUBDAG, or a task
    from another format (kind ``JOB``)."""

    name: str
    kind: NodeKind = "JOB"
    submit: str | None = None
    """Submit file (JOB...), DAG file (SUBDAG), or the name of a SUBMIT-DESCRIPTION."""
    inline_submit: str | None = None
    """Body of an inline ``{...}`` / ``@=TAG`` description, lines joined by newlines."""
    directory: str | None = None
    noop: bool = False
    done: bool = False
    scripts: dict[str, Script] = field(default_factory=dict)  # "PRE"/"POST"/"HOLD" -> Script
    pre_skip: int | None = None
    retry: int | None = None
    retry_unless_exit: int | None = None
    abort_dag_on: tuple[int, int | None] | None = None  # (value, RETURN code or None)
    vars: list[VarAssignment] = field(default_factory=list)
    priority: int | None = None
    category: str | None = None
    tolerance: str | None = None
    """The TOLERANCE arguments as written, e.g. ``"99% WAIT"``."""
    save_point_file: str | None = None
    save_point: bool = False
    # Knowledge from other formats (DAX/WfFormat): not part of the DAG language.
    runtime: float | None = None
    """Known/measured runtime in seconds (DAX ``runtime``, WfFormat ``execution``)."""
    executable: str | None = None
    arguments: list[str] = field(default_factory=list)
    files: list[FileUse] = field(default_factory=list)
    cpus: int | None = None
    """CPU cores the task used or asks for (WfFormat ``coreCount``/``cores``, DAX ``cores`` profile)."""
    memory: float | None = None
    """Memory the task used or asks for, in bytes (WfFormat ``memoryInBytes``, DAX memory profiles)."""
    transformation: str | None = None
    """What the task runs, by its logical name (DAX ``name``, WfFormat ``category`` or program):
    ``mProjectPP`` for node ``ID00000``."""
    source_path: str | None = field(default=None, compare=False)
    source_line: int | None = field(default=None, compare=False)

    def __getattr__(self, name: str) -> Any:
        # Called only for a slot never set: the empty containers that
        # plain_node() leaves out, made on first use.
        factory = _LAZY_FIELDS.get(name)
        if factory is None:
            raise AttributeError(f"'Node' object has no attribute {name!r}")
        value = factory()
        object.__setattr__(self, name, value)
        return value

    def var(self, key: str) -> str | None:
        """The last value given to VARS ``key`` (DAGMan: last one wins)."""
        for assignment in reversed(self.vars):
            if assignment.key == key:
                return assignment.value
        return None

    @property
    def is_replicable(self) -> bool:
        """Whether the plugin may run replicas of this node's job."""
        return self.kind == "JOB" and not self.noop and not self.done


# Node fields that most DAG nodes leave empty: plain_node() does not make
# them (176 bytes a node, a third of a plain node's memory) until first used.
_LAZY_FIELDS: dict[str, Any] = {"scripts": dict, "arguments": list, "files": list}


def plain_node(name: str, submit: str, source_path: str | None, source_line: int) -> Node:
    """``Node(name=name, submit=submit, source_path=…, source_line=…)``, the
    same to every reader, with its empty ``scripts``, ``arguments`` and
    ``files`` made only when first used (the parser's fast paths: big DAGs)."""
    node = _new_node(Node)
    node.name = name
    node.kind = "JOB"
    node.submit = submit
    node.inline_submit = None
    node.directory = None
    node.noop = False
    node.done = False
    node.pre_skip = None
    node.retry = None
    node.retry_unless_exit = None
    node.abort_dag_on = None
    node.vars = []
    node.priority = None
    node.category = None
    node.tolerance = None
    node.save_point_file = None
    node.save_point = False
    node.runtime = None
    node.executable = None
    node.cpus = None
    node.memory = None
    node.transformation = None
    node.source_path = source_path
    node.source_line = source_line
    return node


_new_node = object.__new__


@dataclass(eq=True)
class Workflow:
    """A whole workflow: nodes in file order, edges, and DAG-wide commands."""

    nodes: dict[str, Node] = field(default_factory=dict)
    edges: set[tuple[str, str]] = field(default_factory=set)
    weak_edges: set[tuple[str, str]] = field(default_factory=set)
    """Subset of ``edges`` declared ``WEAK`` (child needs parent finished only)."""
    joins: list[Join] = field(default_factory=list)
    """Many-to-many dependencies, in the order they were declared (see :class:`Join`)."""
    submit_descriptions: dict[str, str] = field(default_factory=dict)
    maxjobs: dict[str, int] = field(default_factory=dict)
    config: str | None = None
    set_job_attrs: list[tuple[str, str]] = field(default_factory=list)
    env: list[tuple[str, str]] = field(default_factory=list)
    """ENV lines as (``GET``/``SET``, the rest of the line)."""
    dot: str | None = None
    """The DOT line's arguments as written."""
    node_status_file: str | None = None
    node_status_min_seconds: int | None = None
    """NODE_STATUS_FILE's optional minimum update interval (seconds)."""
    node_status_always_update: bool = False
    """NODE_STATUS_FILE's ``ALWAYS-UPDATE`` flag."""
    jobstate_log: str | None = None
    reject: bool = False
    source_path: str | None = field(default=None, compare=False)

    @property
    def final_node(self) -> str | None:
        for node in self.nodes.values():
            if node.kind == "FINAL":
                return node.name
        return None

    def parents(self, name: str) -> list[str]:
        """Every node ``name`` depends on, directly or through a join (O(E + joins))."""
        found = {p for p, c in self.edges if c == name}
        for join in self.joins:
            if name in join.children:
                found.update(join.parents)
        return sorted(found)

    def children(self, name: str) -> list[str]:
        """Every node that depends on ``name``, directly or through a join (O(E + joins))."""
        found = {c for p, c in self.edges if p == name}
        for join in self.joins:
            if name in join.parents:
                found.update(join.children)
        return sorted(found)

    def dependency_pairs(self) -> set[tuple[str, str]]:
        """Every ``(parent, child)`` dependency, joins expanded: m·n pairs per
        join, so only for workflows known to be small (tests, display)."""
        pairs = set(self.edges)
        for join in self.joins:
            pairs.update((p, c) for p in join.parents for c in join.children)
        return pairs
