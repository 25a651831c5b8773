"""JOB and PARENT lines in random order (dag/mixed.py): the edges of a mixed
run are resolved after the run, in numpy by the names' hashes or by dict
lookups, and give exactly what the careful line-by-line path gives: the
same nodes, the same edges in the same order, the same error text. And a
DAG's lines in any order give the same graph."""

from __future__ import annotations

import contextlib
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from condor_rlrep.dag import mixed as mixed_module
from condor_rlrep.dag import parse_dag
from condor_rlrep.dag.parsestate import ParseState
from condor_rlrep.errors import CycleError, RlrepError

from test_dag_bulk import RUN, SETTINGS, careful


@contextlib.contextmanager
def resolved_in_numpy(always: bool):
    """Resolve pending edges in numpy whatever their number (``always``), or as the parser decides."""
    saved = mixed_module.NUMPY_MIN_EDGES, mixed_module.NUMPY_IMPORT_MIN_NODES
    if always:
        mixed_module.NUMPY_MIN_EDGES = mixed_module.NUMPY_IMPORT_MIN_NODES = 0
    try:
        yield
    finally:
        mixed_module.NUMPY_MIN_EDGES, mixed_module.NUMPY_IMPORT_MIN_NODES = saved


@contextlib.contextmanager
def spy(cls, name: str, calls: list):
    real = getattr(cls, name)

    def recorded(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    setattr(cls, name, recorded)
    try:
        yield
    finally:
        setattr(cls, name, real)


def digest(parse, lines: list[str]):
    """Everything a parse gives, edges in their (set iteration) order, or its error."""
    try:
        wf = parse(lines, path="t.dag")
    except RlrepError as err:
        return type(err).__name__, str(err)
    nodes = [(n, node.source_line, node.kind, node.submit, node.vars) for n, node in wf.nodes.items()]
    return nodes, list(wf.edges), list(wf.weak_edges), wf.joins, wf


def assert_same(lines: list[str], numpy_always: bool) -> None:
    with resolved_in_numpy(numpy_always):
        fast = digest(parse_dag, lines)
    assert fast == digest(careful, lines)


def shuffled_dag(seed: int, n: int) -> tuple[random.Random, list[str]]:
    rng = random.Random(seed)
    lines = [f"JOB n{i} n.sub" for i in range(n)]
    lines += [f"PARENT n{p} CHILD n{c}" for c in range(1, n) for p in rng.sample(range(c), min(c, 3))]
    lines += [f"PARENT n{rng.randrange(n // 2)} CHILD n{rng.randrange(n // 2, n)}" for _ in range(n // 10)]  # repeats
    rng.shuffle(lines)
    return rng, lines


ODD_LINES = [
    ["PARENT n{last} CHILD n0", "PARENT n5 CHILD n5"],  # a cycle and a self-loop
    ["PARENT n3 CHILD nowhere"],  # no such node
    ["FINAL fin f.sub", "PARENT n2 CHILD fin"],  # a node that takes no edges
    ["SPLICE S s.dag", "PARENT n1 CHILD S", "PARENT S CHILD n4"],  # a splice's ends
    ["WEAK PARENT n1 CHILD n9", "WEAK PARENT n2 CHILD n8", "PARENT n1 n2 CHILD n7 n8"],  # weak edges, a join
    ['VARS n4 k="1"', "# comment", "parent n1 child n9", "JOB n7 again.sub"],  # careful lines, a duplicate
]


@pytest.mark.parametrize("numpy_always", [False, True], ids=["as-decided", "numpy"])
@pytest.mark.parametrize("odd", range(len(ODD_LINES)))
def test_mixed_runs_same_as_careful(odd, numpy_always):
    rng, lines = shuffled_dag(odd, 300)
    for line in ODD_LINES[odd]:
        lines.insert(rng.randrange(len(lines)), line.format(last=299))
    files = {"s.dag": ["JOB a a.sub", "JOB b b.sub", "PARENT a CHILD b"]}

    def parse(text, **kw):
        return parse_dag(text, include_loader=lambda p: files[p], **kw)

    calls: list[str] = []
    with resolved_in_numpy(numpy_always), spy(mixed_module.EdgeBatch, "resolve_in", calls):
        fast = digest(parse, lines)
    assert fast == digest(lambda text, **kw: careful(text, include_loader=lambda p: files[p], **kw), lines)
    # (numpy unless a duplicate JOB line stopped the parse before any edge)
    assert (bool(calls) or fast[0] == "DagError") if numpy_always else not calls


@pytest.mark.parametrize("numpy_always", [False, True], ids=["as-decided", "numpy"])
def test_an_edge_between_known_nodes_before_the_last_run_resolves_the_runs_before_it(numpy_always):
    """An edge of pass 1 outside a mixed run (here after a comment) resolves
    the pending runs first, some of whose names are defined further down:
    those are looked up again in pass 2."""
    rng, lines = shuffled_dag(7, 200)
    lines.remove("JOB n0 n.sub")
    lines.remove("JOB n1 n.sub")
    half = len(lines) // 2
    lines[half:half] = ["# between", "PARENT n0 CHILD n1", "# between"]
    lines[:0] = ["JOB n0 n.sub", "JOB n1 n.sub"]
    calls: list[str] = []
    with spy(ParseState, "flush_pending", calls):
        assert_same(lines, numpy_always)
    assert len(calls) >= 2  # at that edge, and in pass 2


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_name_whose_hash_is_a_nodes_changes_nothing(monkeypatch, where):
    """A word whose hash equals a node's is not that node: every match is
    compared with the node's name (here the collision is made on purpose)."""
    rng, lines = shuffled_dag(3, 300)
    ghost = "PARENT n1 CHILD ghost"
    # the ghost edge comes before or after its nodes' JOB lines: pass 1 or pass 2 would take it
    at = max(lines.index("JOB n1 n.sub"), lines.index("JOB n4 n.sub")) + 1 if where == "after" else 0
    lines.insert(at, ghost)
    real = mixed_module._hashes
    monkeypatch.setattr(mixed_module, "_hashes", lambda np_, names: real(np_, ["n4" if w == "ghost" else w for w in names]))
    found: list[bool] = []
    real_find = mixed_module._Table.find
    monkeypatch.setattr(mixed_module._Table, "find", lambda self, words: found.append("ghost" in words) or real_find(self, words))
    assert_same(lines, numpy_always=True)
    assert any(found)
    assert digest(careful, lines)[0] == "DagError"  # PARENT/CHILD: unknown node 'ghost'


def test_a_runs_lines_kept_as_text_are_checked_against_the_nodes_names(monkeypatch):
    """With numpy loaded, a mixed run keeps its PARENT lines as text and the
    names' hashes (EdgeBatch.hash_words); the text compared with the names
    of the nodes found catches a hash that only looks like a node's, and the
    names are split again for the careful ways."""
    rng, lines = shuffled_dag(3, 300)
    lines.insert(len(lines) - 5, "PARENT n1 CHILD ghost")  # within the last mixed run
    real = mixed_module._hashes
    monkeypatch.setattr(mixed_module, "_hashes", lambda np_, names: real(np_, ["n4" if w == "ghost" else w for w in names]))
    results: list[bool] = []
    real_known = mixed_module.EdgeBatch._resolve_known
    monkeypatch.setattr(mixed_module.EdgeBatch, "_resolve_known",
                        lambda self, p, table: results.append(real_known(self, p, table)) or results[-1])
    assert_same(lines, numpy_always=True)
    assert False in results


@pytest.mark.parametrize("blanks", ["PARENT  {} CHILD {}", "PARENT {} CHILD {} "])
def test_a_run_with_extra_blanks_keeps_its_names(blanks):
    rng, lines = shuffled_dag(9, 300)
    lines = [blanks.format(*line.split()[1::2]) if line.startswith("PARENT") and rng.random() < 0.1 else line
             for line in lines]
    calls: list[str] = []
    with spy(mixed_module.EdgeBatch, "hash_words", calls):
        assert_same(lines, numpy_always=True)
    assert not calls


@pytest.mark.parametrize("numpy_always", [False, True], ids=["as-decided", "numpy"])
def test_a_runs_names_are_hashed_only_where_a_flush_would_resolve_in_numpy(numpy_always):
    rng, lines = shuffled_dag(4, 300)  # too few edges for numpy, as decided: dict lookups need the names
    calls: list[str] = []
    with resolved_in_numpy(numpy_always), spy(mixed_module.EdgeBatch, "hash_words", calls):
        assert_same(lines, numpy_always)
    assert bool(calls) == numpy_always


def test_two_names_with_one_hash_take_dict_lookups(monkeypatch):
    rng, lines = shuffled_dag(5, 300)
    real = mixed_module._hashes
    monkeypatch.setattr(mixed_module, "_hashes", lambda np_, names: real(np_, ["n8" if w == "n9" else w for w in names]))
    calls: list[str] = []
    with spy(mixed_module.EdgeBatch, "resolve", calls):
        assert_same(lines, numpy_always=True)
    assert calls


def test_a_big_shuffled_dag_resolves_in_numpy():
    rng, lines = shuffled_dag(11, 12_000)  # numpy is loaded (this module imports it)
    calls: list[str] = []
    with spy(mixed_module.EdgeBatch, "resolve_in", calls):
        fast = digest(parse_dag, lines)
    assert calls and fast == digest(careful, lines)


@st.composite
def dags(draw):
    """A DAG's JOB, PARENT (one or more parents and children) and VARS lines, sometimes with a back edge."""
    n = draw(st.integers(2, 60))
    lines = [f"JOB n{i} n{i % 3}.sub" for i in range(n)]
    for c in range(1, n):
        parents = draw(st.lists(st.integers(0, c - 1), max_size=3, unique=True))
        if parents:
            lines.append(f"PARENT {' '.join(f'n{p}' for p in parents)} CHILD n{c}")
    lines += [f'VARS n{i} k="{i}"' for i in draw(st.lists(st.integers(0, n - 1), max_size=5))]
    if draw(st.booleans()):
        a, b = sorted(draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2)))
        lines.append(f"PARENT n{b} CHILD n{a}")  # from a later node: a cycle if a path a -> b exists
    return lines


def graph(lines: list[str]):
    """The workflow as it does not depend on line order (or the kind of error)."""
    try:
        wf = parse_dag(lines)
    except CycleError:
        return "cycle"
    nodes = {n: (node.kind, node.submit, node.vars) for n, node in wf.nodes.items()}
    return nodes, wf.edges, wf.weak_edges, [(j.parents, j.children) for j in wf.joins]


@SETTINGS
@given(dags(), st.randoms(use_true_random=False), st.integers(1, RUN + 8), st.booleans())
def test_grouped_and_shuffled_lines_give_the_same_graph(lines, rng, copies, numpy_always):
    """The same DAG, its lines grouped (JOB lines first) or in random order
    (long mixed runs: each line repeated, a repeated JOB line renamed), is
    the same graph to every reader; VARS lines keep their own order."""
    lines = [line.replace(" n", f" c{k}n") if k else line for k in range(copies) for line in lines]
    shuffled = list(lines)
    rng.shuffle(shuffled)
    vars_lines = [line for line in lines if line.startswith("VARS")]
    shuffled = [line for line in shuffled if not line.startswith("VARS")] + vars_lines
    with resolved_in_numpy(numpy_always):
        assert graph(shuffled) == graph(lines)


def test_hashes_are_the_names_hashes():
    names = ["a", "n12", "ghost"]
    assert mixed_module._hashes(np, names).view(np.int64).tolist() == [hash(x) for x in names]
