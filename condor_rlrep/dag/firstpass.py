"""Pass 1 of the DAG parser: read the files and define what commands name.

Like DAGMan, a DAG file is processed in two passes: node-defining commands
(JOB, FINAL, SERVICE, PROVISIONER, SUBDAG, SPLICE, SUBMIT-DESCRIPTION, and
INCLUDE, which is textual) first, then every other command in file order
(:mod:`.commands`), so ``PARENT`` may precede the ``JOB`` lines it names.
Pass 1 defers those other commands to its scope, except the plain edges and
VARS lines it can apply at once with the same result (see
:meth:`Parser.file_pass`).

INCLUDE and SPLICE are followed without recursion (any depth, like DAGMan):
each file's pass is a generator that yields the pass of a file it names, and
:meth:`Parser.run_file` runs the innermost one; a file that names itself,
directly or not, is an error. A splice is a scope of its own: its pass 2
runs as soon as its pass 1 ends, and what it offers its parent (initial and
terminal nodes, pins) is recorded as a :class:`~.parsestate.Splice`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from itertools import chain
from sys import intern
from typing import Any

from ..errors import DagError, DagSyntaxError
from .bulk import (
    BULK_PREFIX, CHUNK, MIN_RUN, VARS_LINE, bulk_edges, bulk_jobs, bulk_vars, mixed_end, run_end, skip_lines,
)
from .commands import COMMANDS, run_deferred
from .lexer import (
    FileLines,
    LexError,
    LineSource,
    checked_lines,
    inline_body,
    normalize_keyword,
    split_tokens,
    tracked_blocks,
)
from .mixed import bulk_mixed
from .model import Node, VarAssignment, plain_node
from .parsestate import EDGE_KINDS, NO_EDGES, ParseState, Scope, Splice
from .syntax import KEYWORDS, NODE_KINDS, RESERVED_NAMES

__all__ = ["Parser", "Loader", "inline_body"]  # inline_body: from .lexer, for .cycles

Loader = Callable[[str], "list[str] | FileLines"]


class Parser(ParseState):
    """A parse: pass 1 over the top file and every file it names, with pass 2
    (:func:`.commands.run_deferred`) run on each splice as soon as its pass 1 ends."""

    def __init__(self, loader: Loader, allow_plus: bool):
        super().__init__()
        self.loader = loader
        self.allow_plus = allow_plus
        self.file_stack: list[str] = []  # INCLUDE/SPLICE chain being read, outermost first
        self.reading: set[str] = set()  # the same, for O(1) recursion checks
        self.sources: list[tuple[Scope, list[str], str | None]] = []  # to locate a cycle's edge

    # -- files ------------------------------------------------------------
    def load(self, kind: str, ref: str, resolved: str, path: str | None, line: int) -> list[str] | FileLines:
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
        return lines if self.loader is FileLines else checked_lines(list(lines), resolved)

    def enter(self, path: str | None) -> None:
        if path is not None:
            key = posixpath.normpath(path)
            self.file_stack.append(key)
            self.reading.add(key)

    def leave(self, path: str | None) -> None:
        if path is not None:
            self.reading.discard(self.file_stack.pop())

    # -- pass 1 over a file -------------------------------------------------
    def run_file(self, scope: Scope, lines: list[str] | FileLines, path: str | None, file_dir: str) -> None:
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

    def file_pass(self, scope: Scope, lines: list[str] | FileLines, path: str | None, file_dir: str) -> Iterator[Iterator[Any]]:
        """Pass 1 over one file: define nodes, splices, descriptions; defer the rest.

        ``file_dir`` is DAGMan's working directory while it reads the file
        (the top DAG's directory, joined with the DIR of each enclosing
        splice): INCLUDE and SPLICE files are relative to it, not to the
        directory of the file naming them.

        A generator: for an INCLUDE or SPLICE it yields the generator that
        reads the named file (:meth:`run_file` runs it) and goes on afterwards.

        ``JOB name file``, ``PARENT a CHILD b`` between known nodes and
        ``VARS node key="value"`` of a known node, the bulk of big DAGs, take a
        fast path (long runs of them a bulk path, :mod:`.bulk`).
        Edges are order-independent, so adding them in pass 1 is the same as
        adding them in pass 2; a VARS line is applied in pass 1 only while no
        earlier VARS line of the scope was deferred, which keeps VARS order.
        """
        self.enter(path)
        self.sources.append((scope, lines, path))
        try:
            # A file on disk is read a block of lines at a time; ``current`` is
            # the block holding the last line read (for the bulk paths, which
            # look ahead within it) and the line number before its first line.
            current: list[Any] = [[], 0]
            blocks = lines.blocks() if isinstance(lines, FileLines) else iter((lines,))
            src = LineSource(chain.from_iterable(tracked_blocks(blocks, current)))
            physical = src.physical
            pass1 = _PASS1
            kwcache = KEYWORDS
            deferred = scope.deferred
            own = scope.own
            nodes = self.wf.nodes
            index = self.index
            top = not scope.is_splice
            edges = self.wf.edges
            weak_edges = self.wf.weak_edges
            linkable = scope.linkable
            in_splice = scope.is_splice
            has_parent, has_child = scope.has_parent, scope.has_child
            vars_line = VARS_LINE.match
            keys_append = self.edge_keys.append
            pending = self.pending
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
                        if kw not in NODE_KINDS and kw not in pass1 and kw not in COMMANDS:
                            raise DagSyntaxError(f"'{first}' is not a valid DAG command", path=path, line=lineno)
                if (
                    lineno > bulk_from and kw in BULK_PREFIX
                    # this line is block[at - 1] (at < 1: a continued line reached the next block)
                    and 0 < (at := lineno - current[1]) and at + MIN_RUN <= len(block := current[0])
                ):
                    start = end = at - 1
                    tried = False
                    if block[at + MIN_RUN - 2].startswith(BULK_PREFIX[kw]):
                        tried = True
                        # a long run of lines of one kind (within the block): try them all at once
                        end = run_end(block, start, BULK_PREFIX[kw])
                        if end - start >= MIN_RUN:
                            run = block[start:end]
                            if kw == "PARENT":
                                done = not in_splice and bulk_edges(self, scope, run)
                            elif kw == "JOB":
                                done = top and bulk_jobs(self, scope, run, path, lineno)
                            else:
                                done = bulk_vars(scope, run)
                            if done:
                                skip_lines(physical, end - start - 1)
                                backoff = 0
                                continue
                    if top and kw != "VARS":
                        # JOB and PARENT lines in random order (a shuffled file): a run of both at once
                        tried = True
                        mixed = mixed_end(block, start)
                        if mixed - start >= MIN_RUN and bulk_mixed(self, scope, block[start:mixed], path, lineno):
                            skip_lines(physical, mixed - start - 1)
                            backoff = 0
                            continue
                        end = max(end, mixed)
                    if tried:
                        # Lines in random order make short runs everywhere: back off, so
                        # failed attempts cost a bounded share of the line-by-line path.
                        bulk_from = current[1] + end + backoff
                        backoff = min(2 * backoff + 1, CHUNK)
                if kw == "PARENT":
                    # inlined fast_edge(): this line is the hottest of all
                    parts = line.split()
                    if len(parts) == 4 and "=" not in line and line.isascii():
                        pv = linkable.get(parts[1])
                        cv = linkable.get(parts[3])
                        if pv is not None and cv is not None and parts[2].upper() == "CHILD":
                            if pending:
                                self.flush_pending()  # edges of earlier mixed runs come first
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
                                if in_splice:
                                    has_child.add(e[0])
                                    has_parent.add(e[1])
                            elif weak_edges:
                                weak_edges.discard(e)  # a strong edge wins over a weak one
                            continue
                    deferred.append((kw, line, path, lineno))
                elif kw == "JOB":
                    parts = line.split()
                    n_parts = len(parts)
                    # JOB name file, or JOB name file DIR dir (a plain line: as the lexer splits it)
                    name = parts[1] if n_parts == 3 or (
                        n_parts == 5 and parts[3].upper() == "DIR" and "\r" not in line) else ""
                    if (
                        top and name and name not in nodes  # top scope: own is a subset of nodes
                        and "+" not in name and '"' not in line and "'" not in line and "=" not in line
                        and line.isascii() and name.isprintable() and parts[2][0] not in "{@"
                        and name.upper() not in RESERVED_NAMES
                        and name not in scope.splices and name not in self.wf.submit_descriptions
                        and not parts[2].endswith(".condor.sub")  # refused by node()
                    ):
                        pos = index[name] = len(nodes)
                        linkable[name] = (name, pos)
                        own[name] = nodes[name] = job = plain_node(name, intern(parts[2]), path, lineno)
                        if n_parts == 5:
                            job.directory = parts[4]
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
                elif kw in NODE_KINDS:
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

    # -- the defining commands ---------------------------------------------
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

    def node(self, scope: Scope, kw: str, line: str, src: LineSource, path: str | None, lineno: int) -> None:
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
        if kw not in ("SUBDAG", "FINAL") and desc.endswith(".condor.sub"):
            # DAGMan takes such a file for a nested DAG's and refuses it
            # (a FINAL node may name one); a nested DAG is a SUBDAG node.
            dag = desc[: -len(".condor.sub")]
            raise DagError(f"{kw} {name} {desc}: the use of the JOB keyword for nested DAGs is prohibited (DAGMan "
                           f"refuses a submit file ending in .condor.sub); write SUBDAG EXTERNAL {name} {dag}",
                           path=path, line=lineno)
        inline = None
        submit: str | None = desc
        if kw != "SUBDAG" and (desc.startswith("{") or desc.startswith("@=")):
            inline, rest = inline_body(kw, name, desc, src, path, lineno)
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
        kind = NODE_KINDS[kw]
        if kind == "FINAL":
            if scope.is_splice:
                raise DagError(f"FINAL node '{name}' is not allowed in a splice", path=path, line=lineno)
            if (old := self.wf.final_node) is not None:
                raise DagError(f"second FINAL node '{name}': FINAL node '{old}' is already defined", path=path, line=lineno)
        self.add_node(scope, name, Node(
            name=scope.prefix + name, kind=kind, submit=submit, inline_submit=inline, directory=directory,
            noop=noop, done=done, source_path=path, source_line=lineno,
        ), path, lineno)

    def add_node(self, scope: Scope, local: str, node: Node, path: str | None, lineno: int) -> None:
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
        if node.kind in EDGE_KINDS:
            scope.linkable[local] = (node.name, pos)
        nodes[node.name] = node
        if scope.is_splice and node.kind not in NO_EDGES:
            scope.ends.append(node.name)

    def submit_description(self, scope: Scope, line: str, src: LineSource, path: str | None, lineno: int, file_dir: str) -> None:
        kw = "SUBMIT_DESCRIPTION"
        raws, texts = self.tokens(kw, line, path, lineno)
        if len(raws) < 2:
            raise self.syntax(kw, "no submit description name given", path, lineno)
        name = raws[1]
        if len(raws) < 3 or not (texts[2].startswith("{") or texts[2].startswith("@=")):
            raise self.syntax(kw, f"'{name}': no inline description ('{{' or '@=TAG') given", path, lineno)
        body, _rest = inline_body("SUBMIT-DESCRIPTION", name, texts[2], src, path, lineno)
        descs = self.wf.submit_descriptions
        if name in descs and descs[name] != body:
            raise DagError(f"SUBMIT-DESCRIPTION '{name}' is defined twice", path=path, line=lineno)
        if name in scope.own:
            raise DagError(f"SUBMIT-DESCRIPTION name '{name}' clashes with a node name", path=path, line=lineno)
        descs[name] = body

    def include(self, scope: Scope, line: str, src: LineSource, path: str | None, lineno: int, file_dir: str) -> Iterator[Any]:
        """The generator reading the INCLUDEd file into ``scope`` (run by :meth:`run_file`)."""
        raws, texts = self.tokens("INCLUDE", line, path, lineno)
        if len(raws) < 2:
            raise self.syntax("INCLUDE", "no file given", path, lineno)
        if len(raws) > 2:
            raise self.syntax("INCLUDE", f"unexpected token '{raws[2]}'", path, lineno)
        ref = texts[1]
        # relative to the working directory, as DAGMan opens it (not to this file's directory)
        resolved = posixpath.join(file_dir, ref) if file_dir else ref
        lines = self.load("INCLUDE", ref, resolved, path, lineno)
        return self.file_pass(scope, lines, resolved, file_dir)

    def splice(self, scope: Scope, line: str, src: LineSource, path: str | None, lineno: int, file_dir: str) -> Iterator[Any]:
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
        # DAGMan changes into the splice's DIR (relative to the working directory)
        # to read the splice file and every file it names, and back afterwards.
        where = posixpath.join(file_dir, sdir) if sdir else file_dir
        resolved = posixpath.join(where, ref) if where else ref
        lines = self.load("SPLICE", ref, resolved, path, lineno)
        node_dir = scope.node_dir
        if sdir is not None:
            node_dir = _join_dir(node_dir, sdir)
        inner = Scope(prefix=scope.prefix + name + "+", node_dir=node_dir, is_splice=True)
        return self._splice_steps(scope, name, inner, lines, resolved, where)

    def _splice_steps(self, scope: Scope, name: str, inner: Scope, lines: list[str] | FileLines, resolved: str,
                      workdir: str) -> Iterator[Any]:
        yield self.file_pass(inner, lines, resolved, workdir)
        run_deferred(self, inner)
        # A node of the splice has a parent in it if an edge of the splice's own
        # lines leads to it or, for a node of a nested splice, if it is not
        # among that splice's initial nodes (likewise children, terminal
        # nodes): no edge of a nested splice is looked at again, so n nested
        # splices cost O(n), not O(n²).
        has_parent, has_child = inner.has_parent, inner.has_child
        initial: list[str] = []
        terminal: list[str] = []
        for end in inner.ends:
            if isinstance(end, str):
                if end not in has_parent:
                    initial.append(end)
                if end not in has_child:
                    terminal.append(end)
            else:
                initial.extend(m for m in end.initial if m not in has_parent)
                terminal.extend(m for m in end.terminal if m not in has_child)
        splice = scope.splices[name] = Splice(
            name=name, initial=initial, terminal=terminal, pins_in=inner.pins_in, pins_out=inner.pins_out,
        )
        if scope.is_splice:
            scope.ends.append(splice)
        # The inner scope stays listed in self.sources (to locate a cycle's line).
        inner.ends = []
        inner.has_parent = set()
        inner.has_child = set()


def _join_dir(base: str | None, sub: str | None) -> str | None:
    if base is None:
        return sub
    if sub is None:
        return base
    if posixpath.isabs(sub):
        return sub
    return posixpath.join(base, sub)


# The pass-1 commands that define no node, by keyword (each may read lines or files).
_PASS1 = {
    "SPLICE": Parser.splice,
    "SUBMIT_DESCRIPTION": Parser.submit_description,
    "INCLUDE": Parser.include,
}
