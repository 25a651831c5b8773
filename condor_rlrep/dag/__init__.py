"""DAGMan DAG files: the workflow model, a parser and a writer.

``parse_dag(lines)`` / ``read_dag(path)`` turn a DAG file (HTCondor 25.x
language, INCLUDE and SPLICE resolved) into a :class:`Workflow`;
``write_dag_lines(workflow)`` / ``write_dag(workflow, path)`` write it back.
"""

from __future__ import annotations

from .model import (
    BOTTLEMOD_MACRO,
    ESTIMATE_MACRO,
    FileUse,
    Join,
    Node,
    NodeKind,
    Script,
    VarAssignment,
    Workflow,
)
from .parser import parse_dag, read_dag
from .writer import write_dag, write_dag_lines

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
