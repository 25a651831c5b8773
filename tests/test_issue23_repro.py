"""Issue 23 ("real DAGs keep their meaning"), reproduced without a pool run.

Each test states what should hold and is a strict ``xfail`` until the item
is fixed (it then fails as XPASS and must lose its mark). The hooks are the
installed executables, run as DAGMan runs them (:mod:`_hookutil`), on node
logs a real HTCondor 25.14 pool wrote: HTCondor's recorded scenarios in
``../shared/data/eventlogs/real-dagman`` and two recorded for these items in
``tests/data/compat/real-dagman`` (``hold``: ``condor_hold`` of a running
job, then ``condor_release``; ``submit-failure``: ``universe = bogus``), each
with DAGMan's argv of every PRE/POST call in ``scripts.out``. The items that
need DAGMan itself are in ``test_pool_issue23.py``.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from _hookutil import SHARED_DATA, run_script
from condor_rlrep.instrument import InstrumentOptions, instrument

REPO = Path(__file__).resolve().parents[1]
RECORDED = Path(__file__).resolve().parent / "data" / "compat" / "real-dagman"
HTCONDOR_RECORDED = SHARED_DATA / "eventlogs" / "real-dagman"
CLI = str(Path(sys.executable).parent / "condor-rlrep")
POST_FIELDS = ["$JOB", "$RETRY", "$MAX_RETRIES", "$DAGID", "$DAG_STATUS", "$FAILED_COUNT", "$JOBID", "$CLUSTERID",
               "$RETURN", "$SUCCESS", "$PRE_SCRIPT_RETURN", "$JOB_COUNT", "$EXIT_CODES", "$EXIT_CODE_COUNTS",
               "$EXIT_CODE_LIST", "$JOB_ABORT_COUNT"]


def xfail(item: int, what: str):
    return pytest.mark.xfail(strict=True, reason=f"issue 23 item {item}: {what}")


def rlrep(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def recorded_post(scenario: Path, node: str = "A") -> dict[str, str]:
    """DAGMan's macro values of the first recorded POST call of ``node``."""
    for line in (scenario / "scripts.out").read_text().splitlines():
        args = re.findall(r"\[([^\]]*)\]", line.split("argv:", 1)[-1])
        if len(args) == 18 and args[1] == f"POST_{node}":
            return dict(zip(POST_FIELDS, args[2:]))
    raise AssertionError(f"no POST_{node} call in {scenario}/scripts.out")


def one_node_dag(tmp_path: Path, node_log: Path, *, store: Path | None, policy: str = "agent",
                 submit: str = "executable = /bin/true\nqueue\n", extra: str = "", estimate: int = 60) -> Path:
    """Node A (and its user lines ``extra``) instrumented to read ``node_log``, every node with PRE."""
    user = tmp_path / "user"
    user.mkdir(exist_ok=True)
    (user / "a.sub").write_text(submit)
    (user / "w.dag").write_text(f'JOB A a.sub\nVARS A rlrep_estimate="{estimate}"\n{extra}')
    out = tmp_path / "run" / "w.rlrep.dag"
    instrument(user / "w.dag", out, InstrumentOptions(node_log=str(node_log), policy=policy, always_pre=True,
                                                      store=None if store is None else str(store)))
    return out


def hooks_log(dag: Path) -> str:
    return (Path(str(dag) + ".rlrep") / "hooks.log").read_text()


def decisions(store: Path) -> list[dict]:
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT action, reward, outcome FROM decisions ORDER BY id").fetchall()
    return [{"action": a, "reward": r, "outcome": json.loads(o) if o else None} for a, r, o in rows]


# -- item 1: a node whose submission fails must fail -------------------------

