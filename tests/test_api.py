"""The Python API: a documented public surface, imported lazily (the hooks
import the package), whose tour script runs and whose examples hold."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from pathlib import Path

import pytest

import condor_rlrep
from condor_rlrep import api

REPO = Path(__file__).resolve().parents[1]


def test_public_surface_is_documented_and_complete() -> None:
    names = set(condor_rlrep.__all__) - {"__version__"}
    assert {"load_workflow", "plan", "load_trace", "simulate", "run_status", "run_report", "sweep_results",
            "open_store", "instrument"} <= names
    for name in names:
        value = getattr(condor_rlrep, name)
        assert value.__doc__ and len(value.__doc__.split()) >= 8, name
    assert set(api.__all__) <= names
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        condor_rlrep.nope  # noqa: B018


def test_importing_the_package_imports_none_of_it() -> None:
    code = "import sys, condor_rlrep; print(sorted(m for m in sys.modules if m.startswith(('condor_rlrep.', 'numpy'))))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_docstring_examples_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    failures, tried = doctest.testmod(api, verbose=False)
    assert tried >= 3 and failures == 0


def test_the_tour_runs(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(REPO / "examples" / "api_tour.py")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "CR(W) = 7680 s along S → A → D → F → H → T" in out
    assert "deadline (1+φ)·CR(W) = 11520 s" in out
    assert "agent: 3 actions, 288 states" in out
    assert "the live agent chooses among 1..3 replicas" in out
    assert "finished runs; workflow sets ['figure1']" in out


def test_simulate_matches_the_command(tmp_path: Path) -> None:
    trace = condor_rlrep.load_trace(preset="poisson", days=2, seed=3)
    ours = condor_rlrep.simulate(trace, "fixed:2", phi=0.3, fraction=0.2, seed=4).summary()
    from condor_rlrep.sim.trace_io import write_trace

    write_trace(trace, tmp_path / "t")
    cli = subprocess.run([str(Path(sys.executable).parent / "condor-rlrep"), "simulate", "--trace", str(tmp_path / "t"),
                          "--policy", "fixed:2", "--phi", "0.3", "--fraction", "0.2", "--seed", "4", "--json"],
                         capture_output=True, text=True, check=True)
    import json

    theirs = json.loads(cli.stdout)
    for key in ("workflows", "completed", "within", "replicas", "energy_kwh"):
        assert ours[key] == theirs[key], key


def test_run_status_and_report_of_a_recorded_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from _runreport import RECORDED, replay, trained_store

    if not RECORDED.is_dir():
        pytest.skip(f"recorded DAGMan runs not found at {RECORDED}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    store = trained_store(tmp_path / "agent.sqlite", prefer=2)
    dag = replay("eviction", tmp_path / "ev", estimate=30, store=store)
    status = condor_rlrep.run_status(dag)
    assert status.dagman.startswith("exited")
    reports = condor_rlrep.run_report(dag)
    assert len(reports) == 1 and reports[0].nodes and reports[0].critical_path_s > 0
