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
import time
from pathlib import Path

import pytest

from _pool import Pool, write

pytestmark = pytest.mark.pool

JOB = """#!/bin/sh
# $1 node, $2 proc
echo "node $1 replica $2"
case "$1" in
  A) if [ "$2" = 0 ]; then sleep 2; else sleep 90; fi ;;
  B) sleep 12 ;;
  C) if [ -e fail ]; then echo "C: cannot open input.dat: No such file" >&2; exit 3; fi; sleep 1 ;;
esac
"""


class Scenario:
    def __init__(self, work: Path, dag: Path, store: Path, mid_status: dict, clusters: dict[str, int], first: int,
                 second: int):
        self.work, self.dag, self.store = work, dag, store
        self.mid_status = mid_status
        self.clusters = clusters
        self.first_dagid, self.second_dagid = first, second


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
    first = pool.submit_dag(dag)
    b = pool.wait_for(lambda: _node_cluster(dag, "B"), 90, "B's cluster")
    pool.wait_for(lambda: list(_queue(pool, b).values()) == [2, 2, 2], 90, "B's three replicas running")
    pool.check(["condor_vacate_job", f"{b}.1"], cwd=work)
    pool.wait_for(lambda: _queue(pool, b).get(1) != 2, 30, "B.1 vacated")
    time.sleep(1.0)
    import shutil
    shutil.copytree(dag.parent, work / "mid")
    mid = _rlrep("status", str(dag), "--json")
    assert pool.wait_dag(dag, timeout=300) == 1
    clusters = {"A": _node_cluster(dag, "A"), "B": b, "C1": _node_cluster(dag, "C")}
    (work / "fail").unlink()
    second = pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=300, after=1) == 0
    clusters["C2"] = _node_cluster(dag, "C")
    return Scenario(work, dag, store, json.loads(mid.stdout) if mid.returncode == 0 else {}, clusters, first, second)


def test_scenario_ran(scenario: Scenario) -> None:
    print(scenario.work, scenario.clusters, scenario.mid_status)
