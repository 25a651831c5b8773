from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.dag.load import load_workflow
from condor_rlrep.dag.model import FileUse
from condor_rlrep.dag.wfformat import parse_wfformat, read_wfformat
from condor_rlrep.errors import CycleError, DagError, DagSyntaxError

from _formatutil import FIXTURES, shared_files


def test_shared_wfformat_files_load_with_counts_runtimes_and_sizes():
    paths = shared_files("wfformat", "*.json")
    if not paths:
        pytest.skip("no WfFormat files in the shared data")
    for path in paths:
        document = json.loads(path.read_text())
        spec = document["workflow"]["specification"]
        runtimes = {t["id"]: t.get("runtimeInSeconds") for t in document["workflow"]["execution"]["tasks"]}
        sizes = {f["id"]: f.get("sizeInBytes") for f in spec.get("files", [])}
        expected_edges = {(p, t["id"]) for t in spec["tasks"] for p in t["parents"]}
        expected_edges |= {(t["id"], c) for t in spec["tasks"] for c in t["children"]}

        workflow = load_workflow(path)
        assert list(workflow.nodes) == [t["id"] for t in spec["tasks"]]
        assert workflow.edges == expected_edges
        for task in spec["tasks"]:
            node = workflow.nodes[task["id"]]
            assert node.runtime == runtimes.get(task["id"])
            assert [f.name for f in node.files] == task["inputFiles"] + task["outputFiles"]
            assert all(f.size == sizes.get(f.name) for f in node.files)


def test_shared_montage_wfformat_by_hand():
    found = shared_files("wfformat", "montage-chameleon-2mass-005d-001.json")
    if not found:
        pytest.skip("montage WfFormat file absent")
    workflow = read_wfformat(found[0])
    assert (len(workflow.nodes), len(workflow.edges)) == (58, 114)
    node = workflow.nodes["mProject_ID0000001"]
    assert node.runtime == 16.712
    assert node.executable == "mProject"
    assert node.arguments[:2] == ["-X", "2mass-atlas-980914s-j0820044.fits"]
    assert FileUse("2mass-atlas-980914s-j0820044.fits", "input", 1529220.0) in node.files
    assert workflow.children("mProject_ID0000001") == [
        "mBackground_ID0000013",
        "mDiffFit_ID0000005",
        "mDiffFit_ID0000006",
        "mDiffFit_ID0000007",
    ]


FORK_JOIN_EDGES = {
    ("split_ID01", "work_ID02"),
    ("split_ID01", "work_ID03"),
    ("work_ID02", "join_ID04"),
    ("work_ID03", "join_ID04"),
}


@pytest.mark.parametrize("version", ["1.3", "1.4", "1.5"])
def test_fixture_versions_read_alike(version):
    workflow = read_wfformat(FIXTURES / f"wfformat-{version}.json")
    rename = {"work:ID03": "work_ID03"}  # 1.5's fixture uses an id with a colon
    assert {(rename.get(p, p), rename.get(c, c)) for p, c in workflow.edges} == FORK_JOIN_EDGES
    runtimes = [node.runtime for node in workflow.nodes.values()]
    assert runtimes == [10.5, 40.0, 55.25, None]  # join has no runtime / no execution entry
    split = next(iter(workflow.nodes.values()))
    assert split.files == [
        FileUse("in.dat", "input", 1000.0),
        FileUse("part1", "output", 400.0),
        FileUse("part2", "output", 600.0),
    ]
    assert list(workflow.nodes.values())[-1].files[-1] == FileUse("result", "output", None)


def test_fixture_15_commands_and_cores():
    workflow = read_wfformat(FIXTURES / "wfformat-1.5.json")
    work = workflow.nodes["work:ID03"]
    assert work.executable == "work"
    assert work.arguments == ["part 2", 'it\'s "quoted" $HOME']
    assert workflow.nodes["work_ID02"].cpus == 4
    assert work.cpus is None
    assert work.source_line == 12


def test_fixture_14_references_by_name_or_id():
    workflow = read_wfformat(FIXTURES / "wfformat-1.4.json")
    assert workflow.parents("work_ID03") == ["split_ID01"]  # given as the id "ID01"
    assert workflow.nodes["split_ID01"].cpus == 1


def test_jobs_layout_before_1_3():
    document = {"schemaVersion": "1.2", "workflow": {"jobs": [
        {"name": "a", "runtime": 1, "arguments": ["-v"]},
        {"name": "b", "runtime": 2, "parents": ["a"]},
    ]}}
    workflow = parse_wfformat(json.dumps(document))
    assert workflow.edges == {("a", "b")}
    assert workflow.nodes["a"].arguments == ["-v"]


def spec15(tasks, execution=None, files=None):
    workflow = {"specification": {"tasks": tasks, "files": files or []}}
    if execution is not None:
        workflow["execution"] = {"tasks": execution}
    return json.dumps({"schemaVersion": "1.5", "workflow": workflow}, indent=1)


