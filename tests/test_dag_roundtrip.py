"""parse(write(w)) == w: fixtures, generated models, generated DAG text, htcondor2.dags."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from condor_rlrep.errors import DagError
from condor_rlrep.dag import Join, Node, Script, VarAssignment, Workflow, parse_dag, read_dag, write_dag, write_dag_lines
from condor_rlrep.dag.model import JOIN_PREFIX
from _dagutil import DAGS, SHARED_DATA, roundtrip

SETTINGS = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

FIXTURES = sorted(p for p in DAGS.rglob("*.dag"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(DAGS)))
def test_fixture_roundtrip(path):
    wf = read_dag(path)
    again = roundtrip(wf, allow_any_node_name_characters=True)
    assert again == wf
    assert list(again.nodes) == list(wf.nodes)


def test_real_dags_roundtrip():
    real = sorted((SHARED_DATA / "eventlogs" / "real-dagman").glob("**/test.dag"))
    if not real:
        pytest.skip("no real-dagman data next to the checkout")
    for path in real:
        wf = read_dag(path)
        assert roundtrip(wf) == wf


def test_write_dag_is_atomic_and_readable(tmp_path):
    wf = read_dag(DAGS / "completion.dag")
    target = tmp_path / "out.dag"
    target.write_text("old content\n")
    write_dag(wf, target)
    assert read_dag(target) == wf
    assert [p.name for p in tmp_path.iterdir()] == ["out.dag"]  # no temp file left behind


def test_write_dag_failure_leaves_old_file(tmp_path):
    target = tmp_path / "out.dag"
    target.write_text("JOB A a.sub\n")
    bad = Workflow(nodes={"A": Node("A", submit="a"), "B": Node("B")})
    with pytest.raises(Exception):
        write_dag(bad, target)
    assert target.read_text() == "JOB A a.sub\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.dag"]


def test_spliced_workflow_written_flat():
    wf = read_dag(DAGS / "splice" / "s1.dag")
    lines = list(write_dag_lines(wf, allow_any_node_name_characters=True))
    assert "JOB X1+A simple-job.sub" in lines
    assert not any(ln.startswith("SPLICE") for ln in lines)
    assert parse_dag(lines, allow_any_node_name_characters=True) == wf


# -- generated models ---------------------------------------------------------------

NAME_CHARS = string.ascii_letters + string.digits + "_.:-"
names = st.text(NAME_CHARS, min_size=1, max_size=8).filter(
    lambda s: s.upper() not in ("PARENT", "CHILD", "ALL_NODES")
)
simple = st.text(string.ascii_letters + string.digits + "_.-/", min_size=1, max_size=10)
# file names may contain blanks, quotes, backslashes and '='
files = st.text(string.ascii_letters + string.digits + " _./\\\"'=-", min_size=1, max_size=12).filter(
    lambda s: not s.startswith(("{", "@="))
)
words = st.text(string.ascii_letters + string.digits + "$_./=\"'\\-", min_size=1, max_size=8).filter(
    lambda s: not s.startswith("=") and not s.endswith("\\")  # a trailing backslash would continue the line
)
values = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\x00"), max_size=12)  # NUL: refused (test_dag_errors)
keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,6}", fullmatch=True).filter(
    lambda k: not k.lower().startswith("queue") and k.lower() != "my."
)
body_line = st.text(string.printable.replace("\n", "").replace("\r", "").replace("\x0b", "").replace("\x0c", ""), min_size=1, max_size=15).map(str.strip).filter(
    lambda s: s and not s.startswith(("#", "//"))
)
bodies = st.lists(st.one_of(body_line, st.just("}"), st.just("} x")), max_size=4).map("\n".join)
ints = st.integers(-1000, 1000)


@st.composite
def scripts(draw, kind):
    defer = draw(st.none() | st.tuples(st.integers(0, 255), st.integers(0, 9999)))
    debug = draw(st.none() | st.tuples(simple, st.sampled_from(["STDOUT", "STDERR", "ALL"])))
    return Script(
        kind=kind, executable=draw(words), arguments=draw(st.lists(words, max_size=3)),
        defer_status=defer[0] if defer else None, defer_seconds=defer[1] if defer else None,
        debug_file=debug[0] if debug else None, debug_type=debug[1] if debug else None,
    )


@st.composite
def nodes(draw, name, kind):
    inline = kind != "SUBDAG" and draw(st.booleans())
    sc = {}
    for k in ("PRE", "POST", "HOLD"):
        if draw(st.booleans()):
            sc[k] = draw(scripts(k))
    save = draw(st.booleans())
    return Node(
        name=name, kind=kind,
        submit=None if inline else draw(files),
        inline_submit=draw(bodies) if inline else None,
        directory=draw(st.none() | files),
        noop=draw(st.booleans()), done=draw(st.booleans()),
        scripts=sc,
        pre_skip=draw(st.none() | st.integers(0, 255)),
        retry=draw(st.none() | st.integers(0, 50)),
        retry_unless_exit=draw(st.none() | ints),
        abort_dag_on=draw(st.none() | st.tuples(ints, st.none() | st.integers(0, 255))),
        vars=draw(st.lists(st.builds(VarAssignment, keys, values, st.sampled_from([None, "PREPEND", "APPEND"])), max_size=4)),
        priority=draw(st.none() | ints),
        category=draw(st.none() | simple | simple.map(lambda s: "+" + s)),
        tolerance=draw(st.none() | st.builds(
            lambda n, pct, opt: f"{n}{pct}" + (f" {opt}" if opt else ""),
            st.integers(0, 99), st.sampled_from(["", "%"]), st.sampled_from([None, "WAIT", "FAIL-FAST"]),
        )),
        save_point=save,
        save_point_file=draw(st.none() | files) if save else None,
    )
    # retry_unless_exit without retry is not expressible
    # (fixed up by the caller)


@st.composite
def workflows(draw):
    node_names = draw(st.lists(names, min_size=1, max_size=8, unique=True))
    kinds = [draw(st.sampled_from(["JOB", "JOB", "JOB", "SUBDAG", "SERVICE", "PROVISIONER"])) for _ in node_names]
    if draw(st.booleans()):
        kinds[-1] = "FINAL"
    wf = Workflow()
    for n, k in zip(node_names, kinds):
        node = draw(nodes(n, k))
        if node.retry is None:
            node.retry_unless_exit = None
        wf.nodes[n] = node
    linkable = [n for n, k in zip(node_names, kinds) if k in ("JOB", "SUBDAG")]
    for i, p in enumerate(linkable):
        for c in linkable[i + 1 :]:
            if draw(st.booleans()):
                wf.edges.add((p, c))
                if draw(st.booleans()):
                    wf.weak_edges.add((p, c))
    for _ in range(draw(st.integers(0, 2))):
        # many-to-many dependencies: joins, parents before children
        if len(linkable) >= 4:
            cut = draw(st.integers(2, len(linkable) - 2))
            ps = draw(st.lists(st.sampled_from(linkable[:cut]), min_size=2, unique=True))
            cs = draw(st.lists(st.sampled_from(linkable[cut:]), min_size=2, unique=True))
            order = {n: i for i, n in enumerate(wf.nodes)}
            wf.joins.append(Join(f"{JOIN_PREFIX}{len(wf.joins)}", tuple(sorted(ps, key=order.get)),
                                 tuple(sorted(cs, key=order.get)), weak=draw(st.booleans())))
    desc_names = draw(st.lists(names.filter(lambda s: s not in wf.nodes), max_size=2, unique=True))
    wf.submit_descriptions = {d: draw(bodies) for d in desc_names}
    wf.maxjobs = draw(st.dictionaries(simple, st.integers(0, 100), max_size=2))
    wf.config = draw(st.none() | files)
    wf.set_job_attrs = draw(st.lists(st.tuples(st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True), values.map(str.strip).filter(lambda v: not v.endswith("\\"))), max_size=2))
    wf.env = draw(st.lists(st.tuples(st.sampled_from(["GET", "SET"]), st.sampled_from(["PATH HOME", "A=1;B=2;", "X,Y"])), max_size=2))
    wf.dot = draw(st.none() | st.sampled_from(["g.dot", "g.dot UPDATE", "g.dot DONT-UPDATE OVERWRITE INCLUDE h.dot"]))
    wf.node_status_file = draw(st.none() | files)
    if wf.node_status_file is not None:
        wf.node_status_min_seconds = draw(st.none() | st.integers(0, 600))
        wf.node_status_always_update = draw(st.booleans())
    wf.jobstate_log = draw(st.none() | files)
    # no wf.reject: the parser refuses a REJECT line as DAGMan does (issue 23 item 3)
    return wf


@SETTINGS
@given(workflows())
def test_written_model_parses_back_to_itself(wf):
    lines = list(write_dag_lines(wf))
    assert parse_dag(lines) == wf
    again = list(write_dag_lines(parse_dag(lines)))
    assert again == lines  # writing is deterministic


# -- generated DAG text ---------------------------------------------------------------

def _kw(draw, word):
    """A keyword spelled in one of the ways DAGMan accepts."""
    variant = draw(st.sampled_from(["upper", "lower", "swap"]))
    w = {"upper": word, "lower": word.lower(), "swap": word.replace("-", "_") if "-" in word else word.replace("_", "-")}[variant]
    return w


def _q(draw, text):
    """text as a (possibly quoted) token; quotes are required for blanks."""
    if any(c in text for c in " \t\"'=\\") or draw(st.booleans()):
        quote = draw(st.sampled_from(['"', "'"]))
        return quote + text.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote
    return text


@st.composite
def dag_texts(draw):
    node_names = draw(st.lists(names, min_size=1, max_size=6, unique=True))
    lines: list[str] = []
    cmds: list[str] = []
    for i, n in enumerate(node_names):
        kw = draw(st.sampled_from(["JOB", "JOB", "SUBDAG EXTERNAL", "SERVICE"]))
        if draw(st.booleans()) and kw == "JOB":
            # an inline description is read raw: mark its lines so no continuation is added
            lines.append("\0" + f"{_kw(draw, 'JOB')} {n} {{")
            body = draw(st.lists(body_line.filter(lambda b: b != "}" and not b.startswith(("} ", "}\t"))), max_size=3))
            lines += ["\0" + b for b in body]
            lines.append("\0}" + (" NOOP" if draw(st.booleans()) else ""))
        else:
            opts = draw(st.lists(st.sampled_from(["NOOP", "DONE", "DIR"]), max_size=2))
            parts = [kw, n, _q(draw, draw(files))]
            for o in opts:
                parts += [o, _q(draw, draw(files))] if o == "DIR" else [o]
            lines.append(" ".join(parts))
        # per-node commands, maybe with ALL_NODES
        target = draw(st.sampled_from([n, n, "ALL_NODES", "all_nodes"]))
        if draw(st.booleans()):
            pairs = []
            for _ in range(draw(st.integers(1, 3))):
                k = draw(keys)
                v = draw(values)
                form = draw(st.sampled_from(["dq", "sq", "spaced", "plain"]))
                if form == "plain" and v and all(c in string.ascii_letters + string.digits for c in v):
                    pairs.append(f"{k}={v}")
                elif form == "sq":
                    pairs.append(f"{k}='" + v.replace("\\", "\\\\").replace("'", "\\'") + "'")
                elif form == "spaced":
                    pairs.append(f'{k} = "' + v.replace("\\", "\\\\").replace('"', '\\"') + '"')
                else:
                    pairs.append(f'{k}="' + v.replace("\\", "\\\\").replace('"', '\\"') + '"')
            place = draw(st.sampled_from(["", "PREPEND ", "append "]))
            cmds.append(f"VARS {target} {place}" + " ".join(pairs))
        if draw(st.booleans()):
            head = draw(st.sampled_from(["", "DEFER 2 30 ", "DEBUG d.log ALL ", "DEBUG d.log STDERR DEFER 1 5 "]))
            args = " ".join(draw(st.lists(words, max_size=3)))
            cmds.append(f"SCRIPT {head}{draw(st.sampled_from(['PRE', 'post', 'HOLD']))} {target} {draw(words)} {args}")
        if draw(st.booleans()):
            cmds.append(f"{_kw(draw, 'RETRY')} {target} {draw(st.integers(0, 9))}" + draw(st.sampled_from(["", " UNLESS-EXIT 3", " unless_exit -2"])))
        if draw(st.booleans()):
            cmds.append(f"{_kw(draw, 'ABORT-DAG-ON')} {target} {draw(ints)}" + draw(st.sampled_from(["", " RETURN 7"])))
        if draw(st.booleans()):
            cmds.append(f"{_kw(draw, 'PRE_SKIP')} {target} {draw(st.integers(0, 255))}")
        if draw(st.booleans()):
            cmds.append(f"PRIORITY {target} {draw(ints)}")
        if draw(st.booleans()):
            cmds.append(f"CATEGORY {target} {draw(simple)}")
        if draw(st.booleans()):
            cmds.append(f"TOLERANCE {target} {draw(st.integers(0, 9))}{draw(st.sampled_from(['', '%']))}")
        if i and draw(st.booleans()):
            parents = draw(st.lists(st.sampled_from(node_names[:i]), min_size=1, max_size=3))
            # sometimes several children (later nodes, so no cycle): a join when 2+ and 2+ remain
            children = [n, *draw(st.lists(st.sampled_from(node_names[i:]), max_size=2))]
            cmds.append(draw(st.sampled_from(["", "WEAK "])) + f"PARENT {' '.join(parents)} CHILD {' '.join(children)}")
    cmds.append(f"MAXJOBS {draw(simple)} {draw(st.integers(0, 9))}")
    if draw(st.booleans()):
        cmds.append("CONFIG " + _q(draw, draw(files)))
    if draw(st.booleans()):
        cmds.append('SET_JOB_ATTR Foo = "bar baz"')
    # edges refer only to SERVICE-free pairs: drop lines naming a SERVICE node in PARENT
    services = {ln.split()[1] for ln in lines if ln.startswith("SERVICE")}  # no edges allowed
    cmds = [c for c in cmds if not (("PARENT" in c.split()[:2]) and services & set(c.split()))]
    order = draw(st.permutations(cmds)) if draw(st.booleans()) else cmds  # any order is fine
    text = []
    for ln in lines + list(order):
        if draw(st.integers(0, 5)) == 0:
            text.append(draw(st.sampled_from(["# comment", "// comment", ""])))
        if ln.startswith("\0"):
            text.append(ln[1:])
        elif draw(st.integers(0, 6)) == 0 and " " in ln:
            head, _, tail = ln.partition(" ")
            text += [head + " \\", "# in between", tail]  # continuation
        else:
            text.append(ln)
    return "\n".join(text)


@SETTINGS
@given(dag_texts())
def test_parse_write_parse_is_parse(text):
    wf = parse_dag(text.split("\n"))
    again = parse_dag(list(write_dag_lines(wf)))
    assert again == wf
    assert list(again.nodes) == list(wf.nodes)


# -- htcondor2.dags -----------------------------------------------------------------------

def _contract_joins(wf: Workflow) -> set[tuple[str, str]]:
    """Edges between real nodes, with htcondor2.dags' NOOP join nodes contracted."""
    joins = {n for n in wf.nodes if n.startswith("__JOIN__")}
    edges = {e for e in wf.edges if e[0] not in joins and e[1] not in joins}
    for j in joins:
        ins = [p for p, c in wf.edges if c == j]
        outs = [c for p, c in wf.edges if p == j]
        edges |= {(p, c) for p in ins for c in outs}
    return edges


