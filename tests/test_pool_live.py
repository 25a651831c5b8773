"""The plugin under real condor_dagman (HTCondor 25.14, ``../shared/htcondor``).

Every test here submits an instrumented DAG to a personal pool and checks
what DAGMan, the schedd and the hooks did: the store, the node log, the
``.dagman.out``, the files the jobs wrote. The hooks are the installed
console scripts in a venv the pool user owns (see ``_pool.py``).
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from _pool import REPO, Pool, dagman_out, forced_nodes, hooks_log, write
from condor_rlrep.condor.eventlog import ABORTED, EVICTED, TERMINATED, cluster_nodes, read_events, rebuild_cluster

pytestmark = pytest.mark.pool

FIGURE1 = REPO / "examples" / "figure1"
BAD_DAGMAN_LINES = re.compile(r"BAD EVENT|unexpected job event|Warning for node|Warning checking|ERROR:")


def decisions(store: Path) -> list[dict]:
    with sqlite3.connect(store) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute("SELECT id, action, phi_prime, estimate, context, reward, outcome FROM decisions"
                            " ORDER BY id").fetchall()
    out = []
    for row in rows:
        item = dict(row)
        item["context"] = json.loads(item["context"]) if item["context"] else {}
        item["outcome"] = json.loads(item["outcome"]) if item["outcome"] else None
        out.append(item)
    return out


def node_clusters(dag: Path) -> dict[str, list[int]]:
    if not Path(str(dag) + ".nodes.log").exists():
        return {}
    events = read_events(str(dag) + ".nodes.log")
    clusters: dict[str, list[int]] = {}
    for cluster, name in cluster_nodes(events).items():
        clusters.setdefault(name, []).append(cluster)
    return clusters


def figure1(pool: Pool, name: str, seconds: int) -> Path:
    """examples/figure1 with tasks of ``seconds`` instead of 32 minutes."""
    work = pool.workdir(name)
    shutil.copy(FIGURE1 / "task.sub", work / "task.sub")
    text = (FIGURE1 / "figure1.dag").read_text().replace('"1920"', f'"{seconds}"')
    write(work / "figure1.dag", text)
    pool.own(work)
    return work


def clean_dagman_out(dag: Path) -> list[str]:
    """Lines of .dagman.out that a clean run must not have (the loopback
    warning of a personal pool is not DAGMan's)."""
    return [line for line in dagman_out(dag).splitlines() if BAD_DAGMAN_LINES.search(line)]


def test_figure1_runs_to_the_end_with_every_node_decided_and_recorded_once(pool: Pool) -> None:
    work = figure1(pool, "figure1", 4)
    store = work / "state" / "agent.sqlite"
    # the store comes from the environment of `instrument`, which DAGMan never passes to the hooks
    out = pool.rlrep("instrument", "figure1.dag", "-o", "run/figure1.rlrep.dag", "--phi", "1.0", "--policy", "agent",
                     cwd=work, env={"CONDOR_RLREP_STORE": str(store)})
    assert f"agent store: {store} created now" in out
    dag = work / "run" / "figure1.rlrep.dag"
    settings = json.loads((Path(str(dag) + ".rlrep") / "hooks.json").read_text())
    assert settings["store"] == str(store) and settings["max_replicas"] == 3
    pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=300) == 0

    rows = decisions(store)
    nodes = [row["context"]["node"] for row in rows]
    # every task decided once (S and T are NOOP), but those a loaded pool made late: forced, not in the store
    assert sorted(nodes + forced_nodes(dag)) == list("ABCDEFGH")
    assert all(row["reward"] is not None for row in rows)  # and recorded
    assert all(1 <= row["action"] <= 3 for row in rows)
    events = read_events(str(dag) + ".nodes.log")
    owners = cluster_nodes(events)
    for row in rows:
        (cluster,) = [c for c, n in owners.items() if n == row["context"]["node"]]
        history = rebuild_cluster(events, cluster)
        outcome = row["outcome"]
        assert len(history.procs) == row["action"]
        assert outcome["completed"] and outcome["winner"] == history.winner
        won = [inv for inv in history.invocations if inv.replica == history.winner and inv.ended_by == "success"][0]
        # s_t is the cluster's submit event; energy is run time x the default 75 W
        assert outcome["duration"] == pytest.approx(won.end - history.submit_time)
        assert outcome["good_energy_j"] == pytest.approx(won.seconds * 75.0)
        bad = sum(inv.seconds for inv in history.invocations if inv is not won) * 75.0
        assert outcome["bad_energy_j"] == pytest.approx(bad)
    log = "\n".join(hooks_log(dag))
    assert "FAIL-OPEN" not in log
    assert "REAPER - stopped (all 8 replicable node(s) finished)" in log
    # the SERVICE node ended by itself: DAGMan did not have to remove it
    assert clean_dagman_out(dag) == []
    assert "Node RLREP_REAPER job proc (" in dagman_out(dag)
    # every node's output under the user's own name, no replica leftovers
    names = sorted(p.name for p in work.iterdir() if p.suffix in (".out", ".err") or ".rlrep-" in p.name)
    assert not [n for n in names if ".rlrep-" in n]
    assert len([n for n in names if n.endswith(".out")]) == 8


