"""Read Pegasus DAX (abstract workflow XML, versions 2.1 to 3.x) into a :class:`Workflow`.

What is read, per ``<job>`` (and ``<dag>``/``<dax>`` sub-workflow jobs):

* ``id`` → the node name (DAX ids such as ``ID00000`` are valid DAGMan names);
* ``name`` → :attr:`Node.transformation`, and :attr:`Node.executable` (the
  logical transformation name), or the
  local path of a ``<executable>`` catalog entry of that name whose ``<pfn
  url="file://...">`` names a file (DAX 3.x);
* ``runtime`` attribute (seconds, the WorkflowSim/Pegasus-generator
  convention), else a ``<profile namespace="pegasus" key="runtime">`` →
  :attr:`Node.runtime`; a ``cores`` (pegasus) or ``request_cpus`` (condor)
  profile → :attr:`Node.cpus`; a ``memory`` (pegasus) or ``request_memory``
  (condor) profile, MiB → :attr:`Node.memory` (bytes); a ``priority``
  (condor) profile → :attr:`Node.priority`;
* ``<argument>`` text, with the file names of embedded ``<filename file=>``
  (2.1) / ``<file name=>`` (3.x) elements, split on blanks → :attr:`Node.arguments`;
* ``<uses file|name= link= size=>`` → :attr:`Node.files` (``inout`` gives an
  input and an output use; ``checkpoint`` an output);
* ``<dag file=>`` / ``<dax file=>`` → a node of kind ``SUBDAG`` whose
  :attr:`Node.submit` is that file, as written.

``<child ref=><parent ref=/></child>`` give the edges. The XML is read with
expat so that every error names the file and line at fault.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from urllib.parse import unquote, urlparse
from xml.parsers import expat

from condor_rlrep.dag.cycles import check_acyclic
from condor_rlrep.dag.model import FileUse, Node, Workflow
from condor_rlrep.errors import DagError, DagSyntaxError

__all__ = ["parse_dax", "read_dax"]

log = logging.getLogger(__name__)

_JOB_TAGS = frozenset({"job", "dag", "dax"})
_RUNTIME_PROFILE_KEYS = frozenset({("pegasus", "runtime"), ("", "runtime")})
_CPU_PROFILE_KEYS = frozenset({("pegasus", "cores"), ("condor", "request_cpus")})
_MEMORY_PROFILE_KEYS = frozenset({("pegasus", "memory"), ("condor", "request_memory")})  # MiB
_PRIORITY_PROFILE_KEYS = frozenset({("condor", "priority")})
_MIB = 1024 * 1024


def read_dax(path: str | os.PathLike[str]) -> Workflow:
    """Read the DAX file at ``path`` (see :func:`parse_dax`)."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise DagError(f"cannot read the DAX file: {err.strerror or err}", path=str(path)) from err
    return parse_dax(data, path=str(path))


def parse_dax(source: str | bytes, path: str | None = None) -> Workflow:
    """Parse DAX text into a :class:`Workflow` (nodes in file order).

    Raises :class:`DagSyntaxError` for malformed XML or attribute values,
    :class:`DagError` for duplicate ids and unknown ``ref``s, and
    :class:`CycleError` when the dependencies contain a cycle; each names
    ``path`` and the line at fault.
    """
    builder = _Builder(path)
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.buffer_text = True
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.text
    # A DAX is plain XML: a DTD (internal or external) and entity declarations
    # are refused outright, not left to libexpat's defaults (external entities
    # could read local files; nested internal ones expand exponentially).
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = builder.refuse_doctype
    parser.EntityDeclHandler = builder.refuse_entity
    parser.ExternalEntityRefHandler = builder.refuse_external
    builder.parser = parser
    try:
        parser.Parse(source, True)
    except expat.ExpatError as err:
        raise DagSyntaxError(
            f"not well-formed XML: {expat.ErrorString(err.code)} (column {err.offset + 1})",
            path=path,
            line=err.lineno,
        ) from err
    except (LookupError, ValueError) as err:  # expat asked Python for an encoding it does not know
        raise DagSyntaxError(f"XML declaration: {err} (a DAX is UTF-8 or another known encoding)",
                             path=path, line=1) from None
    return builder.finish()