def test_item1_a_failed_submission_fails_the_node(tmp_path: Path) -> None:
    scenario = RECORDED / "submit-failure"
    call = recorded_post(scenario)
    # what DAGMan 25.14 passed the POST of a node whose submit failed
    assert (call["$RETURN"], call["$SUCCESS"], call["$CLUSTERID"], call["$JOB_COUNT"]) == ("-1001", "True", "-1", "0")
    dag = one_node_dag(tmp_path, scenario / "test.dag.nodes.log", store=tmp_path / "agent.sqlite",
                       submit="universe = bogus\nexecutable = /bin/true\nqueue\n")
    assert run_script(dag, "A", "PRE", {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": call["$DAGID"]}).returncode == 0
    post = run_script(dag, "A", "POST", call)
    # plain DAGMan (no POST): "Shortcutting node A retries because of submit failure(s)", node failed, DAG exit 1
    assert post.returncode != 0, hooks_log(dag)


def test_item1_prohibit_multi_jobs_is_refused_or_respected(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "multi.config").write_text("DAGMAN_PROHIBIT_MULTI_JOBS = True\n")
    (tmp_path / "w.dag").write_text('CONFIG multi.config\nJOB A a.sub\nVARS A rlrep_estimate="60"\n')
    done = rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", "fixed:2", cwd=tmp_path)
    if done.returncode == 0:  # respected: said so, and no node is replicated
        settings = json.loads((tmp_path / "run" / "w.rlrep.dag.rlrep" / "hooks.json").read_text())
        assert "PROHIBIT_MULTI_JOBS" in done.stdout + done.stderr
        assert settings["max_replicas"] == 1
    else:
        assert done.returncode == 2 and "PROHIBIT_MULTI_JOBS" in done.stderr, done.stderr


def test_item1_prohibit_multi_jobs_caps_an_agent_run_at_one_replica(tmp_path: Path) -> None:
    """An agent policy adapts (one replica a node, said so); fixed:2 is refused (above)."""
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "multi.config").write_text("# HTCondor's own test DAGs set it so\nDAGMAN_PROHIBIT_MULTI_JOBS = true\n")
    (tmp_path / "w.dag").write_text('CONFIG multi.config\nJOB A a.sub\nVARS A rlrep_estimate="60"\n')
    done = rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--store", str(tmp_path / "agent.sqlite"),
                 cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "DAGMAN_PROHIBIT_MULTI_JOBS = true" in done.stderr and "multi.config:2" in done.stderr, done.stderr
    settings = json.loads((tmp_path / "run" / "w.rlrep.dag.rlrep" / "hooks.json").read_text())
    assert settings["max_replicas"] == 1
    from condor_rlrep.store.sqlite import SqliteStore

    with SqliteStore(tmp_path / "agent.sqlite") as store:  # the store keeps its own range of actions
        assert store.config.max_replicas > 1
    # without the setting the same run may replicate
    (tmp_path / "multi.config").write_text("DAGMAN_PROHIBIT_MULTI_JOBS = False\n")
    again = rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--store", str(tmp_path / "agent.sqlite"),
                  cwd=tmp_path)
    assert again.returncode == 0 and "PROHIBIT" not in again.stderr, again.stderr
    assert json.loads((tmp_path / "run" / "w.rlrep.dag.rlrep" / "hooks.json").read_text())["max_replicas"] > 1


# -- item 3: refuse what DAGMan refuses, with its reason and the line -------