# -- surplus replicas, per-replica files, evictions and removals ------------

REPLICA_JOB = """#!/bin/sh
# The replica learns its number from its job ad: every replica's $(ProcId) in
# the description is the plain job's 0 (a replica must see what the plain job
# saw). Proc 0 is quick, the others are slow; $3: the file each replica appends
# to (B runs in place: not A's returned file)
r=$(sed -n 's/^ProcId = //p' "$_CONDOR_JOB_AD")
echo "replica $r starts" >> "${3:-result.txt}"
echo "replica $r says hello"
echo "replica $r complains" >&2
if [ "$r" = 0 ]; then sleep "${2:-2}"; else sleep 90; fi
echo "replica $r done"
"""


def replica_dag(pool: Pool, name: str, *, fast: int = 2) -> Path:
    work = pool.workdir(name)
    write(work / "job.sh", REPLICA_JOB, 0o755)
    # A returns a declared file through file transfer; B runs in place and writes stdout/stderr
    write(work / "a.sub", f"executable = job.sh\narguments = $(ProcId) {fast}\noutput = A.out\nerror = A.err\n"
          "log = a.log\nshould_transfer_files = YES\nwhen_to_transfer_output = ON_EXIT\n"
          "transfer_output_files = result.txt\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n")
    write(work / "b.sub", f"executable = job.sh\narguments = $(ProcId) {fast} b-result.txt\noutput = $(JOB).$(Cluster).out\n"
          "error = $(JOB).$(Cluster).err\nlog = b.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n")
    write(work / "w.dag", 'JOB A a.sub\nJOB B b.sub\nVARS ALL_NODES rlrep_estimate="30"\n')
    pool.own(work)
    return work


def dagman_time(line: str) -> float:
    stamp = re.match(r"(\d\d/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?)", line).group(1)
    fmt = "%m/%d/%y %H:%M:%S.%f" if "." in stamp else "%m/%d/%y %H:%M:%S"
    from datetime import datetime

    return datetime.strptime(stamp, fmt).timestamp()


