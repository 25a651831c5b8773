"""Sweeps end to end on a tiny experiment: local runs, resume after a kill,
and the condor backend's DAG run node by node as a pool would run it."""

from __future__ import annotations

import json
import os
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
    assert "0 ran, 6 already finished" in again.stdout


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
    assert f"{6 - len(finished)} ran, {len(finished)} already finished" in resumed.stdout
    for name, stamp in finished.items():
        path = out / "runs" / name
        assert (path.stat().st_ino, path.stat().st_mtime_ns) == stamp, f"{name} was redone"
    assert _results(out) == _results(reference)


def test_condor_backend_dag_runs_like_local(tmp_path, experiment_file):
    pool_out = tmp_path / "pool"
    dag_path = write_condor_sweep(load_experiment(experiment_file), SweepDir(pool_out), experiment_file=experiment_file)
    workflow = read_dag(dag_path)
    names = list(workflow.nodes)
    assert names[0].startswith("prepare") and names[-1].startswith("merge")
    runs = [n for n in names if n.startswith("run")]
    assert len(runs) == 6
    # Play the pool: run each node's job from its submit description, parents first.
    for name in _topological(workflow):
        node = workflow.nodes[name]
        description = htcondor2.Submit((dag_path.parent / node.submit).read_text())
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
