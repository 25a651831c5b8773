"""The model:R policy live (issue 14): the shared survival model, its
update from a node log by POST, PRE's decision from the store, fail-open.

The hooks run in this process with DAGMan's argv (as in test_hooks_e2e);
the pool is played by writing its events, including the job-ad-information
event (028) a 25.14 pool writes after each execute when the description
asks for ``MachineAttrKeyboardIdle0`` (measured; see eventlog.KEYBOARD_IDLE_ATTR).
"""

from __future__ import annotations

import calendar
import json
import math
import os
import sqlite3
from pathlib import Path

import pytest

from _hookutil import post_macros, pre_macros, script_argv, substitute
from condor_rlrep.store import SqliteStore
from condor_rlrep.condor.eventlog import read_events, rebuild_cluster
from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.errors import InputError
from condor_rlrep.rundir.layout import node_state_path
from condor_rlrep.survival.live import exposure_cells
from condor_rlrep.hooks.post import run_post
from condor_rlrep.hooks.pre import run_pre
from condor_rlrep.instrument import InstrumentOptions, instrument
from condor_rlrep.survival.model import SurvivalModel, choose_replicas, parse_model_spec

MONDAY_10 = float(calendar.timegm((2026, 12, 7, 10, 0, 0)))  # hour of week 10 in UTC
K, PRIOR = 4 * 3600.0, 1 / (8 * 3600.0)  # SurvivalModel's defaults


def _play_node(log: Path, cluster: int, node: str, t0: float, job_log: Path | None = None) -> None:
    """Two replicas: 0 runs 600 s on a machine idle 1207 s and is evicted,
    reruns (idle 99 s) and wins after 1920 s; 1 runs 300 s (no idle time in
    the log) and is evicted, reruns and is removed as surplus after 2221 s.

    With ``job_log``, as HTCondor 25.14 does: every event goes to both logs
    but the job-ad-information events (028) only to the job's own log."""
    writers = [EventLogWriter(log)] + ([EventLogWriter(job_log)] if job_log else [])
    info = writers[-1]

    def each(method: str, *args, **kwargs) -> None:
        for w in writers:
            getattr(w, method)(*args, **kwargs)

    for proc in (0, 1):
        each("submit", cluster, proc, t0, node)
        each("execute", cluster, proc, t0 + 20, host=f"h{proc}", slot=proc + 1)
    info.job_ad_information(cluster, 0, t0 + 20, 1, {"MachineAttrKeyboardIdle0": 1207, "RemoteHost": "slot1_1@h0"})
    each("evict", cluster, 1, t0 + 320)
    each("execute", cluster, 1, t0 + 400, host="h1", slot=2)
    each("evict", cluster, 0, t0 + 620)
    each("execute", cluster, 0, t0 + 700, host="h0", slot=1)
    info.job_ad_information(cluster, 0, t0 + 700, 1, {"MachineAttrKeyboardIdle0": 99})
    each("terminate", cluster, 0, t0 + 2620, exit_code=0, run_seconds=1920)
    each("remove", cluster, 1, t0 + 2621)


# the cells of that node, by hand: hour 10, bucket -1 (unknown): 300 + 2221 s
# and 1 eviction; bucket 0 (< 15 min idle): 1920 s; bucket 1 (< 1 h): 600 s, 1 eviction
CELLS = [[10, -1, 2521.0, 1.0], [10, 0, 1920.0, 0.0], [10, 1, 600.0, 1.0]]