def test_surplus_replicas_are_removed_when_one_exits_0_and_files_are_the_winners(pool: Pool) -> None:
    work = replica_dag(pool, "surplus")
    out = pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", "fixed:3", cwd=work)
    assert "agent store: none" in out
    dag = work / "run" / "w.rlrep.dag"
    pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=240) == 0
    events = read_events(str(dag) + ".nodes.log")
    text = dagman_out(dag)
    removed_running: dict[str, int] = {}
    for node, cluster in ((n, c) for c, n in cluster_nodes(events).items() if n in "AB"):
        history = rebuild_cluster(events, cluster)
        assert history.procs == {0, 1, 2} and history.winner == 0
        # a loser either ran and was removed, or (on a busy machine, when the
        # quick replica ends before the pool has started it) was removed idle
        ends = {inv.replica: inv.ended_by for inv in history.invocations}
        assert ends[0] == "success" and set(ends) <= {0, 1, 2}, ends
        assert all(how == "removed" for replica, how in ends.items() if replica != 0), ends
        removed_running[node] = sum(1 for replica in ends if replica != 0)
        assert history.evictions == 0
        # removed as condor_rm removes (code 1023), never as an eviction, and only once each;
        # a loser removed while its shadow was still starting logs the eviction with no
        # execute before it (no run, so no invocation)
        evicts = [e for e in events if e.cluster == cluster and int(e.type) == EVICTED]
        evicted = [e.proc for e in evicts]
        assert len(evicted) == len(set(evicted)) and set(evicted) <= {1, 2}, evicted
        assert {r for r in ends if r != 0} <= set(evicted), (ends, evicted)
        assert {e.get("ReasonCode") for e in evicts} <= {1023}
        assert sorted(e.proc for e in events if e.cluster == cluster and int(e.type) == ABORTED) == [1, 2]
        assert len([e for e in events if e.cluster == cluster and int(e.type) in (TERMINATED, ABORTED)]) == 3
        # the node ends within seconds of its winner, long before a loser could have
        # finished: the reaper's one-second settle (condor/reaper.py SETTLE), the
        # schedd's removal, DAGMan's next log scan; event times are whole seconds
        won = [e for e in events if e.cluster == cluster and int(e.type) == TERMINATED][0]
        left = [line for line in text.splitlines() if f"Node {node} job(s) have exited the queue" in line]
        assert left and dagman_time(left[0]) - won.timestamp < 5.0, (left, won.timestamp)
    log = "\n".join(hooks_log(dag))
    assert re.search(r"REAPER - node A: replica \d+\.0 won; asked to remove \[1, 2\]: 2 removed", log)
    for node, count in removed_running.items():
        assert re.search(rf"POST {node} .*evictions=0 removed={count} ", log), (node, count)
    assert "2 reaped (4 proc(s) removed)" in log
    # each replica wrote its own files; the winner's carry the user's names, the rest are gone
    assert (work / "A.out").read_text() == "replica 0 says hello\nreplica 0 done\n"
    assert (work / "A.err").read_text() == "replica 0 complains\n"
    assert (work / "result.txt").read_text() == "replica 0 starts\n"  # returned by file transfer
    (b_out,) = work.glob("B.*.out")
    assert b_out.read_text() == "replica 0 says hello\nreplica 0 done\n"
    assert not list(work.glob("*.rlrep-*"))
    assert clean_dagman_out(dag) == []


def condor_q(pool: Pool, cluster: int) -> dict[int, int]:
    out = pool.check(["condor_q", str(cluster), "-af", "ProcId", "JobStatus"], cwd=pool.work)
    return {int(p): int(s) for p, s in (line.split() for line in out.splitlines() if line.strip())}


def test_vacate_and_rm_of_replicas_are_counted_and_the_node_still_succeeds(pool: Pool) -> None:
    work = replica_dag(pool, "vacate", fast=25)
    write(work / "w.dag", 'JOB A b.sub\nVARS A rlrep_estimate="30"\n')
    pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", "fixed:3", cwd=work)
    dag = work / "run" / "w.rlrep.dag"
    pool.submit_dag(dag)
    cluster = pool.wait_for(lambda: next(iter(node_clusters(dag).get("A", [])), None), 60, "A's cluster")
    pool.wait_for(lambda: list(condor_q(pool, cluster).values()) == [2, 2, 2], 60, "three running replicas")
    pool.check(["condor_vacate_job", f"{cluster}.1"], cwd=work)
    pool.check(["condor_rm", f"{cluster}.2"], cwd=work)
    assert pool.wait_dag(dag, timeout=240) == 0
    history = rebuild_cluster(read_events(str(dag) + ".nodes.log"), cluster)
    assert history.evictions == 1 and history.winner == 0
    ends = sorted((inv.replica, inv.ended_by) for inv in history.invocations)
    assert ends == [(0, "success"), (1, "evicted"), (1, "removed"), (2, "removed")], ends
    post = [line for line in hooks_log(dag) if " POST A " in line]
    assert len(post) == 1 and "exit 0" in post[0] and "evictions=1 removed=2" in post[0]


