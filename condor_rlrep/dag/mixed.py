"""Runs of ``JOB`` and ``PARENT`` lines in random order (a generator's
shuffled output): the parser's bulk path for them (:func:`bulk_mixed`).

The line-by-line path adds an edge in pass 1 if both its nodes were defined
(as linkable nodes) before its line, and in pass 2, in file order,
otherwise. In a shuffled file half the names an edge line gives are not
defined yet when it is read, so resolving them then meant looking names up
twice; and each lookup is a random memory access, the main cost of such a
file. So a mixed run's nodes are defined at once, and its edges wait as
names in an :class:`EdgeBatch`, until the parse next touches the edge set
(:meth:`~.parsestate.ParseState.flush_pending`: pass 2, or any other edge of
pass 1, so that edges still come in file order), usually at the end of pass
1 when every node is known. Then all pending batches are resolved in a row
(:func:`resolve_all`): big ones in numpy, by the names' hashes (no dict
lookup; every match compared with the node's name, so a hash collision
changes nothing), small ones with dict lookups. With numpy loaded, a batch
keeps its lines' text and the names' hashes, not the names
(:meth:`EdgeBatch.hash_words`): hashing them while the split has them in the
cache, and comparing the text once with the names of the nodes found, cost
less than keeping two fresh strings per line until the flush and comparing
each (10^5 nodes, 3·10^5 edges: ~0.2 of ~1.1 CPU seconds, measured).

Linkable nodes are never removed and positions grow in file order, so an
edge's ends were defined before its line exactly when both are linkable
at that later time with positions below the count of nodes defined before
the line: the edges pass 1 would have added are added (in file order), the
others kept, resolved, for pass 2 (:meth:`EdgeBatch.take_rest`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from itertools import compress, count, repeat
from operator import and_, gt, is_, itemgetter, not_, or_, sub
from typing import TYPE_CHECKING, Any

from .bulk import _add_known_edges, _define, _job_words, plain_blob

if TYPE_CHECKING:
    from .parsestate import ParseState, Scope

__all__ = ["bulk_mixed", "EdgeBatch", "MIXED_EDGES", "resolve_all"]

MIXED_EDGES = "PARENT lines of a mixed run"  # Scope.deferred's keyword for an EdgeBatch (not a DAG keyword)
_MISSING = (None, 1 << 62)  # linkable.get's default: no node, defined after every line
# Pending edges are resolved in numpy from this many (and a quarter of the
# nodes: the table costs a pass over them), with numpy loaded or, as the cycle
# check does (.cycles), from this many nodes, where its import pays.
NUMPY_MIN_EDGES = 4096
NUMPY_IMPORT_MIN_NODES = 32768
_second = itemgetter(1)
_first_letter = itemgetter(0)
_JOB_KIND = bytes.maketrans(b"JP", b"\1\0")  # a line's first letter -> 1 for JOB, 0 for PARENT
_EDGE_KIND = bytes.maketrans(b"JP", b"\0\1")


def bulk_mixed(p: ParseState, scope: Scope, run: list[str], path: str | None, lineno: int) -> bool:
    """A run of plain ``JOB name file`` and ``PARENT a CHILD b`` lines in any
    order (top scope), as the line-by-line path would take it: every node
    defined at once; the edges left pending (see the module docstring)."""
    # The lines' kinds from their first letters (the caller saw each start with
    # "JOB " or "PARENT "): C-level string work, not a call per line.
    heads = "".join(map(_first_letter, run)).encode()
    is_job = heads.translate(_JOB_KIND)
    if heads.count(b"J") + heads.count(b"P") != len(run):
        return False
    job_lines = list(compress(run, is_job))
    edge_lines = list(compress(run, heads.translate(_EDGE_KIND)))
    k = len(edge_lines)
    if not job_lines or not k:
        return False  # a run of one kind: the other bulk paths
    found = _job_words(p, scope, job_lines)
    blob = plain_blob(edge_lines)
    if found is None or blob is None:
        return False
    words = blob.split()
    if (
        len(words) != 4 * k or words.count("PARENT") != k
        or words[0::4].count("PARENT") != k or words[2::4].count("CHILD") != k
    ):
        return False
    names, submits = found
    first = len(p.wf.nodes)
    _define(p, scope, names, submits, compress(count(lineno), is_job), path)
    batch = EdgeBatch(scope.linkable, words[1::4], words[3::4], is_job, first, lineno, path)
    batch.pending += p.pending[-1].pending if p.pending else 0
    if (
        "numpy" in sys.modules and _in_numpy(batch.pending, len(scope.linkable))
        and blob[0] != " " and blob[-1] != " " and "  " not in blob
    ):
        # Hashed while the words are fresh in the cache; then only the text
        # is kept (25 bytes a line, against 130 for two words), which leaves
        # the memory of the words to the next run's split. (Only where a
        # flush now would resolve in numpy: the dict lookups need the words.)
        batch.hash_words(blob)
    p.pending.append(batch)
    scope.deferred.append((MIXED_EDGES, batch, path, lineno))  # pass 2 takes the rest of its edges here
    return True


class EdgeBatch:
    """The ``PARENT a CHILD b`` lines of one mixed run: names (or their text
    and hashes) until resolved, then the edges pass 2 takes, in file order."""

    __slots__ = ("linkable", "parents", "children", "kinds", "offsets", "first", "lineno", "path",
                 "pv", "cv", "ends", "table", "text", "hashes", "known", "pending")

    def __init__(self, linkable: dict[str, tuple[str, int]], parents: list[str], children: list[str],
                 kinds: bytes, first: int, lineno: int, path: str | None):
        self.linkable = linkable
        self.parents = parents
        self.children = children
        self.kinds = kinds  # 1 for each JOB line of the run, 0 for each PARENT line
        self.offsets: Any = None  # after resolve(): the place in the run of each line pass 2 takes
        self.first = first  # nodes defined before the run
        self.lineno = lineno  # the run's first line
        self.path = path
        # after resolve(): pass 2's edges as (name, position) ends, or _MISSING (pv, cv), or
        # positions in ``table`` (ends, numpy; -1: none)
        self.pv: list[tuple[str | None, int]] | None = None
        self.cv: list[tuple[str | None, int]] | None = None
        self.ends: Any = None
        self.table: _Table | None = None
        # hash_words(): the lines as "PARENT a CHILD b" joined by blanks, and the
        # names' hashes (numpy, parents and children), in place of the names
        self.text: str | None = None
        self.hashes: Any = None
        # after resolve_in() by hashes: parents and children are the nodes' names, ends their positions
        self.known = False
        self.pending = len(parents)  # PARENT lines of this batch (bulk_mixed: and of those pending before it)

    def hash_words(self, text: str) -> None:
        """Keep ``text`` (the lines joined by single blanks) and the names' hashes instead of the names."""
        import numpy as np

        self.hashes = _hashes(np, self.parents), _hashes(np, self.children)
        self.text = text
        self.parents = self.children = None  # type: ignore[assignment]

    def _words(self) -> None:
        """The names back from the text (for the ways that need them)."""
        if self.text is not None:
            words = self.text.split()
            self.parents, self.children = words[1::4], words[3::4]
            self.text = self.hashes = None

    def resolve(self, p: ParseState) -> None:
        """Add the edges pass 1 would have added; keep the others for pass 2 (dict lookups)."""
        self._words()
        get = self.linkable.get
        pv = list(map(get, self.parents, repeat(_MISSING)))  # type: ignore[arg-type]
        cv = list(map(get, self.children, repeat(_MISSING)))  # type: ignore[arg-type]
        self.offsets = list(compress(count(), map(not_, self.kinds)))  # each edge line's place in the run
        # nodes defined before each edge line: those before the run and the run's JOB lines above it
        before = list(map(sub, self.offsets, count(-self.first)))  # first + place - j
        now = list(map(and_, map(gt, before, map(_second, pv)), map(gt, before, map(_second, cv))))
        _add_known_edges(p, list(compress(pv, now)), list(compress(cv, now)))  # type: ignore[arg-type]
        later = list(map(not_, now))
        self._keep(later)
        self.offsets = list(compress(self.offsets, later))
        self.pv = list(compress(pv, later))
        self.cv = list(compress(cv, later))

    def resolve_in(self, p: ParseState, table: _Table) -> None:
        """:meth:`resolve` by the names' hashes, in numpy (see :class:`_Table`)."""
        import numpy as np

        if self.hashes is not None:
            if self._resolve_known(p, table):
                return
            self._words()
        ip, ic = table.find(self.parents), table.find(self.children)
        self.offsets = np.flatnonzero(np.frombuffer(self.kinds, np.uint8) == 0)
        before = self.offsets - np.arange(len(self.offsets)) + self.first  # as in resolve()
        pp, cp = table.positions(ip), table.positions(ic)
        now = np.maximum(pp, cp) < before
        if now.any():
            at = np.flatnonzero(now)
            mask = now.tolist()
            pn, cn = table.names(ip[at]), table.names(ic[at])
            if list(compress(self.parents, mask)) == pn and list(compress(self.children, mask)) == cn:
                table.add(p, pn, cn, pp[at], cp[at])
            else:  # a hash that only looks like a node's: the exact way
                self.resolve(p)
                return
            self._keep(list(map(not_, mask)))
            later = ~now
            ip, ic, self.offsets = ip[later], ic[later], self.offsets[later]
        self.ends, self.table = (ip, ic), table

    def _resolve_known(self, p: ParseState, table: _Table) -> bool:
        """:meth:`resolve_in` by the hashes of :meth:`hash_words`, if every name
        is a node's (else False, and nothing done): one comparison of the
        text with the nodes' names checks them all."""
        np = table.np
        ip, ic = table.find_hashes(self.hashes[0]), table.find_hashes(self.hashes[1])
        if (ip < 0).any() or (ic < 0).any():
            return False  # a name of no node, or of one not defined yet (an early flush)
        pn, cn = table.names(ip), table.names(ic)
        spelled = ["PARENT", "", "CHILD", ""] * len(pn)
        spelled[1::4] = pn
        spelled[3::4] = cn
        # no name holds a blank (nor does a word of the text): equal texts are equal names
        if " ".join(spelled) != self.text:
            return False  # a hash that only looks like a node's
        self.text = self.hashes = None
        offsets = np.flatnonzero(np.frombuffer(self.kinds, np.uint8) == 0)
        before = offsets - np.arange(len(offsets)) + self.first  # as in resolve()
        pp, cp = table.positions_of[ip], table.positions_of[ic]
        now = np.maximum(pp, cp) < before
        mask = now.tolist()
        if True in mask:
            table.add(p, list(compress(pn, mask)), list(compress(cn, mask)), pp[now], cp[now])
        later = ~now
        keep = later.tolist()
        self.parents, self.children = list(compress(pn, keep)), list(compress(cn, keep))
        self.offsets, self.ends, self.table, self.known = offsets[later], (pp[later], cp[later]), table, True
        return True

    def _keep(self, later: list[bool]) -> None:
        self.parents = list(compress(self.parents, later))
        self.children = list(compress(self.children, later))

    def take_rest(self, p: ParseState, scope: Scope, run_command: Callable[..., None]) -> None:
        """Pass 2: the batch's other edges, in file order (``run_command``, the
        careful path, for a line naming something other than a linkable node)."""
        if p.pending:
            p.flush_pending()  # this batch is one of them
        try:
            self._take_rest(p, scope, run_command)
        finally:
            self.parents = self.children = self.pv = self.cv = self.ends = self.table = None  # type: ignore[assignment]
            self.text = self.hashes = None

    def _take_rest(self, p: ParseState, scope: Scope, run_command: Callable[..., None]) -> None:
        if self.known:  # nodes' names and positions: nothing left to check
            assert self.table is not None
            self.table.add(p, self.parents, self.children, *self.ends)
            return
        if self.table is not None:
            table, (ip, ic) = self.table, self.ends
            if (ip >= 0).all() and (ic >= 0).all():
                pn, cn = table.names(ip), table.names(ic)
                if self.parents == pn and self.children == cn:
                    table.add(p, pn, cn, table.positions(ip), table.positions(ic))
                    return
            self.pv = None  # a name to look up (one defined after an early flush), or none: the exact way
        if self.pv is None:
            get = self.linkable.get
            self.pv = list(map(get, self.parents, repeat(_MISSING)))  # type: ignore[arg-type]
            self.cv = list(map(get, self.children, repeat(_MISSING)))  # type: ignore[arg-type]
        pv, cv = self.pv, self.cv
        assert cv is not None
        done = 0
        for j in compress(count(), map(or_, map(is_, pv, repeat(_MISSING)), map(is_, cv, repeat(_MISSING)))):
            # resolved after an early flush (pass 1 went on), or not a linkable node at all
            pj = self.linkable.get(self.parents[j], _MISSING)
            cj = self.linkable.get(self.children[j], _MISSING)
            if pj is _MISSING or cj is _MISSING:
                _add_known_edges(p, pv[done:j], cv[done:j])  # type: ignore[arg-type]
                done = j + 1
                line = f"PARENT {self.parents[j]} CHILD {self.children[j]}"  # the line's words, as split
                run_command(p, scope, "PARENT", line, self.path, self.lineno + int(self.offsets[j]))
            else:
                pv[j], cv[j] = pj, cj
        _add_known_edges(p, pv[done:], cv[done:])  # type: ignore[arg-type]


