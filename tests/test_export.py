from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import htcondor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.cli.main import main
from condor_rlrep.dag.export import STANDIN_SCRIPT, export_dagman, sanitize_node_names, submit_arguments
from condor_rlrep.dag.load import detect_format, load_workflow
from condor_rlrep.dag.model import ESTIMATE_MACRO, Node, Workflow
from condor_rlrep.dag.parser import read_dag
from condor_rlrep.errors import DagError, DagSyntaxError, InputError

from _formatutil import FIXTURES, regex_dax, shared_files, simple_dag


def submit_of(path: Path) -> htcondor2.Submit:
    """The submit file parsed by HTCondor's own bindings (raises on what they reject)."""
    return htcondor2.Submit(path.read_text())


def montage_25() -> Path:
    found = shared_files("dax", "Montage_25.xml")
    if not found:
        pytest.skip("Montage_25.xml absent")
    return found[0]


# -- node names and arguments ---------------------------------------------


def test_sanitize_node_names_by_hand():
    names = ["a", "b c", "b_c", "PARENT", "x+y", "", "all_nodes", "ok.name-1", "é", "child"]
    assert sanitize_node_names(names) == {
        "a": "a",
        "b c": "b_c_2",  # "b_c" is a valid name of another node and keeps it
        "b_c": "b_c",
        "PARENT": "PARENT_",
        "x+y": "x_y",
        "": "_",
        "all_nodes": "all_nodes_",
        "ok.name-1": "ok.name-1",
        "é": "__2",
        "child": "child_",
    }


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=6), unique=True, max_size=12))
def test_sanitized_names_are_unique_valid_and_stable(names):
    mapping = sanitize_node_names(names)
    assert list(mapping) == names
    assert len(set(mapping.values())) == len(names)
    for old, new in mapping.items():
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+", new)
        assert new.upper() not in {"PARENT", "CHILD", "ALL_NODES"}
        if re.fullmatch(r"[A-Za-z0-9_.\-]+", old) and old.upper() not in {"PARENT", "CHILD", "ALL_NODES"}:
            assert new == old
    assert sanitize_node_names(names) == mapping


def test_submit_arguments_quote_and_survive_htcondor():
    text = submit_arguments(["plain", "part 2", "it's", 'say "hi"', "$HOME", "$(X)"])
    assert text == "\"'plain' 'part 2' 'it''s' 'say \"\"hi\"\"' '$(DOLLAR)HOME' '$(DOLLAR)(X)'\""
    description = htcondor2.Submit(f"executable = /bin/echo\narguments = {text}\nqueue\n")
    assert description.expand("arguments") == "\"'plain' 'part 2' 'it''s' 'say \"\"hi\"\"' '$HOME' '$(X)'\""
    with pytest.raises(InputError):
        submit_arguments(["two\nlines"])


# -- Montage_25 --------------------------------------------------------------


def test_montage_25_export_round_trips(tmp_path):
    source = montage_25()
    jobs, edges, _ = regex_dax(source.read_text())
    dag_path = export_dagman(load_workflow(source), tmp_path)
    assert dag_path == tmp_path / "Montage_25.dag"

    # independently of the DAG parser: plain lines
    submits, plain_edges, variables = simple_dag(dag_path.read_text())
    assert list(submits) == list(jobs)
    assert plain_edges == edges
    assert {n: float(v[ESTIMATE_MACRO]) for n, v in variables.items()} == {
        n: float(a["runtime"]) for n, a in jobs.items()
    }

    # with the project's DAG parser
    workflow = read_dag(dag_path)
    assert list(workflow.nodes) == list(jobs)
    assert workflow.edges == edges
    for name, node in workflow.nodes.items():
        assert node.kind == "JOB" and node.submit == f"{name}.sub"
        assert float(node.var(ESTIMATE_MACRO)) == float(jobs[name]["runtime"])

        description = submit_of(tmp_path / node.submit)
        assert description["universe"] == "vanilla"
        assert description["executable"] == STANDIN_SCRIPT
        # the sleep time is the node's VARS rlrep_estimate (DAGMan finds it used), its value the default
        assert description["arguments"].startswith(f"\"'$(rlrep_estimate:{node.var(ESTIMATE_MACRO)})'")
        seconds, node_name, program = re.findall(r"'([^']*)'", description.expand("arguments"))
        assert (float(seconds), node_name, program) == (float(jobs[name]["runtime"]), name, jobs[name]["name"])
        assert description["should_transfer_files"] == "YES"
        assert description["request_cpus"] == "1"
        assert {description[k] for k in ("log", "output", "error")} == {
            f"logs/{name}.log",
            f"logs/{name}.out",
            f"logs/{name}.err",
        }
    assert (tmp_path / "logs").is_dir()


