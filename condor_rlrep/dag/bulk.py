"""Fast paths of the DAG parser, for the plain lines that make up the bulk
of big DAGs: ``JOB name file``, ``PARENT a CHILD b`` between known nodes and
``VARS node key="value"``.

A run of at least :data:`MIN_RUN` lines of one such shape is handled a chunk
of up to :data:`CHUNK` lines at a time with C-level string and map
operations (:func:`bulk_jobs`, :func:`bulk_edges`, :func:`bulk_vars`), and a
single plain line without the lexer (:func:`fast_edge`, :data:`VARS_LINE`).
(Runs of JOB and PARENT lines in random order: :mod:`.mixed`.)
Each is all or nothing: it returns False and leaves the parse untouched when
anything in its input is unusual, and the line-by-line path (which knows
every rule) takes over. Either way the workflow, its source lines, the VARS
order and every error are the same (``tests/test_dag_bulk.py`` checks it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import compress, count, islice, repeat
from operator import ge, itemgetter, le, lshift, not_, or_
from sys import intern

from .model import VarAssignment, plain_node
from .parsestate import ParseState, Scope
from .syntax import RESERVED_NAMES

__all__ = [
    "MIN_RUN", "CHUNK", "BULK_PREFIX", "VARS_LINE", "run_end", "skip_lines", "plain_blob",
    "bulk_jobs", "bulk_edges", "bulk_vars", "mixed_end", "fast_edge",
]

MIN_RUN = 16
CHUNK = 8192
BULK_PREFIX = {"JOB": "JOB ", "PARENT": "PARENT ", "VARS": "VARS "}  # keyword -> line prefix of a bulk run
_first = itemgetter(0)
_second = itemgetter(1)

# The common VARS line, one plain key="value" pair: (node, key, value). It
# matches only lines that DAGMan's lexer splits into exactly these tokens and
# that the VARS command (commands.py) accepts as they are (printable ASCII; no quote, '=' or
# backslash in the node name; an identifier key not starting with "queue";
# no quote or backslash in the value). re.M: the parser also matches it
# against many lines joined by newlines.
VARS_LINE = re.compile(
    r"^(?i:VARS)[ \t]+([!#-&(-<>-\[\]-~]+)[ \t]+"
    r'((?![Qq][Uu][Ee][Uu][Ee])[A-Za-z_][A-Za-z0-9_]*)="([ !#-\[\]-~]*)"[ \t]*$',
    re.M,
)


def run_end(lines: list[str], start: int, prefix: str | tuple[str, ...]) -> int:
    """End of the run of ``lines[start:]`` that start with ``prefix`` (or
    one of the prefixes a tuple gives; at most :data:`CHUNK` lines).

    Cost is proportional to the run found (plus a constant), whatever follows
    it: stretches of doubling length are checked at once (a line holds no
    newline, so each "\n" + prefix in their join starts a line), and the
    first stretch that fails is scanned line by line. (Bisecting over the
    whole chunk, and ``islice(lines, start, …)``, which steps through every
    line before ``start``, made a file whose lines come in random order
    parse in quadratic time: a short run is tried at almost every line.)
    """
    limit = min(len(lines), start + CHUNK)
    # no prefix starts another: a line starting with one is counted once
    needles = ["\n" + one for one in ((prefix,) if isinstance(prefix, str) else prefix)]
    end = start
    step = 4
    while end < limit:
        hi = min(limit, end + step)
        stretch = "\n" + "\n".join(lines[end:hi])
        if sum(map(stretch.count, needles)) == hi - end:
            end = hi
            step *= 2
            continue
        misses = map(not_, map(str.startswith, lines[end:hi], repeat(prefix)))
        return next(compress(count(end), misses), hi)
    return end


def skip_lines(physical: Iterable[tuple[int, str]], n: int) -> None:
    """Consume ``n`` lines of the shared physical-line iterator."""
    if n > 0:
        next(islice(physical, n - 1, n), None)


def plain_blob(run: list[str]) -> str | None:
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


def _job_words(p: ParseState, scope: Scope, run: list[str]) -> tuple[list[str], list[str]] | None:
    """(names, submit files) of a run of plain ``JOB name file`` lines that
    define new nodes (top scope), or None if any line needs the careful path."""
    blob = plain_blob(run)
    if blob is None or "+" in blob or " {" in blob or " @" in blob or ".condor.sub" in blob:
        return None  # the line-by-line path has the checks these need
    k = len(run)
    words = blob.split()
    # k "JOB" words, all at the start of a 3-word group: every line is JOB name file
    if len(words) != 3 * k or words.count("JOB") != k or words[0::3].count("JOB") != k:
        return None
    names = words[1::3]
    nodes = p.wf.nodes
    if (
        len(set(names)) != k or not nodes.keys().isdisjoint(names)
        or not RESERVED_NAMES.isdisjoint(map(str.upper, names))
        or not scope.splices.keys().isdisjoint(names)
        or not p.wf.submit_descriptions.keys().isdisjoint(names)
    ):
        return None
    return names, words[2::3]


def bulk_jobs(p: ParseState, scope: Scope, run: list[str], path: str | None, lineno: int) -> bool:
    """Define the nodes of a run of ``JOB name file`` lines (top scope), as the
    line-by-line fast path would."""
    found = _job_words(p, scope, run)
    if found is None:
        return False
    _define(p, scope, *found, range(lineno, lineno + len(run)), path)
    return True


def _define(p: ParseState, scope: Scope, names: list[str], submits: list[str], numbers: Iterable[int],
            path: str | None) -> None:
    nodes = p.wf.nodes
    k = len(names)
    first = len(nodes)
    # Interned submit files: most nodes share a few, one string each.
    new = list(map(plain_node, names, map(intern, submits), repeat(path), numbers))
    positions = list(range(first, first + k))  # one int object per node, shared by both maps
    p.index.update(zip(names, positions))
    scope.linkable.update(zip(names, zip(names, positions)))
    pairs = list(zip(names, new))
    nodes.update(pairs)
    scope.own.update(pairs)


_JOB_OR_PARENT = ("JOB ", "PARENT ")


def mixed_end(lines: list[str], start: int) -> int:
    """End of the run of ``lines[start:]`` that start with ``JOB `` or
    ``PARENT `` (at most :data:`CHUNK` lines)."""
    # Not a line-by-line scan: in a shuffled file these runs are the whole
    # file, and a call per line cost more than the runs' joins.
    return run_end(lines, start, _JOB_OR_PARENT)


def _add_known_edges(p: ParseState, pv: list[tuple[str, int]], cv: list[tuple[str, int]]) -> None:
    """Add the edges between these (name, position) ends, as the line-by-line path would."""
    new = list(zip(map(_first, pv), map(_first, cv)))
    p.wf.edges.update(new)
    if p.wf.weak_edges:
        p.wf.weak_edges.difference_update(new)  # a strong edge wins over a weak one
    # duplicates of earlier edges have the same positions: counting them changes nothing
    pp = list(map(_second, pv))
    cp = list(map(_second, cv))
    p.edge_keys.extend(map(or_, map(lshift, pp, repeat(32)), cp))
    if not p.forward and any(map(le, pp, cp)):
        p.forward = True
    if not p.backward and any(map(ge, pp, cp)):
        p.backward = True


def bulk_edges(p: ParseState, scope: Scope, run: list[str]) -> bool:
    """Add the edges of a run of ``PARENT a CHILD b`` lines between known
    nodes (a scope that is not a splice)."""
    blob = plain_blob(run)
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
    if p.pending:
        p.flush_pending()  # their edges come first
    _add_known_edges(p, pv, cv)  # type: ignore[arg-type]
    return True


def bulk_vars(scope: Scope, run: list[str]) -> bool:
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


def fast_edge(p: ParseState, scope: Scope, line: str) -> bool:
    """Add the edge of a plain ``PARENT a CHILD b`` between known nodes; False otherwise."""
    parts = line.split()
    if len(parts) != 4 or parts[2].upper() != "CHILD" or not line.isascii() or "=" in line:
        return False
    pv = scope.linkable.get(parts[1])
    cv = scope.linkable.get(parts[3])
    if pv is None or cv is None:
        return False
    p.add_edges(scope, [pv[0]], [cv[0]], False)
    return True
