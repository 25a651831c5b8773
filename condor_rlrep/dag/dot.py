"""Graphviz DOT drawing of a dependency graph (``condor-rlrep inspect --dot``).

Nodes are boxes labelled with their names (and any extra text per node);
join vertices are small dots, as DAGMan's own DOT files show its join nodes;
a highlighted path (the critical path) is drawn in red. Names are quoted,
so any node name is a valid DOT id.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .graph import DependencyGraph

__all__ = ["generate_dot"]


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
