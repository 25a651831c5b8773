"""Parser of HTCondor DAGMan DAG files (the language of HTCondor 25.x).

``parse_dag(lines)`` is pure apart from the ``include_loader`` it is given
(INCLUDE and SPLICE read other files); ``read_dag(path)`` reads a file.

Like DAGMan, a DAG file is processed in two passes: node-defining commands
(JOB, FINAL, SERVICE, PROVISIONER, SUBDAG, SPLICE, SUBMIT-DESCRIPTION, and
INCLUDE, which is textual) first, then every other command in file order, so
``PARENT`` may precede the ``JOB`` lines it names. ``ALL_NODES`` expands to the
nodes of the DAG file being parsed (INCLUDEd files count, splices do not),
never to FINAL or SERVICE nodes.

Splices are inlined: their nodes are named ``splice+node`` (nested:
``a+b+node``), a node DIR inside a splice becomes relative to the splice DIR,
and an edge to a splice attaches to its initial nodes (no parents inside the
splice) as children and to its terminal nodes (no children) as parents.
CONNECT/PIN_IN/PIN_OUT become plain edges.

A dependency with more than one parent and more than one child (after
splices are resolved and repeats dropped) becomes a :class:`~.model.Join`,
as DAGMan makes it a join node: m + n edges instead of m·n.

Cost is linear in the input, in any line order, and INCLUDE/SPLICE nesting
is followed without recursion (any depth, like DAGMan); a file that names
itself, directly or not, is an error.

Where this parser knowingly differs from DAGMan 25.x:

* INCLUDE and SPLICE files (and a SPLICE's DIR) are resolved relative to the
  directory of the file that names them, not to DAGMan's working directory.
* Node names containing a quote or a blank are rejected (DAGMan keeps the
  quote characters in the name); splice names follow the node-name rules.
* CONFIG, SET_JOB_ATTR, ENV, DOT, NODE_STATUS_FILE and JOBSTATE_LOG inside a
  splice are ignored (DAGMan ignores the first four); CONFIG is kept as written
  (DAGMan makes it absolute). SUBMIT-DESCRIPTION names are global.
* A FINAL node inside a splice is an error.
"""

from __future__ import annotations

import gc
import os
import posixpath
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import compress, count, islice, repeat
from operator import ge, itemgetter, le, lshift, not_, or_
from sys import intern
from typing import Any

from ..errors import CycleError, DagError, DagSyntaxError
from .commands import COMMANDS, SYNTAX, VARS_LINE, display_keyword, syntax_error
from .lexer import LexError, LineSource, normalize_keyword, split_tokens
from .model import JOIN_PREFIX, Join, Node, VarAssignment, Workflow

__all__ = ["parse_dag", "read_dag", "RESERVED_NAMES", "SYNTAX"]

Loader = Callable[[str], list[str]]

RESERVED_NAMES = frozenset({"PARENT", "CHILD", "ALL_NODES"})

_ALL_KEYWORDS = (
    "JOB", "FINAL", "SERVICE", "PROVISIONER", "SUBDAG", "SPLICE", "SUBMIT_DESCRIPTION", "INCLUDE",
    "PARENT", "WEAK", "SCRIPT", "PRE_SKIP", "RETRY", "ABORT_DAG_ON", "VARS", "PRIORITY", "CATEGORY",
    "MAXJOBS", "TOLERANCE", "DONE", "SAVE_POINT_FILE", "CONFIG", "SET_JOB_ATTR", "ENV", "DOT",
    "NODE_STATUS_FILE", "JOBSTATE_LOG", "REJECT", "PIN_IN", "PIN_OUT", "CONNECT",
)
# Spellings seen in practice -> keyword, so most lines skip normalize_keyword().
_KEYWORDS = {
    spelling: kw
    for kw in _ALL_KEYWORDS
    for spelling in (kw, kw.lower(), kw.replace("_", "-"), kw.lower().replace("_", "-"))
}

_NO_EDGES = frozenset({"FINAL", "SERVICE", "PROVISIONER"})
_EDGE_KINDS = frozenset({"JOB", "SUBDAG"})
_NO_ALL_NODES = frozenset({"FINAL", "SERVICE"})
_NODE_KINDS = {"JOB": "JOB", "FINAL": "FINAL", "SERVICE": "SERVICE", "PROVISIONER": "PROVISIONER", "SUBDAG": "SUBDAG"}

# Bulk path: runs of at least _MIN_RUN lines of one plain shape are handled a
# chunk of up to _CHUNK lines at a time with C-level string and map operations.
# A chunk with anything unusual goes through the line-by-line path instead.
_MIN_RUN = 16
_CHUNK = 8192
# Parses that leave at least this many new GC-tracked objects promote them (parse_dag).
_PROMOTE_MIN = 50_000
_first = itemgetter(0)
_second = itemgetter(1)


def _read_lines(path: str) -> list[str]:
    # DAGMan reads lines with std::getline: only "\n" ends a line (not the
    # other separators str.splitlines() knows); "\r" is trimmed later.
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        text = f.read()
    if "\x00" in text:
        _raise_nul(text.split("\n"), path)
    return text.split("\n")


def _raise_nul(lines: list[str], path: str | None) -> None:
    lineno = next(n for n, line in enumerate(lines, 1) if "\x00" in line)
    raise DagSyntaxError("line contains a NUL byte (a DAG file is text)", path=path, line=lineno)


