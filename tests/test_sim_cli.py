"""`condor-rlrep simulate` / `train`, and the paper's direction on the newcastle preset."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from _simutil import poisson_trace
from condor_rlrep.cli.main import cli, main
from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.run import simulate
from condor_rlrep.sim.trace_io import write_trace


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    rng = np.random.default_rng(8)
    trace = poisson_trace(rng, machines=40, rate=1 / 5000, length=3e5, session=1200, jobs=100,
                          job_length=900, job_window=(0, 2e5))
    out = tmp_path_factory.mktemp("trace") / "t"
    write_trace(trace, out)
    return out


def test_simulate_json_summary(trace_dir, tmp_path):
    result = CliRunner().invoke(cli, ["simulate", "--trace", str(trace_dir), "--policy", "fixed:2", "--phi", "0.5",
                                      "--fraction", "0.3", "--json", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    for key in ("workflows", "completed", "within", "energy_kwh", "evictions", "events", "wall_seconds"):
        assert key in summary
    assert summary["workflows"] == 30
    assert set(summary["energy_kwh"]) >= {"good", "bad", "total"}
    assert summary["within"]["0.5"] <= summary["completed"] <= summary["workflows"]
    assert (tmp_path / "o" / "tasks.csv").is_file()


def test_train_writes_a_store_the_agent_loads(trace_dir, tmp_path):
    from condor_rlrep.store.sqlite import load_agent

    store = tmp_path / "agent.db"
    args = ["train", "--trace", str(trace_dir), "--store", str(store), "--replicas", "3", "--fraction", "0.5"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    agent = load_agent(str(store))
    assert agent.config.max_replicas == 3 and agent.rewards_seen > 0
    again = CliRunner().invoke(cli, args)
    assert again.exit_code != 0 and "--replace" in again.output
    resumed = CliRunner().invoke(cli, args + ["--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert load_agent(str(store)).rewards_seen > agent.rewards_seen


def test_train_resume_keeps_the_stored_epsilon_unless_given_and_repeats_from_its_seed(trace_dir, tmp_path):
    """`train --resume --epsilon-high X` used to keep the stored ε₁ and drop
    X without a word (issue 27 part 2): given values are applied and saved;
    a different --strategy is refused; a resumed run repeats from --seed."""
    from condor_rlrep.store.sqlite import SqliteStore

    store = tmp_path / "agent.db"
    base = ["train", "--trace", str(trace_dir), "--fraction", "0.3"]
    assert CliRunner().invoke(cli, base + ["--store", str(store), "--epsilon-high", "0.3"]).exit_code == 0
    with SqliteStore(store) as opened:
        assert (opened.config.epsilon_high, opened.config.epsilon_low) == (0.3, 0.05)
    copy = tmp_path / "copy.db"
    copy.write_bytes(store.read_bytes())
    kept = CliRunner().invoke(cli, base + ["--store", str(store), "--resume", "--json"])
    assert kept.exit_code == 0, kept.output
    with SqliteStore(store) as opened:
        assert opened.config.epsilon_high == 0.3  # nothing given: the store's own
    again = CliRunner().invoke(cli, base + ["--store", str(copy), "--resume", "--json"])
    assert json.loads(again.stdout)["within"] == json.loads(kept.stdout)["within"]  # the same seed, the same run
    given = CliRunner().invoke(cli, base + ["--store", str(store), "--resume", "--epsilon-high", "0.1",
                                            "--epsilon-low", "0.01"])
    assert given.exit_code == 0, given.output
    with SqliteStore(store) as opened:
        assert (opened.config.epsilon_high, opened.config.epsilon_low) == (0.1, 0.01)
    refused = CliRunner().invoke(cli, base + ["--store", str(store), "--resume", "--strategy", "ucb1"])
    assert refused.exit_code == 2 and "--strategy ucb1 needs a new store (--replace)" in refused.output
    bad = CliRunner().invoke(cli, base + ["--store", str(store), "--resume", "--epsilon-high", "2"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output and "epsilon" in bad.output


def test_bad_input_is_one_line_exit_2(trace_dir, tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        main(["simulate", "--trace", str(trace_dir), "--policy", "fixed:0"])
    assert err.value.code == 2
    with pytest.raises(SystemExit) as err:
        main(["simulate", "--trace", str(tmp_path / "nope"), "--out", str(tmp_path / "out")])
    assert err.value.code == 2
    assert not (tmp_path / "out").exists()
    assert "Traceback" not in capsys.readouterr().err


def test_fixed_replicas_raise_workflows_within_p01_on_newcastle():
    from condor_rlrep.sim.generator import generate_trace

    trace = generate_trace("newcastle-2010", days=14, seed=5)
    within = {}
    for policy in ("single", "fixed:2", "fixed:3"):
        result = simulate(trace, SimConfig(policy=policy, phi=0.1, seed=1))
        within[policy] = result.within[0.1]
        assert result.workflows > 1000
    assert within["fixed:2"] > 1.1 * within["single"]
    assert within["fixed:3"] > 1.1 * within["single"]


def test_importing_the_simulator_does_not_import_htcondor():
    import subprocess
    import sys

    code = ("import sys, condor_rlrep.sim.run, condor_rlrep.cli.simulate_cmd; "
            "print(any(m.split('.')[0] in ('htcondor', 'htcondor2', 'matplotlib') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
