"""A replay resumes: a policy whose rows are written is not replayed again
(no pool is started for it), a folder holding another replay's plan is
refused, and the command refuses what it cannot run in one error line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from condor_rlrep.cli.main import cli
from condor_rlrep.errors import InputError
from condor_rlrep.replay.plan import ReplayPlan
from condor_rlrep.replay.results import Row
from condor_rlrep.replay.run import ReplaySettings, run_replay


def _plan(**changes) -> ReplayPlan:
    values = dict(source="hand", trace_start="2010-01-04T00:00:00+00:00", window_start=0.0, window_seconds=600.0,
                  compression=10.0, machines=["a", "b"], active_watts=[100.0, 300.0], idle_watts=[1.0, 3.0],
                  sessions=[[(10.0, 20.0)], []], arrivals=[0.0, 5.0], task_seconds=192.0, drain_seconds=30.0)
    values.update(changes)
    return ReplayPlan(**values)


def _row(side: str) -> Row:
    return Row(policy="single", side=side, workflows=2, completed=2, within={"0.1": 0.5, "0.5": 1.0}, p=[0.05, 0.3],
               tasks=16, replicas=16, evictions=1, good_kwh=0.01, bad_kwh=0.001)


def _settings() -> ReplaySettings:
    # a release that does not exist: starting a pool would fail
    return ReplaySettings(policies=["single"], phi=0.5, seed=0, negotiation_interval=2.0,
                          release=Path("/nonexistent/htcondor"))


def test_a_policy_with_rows_is_not_replayed_again(tmp_path):
    out = tmp_path / "replay"
    (out / "single").mkdir(parents=True)
    (out / "plan.json").write_text(_plan().dumps())
    (out / "single" / "rows.json").write_text(json.dumps({"policy": "single",
                                                          "rows": [_row("live").to_json(), _row("simulated").to_json()]}))
    said = []
    rows = run_replay(out, _plan(), _settings(), progress=lambda *args: said.append(args))
    assert [r.side for r in rows["single"]] == ["live", "simulated"]
    assert rows["single"][0].within == {"0.1": 0.5, "0.5": 1.0} and rows["single"][0].replicas_per_task == 1.0
    assert said == [("single", 2, 2, "done before")]


def test_rescore_recomputes_a_done_policys_rows_from_its_files_without_a_pool(tmp_path):
    out = tmp_path / "replay"
    (out / "single").mkdir(parents=True)
    (out / "plan.json").write_text(_plan().dumps())
    (out / "single" / "rows.json").write_text(json.dumps({"policy": "single",
                                                          "rows": [_row("live").to_json(), _row("simulated").to_json()]}))
    # the kept record: two DAGs whose files are gone (nothing to read: both outside every P)
    (out / "single" / "submitted.json").write_text(json.dumps({"origin": 1000.0, "dags": [
        {"dag": str(out / "single" / f"wf000{i}" / "run.dag"), "cluster": i, "submitted": 5.0 * i} for i in (1, 2)]}))
    settings = _settings()
    settings.rescore = True
    said = []
    rows = run_replay(out, _plan(), settings, progress=lambda *args: said.append(args))
    assert said == [("single", 2, 2, "rescored from its files")]  # no pool: the release does not exist
    live, sim, bare = rows["single"]
    assert (live.side, sim.side, bare.side) == ("live", "simulated", "simulated, no DAGMan latency")
    assert live.completed == 0 and live.p == [None, None]
    assert sim.workflows == bare.workflows == 2 and sim.extra["dagman_latency_s"] == 0.0  # nothing measured
    written = json.loads((out / "single" / "rows.json").read_text())
    assert [r["side"] for r in written["rows"]] == ["live", "simulated", "simulated, no DAGMan latency"]


def test_a_folder_of_another_replay_is_refused(tmp_path):
    out = tmp_path / "replay"
    out.mkdir()
    (out / "plan.json").write_text(_plan().dumps())
    with pytest.raises(InputError, match="holds the plan of another replay"):
        run_replay(out, _plan(arrivals=[0.0, 6.0]), _settings())


def test_no_htcondor_is_one_error_line(tmp_path):
    env = {"PATH": str(tmp_path)}  # no condor_master on it
    result = CliRunner(env=env).invoke(cli, ["replay", "-o", str(tmp_path / "r"), "--preset", "poisson"],
                                       prog_name="condor-rlrep")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0].startswith("condor-rlrep: error: no condor_master on PATH")
    assert "Traceback" not in result.output and not (tmp_path / "r").exists()
    bad = CliRunner(env=env).invoke(cli, ["replay", "-o", str(tmp_path / "r"), "--preset", "poisson",
                                          "--policy", "oracle:3"], prog_name="condor-rlrep")
    assert bad.exit_code == 2 and bad.stderr.startswith("condor-rlrep: error:") and "oracle" in bad.stderr
    assert os.environ.get("PATH")  # the runner's env did not leak into ours


def test_rescore_needs_no_htcondor(tmp_path):
    """--rescore of kept runs starts no pool, so it runs where HTCondor is
    not installed; a policy with no kept run still asks for it, in one line."""
    from condor_rlrep.replay.plan import make_plan
    from condor_rlrep.sim.run import load_trace

    out = tmp_path / "r"
    plan = make_plan(load_trace(trace_dir=None, preset="poisson", days=14.0, seed=2010), slots=4,
                     window_start=282 * 3600.0, window_seconds=4 * 3600.0, compression=60.0, workflows=2, seed=0)
    (out / "single").mkdir(parents=True)
    (out / "plan.json").write_text(plan.dumps())
    (out / "single" / "rows.json").write_text(json.dumps({"policy": "single",
                                                          "rows": [_row("live").to_json(), _row("simulated").to_json()]}))
    (out / "single" / "submitted.json").write_text(json.dumps({"origin": 1000.0, "dags": [
        {"dag": str(out / "single" / f"wf000{i}" / "run.dag"), "cluster": i, "submitted": 5.0 * i} for i in (1, 2)]}))
    env = {"PATH": str(tmp_path)}  # no condor_master on it
    args = ["replay", "-o", str(out), "--preset", "poisson", "--workflows", "2", "--policy", "single", "--rescore"]
    done = CliRunner(env=env).invoke(cli, args, prog_name="condor-rlrep")
    assert done.exit_code == 0, done.output
    assert "single: rescored from its files 2/2" in done.stderr and (out / "report.md").exists()
    more = CliRunner(env=env).invoke(cli, args + ["--policy", "fixed:2"], prog_name="condor-rlrep")
    assert more.exit_code == 2 and "Traceback" not in more.output
    assert more.stderr.splitlines()[-1].startswith("condor-rlrep: error: fixed:2 has no kept run to rescore"), more.stderr
    assert not (out / "fixed-2").exists()


def test_the_report_has_the_table_and_the_within_figure(tmp_path):
    from condor_rlrep.replay.render import write_report

    rows = {"single": [_row("live"), _row("simulated")]}
    paths = write_report(tmp_path / "out", _plan(), rows, {"phi": 0.5})
    markdown = Path(paths["md"]).read_text()
    assert "| `single` | live | 2/2 | 50.0 % | 100.0 % |" in markdown
    assert "![Share of workflows within P" in markdown and (tmp_path / "out" / "within.svg").exists()
    assert json.loads(Path(paths["json"]).read_text())["rows"]["single"][0]["replicas_per_task"] == 1.0
