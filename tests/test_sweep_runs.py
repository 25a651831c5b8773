"""Sweeps end to end on a tiny experiment: local runs, resume after a kill,
and the condor backend's DAG run node by node as a pool would run it."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import htcondor2
import pytest

from condor_rlrep.dag import read_dag
from condor_rlrep.sweep.condor import write_condor_sweep
from condor_rlrep.sweep.experiment import load_experiment
from condor_rlrep.sweep.store import SweepDir

CLI = str(Path(sys.executable).with_name("condor-rlrep"))

TINY = """
[experiment]
name = "tiny"
figures = ["fig2a", "fig2b", "fig3a", "fig4", "fig5"]

[trace]
preset = "newcastle-2010"
days = 2
seed = 7

[base]
workflows = ["figure1"]
fraction = 0.2
seed = 3

[grid]
phi = [0.2, 1.0]
policy = ["single", "fixed:2", "rl:2"]
"""


@pytest.fixture()
def experiment_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


def _sweep(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "sweep", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, **kwargs)


def _results(out: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted((out / "runs").glob("*.json"))}


def test_local_sweep_writes_every_run_and_a_report(tmp_path, experiment_file):
    out = tmp_path / "out"
    done = _sweep([str(experiment_file), "--out", str(out), "--jobs", "2"])
    assert done.returncode == 0, done.stderr
    results = _results(out)
    assert len(results) == 6
    for doc in results.values():
        assert doc["result"]["workflows"] > 0
        assert set(doc["result"]["energy_kwh"]) >= {"workflow_total", "workflow_good", "workflow_bad"}
    report = (out / "report.md").read_text()
    assert "Table 1" in report and "figures/figure1-fig3a.png" in report
    assert (out / "report.html").exists() and (out / "figures" / "figure1-fig2b.png").exists()
    again = _sweep([str(experiment_file), "--out", str(out)])
    assert "0 ran (0 simulations), 6 already finished" in again.stdout


def test_verbose_sweep_prints_each_phase_time(tmp_path, experiment_file):
    proc = subprocess.run([CLI, "-v", "sweep", str(experiment_file), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    phases = re.findall(r"^condor-rlrep: info: sweep phase: (.+) in ([0-9.]+) s \(CPU ([0-9.]+) s\)$",
                        proc.stderr, re.M)
    assert [name for name, _, _ in phases] == ["experiment loaded", "trace ready", "6 runs (4 simulations) done",
                                               "report rendered"], proc.stderr
    # the simulations ran in this process (--jobs 1): their CPU is counted
    assert float(phases[2][2]) > 0.05
    quiet = subprocess.run([CLI, "sweep", str(experiment_file), "--out", str(tmp_path / "again")],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert quiet.returncode == 0 and "sweep phase" not in quiet.stderr


def test_killed_sweep_resumes_without_redoing_finished_runs(tmp_path, experiment_file):
    reference = tmp_path / "reference"
    assert _sweep([str(experiment_file), "--out", str(reference), "--no-report"]).returncode == 0

    out = tmp_path / "out"
    proc = subprocess.Popen([CLI, "sweep", str(experiment_file), "--out", str(out), "--no-report"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list((out / "runs").glob("*.json"))) < 2:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (out / "runs").glob("*.json")}
    assert 2 <= len(finished) < 6, "the kill came too late to test resuming"

    resumed = _sweep([str(experiment_file), "--out", str(out), "--no-report"])
    assert resumed.returncode == 0, resumed.stderr
    assert f"{6 - len(finished)} ran (" in resumed.stdout
    assert f"{len(finished)} already finished" in resumed.stdout
    for name, stamp in finished.items():
        path = out / "runs" / name
        assert (path.stat().st_ino, path.stat().st_mtime_ns) == stamp, f"{name} was redone"
    assert _results(out) == _results(reference)


def test_local_sweep_simulates_phi_independent_runs_once(tmp_path, experiment_file):
    out = tmp_path / "out"
    done = _sweep([str(experiment_file), "--out", str(out), "--no-report"])
    assert done.returncode == 0, done.stderr
    # single and fixed:2 once for both φ, rl:2 once per φ
    assert "6 runs: 6 ran (4 simulations), 0 already finished" in done.stdout
    by_run = {(d["params"]["policy"], d["params"]["phi"]): d["result"] for d in _results(out).values()}
    # the same run judged at two φ: same workflows and energy, other task successes
    a, b = by_run[("single", 0.2)], by_run[("single", 1.0)]
    assert a["within"] == b["within"] and a["energy_kwh"] == b["energy_kwh"]
    assert a["task_success"] < b["task_success"]


def test_phi_independent_results_equal_separate_simulations(tmp_path, experiment_file):
    from condor_rlrep.sweep.execute import execute_group, execute_run, prepare_trace

    experiment = load_experiment(experiment_file)
    out = SweepDir(tmp_path / "out")
    trace_dir = prepare_trace(experiment, out)
    for group in experiment.run_groups():
        together = execute_group([dict(spec.params) for spec in group.runs], trace_dir)
        apart = [execute_run(dict(spec.params), trace_dir) for spec in group.runs]
        assert json.dumps(together, sort_keys=True) == json.dumps(apart, sort_keys=True)
    assert [len(g.runs) for g in experiment.run_groups()] == [2, 2, 1, 1]


def test_condor_dag_names_everything_by_absolute_path(tmp_path, experiment_file, monkeypatch):
    # Written from one directory, submitted from another: nothing may be
    # relative (DAGMan resolves a relative submit file against its own cwd).
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    dag_path = write_condor_sweep(load_experiment(experiment_file), SweepDir(Path("..") / "pool"),
                                  experiment_file=Path("..") / experiment_file.name)
    assert dag_path.is_absolute() and dag_path.is_file()
    jobs = [line.split() for line in dag_path.read_text().splitlines() if line.startswith("JOB ")]
    assert len(jobs) == 1 + 4 + 1  # prepare, one node per simulation, merge
    for _, _name, submit, *_ in jobs:
        assert Path(submit).is_absolute() and Path(submit).is_file(), submit
        description = htcondor2.Submit(Path(submit).read_text())
        for key in ("executable", "initialdir", "log", "output", "error"):
            assert Path(description[key]).is_absolute(), (submit, key, description[key])
        arguments = shlex.split(description["arguments"].strip('"'))
        for flag in ("--out",):
            if flag in arguments:
                assert Path(arguments[arguments.index(flag) + 1].strip("'")).is_absolute()
        if arguments[0] == "sweep":
            assert Path(arguments[1].strip("'")).is_absolute()
    from condor_rlrep.sweep.condor import describe_submit

    command = shlex.split(describe_submit(dag_path))
    assert command[0] == "condor_submit_dag" and Path(command[1]) == dag_path


def test_condor_backend_dag_runs_like_local(tmp_path, experiment_file):
    pool_out = tmp_path / "pool"
    dag_path = write_condor_sweep(load_experiment(experiment_file), SweepDir(pool_out), experiment_file=experiment_file)
    workflow = read_dag(dag_path)
    names = list(workflow.nodes)
    assert names[0].startswith("prepare") and names[-1].startswith("merge")
    runs = [n for n in names if n.startswith("run")]
    assert len(runs) == 4  # single and fixed:2 serve both φ
    # Play the pool: run each node's job from its submit description, parents first.
    for name in _topological(workflow):
        node = workflow.nodes[name]
        description = htcondor2.Submit(Path(node.submit).read_text())
        macros = {v.key: v.value for v in node.vars}
        arguments = description["arguments"].strip('"')
        for key, value in macros.items():
            arguments = arguments.replace(f"$({key})", value)
        argv = [description["executable"], *(a.strip("'") for a in shlex.split(arguments))]
        done = subprocess.run(argv, cwd=description["initialdir"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (name, done.stderr)

    local_out = tmp_path / "local"
    assert _sweep([str(experiment_file), "--out", str(local_out)]).returncode == 0
    assert _results(pool_out) == _results(local_out)
    assert (pool_out / "report.md").read_text() == (local_out / "report.md").read_text()
    assert (pool_out / "report.html").read_text() == (local_out / "report.html").read_text()


def _topological(workflow) -> list[str]:
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(workflow.nodes)
    graph.add_edges_from(workflow.edges)
    return list(nx.lexicographical_topological_sort(graph))
