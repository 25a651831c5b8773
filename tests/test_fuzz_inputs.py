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


# -- issue 24: every other file the project reads ---------------------------------------------------
# submit files, node logs, .dagman.out, the journal, spool entries, node state, store exports, trace
# files, store URLs and broker requests: a result or an RlrepError (one line naming the file), never
# another exception; the bulk inputs also under a 2 GB address-space limit, in linear time.

import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

FUZZ_FILES = settings(max_examples=int(os.environ.get("RLREP_FUZZ_EXAMPLES", "120")), deadline=None,
                      suppress_health_check=list(HealthCheck), database=None)

HOSTILE = ["", "\x00", "\xff", "[" * 3000, "{" * 3000, BIG, "-" + BIG, "1e400", "nan", "inf", "-inf", "\n", "\\",
           "$(", "$$(", ")", "|", "include : /bin/false |", "queue", "queue 3", "=", '"', "...", "\r\n"]
piece = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12))


def _one_line_error(err: RlrepError) -> None:
    assert str(err) and "\n" not in str(err).strip(), repr(str(err))


@FUZZ_FILES
@given(st.lists(st.one_of(piece, st.sampled_from(["error = e.$(Cluster)", "initialdir = $(X)", "X = $(X)$(X)",
                                                  "executable = /bin/true"])), max_size=20))
def test_submit_values_never_crash_and_never_run_anything(lines):
    from condor_rlrep.condor.submit import find_queue
    from condor_rlrep.condor.submitread import expand, submit_values

    text = "\n".join(lines)
    values = submit_values(text)
    for value in values.values():
        assert len(expand(value, values)) <= 65536 * 2 + len(value)
    find_queue(text)


_EVENT = ("000 (007.000.000) 2026-12-02 11:13:43 Job submitted from host: <127.0.0.1:1>\n"
          '    DAG Node: A\n...\n'
          "001 (007.000.000) 2026-12-02 11:13:50 Job executing on host: <127.0.0.1:2>\n...\n"
          "005 (007.000.000) 2026-12-02 11:13:52 Job terminated.\n"
          "\t(1) Normal termination (return value 0)\n...\n")


@FUZZ_FILES
@given(st.lists(st.one_of(piece, st.sampled_from(_EVENT.splitlines(keepends=True))), max_size=30),
       st.integers(0, 400))
def test_node_logs_never_crash(tmp_path_factory, parts, offset):
    from condor_rlrep.condor.eventlog import cluster_nodes, read_events, rebuild_cluster

    path = tmp_path_factory.mktemp("log") / "n.log"
    path.write_text(_EVENT + "".join(parts), encoding="utf-8", errors="surrogateescape")
    try:
        events = read_events(path, offset=offset)
    except RlrepError as err:
        _one_line_error(err)
        return
    for cluster in cluster_nodes(events):
        rebuild_cluster(events, cluster)


@FUZZ_FILES
@given(st.lists(st.one_of(piece, st.sampled_from([
    "12/02/26 11:13:43.120 Event: ULOG_SUBMIT for HTCondor Node A (7.0.0) {12/02/26 11:13:43}\n",
    "12/02/26 11:13:43.120 Running PRE script of Node A...\n",
    "12/02/26 11:13:43.120 ** condor_scheduniv_exec.20.0 (CONDOR_DAGMAN) STARTING UP\n",
    "12/02/26 11:13:43.120 Of 3 nodes total:\n"])), max_size=30))
def test_dagman_out_never_crashes(tmp_path_factory, parts):
    from condor_rlrep.runreport.dagman_out import DagmanOut

    path = tmp_path_factory.mktemp("out") / "w.dag.dagman.out"
    path.write_bytes("".join(parts).encode("utf-8", "surrogateescape"))
    reader = DagmanOut(str(path))
    reader.update()
    reader.update()


@FUZZ_FILES
@given(st.lists(st.one_of(piece, st.just('{"v": 1, "hook": "PRE", "node": "A", "at": 1}'),
                          st.builds(json.dumps, json_values)), max_size=20))