def test_htcondor_dag_parser_accepts_the_export(tmp_path, monkeypatch):
    """HTCondor's own DAG parser (run by Submit.from_dag) reads the exported DAGs.

    from_dag only needs some executable named condor_dagman on PATH (no pool)."""
    fake = tmp_path / "bin" / "condor_dagman"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for source in (FIXTURES / "diamond-3.6.dax", FIXTURES / "wfformat-1.5.json"):
        out = tmp_path / source.stem
        dag_path = export_dagman(load_workflow(source), out)
        monkeypatch.chdir(out)
        description = htcondor2.Submit.from_dag(dag_path.name, {"force": True})
        assert description["universe"] == "scheduler"
    bad = tmp_path / "bad.dag"
    bad.write_text("JOB A a.sub\nNODE B b.sub\n")  # the check can fail
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Exception, match="not a valid DAG command"):
        htcondor2.Submit.from_dag(bad.name, {"force": True})


def test_standin_script_runs_and_sleeps(tmp_path):
    export_dagman(Workflow(nodes={"a": Node("a", runtime=1.0)}), tmp_path)
    script = tmp_path / STANDIN_SCRIPT
    assert script.stat().st_mode & stat.S_IXUSR
    done = subprocess.run([str(script), "0.05", "a", "mProject", "-x"], capture_output=True, text=True, timeout=10)
    assert done.returncode == 0
    assert "node a" in done.stdout and "0.05s" in done.stdout


def test_time_scale_scales_sleep_and_estimate(tmp_path):
    workflow = load_workflow(FIXTURES / "wfformat-1.5.json")
    dag_path = export_dagman(workflow, tmp_path, time_scale=0.5, name="fj")
    assert dag_path.name == "fj.dag"
    submits, edges, variables = simple_dag(dag_path.read_text())
    assert list(submits) == ["split_ID01", "work_ID02", "work_ID03", "join_ID04"]  # "work:ID03" renamed
    assert "# node 'work:ID03' renamed 'work_ID03'" in dag_path.read_text()
    assert ("split_ID01", "work_ID03") in edges and ("work_ID03", "join_ID04") in edges
    assert {n: v[ESTIMATE_MACRO] for n, v in variables.items()} == {
        "split_ID01": "5.25",
        "work_ID02": "20",
        "work_ID03": "27.625",
    }  # join has no runtime, so no estimate
    work = submit_of(tmp_path / "work_ID03.sub")
    assert work.expand("arguments") == "\"'27.625' 'work_ID03' 'work' 'part 2' 'it''s \"\"quoted\"\" $HOME'\""
    assert submit_of(tmp_path / "work_ID02.sub")["request_cpus"] == "4"
    assert re.findall(r"'([^']*)'", submit_of(tmp_path / "join_ID04.sub")["arguments"])[0] == "0"


def test_real_executable_is_used_unscaled(tmp_path):
    program = tmp_path / "bin" / "prog"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 0\n")
    workflow = Workflow(
        nodes={"a": Node("a", runtime=5.0, executable=str(program), arguments=["hi there"], cpus=3)}
    )
    out = tmp_path / "out"
    dag_path = export_dagman(workflow, out, time_scale=0.1)
    assert dag_path.name == "workflow.dag"
    description = submit_of(out / "a.sub")
    assert description["executable"] == str(program)
    assert description["arguments"] == "\"'hi there'\""
    assert description["request_cpus"] == "3"
    assert simple_dag(dag_path.read_text())[2]["a"][ESTIMATE_MACRO] == "5"
    assert description.expand("My.RlrepEstimate") == "5"  # the VARS is used: DAGMan does not warn
    assert not (out / STANDIN_SCRIPT).exists()


