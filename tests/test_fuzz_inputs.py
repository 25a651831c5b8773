"""Fuzzing the readers of user files: a clean error or a result, never an exception.

Every reader of a file a user hands us — DAG text (with INCLUDE/SPLICE),
Pegasus DAX, WfCommons WfFormat, BottleMod model files (TOML and JSON) —
gets generated input mixing valid structure with the inputs of issue 16
(NUL bytes, 5,000-digit numbers, deep nesting, unknown encodings, DTDs,
steep slopes, cycles, joins). It must return a result or raise an
:class:`~condor_rlrep.errors.RlrepError`: any other exception, or a numpy
warning, fails the test. Valid results go on through what the CLI does
with them (graph, plan, writer; BottleMod analysis).
"""

from __future__ import annotations

import json
import os
import warnings

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from condor_rlrep.bottlemod.analysis import analyze
from condor_rlrep.bottlemod.modelfile import parse_model
from condor_rlrep.workflowplan import plan_workflow
from condor_rlrep.dag import parse_dag, write_dag_lines
from condor_rlrep.dag.dax import parse_dax
from condor_rlrep.dag.wfformat import parse_wfformat
from condor_rlrep.errors import RlrepError
from condor_rlrep.estimates import resolve_estimates
from condor_rlrep.dag.graph import dependency_graph

FUZZ = settings(max_examples=int(os.environ.get("RLREP_FUZZ_EXAMPLES", "250")), deadline=None, suppress_health_check=list(HealthCheck), database=None)

BIG = "9" * 5000
NAMES = ["a", "b", "c", "d", "e", "ALL_NODES", "x+y", "n\x00", "_condor_join_node0", "é", '"q"']
NUMBERS = ["0", "1", "-1", "7", "255", "2147483648", BIG, "-" + BIG, "1e400", "nan", "1.5", "0x10"]
FILLER = ["", "{", "}", "@=T", "@T", "\\", "=", '"', "'", "#", "//", "\x00", "\t", "DIR", "NOOP", "DONE", "CHILD",
          "PARENT", "RETURN", "UNLESS-EXIT", "PRE", "POST", "DEFER", "x.sub", "inc.dag", "sp.dag", "k=\"v\""]
KEYWORDS = ["JOB", "PARENT", "WEAK PARENT", "VARS", "RETRY", "PRIORITY", "ABORT-DAG-ON", "SCRIPT PRE", "PRE_SKIP",
            "CATEGORY", "MAXJOBS", "TOLERANCE", "DONE", "INCLUDE", "SPLICE", "SUBDAG EXTERNAL", "FINAL", "SERVICE",
            "SUBMIT-DESCRIPTION", "CONFIG", "DOT", "NODE_STATUS_FILE", "SAVE_POINT_FILE", "CONNECT", "PIN_IN",
            "SET_JOB_ATTR", "ENV SET", "REJECT", "DATA", "job"]

token = st.sampled_from(NAMES + NUMBERS + FILLER)


@st.composite
def dag_line(draw) -> str:
    keyword = draw(st.sampled_from(KEYWORDS))
    return " ".join([keyword, *draw(st.lists(token, max_size=7))])


@st.composite
def dag_text(draw) -> list[str]:
    lines = [f"JOB {n} x.sub" for n in "abcde" if draw(st.booleans())]
    lines += draw(st.lists(dag_line(), max_size=12))
    lines += [draw(st.sampled_from(["PARENT a b CHILD c d", "PARENT a CHILD b", "PARENT d CHILD a", "PARENT c d CHILD a b"]))
              for _ in range(draw(st.integers(0, 3)))]
    return draw(st.permutations(lines))


def _files() -> dict[str, list[str]]:
    deep = {f"i{k}.dag": [f"JOB n{k} x.sub", f"INCLUDE i{k + 1}.dag"] for k in range(600)}
    deep["i600.dag"] = ["JOB last x.sub"]
    return {
        "inc.dag": ["JOB inc x.sub", "PARENT inc CHILD a"],
        "sp.dag": ["JOB s1 x.sub", "JOB s2 x.sub", "PARENT s1 CHILD s2", "INCLUDE sp.dag"],
        "deep.dag": ["INCLUDE i0.dag"],
        **deep,
    }


