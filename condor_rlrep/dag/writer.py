"""Writer of DAGMan DAG files: a :class:`Workflow` back to DAG lines.

The output uses the documented spellings (``ABORT-DAG-ON``, ``PRE_SKIP``,
``UNLESS-EXIT`` ...), writes VARS as ``key="value"`` escaping only ``\\`` and
``"`` (readable by the old and the new DAGMan parser), and quotes file and
directory arguments that contain blanks, quotes, ``=`` or backslashes. Reading
the output gives back an equal workflow: ``parse_dag(write_dag_lines(w)) == w``
(``source_path``/``source_line`` aside). Output order: DAG-wide commands,
SUBMIT-DESCRIPTIONs, each node with its commands (file order), then edges
grouped by parent, then one ``PARENT p1 … CHILD c1 …`` line per join
(DAGMan turns it back into a join node). What a DAG file cannot express (no submit description, a
script argument with a blank, a line ending in a backslash ...) raises
DagError instead of writing a file that reads back differently.

Spliced workflows are written flat: a spliced node keeps its full name
``splice+node``, so that ``$(JOB)`` and everything keyed by node name (hook
state, logs) stay the same, and edges to splices are written as the node
edges they resolved to. DAGMan accepts ``+`` in a node name only with
``DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS = True``, so writing such a workflow
requires ``allow_any_node_name_characters=True`` (and reading it back the same
flag of :func:`~condor_rlrep.dag.parser.parse_dag`); without it the writer
raises instead of producing a file DAGMan would reject.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from ..errors import DagError
from .model import Node, Workflow

__all__ = ["write_dag_lines", "write_dag", "quote_arg"]

_SCRIPT_ORDER = ("PRE", "POST", "HOLD")
_DEFINE = {"JOB": "JOB", "FINAL": "FINAL", "SERVICE": "SERVICE", "PROVISIONER": "PROVISIONER", "SUBDAG": "SUBDAG EXTERNAL"}


_QUOTE_NEEDED = re.compile(r"[ \t\"'=\\]")


def quote_arg(text: str) -> str:
    """A file/directory argument as DAGMan reads it back (quotes stripped there)."""
    if text and text.isascii() and not _QUOTE_NEEDED.search(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _line(text: str) -> str:
    """A command line, refused if DAGMan would read it as continued on the next line."""
    if text.endswith("\\"):
        raise DagError(f"cannot write {text!r}: a line ending in a backslash continues on the next line")
    return text


def _vars_value(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


_BAD_KEY = re.compile(r"[\s\"'=]")


def _check_name(name: str, allow_plus: bool) -> None:
    if not name or not name.isprintable() or " " in name or '"' in name or "'" in name:
        raise DagError(f"node name {name!r} cannot be written to a DAG file (empty, blank or quote)")
    if "+" in name and not allow_plus:
        raise DagError(
            f"node '{name}' has a '+' in its name (a spliced node): DAGMan reads such a flat DAG only with "
            "DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS = True; pass allow_any_node_name_characters=True to write it"
        )


def _inline(head: str, body: str, options: str) -> Iterator[str]:
    lines = body.split("\n") if body else []
    end = "}"
    if any(ln == "}" or ln.startswith(("} ", "}\t")) for ln in lines):
        tag = "desc"
        while any(ln == "@" + tag or ln.startswith(("@" + tag + " ", "@" + tag + "\t")) for ln in lines):
            tag += "_"
        yield f"{head} @={tag}"
        end = "@" + tag
    else:
        yield f"{head} {{"
    yield from lines
    yield end + options


def _node_lines(node: Node) -> Iterator[str]:
    name = node.name
    head = f"{_DEFINE[node.kind]} {name}"
    opts = ""
    if node.directory is not None:
        opts += f" DIR {quote_arg(node.directory)}"
    if node.noop:
        opts += " NOOP"
    if node.done:
        opts += " DONE"
    if node.inline_submit is not None and node.kind != "SUBDAG":
        yield from _inline(head, node.inline_submit, opts)
    elif node.submit is not None:
        if node.submit.startswith(("{", "@=")):
            raise DagError(f"node '{name}': submit file name {node.submit!r} would read as an inline description")
        yield f"{head} {quote_arg(node.submit)}{opts}"
    else:
        raise DagError(f"node '{name}' has no submit description (neither a file nor an inline one)")
    for kind in _SCRIPT_ORDER:
        s = node.scripts.get(kind)
        if s is None:
            continue
        words = [s.executable, *s.arguments]
        if any(not w or any(c.isspace() for c in w) for w in words):
            raise DagError(f"node '{name}': {kind} script argument with a blank cannot be written (DAGMan splits on blanks)")
        parts = ["SCRIPT"]
        if s.defer_status is not None and s.defer_seconds is not None:
            parts += ["DEFER", str(s.defer_status), str(s.defer_seconds)]
        if s.debug_file is not None and s.debug_type is not None:
            parts += ["DEBUG", s.debug_file, s.debug_type]
        parts += [kind, name, *words]
        yield _line(" ".join(parts))
    if node.pre_skip is not None:
        yield f"PRE_SKIP {name} {node.pre_skip}"
    if node.retry is not None:
        line = f"RETRY {name} {node.retry}"
        if node.retry_unless_exit is not None:
            line += f" UNLESS-EXIT {node.retry_unless_exit}"
        yield line
    if node.abort_dag_on is not None:
        value, ret = node.abort_dag_on
        yield f"ABORT-DAG-ON {name} {value}" + (f" RETURN {ret}" if ret is not None else "")
    group: list[str] = []
    placement: str | None = None
    for v in node.vars:
        if not v.key or _BAD_KEY.search(v.key) or v.key.startswith("+"):
            raise DagError(f"node '{name}': VARS key {v.key!r} cannot be written")
        if "\n" in v.value:
            raise DagError(f"node '{name}': VARS value of '{v.key}' contains a line break")
        if group and v.placement != placement:
            yield _vars_line(name, placement, group)
            group = []
        placement = v.placement
        group.append(f"{v.key}={_vars_value(v.value)}")
    if group:
        yield _vars_line(name, placement, group)
    if node.priority is not None:
        yield f"PRIORITY {name} {node.priority}"
    if node.category is not None:
        yield _line(f"CATEGORY {name} {node.category}")
    if node.tolerance is not None:
        yield _line(f"TOLERANCE {name} {node.tolerance}")
    if node.save_point:
        yield f"SAVE_POINT_FILE {name}" + (f" {quote_arg(node.save_point_file)}" if node.save_point_file else "")


def _vars_line(name: str, placement: str | None, pairs: list[str]) -> str:
    head = f"VARS {name} {placement} " if placement else f"VARS {name} "
    return head + " ".join(pairs)


def _edge_lines(wf: Workflow) -> Iterator[str]:
    """PARENT lines grouped by parent, parents and children in node order."""
    names = list(wf.nodes)
    index = {name: i for i, name in enumerate(names)}
    stray = wf.weak_edges - wf.edges
    if stray:
        p, c = next(iter(stray))
        raise DagError(f"weak edge {p} -> {c} is not in the workflow's edges")
    for prefix, edges in (("PARENT", wf.edges - wf.weak_edges), ("WEAK PARENT", wf.weak_edges)):
        n = len(names)
        try:
            # one int per edge: sorts fast and, unlike tuples, does not wake the GC
            keys = sorted([index[p] * n + index[c] for p, c in edges])
        except KeyError:
            for p, c in edges:
                if p not in index or c not in index:
                    missing = p if p not in index else c
                    raise DagError(f"edge {p} -> {c} names the unknown node '{missing}'") from None
            raise
        current = -1
        children: list[str] = []
        for key in keys:
            pi, ci = divmod(key, n)
            if pi != current:
                if children:
                    yield _line(f"{prefix} {names[current]} CHILD " + " ".join(children))
                current = pi
                children = []
            children.append(names[ci])
        if children:
            yield _line(f"{prefix} {names[current]} CHILD " + " ".join(children))


def _join_lines(wf: Workflow) -> Iterator[str]:
    nodes = wf.nodes
    for join in wf.joins:
        for name in (*join.parents, *join.children):
            if name not in nodes:
                raise DagError(f"join {join.name} names the unknown node '{name}'")
        prefix = "WEAK PARENT" if join.weak else "PARENT"
        yield _line(f"{prefix} {' '.join(join.parents)} CHILD {' '.join(join.children)}")


def write_dag_lines(workflow: Workflow, *, allow_any_node_name_characters: bool = False) -> Iterator[str]:
    """Yield the lines (without newlines) of a DAG file describing ``workflow``.

    Raises DagError for what a DAG file cannot express (a node without a
    submit description, a spliced ``a+b`` name unless
    ``allow_any_node_name_characters``, blanks in script arguments, a NUL
    byte ...).
    """
    for line in _lines(workflow, allow_any_node_name_characters):
        if "\x00" in line:
            raise DagError(f"cannot write {line!r}: a DAG file cannot hold a NUL byte")
        yield line


def _lines(workflow: Workflow, allow_any_node_name_characters: bool) -> Iterator[str]:
    wf = workflow
    for name in wf.nodes:
        _check_name(name, allow_any_node_name_characters)
    yield "# Written by condor-rlrep"
    if wf.reject:
        yield "REJECT"
    if wf.config is not None:
        yield f"CONFIG {quote_arg(wf.config)}"
    for key, value in wf.set_job_attrs:
        yield _line(f"SET_JOB_ATTR {key} = {value}")
    for action, rest in wf.env:
        yield _line(f"ENV {action} {rest}")
    if wf.dot is not None:
        yield _line(f"DOT {wf.dot}")
    if wf.node_status_file is not None:
        line = f"NODE_STATUS_FILE {quote_arg(wf.node_status_file)}"
        if wf.node_status_min_seconds is not None:
            line += f" {wf.node_status_min_seconds}"
        if wf.node_status_always_update:
            line += " ALWAYS-UPDATE"
        yield line
    if wf.jobstate_log is not None:
        yield f"JOBSTATE_LOG {quote_arg(wf.jobstate_log)}"
    for cat, limit in wf.maxjobs.items():
        yield _line(f"MAXJOBS {cat} {limit}")
    for name, body in wf.submit_descriptions.items():
        yield from _inline(f"SUBMIT-DESCRIPTION {name}", body, "")
    for node in wf.nodes.values():
        yield from _node_lines(node)
    yield from _edge_lines(wf)
    yield from _join_lines(wf)


def write_dag(workflow: Workflow, path: str | os.PathLike[str], *, allow_any_node_name_characters: bool = False) -> None:
    """Write ``workflow`` to ``path`` atomically (temporary file + ``os.replace``)."""
    from condor_rlrep.atomic import write_atomic

    write_atomic(path, write_dag_lines(workflow, allow_any_node_name_characters=allow_any_node_name_characters))