def _checked_lines(lines: list[str], path: str | None) -> list[str]:
    """``lines`` from a caller or a custom loader, refused if one holds a NUL byte."""
    if "\x00" in "".join(lines):
        _raise_nul(lines, path)
    return lines


@dataclass
class _Splice:
    name: str
    initial: list[str]
    terminal: list[str]
    pins_in: dict[int, list[str]]
    pins_out: dict[int, list[str]]


@dataclass
class _Scope:
    """One DAG file's namespace: the top DAG or a splice (with its INCLUDEs)."""

    prefix: str  # "" or "a+b+"
    node_dir: str | None  # splice DIR that node DIRs are relative to
    is_splice: bool
    own: dict[str, Node] = field(default_factory=dict)  # local name -> node
    linkable: dict[str, tuple[str, int]] = field(default_factory=dict)  # local -> (full name, file position), JOB/SUBDAG
    splices: dict[str, _Splice] = field(default_factory=dict)
    deferred: list[tuple[str, str, str | None, int]] = field(default_factory=list)
    members: list[str] = field(default_factory=list)  # nodes incl. nested splices (splices only)
    edge_list: list[tuple[str, str]] = field(default_factory=list)  # splices only
    join_list: list[Join] = field(default_factory=list)  # splices only
    pins_in: dict[int, list[str]] = field(default_factory=dict)
    pins_out: dict[int, list[str]] = field(default_factory=dict)
    vars_deferred: bool = False
    """A VARS line went to pass 2: later VARS lines must follow it there (VARS order matters)."""


def _run_end(lines: list[str], start: int, prefix: str) -> int:
    """End of the run of ``lines[start:]`` that start with ``prefix`` (at most _CHUNK lines).

    Cost is proportional to the run found (plus a constant), whatever follows
    it: stretches of doubling length are checked at once (a line holds no
    newline, so each "\n" + prefix in their join starts a line), and the
    first stretch that fails is scanned line by line. (Bisecting over the
    whole chunk, and ``islice(lines, start, …)``, which steps through every
    line before ``start``, made a file whose lines come in random order
    parse in quadratic time: a short run is tried at almost every line.)
    """
    limit = min(len(lines), start + _CHUNK)
    end = start
    step = 4
    while end < limit:
        hi = min(limit, end + step)
        if ("\n" + "\n".join(lines[end:hi])).count("\n" + prefix) == hi - end:
            end = hi
            step *= 2
            continue
        misses = map(not_, map(str.startswith, lines[end:hi], repeat(prefix)))
        return next(compress(count(end), misses), hi)
    return end


def _skip_lines(physical: Iterable[tuple[int, str]], n: int) -> None:
    """Consume ``n`` lines of the shared physical-line iterator."""
    if n > 0:
        next(islice(physical, n - 1, n), None)


def _plain_blob(run: list[str]) -> str | None:
    """The lines of ``run`` joined by blanks, if they hold only printable ASCII
    without quotes, ``=`` or backslashes (so ``str.split`` tokenizes them as
    DAGMan does, and no line continues on the next)."""
    blob = " ".join(run)
    if (
        blob.isascii() and blob.isprintable()
        and '"' not in blob and "'" not in blob and "=" not in blob and "\\" not in blob
    ):
        return blob
    return None


