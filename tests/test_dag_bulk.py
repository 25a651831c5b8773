"""The parser's bulk and fast paths (long runs of JOB / PARENT / VARS lines,
plain VARS lines) give exactly what the careful line-by-line path gives:
the same workflow, the same source lines, the same VARS order, the same
error text (file:line)."""

from __future__ import annotations

import gc
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from condor_rlrep.dag import VarAssignment, parse_dag
from condor_rlrep.dag import bulk as bulk_module
from condor_rlrep.dag import commands as commands_module
from condor_rlrep.dag import firstpass as firstpass_module
from condor_rlrep.dag import mixed as mixed_module
from condor_rlrep.errors import RlrepError

SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
NEVER = re.compile(r"(?!)")
RUN = 20  # longer than bulk.MIN_RUN


def careful(lines: list[str], **kw):
    """parse_dag with the bulk paths and the VARS fast paths switched off."""
    # every module that reads them (bound at import, as the hot loops want)
    switched = [(module, name) for module in (bulk_module, firstpass_module, commands_module)
                for name in ("MIN_RUN", "VARS_LINE")]
    saved = [getattr(module, name) for module, name in switched]
    for module, name in switched:
        setattr(module, name, 10**9 if name == "MIN_RUN" else NEVER)
    try:
        return parse_dag(lines, **kw)
    finally:
        for (module, name), value in zip(switched, saved):
            setattr(module, name, value)


def outcome(parse, lines: list[str]):
    """A comparable summary of a parse: its workflow (with source lines) or its error."""
    try:
        wf = parse(lines, path="t.dag")
    except RlrepError as err:
        return type(err).__name__, str(err)
    return wf, [(n.name, n.source_path, n.source_line) for n in wf.nodes.values()], wf.weak_edges


def assert_same(lines: list[str]) -> None:
    fast = outcome(parse_dag, lines)
    slow = outcome(careful, lines)
    assert fast == slow