@pytest.mark.parametrize("command", ["instrument", "inspect"])
def test_item3_reject_is_refused(tmp_path: Path, command: str) -> None:
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="60"\nREJECT\n')
    args = ["-o", "run/w.rlrep.dag", "--policy", "fixed:2"] if command == "instrument" else []
    done = rlrep(command, "w.dag", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "REJECT" in done.stderr and "w.dag:3" in done.stderr, done.stderr


@pytest.mark.parametrize("command", ["instrument", "inspect"])
def test_item3_nested_dag_by_job_is_refused(tmp_path: Path, command: str) -> None:
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "inner.dag").write_text("JOB I a.sub\n")
    (tmp_path / "inner.dag.condor.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text('JOB A a.sub\nJOB X inner.dag.condor.sub\nVARS ALL_NODES rlrep_estimate="60"\n')
    args = ["-o", "run/w.rlrep.dag", "--policy", "fixed:2"] if command == "instrument" else []
    done = rlrep(command, "w.dag", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "w.dag:2" in done.stderr and "SUBDAG" in done.stderr, done.stderr


# -- item 4: settings resolved as DAGMan resolves them ----------------------

def _settings(dag: Path) -> dict[str, tuple[str, ...]]:
    """What DAGMan takes from ``dag``'s top-level lines: the first NODE_STATUS_FILE
    and JOBSTATE_LOG (a later one only warns), the last DOT (SetDotFileName)."""
    found: dict[str, tuple[str, ...]] = {}
    for line in dag.read_text().splitlines():
        words = line.split()
        if not words:
            continue
        key = words[0].upper()
        if key in ("NODE_STATUS_FILE", "JOBSTATE_LOG") and key not in found:
            found[key] = tuple(words[1:])
        elif key == "DOT":
            found[key] = tuple(words[1:])
    return found


def test_item4_status_files_are_the_ones_dagman_would_write(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (user / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="60"\n'
                                "NODE_STATUS_FILE first.status\nNODE_STATUS_FILE second.status 600\n"
                                "JOBSTATE_LOG first.jobstate.log\nJOBSTATE_LOG second.jobstate.log\n"
                                "DOT w.dot\n")
    done = rlrep("instrument", "user/w.dag", "-o", "run/w.rlrep.dag", "--policy", "fixed:2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    original, copy = _settings(user / "w.dag"), _settings(tmp_path / "run" / "w.rlrep.dag")
    # the plain DAG, submitted from its directory, writes these files:
    expected = {key: (str(user / value[0]), *value[1:]) for key, value in original.items()}
    assert expected["NODE_STATUS_FILE"] == (str(user / "first.status"),)
    # the copy must write the same ones, wherever condor_submit_dag is run for it
    assert all(os.path.isabs(value[0]) for value in copy.values()), copy
    # DAGMan writes the copy's JOBSTATE_LOG into the run folder, which the reaper translates into the user's
    # (item 5): the user's is the one the plain DAG would write
    context = tmp_path / "run" / "w.rlrep.dag.rlrep"
    assert copy.pop("JOBSTATE_LOG") == (str(context / "jobstate.log"),)
    assert json.loads((context / "hooks.json").read_text())["jobstate_log"] == expected.pop("JOBSTATE_LOG")[0]
    assert copy == expected


# -- item 8: DONE nodes are not on the critical path ------------------------

@pytest.mark.parametrize("done", ["JOB A a.sub DONE\n", "JOB A a.sub\nDONE A\n"])
def test_item8_done_nodes_do_not_count_towards_cr(tmp_path: Path, done: str) -> None:
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text(done + 'JOB B a.sub\nPARENT A CHILD B\n'
                                    'VARS A rlrep_estimate="1000"\nVARS B rlrep_estimate="10"\n')
    shown = rlrep("inspect", "w.dag", "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["critical_path_seconds"] == pytest.approx(10.0)


# -- item 9: inline descriptions need no queue statement --------------------

@pytest.mark.parametrize("form", ["inline", "submit-description"])
def test_item9_inline_descriptions_are_replicated(tmp_path: Path, form: str) -> None:
    body = "executable = /bin/true\nrequest_memory = 32MB\n"
    if form == "inline":
        text = f"JOB A {{\n{body}}}\n"
    else:
        text = f"SUBMIT-DESCRIPTION desc {{\n{body}}}\nJOB A desc\n"
    (tmp_path / "w.dag").write_text(text + 'VARS A rlrep_estimate="60"\n')
    done = rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", "fixed:2", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["replicated"] == ["A"], result["passed_through"]


# -- item 10: a hold is not an eviction -------------------------------------

def test_item10_recorded_hold_is_a_hold() -> None:
    """The fixture: condor_hold logged 004 (Code 1) and then 012; the job ran again and exited 0."""
    from condor_rlrep.condor.eventlog import EVICTED, HELD, read_events

    events = read_events(str(RECORDED / "hold" / "test.dag.nodes.log"))
    kinds = [int(e.type) for e in events]
    assert kinds.index(EVICTED) + 1 == kinds.index(HELD)


def test_item10_a_hold_is_not_counted_as_an_eviction(tmp_path: Path) -> None:
    from condor_rlrep.condor.eventlog import cluster_nodes, read_events, rebuild_cluster

    scenario = RECORDED / "hold"
    log = scenario / "test.dag.nodes.log"
    events = read_events(str(log))
    (cluster,) = [c for c, name in cluster_nodes(events).items() if name == "A"]
    history = rebuild_cluster(events, cluster)
    call = recorded_post(scenario)
    dag = one_node_dag(tmp_path, log, store=tmp_path / "agent.sqlite", policy="model:3")
    assert run_script(dag, "A", "PRE", {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": call["$DAGID"]}).returncode == 0
    assert run_script(dag, "A", "POST", call).returncode == 0
    post = [line for line in hooks_log(dag).splitlines() if " POST " in line][-1]
    assert "evictions=0" in post, post
    assert history.evictions == 0 and not [inv for inv in history.invocations if inv.ended_by == "evicted"]


# -- item 11: the reward follows the node's verdict -------------------------

@pytest.mark.parametrize(
    ("scenario", "user_post", "node_succeeds"),
    [
        # proc 0 exited 0 (surplus replicas removed); the user's POST fails the node
        ("replicas-first-wins", "/bin/false", False),
        # every replica failed or was removed; the user's POST accepts the node
        ("replica-fails-others-continue/no-tolerance", "/bin/true", True),
    ],
)
def test_item11_reward_follows_the_nodes_verdict(tmp_path: Path, scenario: str, user_post: str,
                                                  node_succeeds: bool) -> None:
    directory = need(HTCONDOR_RECORDED / scenario)
    call = recorded_post(directory)
    store = tmp_path / "agent.sqlite"
    dag = one_node_dag(tmp_path, directory / "test.dag.nodes.log", store=store,
                       extra=f"SCRIPT POST A {user_post} $RETURN\n")
    assert run_script(dag, "A", "PRE", {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": call["$DAGID"]}).returncode == 0
    post = run_script(dag, "A", "POST", call)
    assert (post.returncode == 0) is node_succeeds  # the user's POST decides the node, as without condor-rlrep
    (row,) = decisions(store)
    assert row["reward"] is not None
    if node_succeeds:
        assert row["reward"] != -5.0 and row["outcome"]["completed"], row
    else:
        assert row["reward"] == -5.0 and not row["outcome"]["success"], row


# -- item 12: a rescue is not late for ever; a forced choice is no exploration

def _chain(tmp_path: Path, store: Path) -> Path:
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (user / "w.dag").write_text('JOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\nVARS ALL_NODES rlrep_estimate="60"\n')
    out = tmp_path / "run" / "w.rlrep.dag"
    instrument(user / "w.dag", out, InstrumentOptions(policy="agent", store=str(store)))
    return out


def _age_run(dag: Path, hours: float) -> None:
    """As if the run had started ``hours`` ago (the node log's first DAGMan)."""
    run_file = Path(str(dag) + ".rlrep") / "run.json"
    record = json.loads(run_file.read_text())
    record["start"] -= hours * 3600
    run_file.write_text(json.dumps(record))


def _phi(line: str) -> float:
    return float(re.search(r"phi'=(\S+)", line).group(1))


def test_item12_a_rescue_after_downtime_is_not_late(tmp_path: Path) -> None:
    store = tmp_path / "agent.sqlite"
    dag = _chain(tmp_path, store)
    assert run_script(dag, "A", "PRE", {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": 100}).returncode == 0
    _age_run(dag, 10)
    rescue = Path(str(dag) + ".rescue001")  # DAGMan 100 failed; the user resubmits 10 h later
    rescue.write_text("DONE A\n")
    assert run_script(dag, "B", "PRE", {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": 200}).returncode == 0
    line = [line for line in hooks_log(dag).splitlines() if re.search(r"\bPRE B\b", line)][-1]
    assert _phi(line) > 0, line


def test_item12_a_forced_choice_is_logged_as_forced_and_not_learnt(tmp_path: Path) -> None:
    store = tmp_path / "agent.sqlite"
    # every decision explores: what a forced one is logged as shows
    made = rlrep("agent", "init", "--store", str(store), "--max-replicas", "3", "--epsilon-high", "1",
                 "--epsilon-low", "1", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    directory = need(HTCONDOR_RECORDED / "replicas-first-wins")
    call = recorded_post(directory)
    dag = one_node_dag(tmp_path, directory / "test.dag.nodes.log", store=store,
                       extra='JOB Z a.sub\nVARS Z rlrep_estimate="60"\nPARENT Z CHILD A\n')
    assert run_script(dag, "Z", "PRE", {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": call["$DAGID"]}).returncode == 0
    _age_run(dag, 10)  # the same DAGMan, ten hours on: A has no slack left, one replica is all it can have
    assert run_script(dag, "A", "PRE", {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": call["$DAGID"]}).returncode == 0
    line = [line for line in hooks_log(dag).splitlines() if re.search(r"\bPRE A\b", line)][-1]
    assert _phi(line) <= 0 and "a=1" in line, line
    assert "forced" in line and "explore" not in line and "greedy" not in line, line
    learnt = _rewards_seen(store)
    assert run_script(dag, "A", "POST", call).returncode == 0
    # no replica count could have met A's deadline: its outcome teaches the agent nothing
    assert _rewards_seen(store) == learnt


def _rewards_seen(store: Path) -> int:
    from condor_rlrep.store.sqlite import SqliteStore

    with SqliteStore(store) as opened:
        return opened.stats().rewards_seen


# -- item 14: status/report of a fixed:K run with a named, unused store ------

@pytest.mark.parametrize("command", ["status", "report"])
def test_item14_status_of_a_fixed_run_needs_no_store(tmp_path: Path, command: str) -> None:
    log = need(HTCONDOR_RECORDED / "replicas-first-wins" / "test.dag.nodes.log")
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="60"\n')
    made = rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", "fixed:2",
                 "--store", str(tmp_path / "never.sqlite"), cwd=tmp_path)
    assert made.returncode == 0 and "named, unused" in made.stdout, made.stdout + made.stderr
    (tmp_path / "run" / "w.rlrep.dag.nodes.log").write_bytes(log.read_bytes())  # the run started
    args = ["-o", str(tmp_path / "report.html")] if command == "report" else []
    done = rlrep(command, "run/w.rlrep.dag", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


# -- item 18: export ---------------------------------------------------------

def test_item18_export_counts_the_estimates_it_writes(tmp_path: Path) -> None:
    done = rlrep("export", str(REPO / "examples" / "figure1" / "figure1.dag"), "-o", str(tmp_path / "out"),
                 cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = len(re.findall(r"^VARS \S+ rlrep_estimate=", (tmp_path / "out" / "figure1.dag").read_text(), re.M))
    assert written == 8
    assert f"{written} with estimates" in done.stdout, done.stdout


def test_item18_exported_dag_instruments_without_warnings(tmp_path: Path) -> None:
    done = rlrep("export", str(REPO / "tests" / "data" / "diamond-3.6.dax"), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    made = rlrep("instrument", "diamond-3.6.dag", "-o", "run/x.dag", "--policy", "fixed:2", "--default-estimate", "10",
                 cwd=tmp_path / "out")
    assert made.returncode == 0, made.stderr
    # the one warning left is about where pytest puts the run (under /tmp), not about the example
    warnings = [line for line in made.stderr.splitlines()
                if "warning:" in line and "instrumented as root" not in line and "the run is under /tmp" not in line]
    assert warnings == []