class _Parser:
    def __init__(self, loader: Loader, allow_plus: bool):
        self.wf = Workflow()
        self.loader = loader
        self.allow_plus = allow_plus
        self.file_stack: list[str] = []  # INCLUDE/SPLICE chain being read, outermost first
        self.reading: set[str] = set()  # the same, for O(1) recursion checks
        self.sources: list[tuple[_Scope, list[str], str | None]] = []  # to locate a cycle's edge
        self.index: dict[str, int] = {}  # node -> position in file order
        # every edge added, as parent position << 32 | child position (repeats
        # harmless): the cycle check then needs no name lookups
        self.edge_keys: list[int] = []
        # Edges seen from an earlier to a later node (forward) and the reverse: when
        # all go one way, file order (or its reverse) is a topological order.
        self.forward = False
        self.backward = False

    # -- errors -----------------------------------------------------------
    syntax = staticmethod(syntax_error)

    def tokens(self, kw: str, line: str, path: str | None, lineno: int) -> tuple[list[str], list[str]]:
        try:
            return split_tokens(line)
        except LexError as err:
            raise self.syntax(kw, str(err), path, lineno) from None

    # -- files ------------------------------------------------------------
    def load(self, kind: str, ref: str, resolved: str, path: str | None, line: int) -> list[str]:
        if "\x00" in ref:
            raise DagSyntaxError(f"{kind}: file name {ref!r} contains a NUL byte", path=path, line=line)
        key = posixpath.normpath(resolved)
        if key in self.reading:
            chain = " -> ".join([*self.file_stack[self.file_stack.index(key) :], key])
            raise DagError(f"{kind} recursion: '{ref}' is already being read ({chain})", path=path, line=line)
        try:
            lines = self.loader(resolved)
        except FileNotFoundError as err:
            raise DagError(f"{kind} file '{ref}' not found (looked for {resolved})", path=path, line=line) from err
        except OSError as err:
            raise DagError(f"{kind} file '{ref}' cannot be read: {err.strerror or err}", path=path, line=line) from err
        except ValueError as err:  # e.g. a path the OS cannot take
            raise DagError(f"{kind} file '{ref}' cannot be read: {err}", path=path, line=line) from err
        return lines if self.loader is _read_lines else _checked_lines(list(lines), resolved)

    def run_file(self, scope: _Scope, lines: list[str], path: str | None, file_dir: str) -> None:
        """Pass 1 over one file and, through INCLUDE and SPLICE, every file it
        names, to any depth without recursion: each file is a generator
        (:meth:`file_pass`) that yields the generator of a file it needs read
        next, and this loop runs the innermost one until it is done."""
        stack: list[Iterator[Any]] = [self.file_pass(scope, lines, path, file_dir)]
        try:
            while stack:
                try:
                    stack.append(next(stack[-1]))
                except StopIteration:
                    stack.pop()
        finally:
            for pending in reversed(stack):  # an error: let each file's cleanup run
                pending.close()

    def enter(self, path: str | None) -> None:
        if path is not None:
            key = posixpath.normpath(path)
            self.file_stack.append(key)
            self.reading.add(key)

    def leave(self, path: str | None) -> None:
        if path is not None:
            self.reading.discard(self.file_stack.pop())

    def file_pass(self, scope: _Scope, lines: list[str], path: str | None, file_dir: str) -> Iterator[Iterator[Any]]:
        """Pass 1 over one file: define nodes, splices, descriptions; defer the rest.

        A generator: for an INCLUDE or SPLICE it yields the generator that
        reads the named file (:meth:`run_file` runs it) and goes on afterwards.

        ``JOB name file``, ``PARENT a CHILD b`` between known nodes and
        ``VARS node key="value"`` of a known node, the bulk of big DAGs, take a
        fast path (long runs of them a bulk path, :meth:`bulk_jobs` ...).
        Edges are order-independent, so adding them in pass 1 is the same as
        adding them in pass 2; a VARS line is applied in pass 1 only while no
        earlier VARS line of the scope was deferred, which keeps VARS order.
        """
        self.enter(path)
        self.sources.append((scope, lines, path))
        try:
            src = LineSource(lines)
            physical = src.physical
            pass1 = _PASS1
            kwcache = _KEYWORDS
            deferred = scope.deferred
            own = scope.own
            nodes = self.wf.nodes
            index = self.index
            top = not scope.is_splice
            edges = self.wf.edges
            weak_edges = self.wf.weak_edges
            linkable = scope.linkable
            edge_list = scope.edge_list if scope.is_splice else None
            vars_line = VARS_LINE.match
            nlines = len(lines)
            keys_append = self.edge_keys.append
            bulk_from = 0  # no bulk attempt before this line number (a run that failed)
            backoff = 0  # lines skipped after a failed attempt: doubles while attempts keep failing
            fwd = bwd = False  # edges seen going forward / backward in file order
            for lineno, line in physical:
                line = line.strip()
                if not line or line[0] == "#" or (line[0] == "/" and line.startswith("//")):
                    continue
                if line[-1] == "\\":
                    line = src.continued(line)
                    if not line:
                        continue
                if line.startswith("PARENT "):
                    kw = "PARENT"
                elif line.startswith("JOB "):
                    kw = "JOB"
                elif line.startswith("VARS "):
                    kw = "VARS"
                else:
                    first = line.partition(" ")[0]
                    kw = kwcache.get(first)
                    if kw is None:
                        first = line.split(None, 1)[0]
                        kw = normalize_keyword(first)
                        if kw not in _NODE_KINDS and kw not in pass1 and kw not in COMMANDS:
                            raise DagSyntaxError(f"'{first}' is not a valid DAG command", path=path, line=lineno)
                if (
                    lineno > bulk_from and kw in _BULK and lineno + _MIN_RUN <= nlines
                    and lines[lineno + _MIN_RUN - 2].startswith(_BULK[kw])
                ):
                    # a long run of lines of one kind: try them all at once
                    start = lineno - 1
                    end = _run_end(lines, start, _BULK[kw])
                    if end - start >= _MIN_RUN:
                        run = lines[start:end]
                        if kw == "PARENT":
                            done = edge_list is None and self.bulk_edges(scope, run)
                        elif kw == "JOB":
                            done = top and self.bulk_jobs(scope, run, path, lineno)
                        else:
                            done = self.bulk_vars(scope, run)
                        if done:
                            _skip_lines(physical, end - start - 1)
                            backoff = 0
                            continue
                    # Lines in random order make short runs everywhere: back off, so
                    # failed attempts cost a bounded share of the line-by-line path.
                    bulk_from = end + backoff
                    backoff = min(2 * backoff + 1, _CHUNK)
                if kw == "PARENT":
                    # inlined fast_edge(): this line is the hottest of all
                    parts = line.split()
                    if len(parts) == 4 and "=" not in line and line.isascii():
                        pv = linkable.get(parts[1])
                        cv = linkable.get(parts[3])
                        if pv is not None and cv is not None and parts[2].upper() == "CHILD":
                            e = (pv[0], cv[0])
                            before = len(edges)
                            edges.add(e)
                            if len(edges) != before:
                                pp, cp = pv[1], cv[1]
                                keys_append(pp << 32 | cp)
                                if pp < cp:
                                    fwd = True
                                elif pp > cp:
                                    bwd = True
                                else:
                                    fwd = bwd = True
                                if edge_list is not None:
                                    edge_list.append(e)
                            elif weak_edges:
                                weak_edges.discard(e)  # a strong edge wins over a weak one
                            continue
                    deferred.append((kw, line, path, lineno))
                elif kw == "JOB":
                    parts = line.split()
                    name = parts[1] if len(parts) == 3 else ""
                    if (
                        top and name and name not in nodes  # top scope: own is a subset of nodes
                        and "+" not in name and '"' not in line and "'" not in line and "=" not in line
                        and line.isascii() and name.isprintable() and parts[2][0] not in "{@"
                        and name.upper() not in RESERVED_NAMES
                        and name not in scope.splices and name not in self.wf.submit_descriptions
                    ):
                        pos = index[name] = len(nodes)
                        linkable[name] = (name, pos)
                        own[name] = nodes[name] = Node(name=name, submit=parts[2], source_path=path, source_line=lineno)
                        continue
                    try:
                        self.node(scope, kw, line, src, path, lineno)
                    except LexError as err:
                        raise self.syntax(kw, str(err), path, lineno) from None
                elif kw == "VARS":
                    if not scope.vars_deferred and (m := vars_line(line)) is not None:
                        node = own.get(m[1])
                        if node is not None:
                            node.vars.append(VarAssignment(intern(m[2]), m[3]))
                            continue
                    scope.vars_deferred = True
                    deferred.append((kw, line, path, lineno))
                elif kw in _NODE_KINDS:
                    try:
                        self.node(scope, kw, line, src, path, lineno)
                    except LexError as err:
                        raise self.syntax(kw, str(err), path, lineno) from None
                elif kw in pass1:
                    nested = pass1[kw](self, scope, line, src, path, lineno, file_dir)
                    if nested is not None:
                        yield nested
                else:
                    deferred.append((kw, line, path, lineno))
        finally:
            self.leave(path)
        self.forward |= fwd
        self.backward |= bwd

    # -- bulk paths (each all or nothing: False leaves everything untouched) --
    def bulk_jobs(self, scope: _Scope, run: list[str], path: str | None, lineno: int) -> bool:
        """Define the nodes of a run of ``JOB name file`` lines (top scope), as the
        line-by-line fast path would."""
        blob = _plain_blob(run)
        if blob is None or "+" in blob or " {" in blob or " @" in blob:
            return False
        k = len(run)
        words = blob.split()
        # k "JOB" words, all at the start of a 3-word group: every line is JOB name file
        if len(words) != 3 * k or words.count("JOB") != k or words[0::3].count("JOB") != k:
            return False
        names = words[1::3]
        nodes = self.wf.nodes
        if (
            len(set(names)) != k or not nodes.keys().isdisjoint(names)
            or not RESERVED_NAMES.isdisjoint(map(str.upper, names))
            or not scope.splices.keys().isdisjoint(names)
            or not self.wf.submit_descriptions.keys().isdisjoint(names)
        ):
            return False
        first = len(nodes)
        new = [
            Node(name=name, submit=submit, source_path=path, source_line=number)
            for name, submit, number in zip(names, words[2::3], range(lineno, lineno + k))
        ]
        positions = range(first, first + k)
        self.index.update(zip(names, positions))
        scope.linkable.update(zip(names, zip(names, positions)))
        pairs = list(zip(names, new))
        nodes.update(pairs)
        scope.own.update(pairs)
        return True

    def bulk_edges(self, scope: _Scope, run: list[str]) -> bool:
        """Add the edges of a run of ``PARENT a CHILD b`` lines between known
        nodes (a scope that is not a splice)."""
        blob = _plain_blob(run)
        if blob is None:
            return False
        k = len(run)
        words = blob.split()
        if (
            len(words) != 4 * k or words.count("PARENT") != k
            or words[0::4].count("PARENT") != k or words[2::4].count("CHILD") != k
        ):
            return False
        linkable = scope.linkable
        pv = list(map(linkable.get, words[1::4]))
        cv = list(map(linkable.get, words[3::4]))
        if None in pv or None in cv:  # a name of no (linkable) node, PARENT or CHILD
            return False
        new = list(zip(map(_first, pv), map(_first, cv)))
        self.wf.edges.update(new)
        if self.wf.weak_edges:
            self.wf.weak_edges.difference_update(new)  # a strong edge wins over a weak one
        # duplicates of earlier edges have the same positions: counting them changes nothing
        pp = list(map(_second, pv))
        cp = list(map(_second, cv))
        self.edge_keys.extend(map(or_, map(lshift, pp, repeat(32)), cp))
        if not self.forward and any(map(le, pp, cp)):
            self.forward = True
        if not self.backward and any(map(ge, pp, cp)):
            self.backward = True
        return True

    def bulk_vars(self, scope: _Scope, run: list[str]) -> bool:
        """Apply a run of ``VARS node key="value"`` lines to known nodes (as pass 2 would)."""
        if scope.vars_deferred:
            return False
        k = len(run)
        found = VARS_LINE.findall("\n".join(run))
        if len(found) != k:  # some line of another shape
            return False
        targets = list(map(scope.own.get, map(_first, found)))
        if None in targets:
            return False
        # Interned keys: one string per macro name, and readers comparing a key
        # with a constant (ESTIMATE_MACRO ...) hit the identity fast path.
        for node, (_name, key, value) in zip(targets, found):
            node.vars.append(VarAssignment(intern(key), value))
        return True

    def fast_edge(self, scope: _Scope, line: str) -> bool:
        """Add the edge of a plain ``PARENT a CHILD b`` between known nodes; False otherwise."""
        parts = line.split()
        if len(parts) != 4 or parts[2].upper() != "CHILD" or not line.isascii() or "=" in line:
            return False
        pv = scope.linkable.get(parts[1])
        cv = scope.linkable.get(parts[3])
        if pv is None or cv is None:
            return False
        self.add_edges(scope, [pv[0]], [cv[0]], False)
        return True

    def run_scope(self, scope: _Scope) -> None:
        """Pass 2: every deferred command, in file order.

        Runs of deferred ``PARENT`` lines (a file whose edges come before
        their nodes: every edge is deferred) take the bulk path, as in pass 1.
        """
        fast_edge = self.fast_edge
        deferred = scope.deferred
        bulk = not scope.is_splice
        k, total = 0, len(deferred)
        while k < total:
            kw, line, path, lineno = deferred[k]
            if kw == "PARENT" and bulk:
                end = k + 1
                while end < total and deferred[end][0] == "PARENT":
                    end += 1
                if end - k >= _MIN_RUN and self.bulk_edges(scope, [item[1] for item in deferred[k:end]]):
                    k = end
                    continue
                for kw, line, path, lineno in deferred[k:end]:
                    if not fast_edge(scope, line):
                        self.command(scope, kw, line, path, lineno)
                k = end
                continue
            if not (kw == "PARENT" and fast_edge(scope, line)):
                self.command(scope, kw, line, path, lineno)
            k += 1
        scope.deferred = []

    def command(self, scope: _Scope, kw: str, line: str, path: str | None, lineno: int) -> None:
        try:
            COMMANDS[kw](self, scope, kw, line, path, lineno)
        except LexError as err:
            raise self.syntax(kw, str(err), path, lineno) from None

    # -- pass 1 -----------------------------------------------------------
    def check_name(self, kw: str, name: str, path: str | None, lineno: int) -> None:
        if name.upper() in RESERVED_NAMES:
            raise DagSyntaxError(
                f"{kw}: node name '{name}' is a reserved word (PARENT, CHILD and ALL_NODES are reserved)",
                path=path, line=lineno,
            )
        if not self.allow_plus and "+" in name:
            raise DagSyntaxError(
                f"{kw}: node name '{name}' contains the illegal character '+' (the splice scope separator; "
                "DAGMan accepts it only with DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS = True)",
                path=path, line=lineno,
            )
        if '"' in name or "'" in name or not name.isprintable() or " " in name:
            raise DagSyntaxError(f"{kw}: node name {name!r} contains a quote or a blank", path=path, line=lineno)

    def inline_body(self, kw: str, name: str, opener: str, src: LineSource, path: str | None, lineno: int) -> tuple[str, str]:
        """Read an inline description after ``{`` / ``@=TAG``: (body, rest of the closing line)."""
        if opener.startswith("{"):
            end = "}"
        else:
            end = "@" + opener[2:] if len(opener) > 2 else ""
            if not end:
                raise self.syntax(kw, f"'{name}': no inline description closing token specified (@=TOKEN)", path, lineno)
        body: list[str] = []
        endsp = end + " "
        while (item := src.raw()) is not None:
            line = item[1]
            if line == end or line.startswith(endsp) or line.startswith(end + "\t"):
                return "\n".join(body), line[len(end) :]
            body.append(line)
        raise DagSyntaxError(
            f"{kw} '{name}': unterminated inline submit description (missing closing '{end}' line)",
            path=path, line=lineno,
        )

    def node(self, scope: _Scope, kw: str, line: str, src: LineSource, path: str | None, lineno: int) -> None:
        raws, texts = split_tokens(line)
        i = 1
        if kw == "SUBDAG":
            if len(raws) < 2 or raws[1].upper() != "EXTERNAL":
                raise self.syntax(kw, "missing EXTERNAL keyword", path, lineno)
            i = 2
        if len(raws) <= i:
            raise self.syntax(kw, "missing node name", path, lineno)
        name = raws[i]
        self.check_name(kw, name, path, lineno)
        if len(raws) <= i + 1:
            raise self.syntax(kw, f"no submit description given for node '{name}'", path, lineno)
        desc = texts[i + 1]
        inline = None
        submit: str | None = desc
        if kw != "SUBDAG" and (desc.startswith("{") or desc.startswith("@=")):
            inline, rest = self.inline_body(kw, name, desc, src, path, lineno)
            submit = None
            try:
                raws, texts = split_tokens(rest)
            except LexError as err:
                raise self.syntax(kw, str(err), path, src.lineno) from None
            j = 0
        else:
            j = i + 2
        directory = None
        noop = done = False
        n = len(raws)
        while j < n:
            opt = raws[j].upper()
            if opt == "NOOP":
                noop = True
            elif opt == "DONE":
                done = True
            elif opt == "DIR":
                j += 1
                if j >= n:
                    raise self.syntax(kw, f"node '{name}': no directory given after DIR", path, lineno)
                directory = texts[j]
            else:
                raise self.syntax(kw, f"node '{name}': unexpected token '{raws[j]}'", path, lineno)
            j += 1
        if scope.node_dir is not None:
            directory = _join_dir(scope.node_dir, directory)
        kind = _NODE_KINDS[kw]
        if kind == "FINAL":
            if scope.is_splice:
                raise DagError(f"FINAL node '{name}' is not allowed in a splice", path=path, line=lineno)
            if (old := self.wf.final_node) is not None:
                raise DagError(f"second FINAL node '{name}': FINAL node '{old}' is already defined", path=path, line=lineno)
        self.add_node(scope, name, Node(
            name=scope.prefix + name, kind=kind, submit=submit, inline_submit=inline, directory=directory,
            noop=noop, done=done, source_path=path, source_line=lineno,
        ), path, lineno)

    def add_node(self, scope: _Scope, local: str, node: Node, path: str | None, lineno: int) -> None:
        nodes = self.wf.nodes
        if local in scope.own or node.name in nodes:
            old = nodes[node.name] if node.name in nodes else scope.own[local]
            where = f" (first defined at {old.source_path or '<lines>'}:{old.source_line})"
            raise DagError(f"duplicate node name '{node.name}'{where}", path=path, line=lineno)
        if local in scope.splices:
            raise DagError(f"node name '{local}' is already used by a SPLICE", path=path, line=lineno)
        if local in self.wf.submit_descriptions and not scope.is_splice:
            raise DagError(f"node name '{local}' clashes with a SUBMIT-DESCRIPTION name", path=path, line=lineno)
        scope.own[local] = node
        pos = self.index[node.name] = len(nodes)
        if node.kind in _EDGE_KINDS:
            scope.linkable[local] = (node.name, pos)
        nodes[node.name] = node
        if scope.is_splice and node.kind not in _NO_EDGES:
            scope.members.append(node.name)

    def submit_description(self, scope: _Scope, line: str, src: LineSource, path: str | None, lineno: int, file_dir: str) -> None:
        kw = "SUBMIT_DESCRIPTION"
        raws, texts = self.tokens(kw, line, path, lineno)
        if len(raws) < 2:
            raise self.syntax(kw, "no submit description name given", path, lineno)
        name = raws[1]
        if len(raws) < 3 or not (texts[2].startswith("{") or texts[2].startswith("@=")):
            raise self.syntax(kw, f"'{name}': no inline description ('{{' or '@=TAG') given", path, lineno)
        body, _rest = self.inline_body("SUBMIT-DESCRIPTION", name, texts[2], src, path, lineno)
        descs = self.wf.submit_descriptions
        if name in descs and descs[name] != body:
            raise DagError(f"SUBMIT-DESCRIPTION '{name}' is defined twice", path=path, line=lineno)
        if name in scope.own:
            raise DagError(f"SUBMIT-DESCRIPTION name '{name}' clashes with a node name", path=path, line=lineno)
        descs[name] = body

    def include(self, scope: _Scope, line: str, src: LineSource, path: str | None, lineno: int, file_dir: str) -> Iterator[Any]:
        """The generator reading the INCLUDEd file into ``scope`` (run by :meth:`run_file`)."""
        raws, texts = self.tokens("INCLUDE", line, path, lineno)
        if len(raws) < 2:
            raise self.syntax("INCLUDE", "no file given", path, lineno)
        if len(raws) > 2:
            raise self.syntax("INCLUDE", f"unexpected token '{raws[2]}'", path, lineno)
        ref = texts[1]
        resolved = posixpath.join(file_dir, ref) if file_dir else ref
        lines = self.load("INCLUDE", ref, resolved, path, lineno)
        return self.file_pass(scope, lines, resolved, posixpath.dirname(resolved))

    def splice(self, scope: _Scope, line: str, src: LineSource, path: str | None, lineno: int, file_dir: str) -> Iterator[Any]:
        """The generator reading a SPLICE (run by :meth:`run_file`): it yields
        the splice file's pass 1, then runs its pass 2 and records the splice."""
        kw = "SPLICE"
        raws, texts = self.tokens(kw, line, path, lineno)
        if len(raws) < 2:
            raise self.syntax(kw, "missing splice name", path, lineno)
        name = raws[1]
        self.check_name(kw, name, path, lineno)
        if "+" in name:
            raise DagSyntaxError(f"SPLICE: splice name '{name}' contains '+'", path=path, line=lineno)
        if len(raws) < 3:
            raise self.syntax(kw, f"splice '{name}': missing DAG file", path, lineno)
        ref = texts[2]
        sdir = None
        if len(raws) > 3:
            if raws[3].upper() != "DIR":
                raise self.syntax(kw, f"splice '{name}': unexpected token '{raws[3]}'", path, lineno)
            if len(raws) < 5:
                raise self.syntax(kw, f"splice '{name}': no directory given after DIR", path, lineno)
            if len(raws) > 5:
                raise self.syntax(kw, f"splice '{name}': unexpected token '{raws[5]}'", path, lineno)
            sdir = texts[4]
        if name in scope.splices or name in scope.own:
            raise DagError(f"duplicate splice name '{name}'", path=path, line=lineno)
        # The splice file is read from its DIR, which is relative to the including DAG.
        where = posixpath.join(file_dir, sdir) if sdir else file_dir
        resolved = posixpath.join(where, ref) if where else ref
        lines = self.load("SPLICE", ref, resolved, path, lineno)
        node_dir = scope.node_dir
        if sdir is not None:
            node_dir = _join_dir(node_dir, sdir)
        inner = _Scope(prefix=scope.prefix + name + "+", node_dir=node_dir, is_splice=True)
        return self._splice_steps(scope, name, inner, lines, resolved)

    def _splice_steps(self, scope: _Scope, name: str, inner: _Scope, lines: list[str], resolved: str) -> Iterator[Any]:
        yield self.file_pass(inner, lines, resolved, posixpath.dirname(resolved))
        self.run_scope(inner)
        has_parent = {c for _p, c in inner.edge_list}
        has_child = {p for p, _c in inner.edge_list}
        for join in inner.join_list:
            has_parent.update(join.children)
            has_child.update(join.parents)
        scope.splices[name] = _Splice(
            name=name,
            initial=[m for m in inner.members if m not in has_parent],
            terminal=[m for m in inner.members if m not in has_child],
            pins_in=inner.pins_in,
            pins_out=inner.pins_out,
        )
        if scope.is_splice:
            scope.members.extend(inner.members)
            scope.edge_list.extend(inner.edge_list)
            scope.join_list.extend(inner.join_list)

    # -- pass 2 helpers ---------------------------------------------------
    def targets(self, scope: _Scope, kw: str, name: str, path: str | None, lineno: int, all_nodes: bool = True) -> list[Node]:
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

    def endpoints(self, scope: _Scope, name: str, as_parent: bool, path: str | None, lineno: int) -> list[str]:
        node = scope.own.get(name)
        if node is not None:
            if node.kind in _NO_EDGES:
                raise DagError(f"PARENT/CHILD: {node.kind} node '{name}' cannot have parents or children", path=path, line=lineno)
            return [node.name]
        sp = scope.splices.get(name)
        if sp is not None:
            return sp.terminal if as_parent else sp.initial
        raise DagError(f"PARENT/CHILD: unknown node '{name}'", path=path, line=lineno)

    def add_edges(self, scope: _Scope, parents: list[str], children: list[str], weak: bool,
                  path: str | None = None, lineno: int | None = None) -> None:
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
        elist = scope.edge_list if scope.is_splice else None
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
                if elist is not None:
                    elist.append(e)

    def add_join(self, scope: _Scope, parents: list[str], children: list[str], weak: bool,
                 path: str | None, lineno: int | None) -> None:
        """Every child depends on every parent: one :class:`Join`, O(m + n)."""
        joins = self.wf.joins
        join = Join(
            name=f"{scope.prefix}{JOIN_PREFIX}{len(joins)}", parents=tuple(parents), children=tuple(children),
            weak=weak, source_path=path, source_line=lineno,
        )
        joins.append(join)
        if scope.is_splice:
            scope.join_list.append(join)
        # parents and children are in file order: first/last are the extremes
        index = self.index
        if index[parents[-1]] < index[children[0]]:
            self.forward = True
        elif index[parents[0]] > index[children[-1]]:
            self.backward = True
        else:
            self.forward = self.backward = True