# -- a trained agent, failures, rescue --------------------------------------

def trained_store(pool: Pool, path: Path, prefer: int, max_replicas: int) -> Path:
    """A store whose agent prefers ``prefer`` replicas in every state, as if trained."""
    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.agent.config import AgentConfig
    from condor_rlrep.store.sqlite import SqliteStore

    agent = Agent(AgentConfig(max_replicas=max_replicas, schedule="fixed", epsilon_low=0.0), rng=0)
    for state in range(agent.n_states):
        agent.learn(state, prefer, 1.0)
    path.parent.mkdir(parents=True, exist_ok=True)
    SqliteStore.save_agent(str(path), agent)
    pool.own(path.parent)
    return path


FAILING_JOB = """#!/bin/sh
echo "replica $1"
if [ -e fail ]; then exit 3; fi
sleep 1
"""


def test_all_replicas_fail_then_the_rescue_continues_the_run(pool: Pool) -> None:
    work = pool.workdir("rescue")
    write(work / "job.sh", FAILING_JOB, 0o755)
    write(work / "fail", "")
    write(work / "j.sub", "executable = job.sh\narguments = $(ProcId)\noutput = $(JOB).out\nerror = $(JOB).err\n"
          "log = j.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n")
    write(work / "w.dag", 'JOB A j.sub\nJOB B j.sub\nPARENT A CHILD B\nVARS ALL_NODES rlrep_estimate="20"\n')
    store = trained_store(pool, work / "state" / "agent.sqlite", prefer=2, max_replicas=2)
    pool.own(work)
    out = pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--store", str(store), "--phi", "9",
                     "--max-replicas", "2", cwd=work)
    assert f"agent store: {store} existing" in out
    dag = work / "run" / "w.rlrep.dag"
    first = pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=240) == 1
    assert Path(str(dag) + ".rescue001").exists()
    rows = decisions(store)
    assert [(r["context"]["node"], r["action"], r["reward"]) for r in rows] == [("A", 2, -5.0)]
    assert rows[0]["outcome"]["completed"] is False
    post = [line for line in hooks_log(dag) if " POST A " in line]
    assert "exit 3 (no replica succeeded; first failure 3)" in post[0]
    assert "A failed with status 3" in dagman_out(dag) or "failed with status 3" in dagman_out(dag)
    run = json.loads((Path(str(dag) + ".rlrep") / "run.json").read_text())
    assert run["dagids"] == [str(first)]

    (work / "fail").unlink()  # fix the job, resubmit: DAGMan runs the rescue DAG
    second = pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=240, after=1) == 0
    again = json.loads((Path(str(dag) + ".rlrep") / "run.json").read_text())
    assert again["dagids"] == [str(first), str(second)]
    # the same run, resumed on schedule at the rescue's first PRE (issue 23 item 12): the downtime is not scored
    assert again["first_start"] == run["start"] and again["start"] > run["start"]
    assert [r["dagid"] for r in again["resumed"]] == [str(second)]
    rows = decisions(store)
    assert [r["context"]["node"] for r in rows] == ["A", "A", "B"]  # once per execution
    assert all(r["reward"] is not None for r in rows)
    assert rows[1]["outcome"]["completed"] and rows[2]["outcome"]["completed"]