FILES = _files()


def loader(path: str) -> list[str]:
    name = path.rsplit("/", 1)[-1]
    if name not in FILES:
        raise FileNotFoundError(path)
    return FILES[name]


def _check(call, *args):
    """Run a reader: its result, or None after an RlrepError; anything else fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy RuntimeWarnings too
        try:
            return call(*args)
        except RlrepError as err:
            assert str(err) and "\n" not in str(err).strip() or "{" in str(err)
            return None


@FUZZ
@given(dag_text())
@example(["JOB a x.sub", f"RETRY a {BIG}"])
@example(["JOB a x.sub", f"PRIORITY a {BIG}", f"ABORT-DAG-ON a 1 RETURN {BIG}"])
@example(["JOB a x.sub", "INCLUDE i\x00.dag"])
@example(["JOB a x.sub", "JOB b x.sub", "JOB c x.sub", "PARENT a b CHILD c a"])  # a cycle through a join
def test_dag_text_never_crashes(lines):
    wf = _check(lambda: parse_dag(lines, include_loader=loader, path="fuzz.dag"))
    if wf is None:
        return
    estimates = _check(lambda: resolve_estimates(wf, default_estimate=60.0))
    if estimates is not None:
        graph = _check(dependency_graph, wf, estimates)
        if graph is not None:
            plan_workflow(graph, 0.5)
    written = _check(lambda: list(write_dag_lines(wf)))
    if written is not None:
        again = parse_dag(written, include_loader=loader)
        assert again == wf


def test_deep_include_and_nul_examples():
    wf = parse_dag(["INCLUDE deep.dag"], include_loader=loader)
    assert len(wf.nodes) == 601
    with pytest.raises(RlrepError, match="NUL"):
        parse_dag(["INCLUDE i\x00.dag"], include_loader=loader)
    with pytest.raises(RlrepError, match="recursion"):
        parse_dag(["SPLICE s sp.dag"], include_loader=loader)


DAX_PARTS = [
    '<job id="{n}" name="t" runtime="{v}"/>', '<job id="{n}" name="t"><profile namespace="pegasus" key="runtime">{v}</profile></job>',
    '<job id="{n}"><uses file="f" link="input" size="{v}"/></job>', '<child ref="{n}"><parent ref="{m}"/></child>',
    '<dag id="{n}" file="s.dag"/>', '<job id="{n}" name="t"><profile namespace="condor" key="priority">{v}</profile></job>',
    '<job id="{n}" name="t"><profile namespace="pegasus" key="memory">{v}</profile></job>', "<job>", "</adag>", "&x;",
]
PROLOGS = ['<?xml version="1.0"?>', '<?xml version="1.0" encoding="klingon"?>', '<?xml version="1.0" encoding="utf-16"?>',
           '<!DOCTYPE adag [<!ENTITY x SYSTEM "file:///etc/passwd">]>', '<!DOCTYPE adag SYSTEM "x.dtd">', ""]


@st.composite
def dax_text(draw) -> bytes:
    parts = []
    for _ in range(draw(st.integers(0, 8))):
        template = draw(st.sampled_from(DAX_PARTS))
        parts.append(template.format(n=draw(st.sampled_from(NAMES[:5] + ["ID1"])), m=draw(st.sampled_from(NAMES[:5])),
                                     v=draw(st.sampled_from(NUMBERS))))
    text = draw(st.sampled_from(PROLOGS)) + "\n<adag>" + "\n".join(parts) + "</adag>"
    return text.encode("utf-8", "surrogateescape")


@FUZZ
@given(dax_text())
def test_dax_never_crashes(data):
    wf = _check(parse_dax, data, "fuzz.dax")
    if wf is not None:
        _check(lambda: dependency_graph(wf, resolve_estimates(wf, default_estimate=1.0)))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=6)
    | st.sampled_from([10**400, -(10**400), 10**20]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["id", "name", "x"]), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def wf_task(draw, new: bool) -> dict:
    task = {("id" if new else "name"): draw(st.sampled_from(NAMES[:5])),
            "parents": draw(st.lists(st.sampled_from(NAMES[:5]), max_size=2))}
    for key in draw(st.lists(st.sampled_from(["runtimeInSeconds", "memoryInBytes", "priority", "coreCount", "cores",
                                              "memory", "category", "command", "files", "children"]), max_size=4)):
        task[key] = draw(json_values)
    return task


@st.composite
def wfformat_text(draw) -> bytes:
    new = draw(st.booleans())
    tasks = draw(st.lists(wf_task(new), max_size=5))
    if new:
        execution = [{k: v for k, v in t.items() if k != "parents"} for t in tasks]
        doc = {"workflow": {"specification": {"tasks": [{"id": t["id"], "parents": t["parents"]} for t in tasks]},
                            "execution": {"tasks": execution}}}
    else:
        doc = {"workflow": {"tasks": tasks}}
    text = json.dumps(doc)
    kind = draw(st.integers(0, 5))
    if kind == 1:
        text = text.replace("1", BIG, 1)
    elif kind == 2:
        text = '{"workflow": ' + "[" * 50000 + "]" * 50000 + "}"
    elif kind == 3:
        text = text[: draw(st.integers(0, len(text)))]
    return text.encode()


@FUZZ
@given(wfformat_text())
def test_wfformat_never_crashes(data):
    wf = _check(parse_wfformat, data, "fuzz.json")
    if wf is not None:
        _check(lambda: dependency_graph(wf, resolve_estimates(wf, default_estimate=1.0)))


FUNCTIONS = ["1", "0", BIG, "1e400", "{ points = [[0, 0], [1, 1]] }", "{ points = [[0, 0], [1e-300, 1e300]] }",
             "{ points = [[0, 0], [5e-324, 10]] }", "{ points = [[0, 10], [1, 0]] }", "{ steps = [[0, 1], [5, 0.5]] }",
             "{ steps = [[0, 1e308], [1, 1e308]] }", "{ points = [[0, 0], [1e300, 1e300]] }", "{ ppoly = { x = [0, 1e200], c = [[1e200], [0]] } }",
             "{ points = [] }", "[[[[[[1]]]]]]", "true", '"x"']


@st.composite
def model_text(draw) -> str:
    lines = []
    if draw(st.booleans()):
        lines += ["[links.net]", f"capacity = {draw(st.sampled_from(FUNCTIONS))}"]
    for task in draw(st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2, unique=True)):
        lines += [f"[tasks.{task}]", f"max_progress = {draw(st.sampled_from(NUMBERS[:6] + [BIG, '100', '1e300']))}"]
        if draw(st.booleans()):
            lines.append(f"start = {draw(st.sampled_from(['0', '5', BIG, '1e308']))}")
        lines += [f"[tasks.{task}.inputs.d]", f"requirement = {draw(st.sampled_from(FUNCTIONS))}"]
        lines.append(draw(st.sampled_from([f"source = {draw(st.sampled_from(FUNCTIONS))}", 'from = "a"', 'from = "b"'])))
        if draw(st.booleans()):
            lines += [f"[tasks.{task}.resources.cpu]", f"requirement = {draw(st.sampled_from(FUNCTIONS))}",
                      draw(st.sampled_from([f"allocation = {draw(st.sampled_from(FUNCTIONS))}", 'link = "net"']))]
    if draw(st.integers(0, 6)) == 0:
        lines.append("deep = " + "[" * 5000 + "]" * 5000)
    return "\n".join(lines)


@FUZZ
@given(model_text())
def test_bottlemod_model_never_crashes(text):
    model = _check(parse_model, text, "fuzz.toml")
    if model is not None:
        _check(analyze, model)


@FUZZ
@given(json_values)
def test_bottlemod_json_model_never_crashes(value):
    _check(parse_model, json.dumps({"tasks": {"a": {"max_progress": value, "inputs": {"d": {"requirement": value}}}}}),
           "fuzz.json", "json")