def layered(n: int) -> list[str]:
    lines = [f"JOB n{i} n{i}.sub" for i in range(n)]
    lines += [f'VARS n{i} rlrep_estimate="{60 + i}"' for i in range(n)]
    lines += [f"PARENT n{p} CHILD n{c}" for c in range(1, n) for p in {0, c // 2, c - 1}]
    return lines


def test_bulk_equals_careful_on_a_big_dag():
    lines = ["# generated", *layered(300)]
    assert_same(lines)
    wf = parse_dag(lines, path="t.dag")
    assert wf.nodes["n7"].source_line == 9
    assert wf.nodes["n7"].submit == "n7.sub"
    assert wf.nodes["n7"].vars == [VarAssignment("rlrep_estimate", "67")]
    assert ("n3", "n7") in wf.edges and ("n6", "n7") in wf.edges and ("n0", "n7") in wf.edges
    assert len(wf.edges) == len({(p, c) for c in range(1, 300) for p in {0, c // 2, c - 1}})


def test_vars_order_kept_around_all_nodes_and_forward_references():
    n = 2 * RUN
    lines = ['VARS n1 k="early"']  # names a node defined later: goes to pass 2
    lines += [f"JOB n{i} a.sub" for i in range(n)]
    lines += ['VARS ALL_NODES k="all"']
    lines += [f'VARS n{i} k="{i}"' for i in range(n)]
    wf = parse_dag(lines)
    assert wf.nodes["n1"].vars == [VarAssignment("k", "early"), VarAssignment("k", "all"), VarAssignment("k", "1")]
    assert wf.nodes["n5"].vars == [VarAssignment("k", "all"), VarAssignment("k", "5")]
    assert_same(lines)


def test_vars_line_fast_path_matches_lexer():
    lines = ["JOB a a.sub", 'VARS a k="x y=z"', "vars a  j=\"'q'\"  ", 'VARS a m=""', 'VARS a p="1" q="2"', 'VARS a +r="s"']
    wf = parse_dag(lines)
    assert wf.nodes["a"].vars == [
        VarAssignment("k", "x y=z"), VarAssignment("j", "'q'"), VarAssignment("m", ""),
        VarAssignment("p", "1"), VarAssignment("q", "2"), VarAssignment("My.r", "s"),
    ]
    assert_same(lines)


@pytest.mark.parametrize(
    "bad, message",
    [
        ("JOB n3 x.sub", "duplicate node name 'n3'"),
        ("PARENT n1 CHILD nowhere", "unknown node 'nowhere'"),
        ('VARS n2 queue_x="1"', "cannot begin with 'queue'"),
        ("PARENT n2 CHILD n1", "dependency cycle"),
    ],
)
def test_error_inside_a_run_names_its_line(bad, message):
    kw = bad.split()[0]
    lines = layered(RUN)
    at = next(i for i, line in enumerate(lines) if line.startswith(kw + " ")) + RUN // 2
    lines.insert(at, bad)
    name, text = outcome(parse_dag, lines)
    assert message in text
    if kw != "PARENT" or "cycle" not in message:
        assert text.startswith(f"t.dag:{at + 1}:")
    assert (name, text) == outcome(careful, lines)


@pytest.mark.parametrize(
    "odd",
    [
        "PARENT n1 child n5",
        "PARENT\tn1\tCHILD n5",
        "PARENT n1 CHILD n5   ",
        "PARENT n1 CHILD n5\r",
        "PARENT n1 n2 CHILD n5",
        "PARENT n1 n2 n5",
        "JOB n0 a.sub",
        "JOB JOB JOB",
        "JOB ALL_NODES a.sub",
        "JOB z {",
        "JOB z x.sub \\",
        'JOB z "x.sub"',
        "JOB z x.sub DIR d",
        "JOB z+y x.sub",
        'VARS n1 k="a\\"b"',
        "VARS n1 k=v",
        "VARS nowhere k=\"1\"",
        "WEAK PARENT n1 CHILD n6",
    ],
)
def test_odd_line_inside_a_run(odd):
    for kw in ("JOB", "VARS", "PARENT"):
        lines = layered(RUN)
        at = next(i for i, line in enumerate(lines) if line.startswith(kw + " ")) + RUN // 2
        lines[at:at] = odd.split("\n") + (["}"] if odd.endswith("{") else [])
        assert_same(lines)


def test_duplicate_of_a_node_defined_before_the_run():
    lines = ["FINAL n5 x.sub", *layered(RUN)]
    name, text = outcome(parse_dag, lines)
    assert text.startswith("t.dag:7: duplicate node name 'n5'")
    assert (name, text) == outcome(careful, lines)


def test_weak_edge_made_strong_by_a_bulk_run():
    lines = layered(RUN)
    lines.insert(RUN, "WEAK PARENT n0 CHILD n1")
    wf = parse_dag(lines)
    assert ("n0", "n1") in wf.edges and wf.weak_edges == set()
    assert_same(lines)


def test_children_before_parents_and_cycles_in_bulk():
    n = RUN + 5
    lines = [f"JOB n{i} a.sub" for i in range(n)]
    lines += [f"PARENT n{i + 1} CHILD n{i}" for i in range(n - 1)]  # every edge goes backward
    assert_same(lines)
    cyclic = [*lines, f"PARENT n0 CHILD n{n - 1}"]
    assert outcome(parse_dag, cyclic)[0] == "CycleError"
    assert_same(cyclic)


_NAMES = st.sampled_from(["a", "b", "c", "d", "e", "ALL_NODES", "JOB", "x+y", "nowhere"])
_LINE = st.one_of(
    st.builds("JOB {} {}.sub".format, _NAMES, st.sampled_from(["a", "b"])),
    st.builds("{} {} {} {}".format, st.sampled_from(["PARENT", "parent"]), _NAMES, st.sampled_from(["CHILD", "child"]), _NAMES),
    st.builds('VARS {} {}="{}"'.format, _NAMES, st.sampled_from(["k", "j", "queue", "+p"]), st.sampled_from(["1", "a b", ""])),
    st.sampled_from(["", "# note", "JOB f f.sub NOOP", "FINAL fin f.sub", "WEAK PARENT a CHILD b", "JOB a a.sub \\", "CATEGORY a c"]),
)


@SETTINGS
@given(st.lists(st.tuples(_LINE, st.integers(1, RUN + 4)), min_size=1, max_size=6))
def test_random_runs_same_as_careful(blocks):
    # each block repeats one line: long runs of one shape reach the bulk paths
    lines = [line for line, times in blocks for _ in range(times)]
    numbered = [line.replace("nowhere", f"n{i}") if i % 3 else line for i, line in enumerate(lines)]
    jobs = [f"JOB n{i} n.sub" for i in range(len(lines))]
    for candidate in (lines, jobs + numbered, numbered + jobs):
        assert_same(candidate)


def test_big_parse_promotes_the_workflow_and_keeps_gc_settings():
    lines = layered(12_000)  # leaves far more than parser._PROMOTE_MIN new containers
    assert gc.isenabled()
    wf = parse_dag(lines)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.get_count()[0] < 1000  # not left in the young generation
    node = wf.nodes["n5"]
    assert any(obj is node for obj in gc.get_objects(generation=2))
    gc.disable()
    try:
        parse_dag(lines)
        assert not gc.isenabled()
    finally:
        gc.enable()
    gc.freeze()  # somebody else's freeze is left alone
    try:
        frozen = gc.get_freeze_count()
        assert parse_dag(lines) == wf
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("seed", range(4))
def test_shuffled_job_and_parent_lines_same_as_careful(seed):
    """JOB and PARENT lines in random order take the mixed bulk path (edges
    before their nodes deferred, as line by line); with a cycle, the same
    error names the same cycle and line."""
    import random

    rng = random.Random(seed)
    n = 300
    lines = [f"JOB n{i} n.sub" for i in range(n)]
    lines += [f"PARENT n{p} CHILD n{c}" for c in range(1, n) for p in rng.sample(range(c), min(c, 3))]
    rng.shuffle(lines)
    assert_same(lines)
    calls = []
    real = mixed_module.bulk_mixed
    try:
        firstpass_module.bulk_mixed = lambda *a: calls.append(1) or real(*a)
        wf = parse_dag(lines)
    finally:
        firstpass_module.bulk_mixed = real
    assert calls and len(wf.nodes) == n and len(wf.edges) == sum(min(c, 3) for c in range(1, n))
    cyclic = [*lines]
    cyclic.insert(rng.randrange(len(lines)), f"PARENT n{n - 1} CHILD n0")
    cyclic.insert(rng.randrange(len(lines)), "PARENT n5 CHILD n5")  # a self-loop too
    assert outcome(parse_dag, cyclic)[0] == "CycleError"
    assert_same(cyclic)
    bad = [*lines]
    bad.insert(rng.randrange(len(lines)), "JOB n7 again.sub")  # duplicate inside a mixed run
    assert outcome(parse_dag, bad)[0] == "DagError"
    assert_same(bad)


def test_plain_node_is_the_node_the_constructor_makes():
    """The fast paths' nodes leave their empty scripts/arguments/files to
    first use: every field reads as Node(...)'s, equality, repr, copies and
    pickles included, and the containers made later are each node's own."""
    import copy
    import dataclasses
    import pickle

    from condor_rlrep.dag.model import Node, plain_node

    lean = plain_node("a", "a.sub", "t.dag", 3)
    full = Node(name="a", submit="a.sub", source_path="t.dag", source_line=3)
    assert [getattr(lean, f.name) for f in dataclasses.fields(Node)] == [getattr(full, f.name) for f in dataclasses.fields(Node)]
    assert lean == full and repr(lean) == repr(full)
    for other in (copy.deepcopy(plain_node("a", "a.sub", "t.dag", 3)), pickle.loads(pickle.dumps(plain_node("a", "a.sub", "t.dag", 3))),
                  dataclasses.replace(plain_node("a", "a.sub", "t.dag", 3))):
        assert other == full
    one, two = plain_node("x", "s", None, 1), plain_node("y", "s", None, 2)
    one.scripts["PRE"] = "p"
    one.files.append("f")
    assert two.scripts == {} and two.files == [] and two.arguments == []
    with pytest.raises(AttributeError):
        lean.no_such_field  # noqa: B018
    wf = parse_dag([f"JOB n{i} n.sub" for i in range(RUN)] + ["SCRIPT PRE n3 pre.sh"])
    assert wf.nodes["n3"].scripts["PRE"].executable == "pre.sh" and wf.nodes["n4"].scripts == {}


_JOB_NAMES = st.sampled_from(["n1", "n2", "N3", "x.y", "n5", "n6", "a+b", "child", "n1"])
_JOB_FILES = st.sampled_from(["a.sub", "b/c.sub", "e.sub", "a.sub", "{x", "d.condor.sub"])
_DIRS = st.sampled_from(["d", "/abs/d", "../up", "d\\e", "p:q"])


@settings(max_examples=300, deadline=None, database=None)
@given(jobs=st.lists(st.tuples(_JOB_NAMES, _JOB_FILES, st.sampled_from(["DIR", "dir", "Dir", "DIRX"]), _DIRS), max_size=6),
       edge=st.booleans())
def test_job_with_dir_fast_path_matches_node(jobs: list, edge: bool) -> None:
    """``JOB name file DIR dir`` on the line-by-line fast path gives what
    :meth:`node` gives (forced by a second DIR, the last one counting): the
    same nodes, directories and edges, or the same error."""
    def lines(extra: str) -> list[str]:
        out = [f"JOB {name} {sub} {kw}{extra} {d}" for name, sub, kw, d in jobs]
        if edge and len(jobs) > 1:
            out.append(f"PARENT {jobs[0][0]} CHILD {jobs[-1][0]}")
        return ["# top", *out]

    fast = outcome(parse_dag, lines(""))
    assert fast == outcome(parse_dag, lines(" elsewhere DIR"))
    if not isinstance(fast[0], str):
        assert [n.directory for n in fast[0].nodes.values()] == [d for *_, d in jobs]  # parsed: each line had its DIR
