"""Read a workflow in any supported format, detected from the file's content.

* XML whose root element is ``adag`` → Pegasus DAX (:mod:`condor_rlrep.dag.dax`);
* JSON (first non-blank character ``{``) → WfCommons WfFormat
  (:mod:`condor_rlrep.dag.wfformat`);
* anything else → a DAGMan DAG file (:mod:`condor_rlrep.dag.parser`).

The format readers are imported only when needed, so that reading a DAG does
not pay for the others.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from condor_rlrep.dag.model import Workflow
from condor_rlrep.errors import DagError, DagSyntaxError

__all__ = ["WorkflowFormat", "detect_format", "load_workflow"]

WorkflowFormat = Literal["dax", "wfformat", "dag"]

_SNIFF_BYTES = 64 * 1024
# First element tag after the XML declaration, comments, PIs and DOCTYPE.
_XML_ROOT = re.compile(rb"<(?![?!])(?:[\w.-]+:)?([\w.-]+)")


def detect_format(head: bytes, path: str | None = None) -> WorkflowFormat:
    """Which reader handles a file starting with ``head`` (its first bytes).

    Raises :class:`DagSyntaxError` for XML that is not a DAX.
    """
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(b"<"):
        match = _XML_ROOT.search(stripped)
        if match is None or match.group(1) != b"adag":
            root = match.group(1).decode("utf-8", "replace") if match else "?"
            line = head[: match.start() if match else 0].count(b"\n") + 1 if match else None
            raise DagSyntaxError(f"XML root element <{root}> is not a Pegasus DAX <adag>", path=path, line=line)
        return "dax"
    if stripped.startswith((b"{", b"[")):
        return "wfformat"
    return "dag"


def load_workflow(path: str | os.PathLike[str]) -> Workflow:
    """Read the DAX, WfFormat or DAG file at ``path`` into a :class:`Workflow`."""
    file = Path(path)
    try:
        with file.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError as err:
        raise DagError(f"cannot read the workflow file: {err.strerror or err}", path=str(path)) from err
    kind = detect_format(head, str(path))
    if kind == "dax":
        from condor_rlrep.dag.dax import read_dax

        return read_dax(file)
    if kind == "wfformat":
        from condor_rlrep.dag.wfformat import read_wfformat

        return read_wfformat(file)
    from condor_rlrep.dag.parser import read_dag

    return read_dag(file)

