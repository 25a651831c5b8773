"""`condor-rlrep agent …` through click's CliRunner and the installed executable."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess

import pytest
from click.testing import CliRunner

from condor_rlrep.store import SqliteStore
from condor_rlrep.cli.agent_cmd import agent
from condor_rlrep.errors import RlrepError, StoreError


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def store(tmp_path, runner):
    path = tmp_path / "agent.sqlite"
    result = runner.invoke(agent, ["init", "--store", str(path), "--n-bins", "4", "--max-replicas", "3",
                                   "--schedule", "sliding-window", "--timezone", "Europe/London"])
    assert result.exit_code == 0, result.output
    return path


def test_init_stores_parameters(store):
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o600
    with SqliteStore(store) as s:
        config = s.config
    assert (config.n_bins, config.max_replicas, config.schedule, config.timezone) == (
        4, 3, "sliding-window", "Europe/London")


def test_decide_record_stats(store, runner):
    out = runner.invoke(agent, ["decide", "--store", str(store), "--hour", "7", "--phi-prime", "0.3", "--json",
                                "--seed", "1"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert set(doc) == {"decision_id", "replicas", "state", "explored"}
    assert doc["state"] == [7, 2] and 1 <= doc["replicas"] <= 3
    rec = runner.invoke(agent, ["record", "--store", str(store), str(doc["decision_id"]), "--success",
                                "--sigma", "0.25", "--json"])
    assert json.loads(rec.output) == {"decision_id": doc["decision_id"], "reward": 0.75, "recorded": True}
    again = runner.invoke(agent, ["record", "--store", str(store), str(doc["decision_id"]), "--success",
                                  "--sigma", "0.25"])
    assert again.exit_code == 0 and "nothing changed" in again.output
    clash = runner.invoke(agent, ["record", "--store", str(store), str(doc["decision_id"]), "--failure"])
    assert isinstance(clash.exception, StoreError)
    stats = json.loads(runner.invoke(agent, ["stats", "--store", str(store), "--json"]).output)
    assert (stats["decisions"], stats["closed"], stats["pending"], stats["epsilon"]) == (1, 1, 0, 0.5)
    d2 = json.loads(runner.invoke(agent, ["decide", "--store", str(store), "--phi-prime", "9", "--json"]).output)
    fail = runner.invoke(agent, ["record", "--store", str(store), str(d2["decision_id"]), "--failure", "--json"])
    assert json.loads(fail.output)["reward"] == -5.0
    # same reward, but recorded as a bare reward rather than an outcome: a different record
    reward = runner.invoke(agent, ["record", "--store", str(store), str(d2["decision_id"]), "--reward", "-5"])
    assert isinstance(reward.exception, StoreError)


@pytest.mark.parametrize(
    "args",
    [
        ["1"],
        ["1", "--success"],
        ["1", "--failure", "--sigma", "0.1"],
        ["1", "--success", "--sigma", "0.1", "--reward", "1"],
        ["1", "--success", "--sigma", "1.5"],
        ["0", "--failure"],
    ],
)
def test_record_usage_errors(store, runner, args):
    result = runner.invoke(agent, ["record", "--store", str(store), *args])
    assert result.exit_code == 2


def test_show_table_json_and_plot(store, runner, tmp_path):
    for k in range(6):
        d = json.loads(runner.invoke(agent, ["decide", "--store", str(store), "--hour", "3",
                                             "--phi-prime", "0.5", "--json"]).output)
        runner.invoke(agent, ["record", "--store", str(store), str(d["decision_id"]), "--reward", str(k / 10)])
    table = runner.invoke(agent, ["show", "--store", str(store)])
    assert table.exit_code == 0
    lines = table.output.splitlines()
    assert lines[1].split()[1:] == ["<=0", "(0,0.25]", "(0.25,0.5]", "(0.5,0.75]", "(0.75,1]", ">1"]
    assert "(+" in lines[2 + 3] and lines[2 + 4].split()[1:] == ["."] * 6
    doc = json.loads(runner.invoke(agent, ["show", "--store", str(store), "--json"]).output)
    assert len(doc["hours"]) == 24 and doc["hours"][3][2]["rewards"] == 6
    png = tmp_path / "policy.png"
    plotted = runner.invoke(agent, ["show", "--store", str(store), "--plot", str(png)])
    assert plotted.exit_code == 0 and plotted.stdout == f"wrote plot {png}\n"  # where it went, not the table again
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_export_import_reset(store, runner, tmp_path):
    runner.invoke(agent, ["decide", "--store", str(store), "--hour", "1", "--phi-prime", "0.1"])
    out = tmp_path / "doc.json"
    assert runner.invoke(agent, ["export", "--store", str(store), "-o", str(out)]).exit_code == 0
    copy = tmp_path / "copy.sqlite"
    assert runner.invoke(agent, ["import", "--store", str(copy), str(out)]).exit_code == 0
    stdout = runner.invoke(agent, ["export", "--store", str(copy)]).output
    assert json.loads(stdout) == json.loads(out.read_text())
    refused = runner.invoke(agent, ["import", "--store", str(copy), str(out)])
    assert isinstance(refused.exception, StoreError) and "already holds" in str(refused.exception)
    assert runner.invoke(agent, ["reset", "--store", str(copy), "--yes"]).exit_code == 0
    stats = json.loads(runner.invoke(agent, ["stats", "--store", str(copy), "--json"]).output)
    assert stats["decisions"] == 0 and stats["last_decision_id"] == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = runner.invoke(agent, ["import", "--store", str(copy), str(bad)])
    assert isinstance(result.exception, StoreError) and "bad.json:1" in str(result.exception)


def test_store_from_environment(tmp_path, runner):
    path = tmp_path / "env" / "agent.sqlite"
    result = runner.invoke(agent, ["init"], env={"CONDOR_RLREP_STORE": str(path)})
    assert result.exit_code == 0 and path.exists()
    result = runner.invoke(agent, ["init", "--store", str(path), "--epsilon-low", "2"])
    assert isinstance(result.exception, RlrepError)


def test_executable_reports_errors_without_traceback(tmp_path):
    exe = shutil.which("condor-rlrep") or os.path.join(os.path.dirname(os.sys.executable), "condor-rlrep")
    if not os.path.exists(exe):
        pytest.skip("condor-rlrep executable not installed")
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"x" * 4096)
    run = subprocess.run([exe, "agent", "stats", "--store", str(garbage)], capture_output=True, text=True)
    assert run.returncode == 2
    assert "garbage.sqlite" in run.stderr and "Traceback" not in run.stderr
    path = tmp_path / "s.sqlite"
    subprocess.run([exe, "agent", "init", "--store", str(path)], check=True, capture_output=True)
    run = subprocess.run([exe, "agent", "decide", "--store", str(path), "--hour", "3", "--phi-prime", "nan"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--phi-prime" in run.stderr and "finite" in run.stderr and "Traceback" not in run.stderr
    run = subprocess.run([exe, "agent", "record", "--store", str(path), "42", "--failure"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "unknown decision id 42" in run.stderr
