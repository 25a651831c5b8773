"""What a DAG parse builds, and the operations both of its passes share.

A parse fills one :class:`~.model.Workflow` and, beside it, what makes it
linear in the input: every node's position in file order (:attr:`ParseState.index`),
every edge as one integer key of two positions (the cycle check then needs no
name lookups), and whether edges went forward or backward in file order (all
one way: file order, or its reverse, is a topological order and no graph search
is needed).

A :class:`Scope` is one DAG file's namespace (the top DAG or a splice, each
with the files it INCLUDEs); a :class:`Splice` is what a finished splice
offers its parent scope: its initial and terminal nodes and its pins.

Pass 1 (:mod:`.firstpass`) defines nodes and reads files; pass 2
(:mod:`.commands`) applies every other command. Both add edges and name
nodes through :class:`ParseState`, so that an edge is recorded, deduplicated
and turned into a :class:`~.model.Join` the same way whichever pass (or fast
path, :mod:`.bulk`) adds it.
"""

from __future__ import annotations

import logging
from array import array
from dataclasses import dataclass, field
from typing import Any

from ..errors import DagError
from .lexer import LexError, split_tokens
from .model import JOIN_PREFIX, Join, Node, Workflow
from .syntax import display_keyword, syntax_error

__all__ = ["ParseState", "Scope", "Splice", "NO_EDGES", "EDGE_KINDS"]

NO_EDGES = frozenset({"FINAL", "SERVICE", "PROVISIONER"})  # kinds that take no PARENT/CHILD
EDGE_KINDS = frozenset({"JOB", "SUBDAG"})  # kinds an edge can name
_NO_ALL_NODES = frozenset({"FINAL", "SERVICE"})


@dataclass
class Splice:
    """A finished splice, as the scope naming it sees it: the ends its edges
    attach to (initial nodes as a child, terminal nodes as a parent) and its pins."""

    name: str
    initial: list[str]
    terminal: list[str]
    pins_in: dict[int, list[str]]
    pins_out: dict[int, list[str]]


@dataclass
class Scope:
    """One DAG file's namespace: the top DAG or a splice (with its INCLUDEs)."""

    prefix: str  # "" or "a+b+"
    node_dir: str | None  # splice DIR that node DIRs are relative to
    is_splice: bool
    own: dict[str, Node] = field(default_factory=dict)  # local name -> node
    linkable: dict[str, tuple[str, int]] = field(default_factory=dict)  # local -> (full name, file position), JOB/SUBDAG
    splices: dict[str, Splice] = field(default_factory=dict)
    deferred: list[tuple[str, Any, str | None, int]] = field(default_factory=list)  # (keyword, line, path, line number)
    # Splices only: what their initial and terminal nodes are computed from
    # (_splice_steps in .firstpass), in time linear in the scope's own lines.
    ends: list[str | Splice] = field(default_factory=list)
    """The scope's JOB/SUBDAG nodes and nested splices, in definition order."""
    has_parent: set[str] = field(default_factory=set)
    """Nodes that an edge or join of this scope (not of a nested splice) makes a child."""
    has_child: set[str] = field(default_factory=set)
    """Nodes that an edge or join of this scope makes a parent."""
    pins_in: dict[int, list[str]] = field(default_factory=dict)
    pins_out: dict[int, list[str]] = field(default_factory=dict)
    vars_deferred: bool = False
    """A VARS line went to pass 2: later VARS lines must follow it there (VARS order matters)."""