def test_condor_rm_of_the_dag_leaves_no_decision_pending_and_the_rescue_continues(pool: Pool) -> None:
    work = pool.workdir("dagrm")
    write(work / "job.sh", '#!/bin/sh\nsleep "$(cat seconds)"\n', 0o755)
    write(work / "seconds", "60\n")
    write(work / "j.sub", "executable = job.sh\noutput = $(JOB).out\nerror = $(JOB).err\nlog = j.log\n"
          "request_memory = 32MB\nrequest_disk = 1MB\nqueue\n")
    write(work / "w.dag", 'JOB A j.sub\nJOB B j.sub\nPARENT A CHILD B\nVARS ALL_NODES rlrep_estimate="60"\n')
    store = trained_store(pool, work / "state" / "agent.sqlite", prefer=2, max_replicas=2)
    pool.own(work)
    pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--store", str(store), "--phi", "9", cwd=work)
    dag = work / "run" / "w.rlrep.dag"
    dagman = pool.submit_dag(dag)
    cluster = pool.wait_for(lambda: next(iter(node_clusters(dag).get("A", [])), None), 60, "A's cluster")
    pool.wait_for(lambda: list(condor_q(pool, cluster).values()) == [2, 2], 60, "A's replicas running")
    time.sleep(2)
    pool.check(["condor_rm", str(dagman)], cwd=work)
    pool.wait_dag(dag, timeout=120)
    # DAGMan ran no POST; the reaper, removed with the DAG, closed the decision
    (row,) = decisions(store)
    assert row["reward"] == row["estimate"] and row["outcome"]["closed"].startswith("removed with the DAG")
    write(work / "seconds", "1\n")
    pool.own(work)
    pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=240, after=1) == 0
    rows = decisions(store)
    assert [r["context"]["node"] for r in rows] == ["A", "A", "B"]
    assert all(r["reward"] is not None for r in rows)  # nothing pending for ever
    removed = rows[0]["outcome"]
    # closed by the reaper as DAGMan removed it: what ran is charged, the estimate is left alone
    assert removed["completed"] is False and removed["bad_energy_j"] > 0
    assert removed["closed"].startswith("removed with the DAG") and removed["reward"] == rows[0]["reward"]
    assert any("closed as removed" in line and " REAPER A " in line for line in hooks_log(dag))


# -- fail-open on the pool ---------------------------------------------------

def test_store_locked_then_unreadable_mid_run_nodes_run_unmodified_and_the_dag_succeeds(pool: Pool) -> None:
    work = pool.workdir("failopen")
    write(work / "j.sub", "executable = /bin/sleep\narguments = 3\noutput = $(JOB).out\nlog = j.log\n"
          "request_memory = 32MB\nrequest_disk = 1MB\nqueue\n")
    write(work / "w.dag", 'JOB A j.sub\nJOB B j.sub\nJOB C j.sub\nPARENT A CHILD B\nPARENT B CHILD C\n'
          'VARS ALL_NODES rlrep_estimate="3"\n')
    write(work / "rlrep.toml", "store_timeout = 1.0\n")
    store = work / "state" / "agent.sqlite"
    pool.own(work)
    pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--store", str(store), "--config", "rlrep.toml",
               "--phi", "9", "--policy", "agent", cwd=work)
    dag = work / "run" / "w.rlrep.dag"
    pool.submit_dag(dag)
    pool.wait_for(lambda: any(" PRE A " in line for line in hooks_log(dag)), 60, "A's PRE")
    lock = sqlite3.connect(store, timeout=30)
    lock.execute("BEGIN EXCLUSIVE")  # another process holds the store: A's POST and B's PRE wait 1 s, then fail open
    try:
        pool.wait_for(lambda: any(" PRE B " in line for line in hooks_log(dag)), 90, "B's PRE")
    finally:
        lock.rollback()
        lock.close()
    store.chmod(0o000)  # and now unreadable for the pool user
    try:
        pool.wait_for(lambda: any(" PRE C " in line for line in hooks_log(dag)), 90, "C's PRE")
    finally:
        store.chmod(0o600)
    assert pool.wait_dag(dag, timeout=240) == 0
    log = hooks_log(dag)
    post_a = [line for line in log if " POST A " in line][0]
    assert "exit 0" in post_a and "spooled" in post_a
    pre_b = [line for line in log if " PRE B " in line][0]
    assert "FAIL-OPEN" in pre_b and "locked" in pre_b and "running the user's job unchanged" in pre_b
    pre_c = [line for line in log if " PRE C " in line][0]
    assert "FAIL-OPEN" in pre_c and "running the user's job unchanged" in pre_c
    nodes = Path(str(dag) + ".rlrep") / "nodes"
    assert (nodes / "C.sub").read_text() == (work / "j.sub").read_text()  # the unmodified job ran
    assert "spooled outcome(s)/model update(s) recorded" in "\n".join(log) or "flushed" in "\n".join(log)
    assert [r["reward"] is not None for r in decisions(store)] == [True]  # A's outcome was not lost


