"""Dependency cycles: finding one, and naming it in the error.

A workflow's dependencies must form a DAG. Two callers check it:

* the DAG parser (:func:`find_cycle`, :func:`cycle_error`), which has every
  node's position in file order and every edge as an integer key: Kahn's
  algorithm over positions, with one vertex per join after the nodes. Most
  DAG files need no check at all (edges all going one way in file order, see
  :mod:`.parsestate`); for big ones it runs level by level in numpy
  (:func:`.csr.is_acyclic`). A cycle's error names its nodes (join nodes
  left out: p -> join -> c is p -> c) and the file line of the edge that
  closes it, found by replaying the PARENT/CHILD and CONNECT lines of the
  files read;
* the readers that build a :class:`~.model.Workflow` directly (DAX, WfFormat):
  :func:`check_acyclic`.

The parser imports networkx only to name a cycle it found; :func:`check_acyclic`
runs on networkx. The parser's own modules are imported here on the error
path only, so that the DAX and WfFormat readers do not load them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import CycleError, DagError
from .lexer import LexError, LineSource, normalize_keyword, split_tokens
from .syntax import NODE_KINDS

if TYPE_CHECKING:
    from .firstpass import Parser
    from .model import Workflow

__all__ = ["find_cycle", "cycle_error", "check_acyclic"]

# From this many vertices on, the cycle check of an acyclic DAG (the usual
# case) is cheaper in numpy (~0.1 s at 10^5 nodes and 3·10^5 edges, against
# ~0.6 s for the plain loop below, which stays for small DAGs: numpy's import
# alone costs more than their whole check).
# The cycle check runs level by level in numpy (csr.is_acyclic) from this
# many vertices when numpy is loaded already, or from _NUMPY_IMPORT_MIN
# (where importing it, ~0.1 s, still pays); plain Kahn below.
_NUMPY_ACYCLIC_MIN = 4096
_NUMPY_IMPORT_MIN = 32768
_LOW32 = (1 << 32) - 1


def _numpy_acyclic(wf: Workflow, index: dict[str, int], edge_keys: Sequence[int], total: int) -> bool:
    import numpy as np

    from .csr import is_acyclic

    get = index.__getitem__
    keys = np.array(edge_keys, dtype=np.int64)
    parent_of, child_of = [keys >> 32], [keys & _LOW32]
    for k, join in enumerate(wf.joins, len(index)):
        parent_of += [np.fromiter(map(get, join.parents), np.int64, len(join.parents)),
                      np.full(len(join.children), k, np.int64)]
        child_of += [np.full(len(join.parents), k, np.int64),
                     np.fromiter(map(get, join.children), np.int64, len(join.children))]
    return is_acyclic(total, np.concatenate(parent_of), np.concatenate(child_of))


def find_cycle(wf: Workflow, index: dict[str, int], edge_keys: Sequence[int]) -> list[tuple[str, str]] | None:
    """None if acyclic, else one cycle as its edges (networkx names it).

    Kahn's algorithm over node positions (``index``: name -> position) and
    one vertex per join after them.
    """
    n = len(index)
    joins = wf.joins
    total = n + len(joins)
    use_numpy = total >= _NUMPY_IMPORT_MIN or (total >= _NUMPY_ACYCLIC_MIN and "numpy" in sys.modules)
    if use_numpy and _numpy_acyclic(wf, index, edge_keys, total):
        return None
    indeg = [0] * total
    succ: list[list[int]] = [[] for _ in range(total)]
    get = index.__getitem__
    for key in edge_keys:
        ci = key & _LOW32
        succ[key >> 32].append(ci)
        indeg[ci] += 1
    for k, join in enumerate(joins, n):
        for pi in map(get, join.parents):
            succ[pi].append(k)
        indeg[k] = len(join.parents)
        succ[k] = children = list(map(get, join.children))
        for ci in children:
            indeg[ci] += 1
    stack = [i for i, d in enumerate(indeg) if not d]
    pop, push = stack.pop, stack.append
    seen = 0
    while stack:
        i = pop()
        seen += 1
        for c in succ[i]:
            d = indeg[c] - 1
            indeg[c] = d
            if not d:
                push(c)
    if seen == total:
        return None
    import networkx as nx

    names = [*wf.nodes, *(join.name for join in joins)]
    g = nx.DiGraph()
    for i, d in enumerate(indeg):
        if d > 0:
            g.add_edges_from((names[i], names[c]) for c in succ[i] if indeg[c] > 0)
    return [(u, v) for u, v, *_ in nx.find_cycle(g)]


def _locate_edge(p: Parser, edge: tuple[str, str]) -> tuple[str | None, int | None]:
    """The PARENT/CHILD (or CONNECT) line that created ``edge`` (error path only)."""
    # Imported here: the DAX and WfFormat readers use this module without the DAG parser.
    from .commands import COMMANDS
    from .lexer import inline_body
    from .parsestate import ParseState, Scope

    for join in p.wf.joins:
        if join.name in edge:
            return join.source_path, join.source_line
    for scope, lines, path in p.sources:
        # The line names each end in this scope: the node, or the splice holding it.
        local = [e[len(scope.prefix):] if e.startswith(scope.prefix) else e for e in edge]
        needles = [name.split("+", 1)[0] for name in local]
        probe = ParseState()
        probe.wf.nodes = p.wf.nodes
        probe.index = p.index
        probe_scope = Scope(scope.prefix, scope.node_dir, False, scope.own, scope.splices)
        src = LineSource(lines)
        for lineno, line in src:
            kw = normalize_keyword(line.split(None, 1)[0])
            if kw in NODE_KINDS or kw == "SUBMIT_DESCRIPTION":
                # skip inline description bodies
                try:
                    texts = split_tokens(line)[1]
                except LexError:
                    continue
                if kw != "SUBDAG" and len(texts) > 2 and texts[2].startswith(("{", "@=")):
                    try:
                        inline_body(kw, "", texts[2], src, path, lineno)
                    except DagError:
                        pass
                continue
            if kw not in ("PARENT", "WEAK", "CONNECT") or not all(needle in line for needle in needles):
                continue
            probe.wf.edges = set()
            try:
                COMMANDS[kw](probe, probe_scope, kw, line, path, lineno)
            except (DagError, LexError):
                continue
            if edge in probe.wf.edges:
                return path, lineno
    return None, None


def cycle_error(p: Parser, cycle_edges: list[tuple[str, str]], path: str | None) -> CycleError:
    """The error naming a cycle; join nodes are left out (p -> join -> c is p -> c)."""
    joins = {join.name for join in p.wf.joins}
    cycle = [u for u, _v in cycle_edges if u not in joins]
    closing = cycle_edges[-1]
    epath, eline = _locate_edge(p, closing)
    if closing[0] in joins or closing[1] in joins:
        at = cycle_edges.index(closing)
        before = next(u for u, _v in reversed(cycle_edges[: at + 1]) if u not in joins)
        after = next(v for _u, v in [*cycle_edges[at:], *cycle_edges] if v not in joins)
        closing = (before, after)
    return CycleError(
        "dependency cycle: " + " -> ".join([*cycle, cycle[0]]) + f" (closed by the edge {closing[0]} -> {closing[1]})",
        cycle=cycle, path=epath or path, line=eline,
    )


def check_acyclic(workflow: Workflow, *, edge_lines: Mapping[tuple[str, str], int] | None = None) -> None:
    """Raise :class:`CycleError` naming one cycle if the dependencies have any.

    The cycle found is deterministic (nodes in file order, edges sorted); its
    error points at the earliest line (per ``edge_lines``) of its edges.
    """
    import networkx as nx

    for parent, child in workflow.edges:
        if parent not in workflow.nodes or child not in workflow.nodes:
            missing = parent if parent not in workflow.nodes else child
            raise DagError(f"edge {parent} -> {child} names unknown node {missing!r}", path=workflow.source_path)
    graph = nx.DiGraph()
    graph.add_nodes_from(workflow.nodes)
    graph.add_edges_from(sorted(workflow.edges))
    for join in workflow.joins:
        graph.add_edges_from((p, join.name) for p in join.parents)
        graph.add_edges_from((join.name, c) for c in join.children)
    if nx.is_directed_acyclic_graph(graph):
        return
    cycle_edges = nx.find_cycle(graph)
    joins = {join.name for join in workflow.joins}
    cycle = [parent for parent, _ in cycle_edges if parent not in joins]
    lines = [edge_lines[e] for e in cycle_edges if edge_lines and e in edge_lines]
    raise CycleError(
        "dependency cycle: " + " -> ".join([*cycle, cycle[0]]),
        cycle=cycle,
        path=workflow.source_path,
        line=min(lines) if lines else None,
    )