def test_memory_priority_and_files_reach_the_submit_file(tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    (source / "input.dat").write_text("x")
    text = """{"name": "w", "schemaVersion": "1.5", "workflow": {
      "specification": {"tasks": [{"name": "t", "id": "t_ID1", "parents": [], "children": [],
                                   "inputFiles": ["input.dat", "gone.dat"], "outputFiles": ["out.dat"]}],
                        "files": [{"id": "input.dat", "sizeInBytes": 2048}, {"id": "gone.dat", "sizeInBytes": 1000},
                                  {"id": "out.dat", "sizeInBytes": 5000000}]},
      "execution": {"tasks": [{"id": "t_ID1", "runtimeInSeconds": 3.5, "memoryInBytes": 14800000, "priority": 20,
                               "command": {"program": "mProject", "arguments": []}}]}}}"""
    (source / "w.json").write_text(text)
    workflow = load_workflow(source / "w.json")
    node = workflow.nodes["t_ID1"]
    assert (node.memory, node.priority, node.transformation) == (14800000.0, 20, "mProject")
    dag = export_dagman(workflow, tmp_path / "out")
    description = submit_of(tmp_path / "out" / "t_ID1.sub")
    assert description["request_memory"] == "15"  # MiB, rounded up
    assert description["priority"] == "20"
    assert description["request_disk"] == str(-(-(2048 + 1000 + 5000000) // 1024))  # KiB
    assert description["transfer_input_files"] == str((source / "input.dat").resolve())  # gone.dat is not here
    assert "# output file out.dat, 5000000 bytes" in (tmp_path / "out" / "t_ID1.sub").read_text()
    assert read_dag(dag).nodes["t_ID1"].priority == 20  # and DAGMan's PRIORITY agrees


def test_executable_override_for_every_task(tmp_path):
    wrapper = tmp_path / "wrap.sh"
    wrapper.write_text("#!/bin/sh\n")
    workflow = load_workflow(FIXTURES / "wfformat-1.3.json")
    out = tmp_path / "out"
    export_dagman(workflow, out, executable=wrapper, time_scale=2)
    for name, node in workflow.nodes.items():
        description = submit_of(out / f"{name}.sub")
        assert description["executable"] == str(wrapper.resolve())
        expected = "0" if node.runtime is None else f"{node.runtime * 2:g}"
        assert re.findall(r"'([^']*)'", description.expand("arguments"))[:2] == [expected, name]
    assert not (out / STANDIN_SCRIPT).exists()


def test_sub_workflows_dag_kept_and_dax_exported(tmp_path):
    dag_path = export_dagman(load_workflow(FIXTURES / "diamond-3.6.dax"), tmp_path)
    workflow = read_dag(dag_path)
    assert set(workflow.nodes) == {f"ID000000{i}" for i in range(1, 7)}
    cleanup, inner = workflow.nodes["ID0000005"], workflow.nodes["ID0000006"]
    assert (cleanup.kind, cleanup.submit, cleanup.directory) == ("SUBDAG", "cleanup.dag", str(FIXTURES.resolve()))
    assert (inner.kind, inner.submit, inner.directory) == ("SUBDAG", "inner.dag", str(tmp_path / "ID0000006"))
    inner_workflow = read_dag(tmp_path / "ID0000006" / "inner.dag")
    assert list(inner_workflow.nodes) == ["first_step", "second_step"]  # "first step", "second+step"
    assert inner_workflow.edges == {("first_step", "second_step")}
    assert submit_of(tmp_path / "ID0000006" / "second_step.sub")["executable"] == STANDIN_SCRIPT
    assert (tmp_path / "ID0000006" / STANDIN_SCRIPT).is_file()
    assert workflow.nodes["ID0000003"].var(ESTIMATE_MACRO) is None  # no runtime in the DAX
    assert submit_of(tmp_path / "ID0000001.sub")["request_cpus"] == "2"


def test_dag_input_keeps_its_submit_files(tmp_path):
    dag_path = export_dagman(load_workflow(FIXTURES / "cleanup.dag"), tmp_path / "out")
    node = read_dag(dag_path).nodes["cleanup"]
    assert (node.submit, node.directory) == ("cleanup.sub", str(FIXTURES.resolve()))
    assert not (tmp_path / "out" / "cleanup.sub").exists()


def test_export_refuses_to_overwrite_its_input():
    before = sorted(FIXTURES.iterdir())
    with pytest.raises(InputError, match="overwrite its own input"):
        export_dagman(load_workflow(FIXTURES / "cleanup.dag"), FIXTURES)
    assert sorted(FIXTURES.iterdir()) == before


def test_missing_file_is_a_dag_error(tmp_path):
    with pytest.raises(DagError) as info:
        load_workflow(tmp_path / "none.dax")
    assert info.value.path == str(tmp_path / "none.dax")


@pytest.mark.parametrize(
    "kwargs",
    [{"time_scale": -1.0}, {"time_scale": float("nan")}, {"request_cpus": 0}, {"executable": "/no/such/program"}],
)
def test_bad_export_options(tmp_path, kwargs):
    with pytest.raises(InputError):
        export_dagman(Workflow(nodes={"a": Node("a")}), tmp_path, **kwargs)


# -- format detection ----------------------------------------------------------


def test_detect_format():
    assert detect_format(b'\xef\xbb\xbf<?xml version="1.0"?>\n<!-- c -->\n<adag>') == "dax"
    assert detect_format(b'<dax:adag xmlns:dax="x">') == "dax"
    assert detect_format(b'  {"workflow": {}}') == "wfformat"
    assert detect_format(b"JOB A a.sub\n") == "dag"
    with pytest.raises(DagSyntaxError) as info:
        detect_format(b'<?xml version="1.0"?>\n\n<html>', path="x.xml")
    assert (info.value.line, "<html>" in str(info.value)) == (3, True)


# -- CLI ------------------------------------------------------------------------


def test_cli_export(tmp_path, capsys):
    main(["export", str(FIXTURES / "wfformat-1.4.json"), "-o", str(tmp_path), "--time-scale", "0.01"])
    out = capsys.readouterr().out
    assert "wfformat-1.4.dag: 4 nodes, 4 edges, 3 with estimates" in out
    variables = simple_dag((tmp_path / "wfformat-1.4.dag").read_text())[2]
    assert variables["work_ID02"][ESTIMATE_MACRO] == "0.4"


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.dax"
    bad.write_text('<adag>\n<job id="a"/>\n<child ref="a"><parent ref="nope"/></child>\n</adag>\n')
    with pytest.raises(SystemExit) as info:
        main(["export", str(bad), "-o", str(tmp_path / "out")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.strip() == f"condor-rlrep: error: {bad}:3: <parent ref='nope'> (of child 'a') names no job"
    assert not os.path.exists(tmp_path / "out" / "bad.dag")