class ParseState:
    """The workflow being built, with node positions and edge keys (see the module docstring)."""

    def __init__(self) -> None:
        self.wf = Workflow()
        self.index: dict[str, int] = {}  # node -> position in file order
        # every edge added, as parent position << 32 | child position (repeats
        # harmless): the cycle check then needs no name lookups. 8 bytes each
        # in an array, against 40 in a list of ints.
        self.edge_keys = array("q")
        # Edges seen from an earlier to a later node (forward) and the reverse: when
        # all go one way, file order (or its reverse) is a topological order.
        self.forward = False
        self.backward = False
        # Edges of shuffled runs not looked up yet (.mixed.EdgeBatch), in file
        # order: resolved before any other edge is added (flush_pending).
        self.pending: list[Any] = []

    def flush_pending(self) -> None:
        """Resolve the pending batches of edges, in file order (every path that adds an edge calls this first)."""
        from .mixed import resolve_all  # (.mixed builds on this module)

        resolve_all(self, self.pending)
        self.pending.clear()

    # -- errors -----------------------------------------------------------
    syntax = staticmethod(syntax_error)

    def first_only(self, current: str | None, kw: str, value: str, path: str | None, lineno: int) -> bool:
        """DAGMan keeps the first NODE_STATUS_FILE and JOBSTATE_LOG and warns
        about a later one ("does not override existing value")."""
        if current is not None:
            logging.getLogger("condor_rlrep.dag.commands").warning(
                "%s:%s: %s %s does not override the earlier %s (DAGMan keeps the first)", path, lineno, kw, value,
                current)
        return current is None

    def tokens(self, kw: str, line: str, path: str | None, lineno: int) -> tuple[list[str], list[str]]:
        try:
            return split_tokens(line)
        except LexError as err:
            raise self.syntax(kw, str(err), path, lineno) from None

    # -- nodes and edges, as commands name them ---------------------------
    def targets(self, scope: Scope, kw: str, name: str, path: str | None, lineno: int, all_nodes: bool = True) -> list[Node]:
        node = scope.own.get(name)
        if node is not None:
            return [node]
        if name.upper() == "ALL_NODES":
            if not all_nodes:
                raise self.syntax(kw, "ALL_NODES is not accepted here", path, lineno)
            return [n for n in scope.own.values() if n.kind not in _NO_ALL_NODES]
        if name in scope.splices:
            raise DagError(f"{display_keyword(kw)} cannot be applied to splice '{name}' (only to nodes)", path=path, line=lineno)
        raise DagError(f"{display_keyword(kw)}: unknown node '{name}'", path=path, line=lineno)

    def endpoints(self, scope: Scope, name: str, as_parent: bool, path: str | None, lineno: int) -> list[str]:
        node = scope.own.get(name)
        if node is not None:
            if node.kind in NO_EDGES:
                raise DagError(f"PARENT/CHILD: {node.kind} node '{name}' cannot have parents or children", path=path, line=lineno)
            return [node.name]
        sp = scope.splices.get(name)
        if sp is not None:
            return sp.terminal if as_parent else sp.initial
        raise DagError(f"PARENT/CHILD: unknown node '{name}'", path=path, line=lineno)

    def add_edges(self, scope: Scope, parents: list[str], children: list[str], weak: bool,
                  path: str | None = None, lineno: int | None = None) -> None:
        if self.pending:
            self.flush_pending()
        index = self.index
        if len(parents) > 1 and len(children) > 1:
            # DAGMan: repeats dropped, nodes in definition order; then a join
            # node if more than one parent and more than one child remain.
            parents = sorted(set(parents), key=index.__getitem__)
            children = sorted(set(children), key=index.__getitem__)
            if len(parents) > 1 and len(children) > 1:
                self.add_join(scope, parents, children, weak, path, lineno)
                return
        edges = self.wf.edges
        weak_edges = self.wf.weak_edges
        in_splice = scope.is_splice
        for p in parents:
            for c in children:
                e = (p, c)
                if weak:
                    if e in edges:
                        continue
                    weak_edges.add(e)
                else:
                    if e in edges:
                        weak_edges.discard(e)
                        continue
                edges.add(e)
                pp, cp = index[p], index[c]
                self.edge_keys.append(pp << 32 | cp)
                if pp < cp:
                    self.forward = True
                elif pp > cp:
                    self.backward = True
                else:
                    self.forward = self.backward = True
                if in_splice:
                    scope.has_child.add(p)
                    scope.has_parent.add(c)

    def add_join(self, scope: Scope, parents: list[str], children: list[str], weak: bool,
                 path: str | None, lineno: int | None) -> None:
        """Every child depends on every parent: one :class:`Join`, O(m + n)."""
        if self.pending:
            self.flush_pending()
        joins = self.wf.joins
        join = Join(
            name=f"{scope.prefix}{JOIN_PREFIX}{len(joins)}", parents=tuple(parents), children=tuple(children),
            weak=weak, source_path=path, source_line=lineno,
        )
        joins.append(join)
        if scope.is_splice:
            scope.has_child.update(parents)
            scope.has_parent.update(children)
        # parents and children are in file order: first/last are the extremes
        index = self.index
        if index[parents[-1]] < index[children[0]]:
            self.forward = True
        elif index[parents[0]] > index[children[-1]]:
            self.backward = True
        else:
            self.forward = self.backward = True