def _join_dir(base: str | None, sub: str | None) -> str | None:
    if base is None:
        return sub
    if sub is None:
        return base
    if posixpath.isabs(sub):
        return sub
    return posixpath.join(base, sub)


_BULK = {"JOB": "JOB ", "PARENT": "PARENT ", "VARS": "VARS "}  # keyword -> line prefix of a bulk run

_PASS1 = {
    "SPLICE": _Parser.splice,
    "SUBMIT_DESCRIPTION": _Parser.submit_description,
    "INCLUDE": _Parser.include,
}

# From this many vertices on, the cycle check of an acyclic DAG (the usual
# case) is cheaper in numpy (~0.1 s at 10^5 nodes and 3·10^5 edges, against
# ~0.6 s for the plain loop below, which stays for small DAGs: numpy's import
# alone costs more than their whole check).
# The cycle check runs level by level in numpy (graph.is_acyclic) from this
# many vertices when numpy is loaded already, or from _NUMPY_IMPORT_MIN
# (where importing it, ~0.1 s, still pays); plain Kahn below.
_NUMPY_ACYCLIC_MIN = 4096
_NUMPY_IMPORT_MIN = 32768
_LOW32 = (1 << 32) - 1


def _numpy_acyclic(wf: Workflow, index: dict[str, int], edge_keys: list[int], total: int) -> bool:
    import numpy as np

    from .graph import is_acyclic

    get = index.__getitem__
    keys = np.array(edge_keys, dtype=np.int64)
    parent_of, child_of = [keys >> 32], [keys & _LOW32]
    for k, join in enumerate(wf.joins, len(index)):
        parent_of += [np.fromiter(map(get, join.parents), np.int64, len(join.parents)),
                      np.full(len(join.children), k, np.int64)]
        child_of += [np.full(len(join.parents), k, np.int64),
                     np.fromiter(map(get, join.children), np.int64, len(join.children))]
    return is_acyclic(total, np.concatenate(parent_of), np.concatenate(child_of))


