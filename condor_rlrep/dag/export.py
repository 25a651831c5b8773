"""Export any :class:`Workflow` as a runnable DAGMan DAG with one submit file per task.

``export_dagman(workflow, out_dir)`` writes into ``out_dir``:

* ``<name>.dag`` — written by :func:`condor_rlrep.dag.writer.write_dag_lines`:
  one ``JOB`` per task, ``VARS <node> rlrep_estimate="<seconds>"`` for every
  node with a known runtime (the per-node estimate ``e_t`` that φ′ is computed
  from, eq. 5 of the replication paper), and the ``PARENT … CHILD`` edges;
* ``<node>.sub`` for every task that has no submit description of its own
  (DAX and WfFormat tasks): vanilla universe, the task's executable and
  arguments, ``log``/``output``/``error`` under ``logs/``, ``request_cpus``,
  and what the file records of the task: ``request_memory`` (MiB),
  ``priority``, ``request_disk`` (KiB, the sum of its files' sizes), its
  input files that exist next to the workflow as ``transfer_input_files``,
  and every file it reads or writes in a comment;
* ``rlrep_task.sh`` when some task's executable is not a file on this
  machine: a stand-in that sleeps for the task's runtime times
  ``time_scale``, so that the DAG runs on any pool.

How a task is run:

* its executable is a file here → that file with the task's arguments,
  ``rlrep_estimate`` = the runtime;
* otherwise, or for every task when ``executable=`` is given → the stand-in
  (or that executable) called as ``EXE SECONDS NODE [PROGRAM [ARG...]]``,
  where ``SECONDS`` = runtime × ``time_scale`` (0 when unknown) and
  ``PROGRAM ARG...`` is the task's own command, for wrappers that want it;
  ``rlrep_estimate`` = runtime × ``time_scale``, i.e. what will actually run.

The submit file takes its estimate from the node's VARS (the stand-in's
``SECONDS`` is ``$(rlrep_estimate:SECONDS)``, a real executable's job ad
gets ``RlrepEstimate``), so that DAGMan finds no unused VARS macro; tasks
run with ``should_transfer_files = YES``, each replica of a node in its own
scratch directory.

Nodes read from a DAG keep their own submit description; their ``DIR`` is
made absolute (the original DAG's directory) so that relative submit files and
scripts still resolve. ``SUBDAG`` nodes (DAX ``<dag>``/``<dax>`` jobs, DAG
``SUBDAG EXTERNAL``) get ``DIR`` = the directory of their file; a DAX or
WfFormat sub-workflow is exported recursively into ``out_dir/<node>/``.

Node names (see :func:`sanitize_node_names`): a name made only of ASCII
letters, digits, ``_``, ``-`` and ``.`` that is not a reserved word is kept;
otherwise every other character becomes ``_``, a reserved word (``PARENT``,
``CHILD``, ``ALL_NODES``, any case) gets a trailing ``_``, and a result that
clashes with another node's name gets ``_2``, ``_3``, … (in file order). The
DAG's header comments list every renamed node.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path

from condor_rlrep.atomic import write_atomic
from condor_rlrep.dag.model import ESTIMATE_MACRO, Node, VarAssignment, Workflow
from condor_rlrep.errors import InputError

__all__ = ["STANDIN_SCRIPT", "export_dagman", "sanitize_node_names", "submit_arguments"]

log = logging.getLogger(__name__)

STANDIN_SCRIPT = "rlrep_task.sh"
LOG_DIR = "logs"
_RESERVED = frozenset({"PARENT", "CHILD", "ALL_NODES"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
_STANDIN_BODY = """#!/bin/sh
# Stand-in task written by `condor-rlrep export`: sleeps for the task's
# (scaled) runtime. Usage: rlrep_task.sh SECONDS NODE [PROGRAM [ARG...]]
seconds="${1:-0}"
echo "rlrep stand-in for node ${2:-?}: sleeping ${seconds}s"
# GNU/BSD sleep take fractions; a strictly POSIX one gets the whole seconds.
sleep "$seconds" 2>/dev/null || sleep "${seconds%%.*}"
"""


def sanitize_node_names(names: Iterable[str]) -> dict[str, str]:
    """Map each node name to a DAGMan-safe name that is unique, deterministically.

    Names that are already safe are never changed and win any clash.
    """
    ordered = list(names)
    taken = {name for name in ordered if _is_safe(name)}
    mapping: dict[str, str] = {}
    for name in ordered:
        if name in taken and _is_safe(name):
            mapping[name] = name
            continue
        base = _UNSAFE.sub("_", name) or "_"
        if base.upper() in _RESERVED:
            base += "_"
        candidate, suffix = base, 2
        while candidate in taken:
            candidate, suffix = f"{base}_{suffix}", suffix + 1
        taken.add(candidate)
        mapping[name] = candidate
    return mapping


def _is_safe(name: str) -> bool:
    return bool(name) and _UNSAFE.search(name) is None and name.upper() not in _RESERVED


def submit_arguments(argv: Iterable[str]) -> str:
    """``argv`` in the submit language's quoted ``arguments`` syntax.

    Each argument is wrapped in single quotes (``'`` doubled inside), ``"``
    is doubled, and ``$`` becomes ``$(DOLLAR)`` so no macro is expanded.
    """
    parts = []
    for argument in argv:
        text = str(argument).replace("'", "''").replace('"', '""').replace("$", "$(DOLLAR)")
        if "\n" in text or "\r" in text:
            raise InputError(f"argument {argument!r} contains a line break, which a submit file cannot hold")
        parts.append(f"'{text}'")
    return '"' + " ".join(parts) + '"'


def export_dagman(
    workflow: Workflow,
    out_dir: str | os.PathLike[str],
    *,
    name: str | None = None,
    executable: str | os.PathLike[str] | None = None,
    time_scale: float = 1.0,
    request_cpus: int = 1,
) -> Path:
    """Write ``workflow`` as ``out_dir/<name>.dag`` plus submit files; return the DAG's path.

    ``name`` defaults to the source file's stem. ``executable`` replaces every
    task's executable (called with the stand-in's arguments). ``request_cpus``
    is used for tasks whose core count is unknown.
    """
    return _Exporter(executable, time_scale, request_cpus).export(workflow, Path(out_dir), name, frozenset())


class _Exporter:
    def __init__(self, executable: str | os.PathLike[str] | None, time_scale: float, request_cpus: int) -> None:
        if not (isinstance(time_scale, (int, float)) and math.isfinite(time_scale) and time_scale >= 0):
            raise InputError(f"time scale {time_scale!r} must be a finite number >= 0")
        if isinstance(request_cpus, bool) or not isinstance(request_cpus, int) or request_cpus < 1:
            raise InputError(f"request_cpus {request_cpus!r} must be a whole number >= 1")
        self.override: str | None = None
        if executable is not None:
            exe = Path(executable)
            if not exe.is_file():
                raise InputError("executable does not exist or is not a file", path=str(executable))
            self.override = str(exe.resolve())
        self.time_scale = float(time_scale)
        self.request_cpus = request_cpus

    def export(self, workflow: Workflow, out_dir: Path, name: str | None, seen: frozenset[Path]) -> Path:
        source = Path(workflow.source_path).resolve() if workflow.source_path else None
        source_dir = source.parent if source else None
        stem = name or (source.stem if source else "workflow")
        dag_path = out_dir / f"{_UNSAFE.sub('_', stem) or 'workflow'}.dag"
        if source is not None and dag_path.resolve() == source:
            raise InputError("export would overwrite its own input; choose another output directory", path=str(source))
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / LOG_DIR).mkdir(exist_ok=True)
        names = sanitize_node_names(workflow.nodes)
        nodes: dict[str, Node] = {}
        uses_standin = False
        for old, node in workflow.nodes.items():
            new = dataclasses.replace(node, name=names[old], vars=list(node.vars), scripts=dict(node.scripts))
            if node.kind == "SUBDAG":
                self.subdag(new, out_dir, source_dir, seen | ({source} if source else set()))
            elif node.submit is not None or node.inline_submit is not None:
                if source_dir is not None:
                    new.directory = str(source_dir / node.directory) if node.directory else str(source_dir)
            else:
                uses_standin |= self.task(new, node, out_dir, source)
            nodes[new.name] = new
        exported = dataclasses.replace(
            workflow,
            nodes=nodes,
            edges={(names[p], names[c]) for p, c in workflow.edges},
            weak_edges={(names[p], names[c]) for p, c in workflow.weak_edges},
            joins=[
                dataclasses.replace(j, parents=tuple(names[p] for p in j.parents), children=tuple(names[c] for c in j.children))
                for j in workflow.joins
            ],
            config=_absolute(workflow.config, source_dir),
            source_path=str(dag_path),
        )
        if uses_standin and self.override is None:
            script = out_dir / STANDIN_SCRIPT
            write_atomic(script, _STANDIN_BODY, mode=0o644)
            script.chmod(0o755)
        from condor_rlrep.dag.writer import write_dag_lines

        header = [f"# Exported by condor-rlrep export from {source or 'an in-memory workflow'}"]
        header += [f"# node {old!r} renamed {new!r}" for old, new in names.items() if old != new]
        body = [line.rstrip("\n") for line in write_dag_lines(exported)]
        write_atomic(dag_path, "\n".join(header + body) + "\n", mode=0o644)
        log.info("exported %d nodes to %s", len(nodes), dag_path)
        return dag_path

    def task(self, new: Node, node: Node, out_dir: Path, source: Path | None) -> bool:
        """Write ``new``'s submit file; return whether it runs the generated stand-in."""
        real = _existing_file(node.executable, source.parent if source else None)
        runtime = node.runtime
        if real is not None and self.override is None:
            exe, argv, estimate, standin = str(real), list(node.arguments), runtime, False
        else:
            seconds = 0.0 if runtime is None else runtime * self.time_scale
            program = [node.executable, *node.arguments] if node.executable else list(node.arguments)
            exe = self.override or STANDIN_SCRIPT
            argv = [_seconds(seconds), new.name, *program]
            estimate = None if runtime is None else seconds
            standin = self.override is None
        arguments = submit_arguments(argv)
        used = []  # DAGMan warns about a VARS macro that the submit file does not use
        if estimate is not None and new.var(ESTIMATE_MACRO) is None:
            new.vars.append(VarAssignment(ESTIMATE_MACRO, _seconds(estimate)))
            # the estimate is the node's VARS; the submit file takes it from
            # there (the default after ':' when submitted without DAGMan)
            macro = f"$({ESTIMATE_MACRO}:{_seconds(estimate)})"
            if real is None or self.override is not None:  # the sleep time is the estimate
                arguments = f'"\'{macro}\'' + arguments[len(f'"\'{_seconds(estimate)}\''):]
            else:
                used.append(f"My.RlrepEstimate = {macro}")
        new.submit = f"{new.name}.sub"
        lines = [
            f"# condor-rlrep export: task {node.name!r}"
            + (f" ({_one_line(node.executable)})" if node.executable else "")
            + (f" of {source}" if source else ""),
            "universe = vanilla",
            f"executable = {exe.replace('$', '$(DOLLAR)')}",
            f"arguments = {arguments}",
            *used,
            f"log = {LOG_DIR}/{new.name}.log",
            f"output = {LOG_DIR}/{new.name}.out",
            f"error = {LOG_DIR}/{new.name}.err",
            f"request_cpus = {node.cpus or self.request_cpus}",
            *_resource_lines(node, source.parent if source else None),
            # each replica in its own scratch directory: replicas of one node
            # never write the same file (instrument warns about in-place ones)
            "should_transfer_files = YES",
            "when_to_transfer_output = ON_EXIT",
            "queue",
        ]
        write_atomic(out_dir / new.submit, "\n".join(lines) + "\n", mode=0o644)
        return standin

    def subdag(self, new: Node, out_dir: Path, source_dir: Path | None, seen: frozenset[Path]) -> None:
        """Point a SUBDAG node at a runnable DAG: its own, or an export of a DAX/WfFormat file."""
        if not new.submit:
            return
        target = Path(new.submit)
        if not target.is_absolute() and source_dir is not None:
            base = source_dir / new.directory if new.directory else source_dir
            target = base / target
        target = target.resolve()
        if not target.is_file():
            log.warning("sub-workflow %s of node %s not found; written as is", target, new.name)
            return
        from condor_rlrep.dag.load import detect_format, load_workflow

        with target.open("rb") as handle:
            kind = detect_format(handle.read(64 * 1024), str(target))
        if kind == "dag":
            new.directory, new.submit = str(target.parent), target.name
            return
        if target in seen:
            raise InputError(f"sub-workflow of node {new.name!r} includes itself", path=str(target))
        sub_dir = out_dir / new.name
        dag = self.export(load_workflow(target), sub_dir, None, seen)
        new.directory, new.submit = str(sub_dir.resolve()), dag.name