def test_htcondor2_dags_written_dag_parses_to_same_graph(tmp_path):
    htcondor = pytest.importorskip("htcondor2")
    from htcondor2 import dags

    sub = htcondor.Submit({"executable": "/bin/echo", "arguments": "$(x)"})
    dag = dags.DAG(
        dagman_job_attributes={"Foo": '"bar"'},
        dagman_config={"DAGMAN_MAX_JOBS_IDLE": 10},
        jobstate_log=Path("js.log"),
        node_status_file=dags.NodeStatusFile(Path("dag.status"), update_time=30, always_update=True),
        dot_config=dags.DotConfig(Path("dag.dot"), update=True, include_file=Path("head.dot")),
    )
    a = dag.layer(
        name="a", submit_description=sub,
        vars=[{"x": 'one "quoted" \\ value'}, {"x": "two"}],
        retries=2, retry_unless_exit=3,
        pre=dags.Script(executable="pre.sh", arguments=["$JOB", "$RETRY"]),
        post=dags.Script(executable="post.sh", arguments=["$RETURN"], retry=True, retry_status=5, retry_delay=10),
        priority=4, category="heavy", pre_skip_exit_code=9,
    )
    b = a.child_layer(name="b", submit_description=sub, vars=[{"x": str(i)} for i in range(3)])  # many-to-many
    c = b.child_layer(name="c", submit_description=sub, vars=[{}] * 3, edge=dags.OneToOne())
    d = c.child_layer(name="d", submit_description=sub, vars=[{}])
    a.child_subdag(name="inner", dag_file=Path("inner.dag"))
    dag.final(name="fin", submit_description=sub, post=dags.Script(executable="final.sh"))
    path = dags.write_dag(dag, tmp_path)

    wf = read_dag(path)
    real = [n for n in wf.nodes if not n.startswith("__JOIN__")]
    assert sorted(real) == sorted(["a:0", "a:1", "b:0", "b:1", "b:2", "c:0", "c:1", "c:2", "d:0", "inner:0", "fin"])
    expected = (
        {(f"a:{i}", f"b:{j}") for i in range(2) for j in range(3)}
        | {(f"b:{i}", f"c:{i}") for i in range(3)}
        | {(f"c:{i}", "d:0") for i in range(3)}
        | {(f"a:{i}", "inner:0") for i in range(2)}
    )
    assert _contract_joins(wf) == expected
    a0 = wf.nodes["a:0"]
    assert a0.var("x") == 'one "quoted" \\ value'
    assert (a0.retry, a0.retry_unless_exit, a0.priority, a0.category, a0.pre_skip) == (2, 3, 4, "heavy", 9)
    assert a0.scripts["PRE"].argv == ["pre.sh", "$JOB", "$RETRY"]
    post = a0.scripts["POST"]
    assert (post.executable, post.defer_status, post.defer_seconds) == ("post.sh", 5, 10)
    assert wf.nodes["inner:0"].kind == "SUBDAG" and wf.final_node == "fin"
    assert wf.set_job_attrs == [("Foo", '"bar"')]
    assert wf.config == "dagman.config" and wf.jobstate_log == "js.log"
    assert (wf.node_status_file, wf.node_status_min_seconds, wf.node_status_always_update) == ("dag.status", 30, True)
    assert wf.dot == "dag.dot UPDATE OVERWRITE INCLUDE head.dot"
    assert roundtrip(wf) == wf


def test_htcondor2_dags_max_jobs_bug_gives_a_clear_error(tmp_path):
    """htcondor2.dags writes max_jobs_by_category as "CATEGORY cat n" (docs/dagman.md §3)."""
    htcondor = pytest.importorskip("htcondor2")
    from htcondor2 import dags

    dag = dags.DAG(max_jobs_by_category={"heavy": 2})
    dag.layer(name="a", submit_description=htcondor.Submit({"executable": "/bin/true"}), category="heavy")
    path = dags.write_dag(dag, tmp_path)
    with pytest.raises(DagError) as info:
        read_dag(path)
    assert "CATEGORY: unknown node 'heavy'" in info.value.message and info.value.line is not None