def _check_acyclic(wf: Workflow, index: dict[str, int], edge_keys: list[int]) -> list[tuple[str, str]] | None:
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


def _locate_edge(p: _Parser, edge: tuple[str, str]) -> tuple[str | None, int | None]:
    """The PARENT/CHILD (or CONNECT) line that created ``edge`` (error path only)."""
    for join in p.wf.joins:
        if join.name in edge:
            return join.source_path, join.source_line
    for scope, lines, path in p.sources:
        # The line names each end in this scope: the node, or the splice holding it.
        local = [e[len(scope.prefix):] if e.startswith(scope.prefix) else e for e in edge]
        needles = [name.split("+", 1)[0] for name in local]
        probe = _Parser(p.loader, p.allow_plus)
        probe.wf.nodes = p.wf.nodes
        probe.index = p.index
        probe_scope = _Scope(scope.prefix, scope.node_dir, False, scope.own, scope.splices)
        src = LineSource(lines)
        for lineno, line in src:
            kw = normalize_keyword(line.split(None, 1)[0])
            if kw in _NODE_KINDS or kw == "SUBMIT_DESCRIPTION":
                # skip inline description bodies
                try:
                    texts = split_tokens(line)[1]
                except LexError:
                    continue
                if kw != "SUBDAG" and len(texts) > 2 and texts[2].startswith(("{", "@=")):
                    try:
                        p.inline_body(kw, "", texts[2], src, path, lineno)
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