def test_instrument_refuses_a_store_the_pool_user_cannot_write(pool: Pool) -> None:
    work = figure1(pool, "refuse", 4)
    store = work / "theirs" / "agent.sqlite"
    from condor_rlrep.store.sqlite import SqliteStore

    store.parent.mkdir()
    SqliteStore.create(store).close()
    store.parent.chmod(0o755)
    store.chmod(0o644)  # readable, not writable: SQLite could not even write its -wal
    if pool.user == "condorpool":  # as root: the directory stays root's, 0755
        done = pool.run([str(pool.venv / "bin" / "condor-rlrep"), "instrument", "figure1.dag", "-o", "run/f.dag",
                         "--store", str(store)], cwd=work)
        assert done.returncode != 0
        assert "agent store unusable" in done.stderr and str(store) in done.stderr
        assert not (work / "run" / "f.dag").exists()
    else:
        pytest.skip("the pool runs as this user, who owns the store")


# -- Montage --------------------------------------------------------------------

def test_exported_montage_instrumented_runs_to_the_end(pool: Pool) -> None:
    dax = REPO.parent / "shared" / "data" / "dax" / "Montage_25.xml"
    if not dax.exists():
        pytest.skip(f"{dax} not available")
    work = pool.workdir("montage")
    pool.rlrep("export", str(dax), "-o", str(work / "m"), "--time-scale", "0.25", cwd=work)
    pool.rlrep("instrument", "m/Montage_25.dag", "-o", "run/m.rlrep.dag", "--phi", "2", "--policy", "agent",
               "--store", str(work / "agent.sqlite"), cwd=work)
    dag = work / "run" / "m.rlrep.dag"
    pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=420) == 0
    rows = decisions(work / "agent.sqlite")
    # every task decided once, but those a loaded pool made late: one forced replica, not in the store
    forced = forced_nodes(dag)
    assert len(rows) + len(forced) == 25 and len({r["context"]["node"] for r in rows} | set(forced)) == 25
    assert all(r["reward"] is not None for r in rows)
    assert "FAIL-OPEN" not in "\n".join(hooks_log(dag))
    assert clean_dagman_out(dag) == []
    assert not list((work / "m").rglob("*.rlrep-*"))


# -- a sweep fanned out over the pool -----------------------------------------------

SWEEP = """
[experiment]
name = "pool-tiny"
figures = ["fig2a", "fig3a"]

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
policy = ["single", "rl:2"]
"""


def test_sweep_on_the_pool_equals_the_local_sweep_and_submits_from_anywhere(pool: Pool) -> None:
    work = pool.workdir("sweep")
    write(work / "tiny.toml", SWEEP)
    pool.own(work)
    out = pool.rlrep("sweep", "tiny.toml", "--backend", "condor", "--out", str(work / "pool"), cwd=work)
    command = re.search(r"submit it with: (.+)", out).group(1).split()
    assert command[0] == "condor_submit_dag"
    elsewhere = pool.workdir("elsewhere")  # the printed command, run from another directory
    done = pool.run(command, cwd=elsewhere)
    assert done.returncode == 0, done.stdout + done.stderr
    dag = Path(command[-1])
    assert pool.wait_dag(dag, timeout=480) == 0
    pool.rlrep("sweep", "tiny.toml", "--out", str(work / "local"), cwd=work)
    results = {}
    for side in ("pool", "local"):
        results[side] = {p.name: json.loads(p.read_text()) for p in sorted((work / side / "runs").glob("*.json"))}
    assert len(results["pool"]) == 4 and results["pool"] == results["local"]
    for name in ("report.md", "report.html"):
        assert (work / "pool" / name).read_text() == (work / "local" / name).read_text()