class _Builder:
    """expat callbacks building the workflow; state is the element stack."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.parser: expat.XMLParserType | None = None
        self.stack: list[str] = []
        self.workflow = Workflow(source_path=path)
        self.job: Node | None = None
        self.job_runtime_attr = False
        self.args: list[str] | None = None
        self.profile: tuple[str, str, int] | None = None  # (namespace, key, line)
        self.profile_text: list[str] = []
        self.catalog_name: str | None = None  # inside <executable name=...>
        self.catalog: dict[str, str] = {}  # transformation name -> local path
        self.child: str | None = None
        self.edge_lines: dict[tuple[str, str], int] = {}
        self.refs: list[tuple[str, str, int]] = []  # (parent, child, line), checked at the end

    # -- helpers ---------------------------------------------------------
    @property
    def line(self) -> int:
        assert self.parser is not None
        return self.parser.CurrentLineNumber

    def syntax(self, message: str, line: int | None = None) -> DagSyntaxError:
        return DagSyntaxError(message, path=self.path, line=self.line if line is None else line)

    def number(self, value: str, what: str, line: int | None = None) -> float:
        try:
            number = float(value)
        except ValueError:
            raise self.syntax(f"{what} {value!r} is not a number", line) from None
        if not math.isfinite(number) or number < 0:
            raise self.syntax(f"{what} {value!r} must be a finite number >= 0", line)
        return number

    # -- expat callbacks -------------------------------------------------
    def refuse_doctype(self, name: str, system_id: str | None, public_id: str | None, has_internal: int) -> None:
        raise self.syntax(f"<!DOCTYPE {name}>: a DAX may not have a DTD (refused: DTDs and entities are not read)")

    def refuse_entity(self, name: str, *_rest: object) -> None:
        raise self.syntax(f"entity declaration {name!r}: refused (DTDs and entities are not read)")

    def refuse_external(self, context: str | None, base: str | None, system_id: str | None, public_id: str | None) -> int:
        raise self.syntax(f"external entity {system_id!r}: refused (DTDs and entities are not read)")

    def start(self, qname: str, attrs: dict[str, str]) -> None:
        tag = qname.rpartition(" ")[2]
        depth = len(self.stack)
        self.stack.append(tag)
        if depth == 0:
            if tag != "adag":
                raise self.syntax(f"root element is <{tag}>, not a DAX <adag>")
            return
        if depth == 1:
            if tag in _JOB_TAGS:
                self.start_job(tag, attrs)
            elif tag == "child":
                self.child = self.required(attrs, "ref", tag)
            elif tag == "executable":
                self.catalog_name = attrs.get("name")
            return
        parent = self.stack[-2]
        if self.job is not None:
            self.start_in_job(tag, parent, attrs)
        elif tag == "parent" and parent == "child" and self.child is not None:
            ref = self.required(attrs, "ref", tag)
            self.refs.append((ref, self.child, self.line))
        elif tag == "pfn" and parent == "executable" and self.catalog_name:
            local = _local_path(attrs.get("url", ""))
            if local is not None:
                self.catalog.setdefault(self.catalog_name, local)

    def start_job(self, tag: str, attrs: dict[str, str]) -> None:
        name = self.required(attrs, "id", tag)
        if name in self.workflow.nodes:
            first = self.workflow.nodes[name].source_line
            raise DagError(f"duplicate job id {name!r} (first defined on line {first})", path=self.path, line=self.line)
        node = Node(name=name, source_path=self.path, source_line=self.line)
        if tag == "job":
            node.executable = node.transformation = attrs.get("name")
        else:
            node.kind = "SUBDAG"
            node.submit = attrs.get("file") or attrs.get("name")  # name= accepted as well
            if not node.submit:
                raise self.syntax(f"<{tag} id={name!r}> without the file= attribute")
        runtime = attrs.get("runtime")
        self.job_runtime_attr = runtime is not None
        if runtime is not None:
            node.runtime = self.number(runtime, f"job {name!r}: runtime")
        self.job = node
        self.workflow.nodes[name] = node

    def start_in_job(self, tag: str, parent: str, attrs: dict[str, str]) -> None:
        assert self.job is not None
        if parent in _JOB_TAGS and len(self.stack) == 3:
            if tag == "argument":
                self.args = []
            elif tag == "uses":
                self.add_use(attrs)
            elif tag == "profile":
                self.profile = (attrs.get("namespace", "").lower(), attrs.get("key", "").lower(), self.line)
                self.profile_text = []
        elif parent == "argument" and self.args is not None and tag in ("file", "filename"):
            # DAX 2.1 writes <filename file=>, 3.x <file name=>
            self.args.append(attrs.get("name") or attrs.get("file") or "")

    def add_use(self, attrs: dict[str, str]) -> None:
        assert self.job is not None
        name = attrs.get("file") or self.required(attrs, "name", "uses")
        link = attrs.get("link", "input").lower()
        size_text = attrs.get("size")
        size = None if size_text is None else self.number(size_text, f"file {name!r}: size")
        if link in ("input", "inout"):
            self.job.files.append(FileUse(name, "input", size))
        if link in ("output", "inout", "checkpoint"):
            self.job.files.append(FileUse(name, "output", size))
        elif link not in ("input", "inout", "none"):
            raise self.syntax(f"job {self.job.name!r}: unknown link {link!r} of file {name!r}")

    def text(self, data: str) -> None:
        if self.profile is not None and len(self.stack) == 3:
            self.profile_text.append(data)
        elif self.args is not None:
            self.args.append(data)

    def end(self, qname: str) -> None:
        tag = self.stack.pop()
        depth = len(self.stack)
        if depth == 1:
            if tag in _JOB_TAGS:
                self.job = None
            elif tag == "child":
                self.child = None
            elif tag == "executable":
                self.catalog_name = None
        elif depth == 2 and self.job is not None:
            if tag == "argument" and self.args is not None:
                self.job.arguments = "".join(self.args).split()
                self.args = None
            elif tag == "profile" and self.profile is not None:
                self.end_profile()

    def end_profile(self) -> None:
        assert self.job is not None and self.profile is not None
        namespace, key, line = self.profile
        value = "".join(self.profile_text).strip()
        self.profile = None
        if (namespace, key) in _RUNTIME_PROFILE_KEYS and not self.job_runtime_attr:
            self.job.runtime = self.number(value, f"job {self.job.name!r}: runtime profile", line)
        elif (namespace, key) in _CPU_PROFILE_KEYS:
            cpus = self.number(value, f"job {self.job.name!r}: {key} profile", line)
            if cpus != int(cpus) or cpus < 1:
                raise self.syntax(f"job {self.job.name!r}: {key} profile {value!r} must be a whole number >= 1", line)
            self.job.cpus = int(cpus)
        elif (namespace, key) in _MEMORY_PROFILE_KEYS:
            self.job.memory = self.number(value, f"job {self.job.name!r}: {key} profile (MiB)", line) * _MIB
        elif (namespace, key) in _PRIORITY_PROFILE_KEYS:
            try:
                self.job.priority = int(value)
            except ValueError:
                raise self.syntax(f"job {self.job.name!r}: priority profile {value[:40]!r} is not a whole number", line) from None
            if not -(2**31) <= self.job.priority < 2**31:
                raise self.syntax(f"job {self.job.name!r}: priority profile is out of range", line)

    def required(self, attrs: dict[str, str], key: str, tag: str) -> str:
        value = attrs.get(key)
        if not value:
            raise self.syntax(f"<{tag}> without the {key}= attribute")
        return value

    # -- after the document ----------------------------------------------
    def finish(self) -> Workflow:
        nodes = self.workflow.nodes
        for node in nodes.values():
            if node.executable is not None and node.executable in self.catalog:
                node.executable = self.catalog[node.executable]
        for parent, child, line in self.refs:
            if child not in nodes:
                raise DagError(f"<child ref={child!r}> names no job", path=self.path, line=line)
            if parent not in nodes:
                raise DagError(f"<parent ref={parent!r}> (of child {child!r}) names no job", path=self.path, line=line)
            self.workflow.edges.add((parent, child))
            self.edge_lines.setdefault((parent, child), line)
        check_acyclic(self.workflow, edge_lines=self.edge_lines)
        log.debug("read DAX %s: %d jobs, %d edges", self.path, len(nodes), len(self.workflow.edges))
        return self.workflow


def _local_path(url: str) -> str | None:
    """The local file a ``file://`` (or bare path) URL names, if it exists here."""
    parsed = urlparse(url)
    if parsed.scheme not in ("file", ""):
        return None
    candidate = unquote(parsed.path)
    return candidate if candidate and os.path.isfile(candidate) else None