def _resource_lines(node: Node, base: Path | None) -> list[str]:
    """What the task is known to need: memory, priority, disk for its files,
    and its input files that exist next to the workflow (sent with the job);
    every file it reads or writes is listed in a comment."""
    lines = []
    if node.memory:
        lines.append(f"request_memory = {max(1, math.ceil(node.memory / 2**20))}")  # MiB
    if node.priority is not None:
        lines.append(f"priority = {node.priority}")
    sizes = [use.size for use in node.files if use.size]
    if sizes:
        lines.append(f"request_disk = {max(1, math.ceil(sum(sizes) / 1024))}")  # KiB
    present = []
    for use in node.files:
        size = f", {use.size:.0f} bytes" if use.size is not None else ""
        lines.append(f"# {use.link} file {_one_line(use.name)}{size}")
        if use.link == "input" and base is not None and _plain_file_name(use.name) and (base / use.name).is_file():
            present.append(str((base / use.name).resolve()))
    if present:
        lines.append("transfer_input_files = " + ", ".join(dict.fromkeys(present)))
    return lines


def _plain_file_name(name: str) -> bool:
    # transfer_input_files is a comma/blank separated list with macro expansion
    return bool(name) and not any(c in name for c in ",$ \t\n\r\"'")


def _existing_file(executable: str | None, base: Path | None) -> Path | None:
    if not executable:
        return None
    path = Path(executable)
    if not path.is_absolute():
        # Logical names such as "mProjectPP" only count when they are a file next to the workflow.
        if base is None or os.sep not in executable:
            return None
        path = base / path
    return path.resolve() if path.is_file() else None


def _absolute(path: str | None, base: Path | None) -> str | None:
    if path is None or base is None or Path(path).is_absolute():
        return path
    return str(base / path)


def _seconds(value: float) -> str:
    """Seconds rounded to microseconds, without trailing zeros (``13.39``, ``0``)."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text or "0"


def _one_line(text: str) -> str:
    return " ".join(text.split())