def test_journal_never_crashes(lines):
    from condor_rlrep.rundir.journal import _parse

    records, skipped = _parse("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    assert all(isinstance(r, dict) for r in records) and skipped >= 0


@FUZZ_FILES
@given(st.one_of(json_values, st.fixed_dictionaries({
    "node": st.one_of(st.text(max_size=5), json_values), "mode": st.sampled_from(["replicas", "passthrough", 1]),
    "replicas": st.one_of(st.integers(-5, 200), json_values), "log_offset": st.one_of(st.integers(-1, 10), json_values),
    "submit_time": st.one_of(st.floats(), json_values), "log_id": json_values})))
def test_node_state_is_checked_never_crashes(state):
    from condor_rlrep.rundir.runstate import check_node_state

    try:
        check_node_state(state, "state/A.json")
    except ValueError as err:
        assert "state/A.json" in str(err)


@FUZZ_FILES
@given(st.lists(st.one_of(
    st.builds(lambda d: json.dumps(d), st.fixed_dictionaries({
        "decision_id": st.one_of(st.integers(-1, 3), json_values), "store": st.sampled_from(["S", "T"]),
        "identity": st.one_of(st.just({}), json_values, st.just({"dag": "d", "node": "A", "run": "r", "retry": 0})),
        "outcome": st.one_of(json_values, st.fixed_dictionaries({"reward": st.one_of(st.floats(), json_values)}))})),
    st.builds(lambda d: json.dumps(d), st.fixed_dictionaries({
        "kind": st.just("model"), "store": st.just("S"), "key": json_values, "runs": json_values})),
    piece), max_size=6))
def test_spool_entries_never_crash_a_flush(tmp_path_factory, entries):
    from condor_rlrep.hooks.spool import flush_spool

    class Store:
        """Answers like a store holding decision 1 of node A; records nothing."""

        def decision(self, decision_id):
            if decision_id != 1:
                raise RlrepError(f"unknown decision id {decision_id}")
            return type("R", (), {"context": {"dag": "d", "node": "A", "run": "r", "retry": 0}})()

        def record(self, *args, **kwargs):
            return True

        def record_exposure(self, *args, **kwargs):
            return True

        def survival_cells(self):
            return []

        config = None

    context = tmp_path_factory.mktemp("ctx")
    (context / "spool").mkdir()
    for index, text in enumerate(entries):
        (context / "spool" / f"{index}.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    done, kept = flush_spool(str(context), Store(), "S")
    assert done + len(kept) <= len(entries)


@FUZZ_FILES
@given(st.dictionaries(st.sampled_from(["format", "schema_version", "config", "rewards_seen", "last_decision_id",
                                        "estimates", "recovery", "decisions", "survival", "x"]),
                       st.one_of(json_values, st.lists(st.lists(json_values, max_size=5), max_size=3))),
       st.sampled_from(["", BIG, "[" * 5000, "\udcff"]))
def test_store_exports_never_crash_an_import(tmp_path_factory, document, tail):
    import io

    from condor_rlrep.store.backends import import_stream

    text = json.dumps(document)
    if tail:
        text = text[:-1] + (', "y": ' + tail + "}" if tail != "\udcff" else ', "\udcff": 1}')
    folder = tmp_path_factory.mktemp("imp")
    stream = io.TextIOWrapper(io.BytesIO(text.encode("utf-8", "surrogateescape")), encoding="utf-8")
    try:
        store, _count = import_stream(str(folder / "s.sqlite"), stream, name="export.json")
        store.close()
    except RlrepError as err:
        _one_line_error(err)
        assert "export.json" in str(err) or str(err).startswith(("reward", "config", "estimates"))


SWF_LINE = "1 0 0 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1"


@FUZZ_FILES
@given(st.sampled_from(["swf", "condor-json", "condor-long", "fta"]),
       st.lists(st.one_of(piece, st.sampled_from([SWF_LINE, "; MaxNodes: 4", "; MaxNodes: 1e9",
                                                   "; UnixStartTime: 1e400", '{"QDate": 1, "RemoteWallClockTime": 5}',
                                                   "QDate = 1", "RemoteWallClockTime = 1e400", "[", "]", ","])),
                max_size=12))
def test_trace_files_never_crash(kind, lines):
    from condor_rlrep.sim.loaders.condor import parse_condor_json, parse_condor_long
    from condor_rlrep.sim.loaders.fta import parse_fta
    from condor_rlrep.sim.loaders.swf import parse_swf

    parse = {"swf": parse_swf, "condor-json": parse_condor_json, "condor-long": parse_condor_long, "fta": parse_fta}
    try:
        records = parse[kind]("\n".join(lines), "trace.in")
    except RlrepError as err:
        _one_line_error(err)
        assert "trace.in" in str(err)
        return
    assert len(records.machines) <= 1_000_000


@FUZZ_FILES
@given(st.lists(st.one_of(st.sampled_from(["postgresql://", "postgres://", "u", ":", "@", "[", "]", "::1", "/",
                                           "#", "?", "password=", "&", "%40", "host", "pw@rd", "se"]), piece),
                max_size=12))
@example(["0postgresql://0@"])
def test_store_urls_never_crash_and_never_show_their_password(parts):
    from condor_rlrep.store.postgres_url import ambiguous, redact_url, scrub, url_password

    url = "postgresql://" + "".join(parts)
    secret = url_password(url)
    shown = redact_url(url)
    ambiguous(url)
    # Judged only where the password's characters occur once in the URL: in
    # postgresql://0postgresql://0@ the password '//0' also spans the scheme's
    # '//' and the user, which the shown URL rightly keeps.
    if secret and len(secret) >= 3 and secret not in url.replace(secret, "", 1):
        assert secret not in shown, (url, shown)
        assert secret not in scrub(f"error near {secret} in {url}", url)


@FUZZ_FILES
@given(st.lists(st.one_of(st.builds(lambda v: json.dumps(v), json_values),
                          st.builds(lambda o, a: json.dumps({"op": o, "args": a}),
                                    st.sampled_from(["config", "decide", "record", "decision", "survival_cells",
                                                     "record_exposure", "drop"]), json_values),
                          st.sampled_from(["[" * 100_000, "not json", ""])), min_size=1, max_size=6))
def test_broker_requests_are_answered_never_crash_it(tmp_path_factory, requests):
    import socket

    from condor_rlrep.agent import AgentConfig
    from condor_rlrep.store.broker import StoreBroker
    from condor_rlrep.store.location import create_store

    folder = tmp_path_factory.mktemp("b")
    spec = str(folder / "s.sqlite")
    create_store(spec, AgentConfig(max_replicas=3)).close()
    path = f"/tmp/rlrep-fuzz-{os.getpid()}.sock"
    with StoreBroker(spec, path):
        raw = socket.socket(socket.AF_UNIX)
        raw.connect(path)
        with raw, raw.makefile("rwb") as conn:
            for line in requests:
                conn.write(line.encode("utf-8", "surrogateescape").replace(b"\n", b" ") + b"\n")
                conn.flush()
                answer = json.loads(conn.readline())
                assert "ok" in answer or ("error" in answer and answer["kind"] in ("request", "store", "stale"))


_BOUNDED = r'''
import json, sys, time
kind, n = sys.argv[1], int(sys.argv[2])
from condor_rlrep.errors import RlrepError
start = time.process_time()
try:
    if kind == "swf":
        from condor_rlrep.sim.loaders.swf import parse_swf
        parse_swf("; MaxNodes: 1e9\n" + "1 0 0 10 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n" * n, "t.swf")
    elif kind == "condor-json":
        from condor_rlrep.sim.loaders.condor import parse_condor_json
        parse_condor_json("[" + ",".join(['{"QDate": 1, "RemoteWallClockTime": 5}'] * n) + ",[" * n + "]", "h.json")
    elif kind == "journal":
        from condor_rlrep.rundir.journal import _parse
        _parse(b'{"v": 1, "hook": "PRE", "node": "A", "at": 1}\n' * n + b"[" * n + b"\n")
    elif kind == "export":
        import io
        from condor_rlrep.store.backends import import_stream
        doc = '{"format": "condor-rlrep-agent-store", "estimates": [' + ",".join(["[99999, 1, 1, 0.0, []]"] * n) + "]}"
        import_stream(sys.argv[3], io.StringIO(doc), name="e.json")
except RlrepError as err:
    pass
print(time.process_time() - start)
'''


@pytest.mark.parametrize("kind", ["swf", "condor-json", "journal", "export"])
def test_bulk_inputs_in_bounded_memory_and_linear_time(tmp_path: Path, kind: str) -> None:
    """10^4 and 10^5 units of each under ``prlimit --as=2G``: no MemoryError, and ten times
    the input costs at most ~20 times the CPU (linear, with room for a loaded machine)."""
    import shutil

    if shutil.which("prlimit") is None:
        pytest.skip("no prlimit")
    times = []
    for n in (10_000, 100_000):
        done = subprocess.run(["prlimit", "--as=2000000000", sys.executable, "-c", _BOUNDED, kind, str(n),
                               str(tmp_path / f"{n}.sqlite")], capture_output=True, text=True, timeout=600,
                              check=False)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        times.append(float(done.stdout.strip().splitlines()[-1]))
    assert times[1] <= 20 * max(times[0], 0.05), times