def resolve_all(p: ParseState, batches: list[EdgeBatch]) -> None:
    """Resolve pending batches in order (they all name nodes of the top scope)."""
    table = None
    linkable = batches[0].linkable
    if _in_numpy(batches[-1].pending, len(linkable)):
        table = _Table.of(linkable)
    for batch in batches:
        if table is not None and batch.linkable is linkable:
            batch.resolve_in(p, table)
        else:
            batch.resolve(p)


def _in_numpy(pending: int, n: int) -> bool:
    """Whether ``pending`` edge lines naming ``n`` nodes are resolved in numpy."""
    return pending >= max(NUMPY_MIN_EDGES, n // 4) and ("numpy" in sys.modules or n >= NUMPY_IMPORT_MIN_NODES)


def _hashes(np: Any, names: list[str]) -> Any:
    return np.fromiter(map(hash, names), np.int64, len(names)).view(np.uint64)


class _Table:
    """The linkable nodes by their names' hashes (a bucket per value of the
    top bits, about two per node): a name's hash finds the only node that can
    have that name in a few array reads, for a whole array of names at once."""

    def __init__(self, np: Any, names: Any, positions: Any, order: Any, hashes: Any):
        self.np = np
        self.names_of = names
        self.positions_of = positions
        self.order = order
        self.sorted = hashes
        self.shift = np.uint64(64 - max(1, (2 * len(hashes)).bit_length()))
        self.start = np.zeros((1 << (64 - int(self.shift))) + 1, np.int64)
        np.cumsum(np.bincount((hashes >> self.shift).astype(np.int64), minlength=len(self.start) - 1),
                  out=self.start[1:])

    @classmethod
    def of(cls, linkable: dict[str, tuple[str, int]]) -> _Table | None:
        """The table of the top scope's ``linkable`` (its keys are the nodes'
        names), or None if two names share a hash (then dict lookups)."""
        import numpy as np

        n = len(linkable)
        keys = list(linkable)
        values = list(linkable.values())
        if n < 2:
            return None
        hashes = _hashes(np, keys)
        order = np.argsort(hashes)
        hashes = hashes[order]
        if (hashes[1:] == hashes[:-1]).any():
            return None
        names = np.empty(n, object)
        names[:] = keys
        return cls(np, names, np.fromiter(map(_second, values), np.int64, n), order, hashes)

    def find(self, words: list[str]) -> Any:
        """For each word, the index of the node whose name has its hash, or -1."""
        return self.find_hashes(_hashes(self.np, words))

    def find_hashes(self, hashes: Any) -> Any:
        """For each hash, the index of the node whose name has it, or -1."""
        np = self.np
        slot = (hashes >> self.shift).astype(np.int64)
        at, end = self.start[slot], self.start[slot + 1]
        found = np.full(len(hashes), -1, np.int64)
        live = np.flatnonzero(at < end)
        while live.size:  # the k-th entry of every bucket still searched
            hit = self.sorted[at[live]] == hashes[live]
            found[live[hit]] = self.order[at[live[hit]]]
            live = live[~hit]
            at[live] += 1
            live = live[at[live] < end[live]]
        return found

    def positions(self, found: Any) -> Any:
        np = self.np
        return np.where(found >= 0, self.positions_of[found], _MISSING[1])

    def names(self, found: Any) -> list[str]:
        return self.names_of[found].tolist()

    def add(self, p: ParseState, pn: list[str], cn: list[str], pp: Any, cp: Any) -> None:
        """Add these edges between known nodes, as :func:`.bulk._add_known_edges` does."""
        new = list(zip(pn, cn))
        p.wf.edges.update(new)
        if p.wf.weak_edges:
            p.wf.weak_edges.difference_update(new)  # a strong edge wins over a weak one
        p.edge_keys.frombytes(((pp << 32) | cp).astype(self.np.int64).tobytes())
        if not p.forward and (pp <= cp).any():
            p.forward = True
        if not p.backward and (pp >= cp).any():
            p.backward = True