def _cycle_error(p: _Parser, cycle_edges: list[tuple[str, str]], path: str | None) -> CycleError:
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


def parse_dag(
    lines: Iterable[str],
    *,
    path: str | os.PathLike[str] | None = None,
    include_loader: Loader | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    allow_any_node_name_characters: bool = False,
) -> Workflow:
    """Parse the lines of a DAG file into a :class:`Workflow`.

    ``path`` names the file in error messages and in ``source_path``.
    ``include_loader(path) -> lines`` reads INCLUDE and SPLICE files; paths
    given to it are resolved relative to the including file's directory
    (``base_dir`` for the top file, default: the directory of ``path``, else
    the current directory). Without a loader, files are read from disk.
    ``allow_any_node_name_characters`` accepts ``+`` in node names, as
    DAGMan's ``DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS = True`` does (needed to
    read back a flattened spliced workflow written by :func:`write_dag_lines`).

    Raises DagSyntaxError, DagError or CycleError naming file, line and culprit.
    """
    return _parse(lines, path, include_loader, base_dir, allow_any_node_name_characters, nul_checked=False)


def _parse(
    lines: Iterable[str],
    path: str | os.PathLike[str] | None,
    include_loader: Loader | None,
    base_dir: str | os.PathLike[str] | None,
    allow_any_node_name_characters: bool,
    nul_checked: bool,
) -> Workflow:
    spath = os.fspath(path) if path is not None else None
    if base_dir is not None:
        bdir = os.fspath(base_dir)
    elif spath is not None:
        bdir = posixpath.dirname(spath)
    else:
        bdir = ""
    p = _Parser(include_loader or _read_lines, allow_any_node_name_characters)
    top = _Scope(prefix="", node_dir=None, is_splice=False)
    # Parsing allocates millions of small containers that all stay alive; the
    # cyclic GC would rescan them again and again for nothing.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        lines = lines if isinstance(lines, list) else list(lines)
        p.run_file(top, lines if nul_checked else _checked_lines(lines, spath), spath, bdir)
        p.run_scope(top)
        wf = p.wf
        wf.source_path = spath
        # Most DAG files define parents before children (or, less often, all
        # children first): then file order is a topological order and no graph
        # search is needed.
        cycle_edges = _check_acyclic(wf, p.index, p.edge_keys) if p.forward and p.backward else None
        if cycle_edges is None and gc_was_enabled and gc.get_count()[0] >= _PROMOTE_MIN and not gc.get_freeze_count():
            # What the parse made is the workflow: long-lived. Move it (with the
            # rest of the young objects) straight to the oldest generation, where
            # surviving two young collections would take it anyway: the collector
            # then scans it in full collections only, instead of twice more on the
            # next allocations (~0.3 s at 10^5 nodes). freeze() + unfreeze() is
            # that move; a freeze someone else made is left alone.
            gc.freeze()
            gc.unfreeze()
    finally:
        if gc_was_enabled:
            gc.enable()
    if cycle_edges is not None:
        raise _cycle_error(p, cycle_edges, spath)
    _check_join_names(wf)
    return wf


def _check_join_names(wf: Workflow) -> None:
    """DAGMan refuses a DAG whose join node would take a node's name."""
    nodes = wf.nodes
    for join in wf.joins:
        node = nodes.get(join.name)
        if node is not None:
            raise DagError(
                f"node name '{join.name}' is the name DAGMan gives the join node of this many-to-many "
                f"PARENT/CHILD line (line {join.source_line}); rename the node",
                path=node.source_path, line=node.source_line,
            )


def read_dag(path: str | os.PathLike[str], *, allow_any_node_name_characters: bool = False) -> Workflow:
    """Read and parse the DAG file at ``path`` (INCLUDE/SPLICE files relative to it)."""
    spath = os.fspath(path)
    try:
        lines = _read_lines(spath)
    except FileNotFoundError as err:
        raise DagError("DAG file not found", path=spath) from err
    except OSError as err:
        raise DagError(f"DAG file cannot be read: {err.strerror or err}", path=spath) from err
    return _parse(lines, spath, None, None, allow_any_node_name_characters, nul_checked=True)