def test_exposure_cells_and_hazard_by_hand(tmp_path):
    log = tmp_path / "n.log"
    _play_node(log, 7, "A", MONDAY_10)
    history = rebuild_cluster(read_events(log), 7)
    assert history.keyboard_idle == {(0, MONDAY_10 + 20): 1207.0, (0, MONDAY_10 + 700): 99.0}
    hour = lambda t: (int(t // 3600) + 72) % 168  # noqa: E731 (UTC)
    assert exposure_cells(history.invocations, history.keyboard_idle, hour, SurvivalModel().bucket) == CELLS

    model = SurvivalModel.from_cells(CELLS)
    week = (2 + K * PRIOR) / (5041 + K)
    at_hour = (2 + K * week) / (5041 + K)
    assert model.hour_rate(10) == pytest.approx(at_hour)
    assert model.hazard(10, None) == pytest.approx(at_hour)
    assert model.hazard(10, 1) == pytest.approx((1 + K * at_hour) / (600 + K))
    assert model.hazard(10, 0) == pytest.approx((0 + K * at_hour) / (1920 + K))
    assert model.hazard(11, 3) == pytest.approx(week)  # no data at 11: the week's rate
    # the same as recording the runs one by one (the simulator's path)
    online = SurvivalModel()
    for h, b, seconds, evicted in [(10, None, 300, True), (10, None, 2221, False), (10, 1, 600, True), (10, 0, 1920, False)]:
        online.record(h, b, seconds, evicted)
    for h, b in [(10, None), (10, 0), (10, 1), (10, 5), (3, 2)]:
        assert online.hazard(h, b) == pytest.approx(model.hazard(h, b), rel=1e-12)


def test_choose_replicas_rules_by_hand():
    model = SurvivalModel()  # prior only: λ = 1/8 h
    s = math.exp(-1920 * PRIOR)  # 0.9355
    c = choose_replicas(model, 10, 0.5, 1920, [None] * 3, target=0.95, hi=1.0)
    assert (c.replicas, c.reason) == (2, "target") and c.survivals == pytest.approx((s, s, s))
    assert c.success == pytest.approx(1 - (1 - s) ** 2)
    assert choose_replicas(model, 10, 1.0, 1920, [None] * 3, target=0.95, hi=1.0).reason == "slack"
    assert choose_replicas(model, 10, -0.01, 1920, [None] * 3, target=0.95, hi=1.0).reason == "late"
    assert choose_replicas(model, 10, 0.5, 1920, [None], target=0.95, hi=1.0).reason == "capped"
    assert choose_replicas(model, 10, 0.5, 1920, [], target=0.95, hi=1.0).reason == "no machine"
    assert parse_model_spec("model:3").spec == "model:3"
    assert parse_model_spec("model:2,target=0.9,hi=0.5").spec == "model:2,target=0.9,hi=0.5"
    assert parse_model_spec("rl:3") is None
    for bad in ("model:0", "model:3,target=1", "model:3,x=1", "model:three"):
        with pytest.raises(ValueError):
            parse_model_spec(bad)


def _dag(tmp_path: Path) -> Path:
    user = tmp_path / "user"
    user.mkdir()
    (user / "task.sub").write_text("executable = /bin/sleep\narguments = 1920\nlog = jobs.log\nqueue\n")
    (user / "two.dag").write_text('JOB A task.sub\nJOB B task.sub\nVARS A rlrep_estimate="1920"\n'
                                  'VARS B rlrep_estimate="1920"\n')
    return user / "two.dag"


def _hook(dag: Path, node: str, kind: str, macros: dict, now: float | None = None) -> int:
    argv, cwd = script_argv(dag, node, kind)
    full = substitute(argv, {"$JOB": node, **macros})
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return run_pre(full[1:], now=now) if kind == "PRE" else run_post(full[1:])
    finally:
        os.chdir(old)


def _queue(submit: Path) -> int:
    lines = [line.split() for line in submit.read_text().splitlines() if line.lower().startswith("queue")]
    return int(lines[-1][1]) if len(lines[-1]) > 1 else 1


def test_model_policy_end_to_end_on_files(tmp_path):
    out = tmp_path / "run" / "two.rlrep.dag"
    store = tmp_path / "agent.sqlite"
    result = instrument(_dag(tmp_path), out, InstrumentOptions(store=str(store), policy="model:3"))
    settings = json.loads((Path(result.context) / "hooks.json").read_text())
    assert settings["policy"] == "model:3" and settings["max_replicas"] == 3 and result.store_created

    assert _hook(out, "A", "PRE", pre_macros(), now=MONDAY_10) == 0
    submit_a = Path(result.context) / "nodes" / "A.sub"
    text = submit_a.read_text()
    assert _queue(submit_a) == 2  # the prior alone: s = 0.9355 < 0.95, two reach 0.996
    assert "job_machine_attrs = $(job_machine_attrs) KeyboardIdle" in text and text.count("\nlog = ") == 1
    assert "job_ad_information_attrs = $(job_ad_information_attrs) MachineAttrKeyboardIdle0" in text
    state = json.loads(Path(node_state_path(result.context, "A")).read_text())
    assert state["decision_id"] is None and state["model"]["hour_of_week"] == 10
    assert state["model"]["reason"] == "target"

    assert state["model"]["job_log"] == str(tmp_path / "user" / "jobs.log")  # the user's own log
    _play_node(Path(str(out) + ".nodes.log"), 41, "A", MONDAY_10, job_log=tmp_path / "user" / "jobs.log")
    assert _hook(out, "A", "POST", post_macros(41, 2, -1002)) == 0
    with SqliteStore(store) as opened:
        assert [list(c) for c in opened.survival_cells()] == CELLS
    assert _hook(out, "A", "POST", post_macros(41, 2, -1002)) == 0  # DAGMan reran POST: counted once
    with SqliteStore(store) as opened:
        assert [list(c) for c in opened.survival_cells()] == CELLS
    log = (Path(result.context) / "hooks.log").read_text()
    assert "already counted" in log and "FAIL-OPEN" not in log

    # the next decision reflects the evictions: s = exp(-1920 λ_hour) = 0.684, three reach 0.968
    assert _hook(out, "B", "PRE", pre_macros(), now=MONDAY_10 + 2700) == 0
    assert _queue(Path(result.context) / "nodes" / "B.sub") == 3
    model_b = json.loads(Path(node_state_path(result.context, "B")).read_text())["model"]
    assert model_b["hour_evictions"] == 2 and model_b["hour_exposure_s"] == 5041
    assert model_b["survival"] == pytest.approx(math.exp(-1920 * (2 + K * (2.5 / 19441)) / 19441))


def test_a_broken_model_row_fails_open_to_the_users_job(tmp_path):
    out = tmp_path / "run" / "two.rlrep.dag"
    store = tmp_path / "agent.sqlite"
    result = instrument(_dag(tmp_path), out, InstrumentOptions(store=str(store), policy="model:3"))
    with sqlite3.connect(store) as conn:  # a bucket the model does not have
        conn.execute("INSERT INTO survival VALUES (10, 40, 100.0, 1.0)")
    assert _hook(out, "A", "PRE", pre_macros(), now=MONDAY_10) == 0
    submit = Path(result.context) / "nodes" / "A.sub"
    assert _queue(submit) == 1 and "Rlrep" not in submit.read_text()  # the user's description as it is
    assert "FAIL-OPEN" in (Path(result.context) / "hooks.log").read_text()


def test_instrument_refuses_bad_model_specs(tmp_path):
    dag = _dag(tmp_path)
    for spec, fault in (("model:0", "count >= 1"), ("model:3,target=2", "target"), ("model:3,foo=1", "unknown option")):
        with pytest.raises(InputError, match=fault):
            instrument(dag, tmp_path / "o.dag", InstrumentOptions(store=str(tmp_path / "s.sqlite"), policy=spec))
    with pytest.raises(InputError, match="--max-replicas"):
        instrument(dag, tmp_path / "o.dag", InstrumentOptions(store=str(tmp_path / "s.sqlite"), policy="model:3",
                                                              max_replicas=2))


def test_agent_show_model_explains_rates_and_the_choice(tmp_path):
    from click.testing import CliRunner

    from condor_rlrep.cli.main import cli

    store = tmp_path / "a.sqlite"
    with SqliteStore.create(store) as opened:
        opened.record_exposure("k", CELLS)
    run = lambda *a: CliRunner().invoke(cli, ["agent", "show", "--store", str(store), *a])  # noqa: E731
    shown = run("--model", "model:3", "--phi-prime", "0.5", "--estimate", "32m", "--time", str(MONDAY_10))
    assert shown.exit_code == 0, shown.output
    # a summary by default: Monday's 2 evictions, hour 10 the riskiest of the week
    assert "riskiest hours of the week: Mon 10h 0.7133/h" in shown.output
    assert len(shown.output.splitlines()) < 15
    every = run("--model", "model:3", "--all")
    assert "Mon   10  0.7133     1.40          2" in every.output and len(every.output.splitlines()) > 168
    assert "3 replica(s) — the fewest replicas whose chance that one survives reaches 0.95" in shown.output
    doc = json.loads(run("--model", "model:3,target=0.85", "--phi-prime", "0.5", "--estimate", "1920",
                         "--time", str(MONDAY_10), "--json").output)
    assert doc["choice"]["replicas"] == 2 and doc["choice"]["hour_of_week"] == 10  # 1 - 0.316² = 0.8999 >= 0.85
    assert doc["hours"][10]["evictions"] == 2 and len(doc["hours"]) == 168
    assert run("--model", "model:3", "--phi-prime", "-1", "--estimate", "60").output.rstrip().endswith(
        "no replica count brings it back")
    assert run("--model", "fixed:2").exit_code == 2
    assert run("--phi-prime", "0.5").exit_code == 2


def test_job_log_of_a_description(tmp_path):
    from condor_rlrep.condor.joblog import job_log

    own = str(tmp_path / "ctx" / "logs" / "A%2Fb.log")
    base = "executable = /bin/true\n"
    lines, path, _ = job_log(base + "queue\n", own, {"JOB": "A/b"}, "/work/node")
    assert path == own and lines == [f"log = {path}"]  # ours, in the run directory
    assert (tmp_path / "ctx" / "logs").is_dir()
    assert job_log(base + "log = $(JOB).log\nqueue\n", own, {"JOB": "A"}, "/w") == ([], "/w/A.log",
                                                                                   "the user's job log")
    assert job_log(base + "initialdir = sub\nLog = x.log\nqueue\n", own, {}, "/w")[1] == "/w/sub/x.log"
    assert job_log(base + "log = /abs/x.log\nqueue\n", own, {}, "/w")[1] == "/abs/x.log"
    assert job_log(base + "log = j.$(Cluster).log\nqueue\n", own, {}, "/w")[1] is None  # known only at submit


def test_the_model_learns_without_keyboard_idle_when_no_log_has_it(tmp_path):
    """A node log alone (the job's log lost): every run counts in the
    hour's unknown bucket, the decision is the same (it uses the hour's rate)."""
    out = tmp_path / "run" / "two.rlrep.dag"
    store = tmp_path / "agent.sqlite"
    result = instrument(_dag(tmp_path), out, InstrumentOptions(store=str(store), policy="model:3"))
    assert _hook(out, "A", "PRE", pre_macros(), now=MONDAY_10) == 0
    job_log = tmp_path / "user" / "jobs.log"
    _play_node(Path(str(out) + ".nodes.log"), 41, "A", MONDAY_10, job_log=job_log)
    job_log.unlink()  # the user removed it: the node log has no 028 events
    assert _hook(out, "A", "POST", post_macros(41, 2, -1002)) == 0
    with SqliteStore(store) as opened:
        assert [list(c) for c in opened.survival_cells()] == [[10, -1, 5041.0, 2.0]]
    log = (Path(result.context) / "hooks.log").read_text()
    assert "(0 with KeyboardIdle) (job log unreadable" in log and "FAIL-OPEN" not in log
    assert _hook(out, "B", "PRE", pre_macros(), now=MONDAY_10 + 2700) == 0
    assert _queue(Path(result.context) / "nodes" / "B.sub") == 3


def _short_dag(tmp_path: Path, seconds: int) -> Path:
    user = tmp_path / "short"
    user.mkdir()
    (user / "task.sub").write_text(f"executable = /bin/sleep\narguments = {seconds}\nqueue\n")
    (user / "one.dag").write_text(f'JOB A task.sub\nVARS A rlrep_estimate="{seconds}"\n')
    return user / "one.dag"


@pytest.mark.parametrize(("policy", "replicas"), [("model:3", 1), ("model:3,prior=7.5", 2)])
def test_a_compressed_prior_replicates_a_short_task_as_the_default_does_a_long_one(tmp_path, policy, replicas):
    # A 32-s task (a 32-min one compressed 60×). At the default prior (1/8 h)
    # it survives with exp(-32/28800) = 0.9989 ≥ 0.95: one replica. At
    # prior=60/8 = 7.5 per hour, exp(-7.5·32/3600) = exp(-1920/28800) = 0.9355,
    # as the 32-min task at the default (two replicas reach 0.996).
    out = tmp_path / "run" / "one.rlrep.dag"
    instrument(_short_dag(tmp_path, 32), out, InstrumentOptions(store=str(tmp_path / "s.sqlite"), policy=policy))
    assert _hook(out, "A", "PRE", pre_macros(), now=MONDAY_10) == 0
    result_ctx = Path(str(out) + ".rlrep")
    assert _queue(result_ctx / "nodes" / "A.sub") == replicas
    model = json.loads(Path(node_state_path(str(result_ctx), "A")).read_text())["model"]
    expected = math.exp(-1920 / 28800) if replicas == 2 else math.exp(-32 / 28800)
    assert model["survival"] == pytest.approx(expected)
    assert model["policy"] == policy


def test_prior_settings_and_the_prior_option_by_hand():
    from condor_rlrep.survival.model import DEFAULT_PRIOR_PER_HOUR, prior_settings

    assert prior_settings(DEFAULT_PRIOR_PER_HOUR) == {"prior_rate": PRIOR, "prior_seconds": K}
    assert prior_settings(7.5) == {"prior_rate": 7.5 / 3600, "prior_seconds": 240.0}
    spec = parse_model_spec("model:3,prior=7.5")
    assert spec.prior == 7.5 and spec.spec == "model:3,prior=7.5"
    assert parse_model_spec("model:3,prior=0.125").spec == "model:3"
    for bad in ("model:3,prior=0", "model:3,prior=-1", "model:3,prior=x"):
        with pytest.raises(ValueError, match="prior"):
            parse_model_spec(bad)
    # compression C: exposure C times shorter, rates C times higher; the
    # compressed model's hazard is C times the plain one's, data or not
    plain, fast = SurvivalModel(), parse_model_spec("model:3,prior=7.5").model()
    assert fast.hour_rate(10) == pytest.approx(60 * plain.hour_rate(10))
    for model, scale in ((plain, 1.0), (fast, 60.0)):
        model.record(10, 0, 3000.0 / scale, True)
        model.record(11, 1, 9000.0 / scale, False)
    for hour, bucket in ((10, 0), (10, None), (11, 1), (50, 3)):
        assert fast.hazard(hour, bucket) == pytest.approx(60 * plain.hazard(hour, bucket))


def test_the_simulators_model_policy_takes_the_prior():
    from condor_rlrep.policyspec import parse_spec
    from condor_rlrep.sim.policy_registry import build_policy
    import numpy as np

    policy = build_policy(parse_spec("model:3,prior=7.5"), agent_config=None, rng=np.random.default_rng(0))
    assert policy.model.prior_rate == 7.5 / 3600 and policy.model.prior_seconds == 240.0
    assert build_policy(parse_spec("model:3"), agent_config=None, rng=np.random.default_rng(0)).model.prior_rate == PRIOR