def task(name, parents=(), children=()):
    return {"id": name, "name": name, "parents": list(parents), "children": list(children)}


def test_missing_execution_entry_gives_no_runtime():
    workflow = parse_wfformat(spec15([task("a"), task("b", ["a"])], [{"id": "a", "runtimeInSeconds": 3}]))
    assert workflow.nodes["a"].runtime == 3.0
    assert workflow.nodes["b"].runtime is None
    assert parse_wfformat(spec15([task("a")])).nodes["a"].runtime is None


@pytest.mark.parametrize(
    "text, error, line, words",
    [
        ('{"workflow": \n  [1, 2,]}', DagSyntaxError, 2, "not valid JSON"),
        ("[1, 2]", DagSyntaxError, None, "not a JSON object"),
        ('{"workflow": {}}', DagSyntaxError, None, "'workflow.jobs' is missing"),
        (spec15([task("a"), task("a")]), DagError, 13, "duplicate task id 'a'"),
        (spec15([task("a"), task("b", ["zz"])]), DagError, 13, "unknown parent 'zz'"),
        (spec15([task("a", children=["q"])]), DagError, 7, "unknown child 'q'"),
        (spec15([task("a")], [{"id": "a", "runtimeInSeconds": -1}]), DagSyntaxError, 18, "-1 must be"),
        (spec15([task("a")], [{"id": "a", "runtimeInSeconds": "10"}]), DagSyntaxError, 18, "'10' is not a number"),
        (spec15([task("a")], [{"id": "b", "runtimeInSeconds": 1}]), DagError, 18, "execution task 'b'"),
        (spec15([task("a")], files=[{"id": "f", "sizeInBytes": True}]), DagSyntaxError, 15, "True is not a number"),
    ],
)
def test_bad_wfformat_names_file_line_and_culprit(text, error, line, words):
    with pytest.raises(error) as info:
        parse_wfformat(text, path="w.json")
    err = info.value
    assert type(err) is error
    assert (err.path, err.line) == ("w.json", line)
    assert words in str(err)
    if line is not None:  # the line shown holds the culprit
        culprit = text.splitlines()[line - 1]
        assert culprit.strip().startswith(('"id"', '"workflow"')) or "[1, 2,]" in culprit


def test_non_utf8_bytes_name_their_line():
    with pytest.raises(DagSyntaxError) as info:
        parse_wfformat(b'{\n"name": "caf\xe9"}', path="l1.json")
    assert (info.value.line, "not UTF-8" in str(info.value)) == (2, True)


def test_cycle_is_named_with_its_line():
    text = spec15([task("a", ["c"]), task("b", ["a"]), task("c", ["b"])])
    with pytest.raises(CycleError) as info:
        parse_wfformat(text, path="c.json")
    assert sorted(info.value.cycle) == ["a", "b", "c"]
    assert info.value.line is not None and info.value.line > 1
    assert str(info.value).startswith(f"c.json:{info.value.line}: dependency cycle: ")


@st.composite
def random_dags(draw):
    count = draw(st.integers(min_value=1, max_value=10))
    names = [f"t{i}" for i in range(count)]
    pairs = [(names[i], names[j]) for i in range(count) for j in range(i + 1, count)]
    edges = set(draw(st.lists(st.sampled_from(pairs), unique=True, max_size=15))) if pairs else set()
    # each edge is declared as the child's parent, the parent's child, or both
    sides = {e: draw(st.sampled_from(["parent", "child", "both"])) for e in sorted(edges)}
    runtimes = draw(st.lists(st.none() | st.floats(0, 1e6, allow_nan=False), min_size=count, max_size=count))
    return names, edges, sides, dict(zip(names, runtimes))


@settings(max_examples=60, deadline=None)
@given(random_dags(), st.booleans())
def test_wfformat_round_trip_property(dag, new_layout):
    names, edges, sides, runtimes = dag
    if new_layout:
        tasks = [
            task(
                n,
                [p for (p, c), s in sides.items() if c == n and s != "child"],
                [c for (p, c), s in sides.items() if p == n and s != "parent"],
            )
            for n in names
        ]
        execution = [{"id": n, "runtimeInSeconds": r} for n, r in runtimes.items() if r is not None]
        text = spec15(tasks, execution)
    else:
        tasks = [
            {
                "name": n,
                "parents": [p for (p, c), s in sides.items() if c == n and s != "child"],
                "children": [c for (p, c), s in sides.items() if p == n and s != "parent"],
                **({"runtimeInSeconds": runtimes[n]} if runtimes[n] is not None else {}),
            }
            for n in names
        ]
        text = json.dumps({"schemaVersion": "1.4", "workflow": {"tasks": tasks}})
    workflow = parse_wfformat(text)
    assert list(workflow.nodes) == names
    assert workflow.edges == edges
    assert {n: node.runtime for n, node in workflow.nodes.items()} == runtimes
