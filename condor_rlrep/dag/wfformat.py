"""Read WfCommons WfFormat JSON (schema 1.0 to 1.6) into a :class:`Workflow`.

Two layouts exist:

* **1.5 and later** — ``workflow.specification.tasks`` (``id``, ``name``,
  ``parents``/``children`` as ids, ``inputFiles``/``outputFiles`` as file ids)
  plus ``workflow.specification.files`` (``id``, ``sizeInBytes``), joined by
  task id with ``workflow.execution.tasks`` (``runtimeInSeconds``,
  ``command.program``/``arguments``, ``coreCount``). A task without an
  execution entry gets ``runtime = None``.
* **1.4 and earlier** — ``workflow.tasks`` (``workflow.jobs`` before 1.3), each
  with ``name`` (which ``parents``/``children`` refer to), ``runtimeInSeconds``
  (``runtime`` before 1.4), ``files`` (``name``, ``link``, ``sizeInBytes`` /
  ``size`` in bytes), ``command`` (``arguments`` before 1.2) and ``cores``.

The layout is told by the presence of ``workflow.specification``, not by
``schemaVersion``, so files with a wrong version still load. Node names are
task ids (1.5+) or task names (older). Dependencies may be declared on either
end; both are read. JSON carries no positions for values, so semantic errors
name the line of the first occurrence of the id at fault in the text.

Also read, per task: memory (``memoryInBytes``; 1.4's ``memory`` in KiB) →
:attr:`Node.memory` in bytes, ``priority`` → :attr:`Node.priority`, and
``category`` (else the program) → :attr:`Node.transformation`. Numbers too
large for a float, and JSON nested too deeply to read, are errors like any
other (:mod:`condor_rlrep.safeload`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from condor_rlrep.dag.cycles import check_acyclic
from condor_rlrep.dag.model import FileUse, Node, Workflow
from condor_rlrep.errors import CycleError, DagError, DagSyntaxError
from condor_rlrep.safeload import LoadError, load_json

__all__ = ["parse_wfformat", "read_wfformat"]

log = logging.getLogger(__name__)


def read_wfformat(path: str | os.PathLike[str]) -> Workflow:
    """Read the WfFormat file at ``path`` (see :func:`parse_wfformat`)."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise DagError(f"cannot read the WfFormat file: {err.strerror or err}", path=str(path)) from err
    return parse_wfformat(data, path=str(path))


def parse_wfformat(source: str | bytes, path: str | None = None) -> Workflow:
    """Parse WfFormat JSON text into a :class:`Workflow` (nodes in task order).

    Raises :class:`DagSyntaxError` for bad JSON or values of the wrong type,
    :class:`DagError` for duplicate task ids and unknown references, and
    :class:`CycleError` for cyclic dependencies.
    """
    if isinstance(source, bytes):
        try:
            text = source.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            line = source.count(b"\n", 0, err.start) + 1
            raise DagSyntaxError(f"not UTF-8 text (byte {err.start})", path=path, line=line) from None
    else:
        text = source
    try:
        document = load_json(text)
    except LoadError as err:
        raise DagSyntaxError(err.message, path=path, line=err.line) from None
    reader = _Reader(text, path)
    reader.mapping(document, "the document")
    workflow_part = reader.mapping(document.get("workflow"), "'workflow'")
    if "specification" in workflow_part:
        workflow = reader.read_15(workflow_part)
    else:
        key = "tasks" if "tasks" in workflow_part else "jobs"
        workflow = reader.read_14(reader.task_list(workflow_part.get(key), f"'workflow.{key}'"))

    try:
        check_acyclic(workflow)
    except CycleError as err:
        raise CycleError(err.message, cycle=err.cycle, path=path, line=reader.line_of(err.cycle[0])) from None
    log.debug("read WfFormat %s: %d tasks, %d edges", path, len(workflow.nodes), len(workflow.edges))
    return workflow


