"""``status`` and ``report`` of an instrumented DAG run on a real pool.

One run serves every check (pool time is dear): a DAG whose node A's
surplus replicas are removed by the reaper, whose node B has a replica
vacated (an eviction) while it runs, whose node C fails in every replica
(the DAG fails, DAGMan writes a rescue DAG), and which is then fixed and
resubmitted (the rescue continues the run). ``status`` is also taken while
B runs. Every figure is compared with what the node log and the store say.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from _pool import Pool, write

pytestmark = pytest.mark.pool

JOB = """#!/bin/sh
# $1 node; the replica's number from its job ad (its $(ProcId) in the
# description is the plain job's 0, as every replica must see what it saw)
r=$(sed -n 's/^ProcId = //p' "$_CONDOR_JOB_AD")
echo "node $1 replica $r"
case "$1" in
  A) if [ "$r" = 0 ]; then sleep 2; else sleep 90; fi ;;
  B) sleep 12 ;;
  C) if [ -e fail ]; then echo "C: cannot open input.dat: No such file" >&2; exit 3; fi; sleep 1 ;;
esac
"""


class Scenario:
    def __init__(self, work: Path, dag: Path, store: Path) -> None:
        self.work, self.dag, self.store = work, dag, store
        self.clusters: dict[str, int | None] = {}
        self.dagids: list[int] = []
        self.mid: dict = {}
        self.failed_status: dict = {}
        self.failed_report: dict = {}
        self.final_report: dict = {}


def _rlrep(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "condor-rlrep"), *args], capture_output=True, text=True, timeout=120,
                          check=False)


def _node_cluster(dag: Path, node: str) -> int | None:
    from condor_rlrep.condor.eventlog import cluster_nodes, read_events

    log = Path(str(dag) + ".nodes.log")
    if not log.exists():
        return None
    found = [c for c, n in cluster_nodes(read_events(str(log))).items() if n == node]
    return max(found) if found else None


def _post_ended(dag: Path, node: str) -> bool:
    from condor_rlrep.condor.eventlog import POST_SCRIPT_TERMINATED, node_name_of, read_events

    log = Path(str(dag) + ".nodes.log")
    return log.exists() and any(int(e.type) == POST_SCRIPT_TERMINATED and node_name_of(e) == node
                                for e in read_events(str(log)))


def _queue(pool: Pool, cluster: int) -> dict[int, int]:
    out = pool.check(["condor_q", str(cluster), "-af", "ProcId", "JobStatus"], cwd=pool.work)
    return {int(p): int(s) for p, s in (line.split() for line in out.splitlines() if line.strip())}


@pytest.fixture(scope="module")
def scenario(pool: Pool) -> Scenario:
    from test_pool_live import trained_store

    work = pool.workdir("runreport")
    write(work / "job.sh", JOB, 0o755)
    write(work / "fail", "")
    write(work / "j.sub", "executable = job.sh\narguments = $(JOB) $(ProcId)\noutput = $(JOB).out\n"
          "error = $(JOB).err\nlog = j.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n")
    write(work / "w.dag", "JOB A j.sub\nJOB B j.sub\nJOB C j.sub\nPARENT A B CHILD C\n"
          'VARS A rlrep_estimate="20"\nVARS B rlrep_estimate="30"\nVARS C rlrep_estimate="10"\n')
    store = trained_store(pool, work / "state" / "agent.sqlite", prefer=3, max_replicas=3)
    pool.own(work)
    pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--store", str(store), "--phi", "1",
               "--max-replicas", "3", cwd=work)
    dag = work / "run" / "w.rlrep.dag"
    s = Scenario(work, dag, store)
    # run 1, first DAGMan: A's surplus replicas removed, B.1 vacated while it runs, C fails in every replica
    s.dagids.append(pool.submit_dag(dag))
    b = pool.wait_for(lambda: _node_cluster(dag, "B"), 90, "B's cluster")
    pool.wait_for(lambda: list(_queue(pool, b).values()) == [2, 2, 2], 90, "B's three replicas running")
    pool.wait_for(lambda: _post_ended(dag, "A"), 60, "A's POST")
    pool.check(["condor_vacate_job", f"{b}.1"], cwd=work)
    pool.wait_for(lambda: _queue(pool, b).get(1) != 2, 30, "B.1 vacated")
    mid = _rlrep("status", str(dag), "--json")
    assert mid.returncode == 0, mid.stderr
    s.mid = json.loads(mid.stdout)
    assert pool.wait_dag(dag, timeout=300) == 1
    s.clusters = {"A": _node_cluster(dag, "A"), "B": b, "C1": _node_cluster(dag, "C")}
    s.failed_status = _json(_rlrep("status", str(dag), "--json"))
    s.failed_report = _json(_rlrep("report", str(dag), "-o", str(work / "report-failed"), "--json"))
    # run 1 continued: the job fixed, the rescue DAG runs C again
    (work / "fail").unlink()
    s.dagids.append(pool.submit_dag(dag))
    assert pool.wait_dag(dag, timeout=300, after=1) == 0
    s.clusters["C2"] = _node_cluster(dag, "C")
    # run 2: the same DAG submitted afresh (-f: DAGMan's files of run 1 replaced; its .dagman.out kept aside
    # so that waiting for this DAGMan's exit is unambiguous)
    Path(str(dag) + ".rescue001").rename(work / "old.rescue001")
    Path(str(dag) + ".dagman.out").rename(work / "old.dagman.out")
    s.dagids.append(pool.submit_dag(dag, "-f"))
    assert pool.wait_dag(dag, timeout=300) == 0
    s.final_report = _json(_rlrep("report", str(dag), "-o", str(work / "report"), "--json"))
    return s


def _json(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _decisions(store: Path) -> dict[int, dict]:
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT id, action, reward, outcome FROM decisions").fetchall()
    return {r[0]: {"action": r[1], "reward": r[2], "outcome": json.loads(r[3]) if r[3] else None} for r in rows}


def test_status_while_dagman_runs(scenario: Scenario) -> None:
    mid = scenario.mid
    assert mid["dagman"] == "running" and mid["dagid"] == str(scenario.dagids[0])
    nodes = {n["node"]: n for n in mid["nodes"]}
    assert set(nodes) == {"A", "B", "C"}  # the reaper SERVICE node is the plugin's, not listed
    a, b, c = nodes["A"], nodes["B"], nodes["C"]
    assert a["state"] == "done" and a["decided"] == 3 and a["removed"] == 2 and a["winner"] == 0
    assert b["state"] in ("running", "idle") and b["decided"] == 3 and b["evictions"] == 1
    assert b["running"] + b["idle"] == 3 and b["winner"] is None
    assert c["state"] == "waiting" and c["decided"] is None
    assert b["phi_prime"] == pytest.approx(1.0)  # B is on the critical path: φ′ = φ
    assert mid["replicas"]["decided"] == 6 and mid["replicas"]["evictions"] == 1
    assert mid["slack_s"] is not None and mid["deadline"] == pytest.approx(mid["workflow_start"] + 2 * 40)


def test_after_all_replicas_failed_the_report_shows_the_failed_node_and_its_stderr(scenario: Scenario) -> None:
    st = {n["node"]: n for n in scenario.failed_status["nodes"]}
    assert scenario.failed_status["dagman"] == "exited 1"
    assert st["C"]["state"] == "failed" and st["C"]["failed_replicas"] == 3 and st["C"]["winner"] is None
    (run,) = scenario.failed_report["runs"]
    assert run["finished"] is False and run["makespan_s"] is None and run["met_deadline"] is None
    (failed,) = run["failed"]
    assert failed["node"] == "C" and failed["cluster"] == scenario.clusters["C1"] and failed["post_code"] == 3
    assert failed["stderr"] == str(scenario.work / "C.err")
    assert failed["stderr_tail"] == ["C: cannot open input.dat: No such file"]
    assert failed["outcome"] == "failed" and failed["reward"] == -5.0 and failed["reward_recorded"] == -5.0


def test_final_report_matches_the_store_and_the_node_log(scenario: Scenario) -> None:
    from condor_rlrep.condor.eventlog import read_events, rebuild_cluster

    runs = scenario.final_report["runs"]
    assert len(runs) == 2  # the first run (with its rescue) and the fresh submission
    first, second = runs
    assert first["run_id"] != second["run_id"]
    assert first["dagids"] == [str(d) for d in scenario.dagids[:2]] and second["dagids"] == [str(scenario.dagids[2])]
    assert [(n["node"], n["attempt"], n["cluster"]) for n in first["nodes"]] == [
        ("A", 1, scenario.clusters["A"]), ("B", 1, scenario.clusters["B"]), ("C", 1, scenario.clusters["C1"]),
        ("C", 2, scenario.clusters["C2"])]
    assert first["finished"] and first["met_deadline"] is not None
    decisions = _decisions(scenario.store)
    for run in runs:
        for node in run["nodes"]:
            recorded = decisions[node["decision_id"]]
            assert node["replicas"] == recorded["action"]
            assert node["reward"] == pytest.approx(recorded["reward"]) and node["reward_recorded"] == recorded["reward"]
            outcome = recorded["outcome"]
            assert node["good_energy_j"] == pytest.approx(outcome["good_energy_j"])
            assert node["bad_energy_j"] == pytest.approx(outcome["bad_energy_j"])
            assert node["winner"] == outcome["winner"]
    a, b = first["nodes"][0], first["nodes"][1]
    # A's two losers are removed; on a busy machine one may be removed before it ever ran,
    # and then it has no bar and is not counted as a removed invocation
    removed_bars = [x for x in first["bars"] if x["cluster"] == a["cluster"] and x["ended_by"] == "removed"]
    assert a["removed"] == len(removed_bars) <= 2, a
    assert a["winner"] == 0 and a["outcome"] == "success"
    assert b["evictions"] == 1 and b["outcome"] == "success"
    # the second run's node log is the one on disk: its bars are its clusters' invocations
    events = read_events(str(scenario.dag) + ".nodes.log")
    for node in second["nodes"]:
        history = rebuild_cluster(events, node["cluster"])
        bars = sorted((x["proc"], x["start"], x["end"], x["ended_by"]) for x in second["bars"]
                      if x["cluster"] == node["cluster"])
        assert bars == sorted((i.replica, i.start, i.end, i.ended_by) for i in history.invocations)
    (c1,) = first["failed"]  # C.err now holds the successful retry's stderr: not shown as the failure's
    assert c1["stderr_tail"] == [] and c1["stderr_note"] == "overwritten since by 2 later attempt(s) of C"  # its rescue, run 2
    expected_p = second["makespan_s"] / second["critical_path_s"] - 1
    assert second["p_w"] == pytest.approx(expected_p)
    out = scenario.work / "report"
    assert {"report.md", "report.html", "report.json"} <= {p.name for p in out.iterdir()}
    assert len([p for p in out.iterdir() if p.name.endswith("-gantt.svg")]) == 2
    only = _json(_rlrep("report", str(scenario.dag), "-o", str(scenario.work / "report-one"), "--json",
                        "--run", second["run_id"]))
    assert [r["run_id"] for r in only["runs"]] == [second["run_id"]]
