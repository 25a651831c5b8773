"""Workflows: the in-memory model every input format is read into, and
its dependency graph.

``parse_dag(lines)`` / ``read_dag(path)`` turn a DAG file (HTCondor 25.x
language, INCLUDE and SPLICE resolved) into a :class:`Workflow`;
``write_dag_lines(workflow)`` / ``write_dag(workflow, path)`` write it back;
:mod:`.dax` and :mod:`.wfformat` read Pegasus DAX and WfCommons WfFormat,
:mod:`.load` any of them by content, :mod:`.export` writes a runnable DAG.
:mod:`.graph` is the dependency graph the criticality formulas run on (on
the CSR arrays and passes of :mod:`.csr`), :mod:`.nxgraph` its networkx form
and :mod:`.dot` its Graphviz drawing. The parser's own parts are listed in
:mod:`.parser`.

Names are imported lazily, so that :mod:`condor_rlrep.criticality` (which
needs only the graph) does not load the parser.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "parse_dag",
    "read_dag",
    "write_dag_lines",
    "write_dag",
    "Workflow",
    "Node",
    "NodeKind",
    "Script",
    "VarAssignment",
    "FileUse",
    "Join",
    "ESTIMATE_MACRO",
    "BOTTLEMOD_MACRO",
]

_WHERE = {"parse_dag": "parser", "read_dag": "parser", "write_dag_lines": "writer", "write_dag": "writer"}

if TYPE_CHECKING:
    from .model import (BOTTLEMOD_MACRO, ESTIMATE_MACRO, FileUse, Join, Node, NodeKind, Script, VarAssignment,
                        Workflow)
    from .parser import parse_dag, read_dag
    from .writer import write_dag, write_dag_lines


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'condor_rlrep.dag' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"condor_rlrep.dag.{_WHERE.get(name, 'model')}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