class _Reader:
    def __init__(self, text: str, path: str | None) -> None:
        self.text = text
        self.path = path
        self.workflow = Workflow(source_path=path)
        self._indexes: dict[str, dict[str, list[int]]] = {}

    # -- errors, located in the text --------------------------------------
    def line_of(self, value: str | None, key: str | None = None, nth: int = 1) -> int | None:
        """Line of the ``nth`` occurrence of ``"key": "value"`` (``-1``: the last), or
        without ``key`` the line of node ``value`` (else of the first ``"value"``)."""
        if value is None:
            return None
        if key is not None:
            lines = self._key_index(key).get(value, [])
            if nth < 0:
                return lines[nth] if len(lines) >= -nth else None
            return lines[nth - 1] if len(lines) >= nth else None
        node = self.workflow.nodes.get(value)
        if node is not None and node.source_line is not None and nth == 1:
            return node.source_line
        for count, match in enumerate(re.finditer(re.escape(json.dumps(value)), self.text), start=1):
            if count == nth:
                return self.text.count("\n", 0, match.start()) + 1
        return None

    def _key_index(self, key: str) -> dict[str, list[int]]:
        """Lines of every ``"key": "value"`` in the text, by value (one scan per key)."""
        index = self._indexes.get(key)
        if index is None:
            index = {}
            line, position = 1, 0
            for match in re.finditer(rf'"{re.escape(key)}"\s*:\s*("(?:[^"\\]|\\.)*")', self.text):
                line += self.text.count("\n", position, match.start())
                position = match.start()
                try:
                    value = json.loads(match.group(1))
                except json.JSONDecodeError:
                    continue
                index.setdefault(value, []).append(line)
            self._indexes[key] = index
        return index

    def syntax(self, message: str, value: str | None = None, key: str | None = None) -> DagSyntaxError:
        return DagSyntaxError(message, path=self.path, line=self.line_of(value, key))

    def mapping(self, value: Any, what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.syntax(f"{what} is not a JSON object (is this a WfFormat file?)")
        return value

    def task_list(self, value: Any, what: str) -> list[dict[str, Any]]:
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise self.syntax(f"{what} is missing or not a list of objects")
        return value

    def string(self, task: Mapping[str, Any], key: str, what: str) -> str:
        value = task.get(key)
        if not isinstance(value, str) or not value:
            raise self.syntax(f"{what} has no string {key!r}")
        return value

    def strings(self, value: Any, what: str, owner: str) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.syntax(f"task {owner!r}: {what} is not a list of strings", owner)
        return value

    def number(self, value: Any, what: str, owner: str, line: int | None = None) -> float:
        """``value`` as a finite float >= 0; an error names ``owner`` and ``line``."""
        problem = None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problem = "is not a number"
        elif not math.isfinite(value) or value < 0:
            problem = "must be a finite number >= 0"
        if problem is not None:
            raise DagSyntaxError(f"{owner}: {what} {value!r} {problem}", path=self.path, line=line)
        return float(value)

    def add_node(self, name: str, key: str) -> Node:
        nodes = self.workflow.nodes
        if name in nodes:
            raise DagError(
                f"duplicate task {key} {name!r} (first on line {nodes[name].source_line})",
                path=self.path,
                line=self.line_of(name, key, nth=2),
            )
        node = Node(name=name, source_path=self.path, source_line=self.line_of(name, key))
        nodes[name] = node
        return node

    def link(self, task: str, references: Iterable[str], resolve: Mapping[str, str], as_parent: bool) -> None:
        for reference in references:
            other = resolve.get(reference)
            if other is None:
                relation = "parent" if as_parent else "child"
                raise DagError(
                    f"task {task!r} names unknown {relation} {reference!r}", path=self.path, line=self.line_of(task)
                )
            self.workflow.edges.add((other, task) if as_parent else (task, other))

    def command(self, node: Node, command: Any) -> None:
        if command is None:
            return
        if not isinstance(command, dict):
            raise self.syntax(f"task {node.name!r}: 'command' is not an object", node.name)
        program = command.get("program")
        if program is not None:
            node.executable = str(program)
        arguments = command.get("arguments")
        if arguments is not None:
            if not isinstance(arguments, list):
                raise self.syntax(f"task {node.name!r}: 'command.arguments' is not a list", node.name)
            node.arguments = [str(argument) for argument in arguments]

    def resources(self, node: Node, task: Mapping[str, Any], memory_keys: tuple[tuple[str, float], ...]) -> None:
        """Memory (bytes), priority and logical task name of one task."""
        owner = f"task {node.name!r}"
        for key, unit in memory_keys:
            if task.get(key) is not None:
                node.memory = self.number(task[key], key, owner, node.source_line) * unit
                break
        priority = task.get("priority")
        if priority is not None:
            if (isinstance(priority, bool) or not isinstance(priority, (int, float)) or not math.isfinite(priority)
                    or priority != int(priority) or not -(2**31) <= priority < 2**31):
                raise self.syntax(f"{owner}: priority {priority!r} must be a whole number (a 32-bit integer)", node.name)
            node.priority = int(priority)
        for key in ("category", "type"):
            if isinstance(task.get(key), str) and task[key]:
                node.transformation = task[key]
                break

    def cpus(self, node: Node, value: Any) -> None:
        if value is None:
            return
        count = self.number(value, "core count", f"task {node.name!r}", node.source_line)
        if count != int(count) or count < 1:
            raise self.syntax(f"task {node.name!r}: core count {value!r} must be a whole number >= 1", node.name)
        node.cpus = int(count)

    # -- 1.5+ -------------------------------------------------------------
    def read_15(self, part: dict[str, Any]) -> Workflow:
        spec = self.mapping(part["specification"], "'workflow.specification'")
        tasks = self.task_list(spec.get("tasks"), "'workflow.specification.tasks'")
        sizes: dict[str, float] = {}
        for entry in self.task_list(spec.get("files", []), "'workflow.specification.files'"):
            file_id = self.string(entry, "id", "a file of 'workflow.specification.files'")
            if entry.get("sizeInBytes") is not None:
                line = self.line_of(file_id, "id", -1)
                sizes[file_id] = self.number(entry["sizeInBytes"], "sizeInBytes", f"file {file_id!r}", line)
        for task in tasks:
            node = self.add_node(self.string(task, "id", "a specification task"), "id")
            self.resources(node, task, ())
            for key, link in (("inputFiles", "input"), ("outputFiles", "output")):
                for name in self.strings(task.get(key), repr(key), node.name):
                    node.files.append(FileUse(name, link, sizes.get(name)))  # type: ignore[arg-type]
        resolve = {name: name for name in self.workflow.nodes}
        for task in tasks:
            name = task["id"]
            self.link(name, self.strings(task.get("parents"), "'parents'", name), resolve, as_parent=True)
            self.link(name, self.strings(task.get("children"), "'children'", name), resolve, as_parent=False)
        execution = part.get("execution")
        if execution is not None:
            execution = self.mapping(execution, "'workflow.execution'")
            for entry in self.task_list(execution.get("tasks", []), "'workflow.execution.tasks'"):
                task_id = self.string(entry, "id", "an execution task")
                node = self.workflow.nodes.get(task_id)
                if node is None:
                    raise DagError(
                        f"execution task {task_id!r} is not in workflow.specification.tasks",
                        path=self.path,
                        line=self.line_of(task_id, "id", -1),
                    )
                if entry.get("runtimeInSeconds") is not None:
                    line = self.line_of(task_id, "id", -1)
                    node.runtime = self.number(entry["runtimeInSeconds"], "runtimeInSeconds", f"task {task_id!r}", line)
                self.command(node, entry.get("command"))
                self.cpus(node, entry.get("coreCount"))
                self.resources(node, entry, (("memoryInBytes", 1.0),))
                if node.transformation is None and node.executable:
                    node.transformation = node.executable
        return self.workflow

    # -- 1.0 to 1.4 -------------------------------------------------------
    def read_14(self, tasks: list[dict[str, Any]]) -> Workflow:
        resolve: dict[str, str] = {}
        for task in tasks:
            node = self.add_node(self.string(task, "name", "a task"), "name")
            resolve[node.name] = node.name
            if isinstance(task.get("id"), str):
                resolve.setdefault(task["id"], node.name)
            for key in ("runtimeInSeconds", "runtime"):
                if task.get(key) is not None:
                    node.runtime = self.number(task[key], key, f"task {node.name!r}", node.source_line)
                    break
            if "command" in task:
                self.command(node, task["command"])
            elif isinstance(task.get("arguments"), list):
                node.arguments = [str(argument) for argument in task["arguments"]]
            self.cpus(node, task.get("cores"))
            # 1.4's "memory" is in KiB (resident set size), "memoryInBytes" in bytes
            self.resources(node, task, (("memoryInBytes", 1.0), ("memory", 1024.0)))
            if node.transformation is None and node.executable:
                node.transformation = node.executable
            for entry in self.task_list(task.get("files", []), f"task {node.name!r}: 'files'"):
                self.file_use(node, entry)
        for task in tasks:
            name = task["name"]
            self.link(name, self.strings(task.get("parents"), "'parents'", name), resolve, as_parent=True)
            self.link(name, self.strings(task.get("children"), "'children'", name), resolve, as_parent=False)
        return self.workflow

    def file_use(self, node: Node, entry: dict[str, Any]) -> None:
        name = self.string(entry, "name", f"a file of task {node.name!r}")
        link = str(entry.get("link", "input")).lower()
        if link not in ("input", "output"):
            raise self.syntax(f"task {node.name!r}: file {name!r} has link {link!r}, not input/output", node.name)
        size = entry.get("sizeInBytes", entry.get("size"))
        if size is not None:
            size = self.number(size, f"size of file {name!r}", f"task {node.name!r}", node.source_line)
        node.files.append(FileUse(name, link, size))  # type: ignore[arg-type]
