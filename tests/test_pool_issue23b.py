"""Issue 23 items 6, 15–17 on the personal pool: the reaper, and what
``status``/``report`` say about runs DAGMan really ran (the plain DAG beside
its instrumented copy where the two must end alike)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _pool import Pool, dagman_out, hooks_log
from test_pool_issue23 import run_both, twins
from test_pool_live import clean_dagman_out

pytestmark = pytest.mark.pool

CLI = str(Path(sys.executable).parent / "condor-rlrep")


def _rlrep_json(*args: str) -> dict:
    done = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _rlrep(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, check=False)


ACCEPTED = {
    "a.sub": "executable = /bin/false\nlog = a.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n",
    "f.sub": "executable = /bin/true\nlog = f.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n",
    # B (a NOOP) stands for A's children; only A runs replicas
    "w.dag": ('JOB A a.sub\nJOB B a.sub NOOP\nPARENT A CHILD B\nSCRIPT POST A /bin/true\nFINAL F f.sub\n'
              'VARS ALL_NODES rlrep_estimate="30"\n'),
}


def test_item6_reaper_ends_when_the_users_post_accepts_failed_replicas(pool: Pool) -> None:
    """Every replica of A exits 1, the user's POST accepts A: both DAGs exit
    0, and the reaper ends by itself, so .dagman.out stays clean."""
    plain, inst = twins(pool, "issue23-accepted", ACCEPTED)
    plain_exit, inst_exit, copy = run_both(pool, plain, inst, "--policy", "fixed:2")
    assert (plain_exit, inst_exit) == (0, 0)
    log = "\n".join(hooks_log(copy))
    assert "stopped (all 1 replicable node(s) finished)" in log, log
    assert clean_dagman_out(copy) == [], dagman_out(copy)
    assert "BAD EVENT" not in dagman_out(copy)
    status = _rlrep_json("status", str(copy))
    nodes = {n["node"]: n for n in status["nodes"]}
    assert nodes["A"]["state"] == "done", nodes["A"]
    assert nodes["F"]["state"] == "done", nodes["F"]  # the FINAL node (no POST) is done when its job is (item 15)
    report = _rlrep_json("report", str(copy), "-o", str(inst / "report"))
    (run,) = report["runs"] if "runs" in report else [report]
    assert run["finished"], run
    # A's POST exited 0 (the user's accepted it): A is no failed node (issue 23 item 16)
    assert [n["node"] for n in run["failed"]] == [], run["failed"]


HELD = {
    # the input file is missing: the shadow puts every replica on hold before it runs
    "a.sub": ("executable = /bin/true\nshould_transfer_files = YES\ntransfer_input_files = missing.txt\n"
              "log = a.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n"),
    "w.dag": 'JOB A a.sub\nVARS A rlrep_estimate="30"\n',
}


def test_item17_held_replicas_are_shown_held_and_the_way_out_named(pool: Pool) -> None:
    """Items 16 and 17: every replica of A is held (DAGMan waits for ever, as
    it would plain); status shows them in the HELD column and names
    condor_q -hold and condor_release; after the DAG is removed, status and
    report count the same removals (held replicas that never ran included)."""
    base = pool.workdir("issue23-held")
    for file, text in HELD.items():
        (base / file).write_text(text)
    pool.own(base)
    pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", "fixed:2", cwd=base)
    copy = base / "run" / "w.rlrep.dag"
    dagman = pool.submit_dag(copy)

    def held() -> dict | None:
        done = _rlrep("status", str(copy), "--json")
        if done.returncode != 0:
            return None
        status = json.loads(done.stdout)
        nodes = {n["node"]: n for n in status["nodes"]}
        return status if nodes.get("A", {}).get("state") == "held" and nodes["A"]["held"] == 2 else None

    status = pool.wait_for(held, timeout=180, what="both replicas of A held", step=1.0)
    (node,) = [n for n in status["nodes"] if n["node"] == "A"]
    assert "condor_release" in node["note"] and "condor_q -hold" in node["note"], node
    assert any("wait for ever" in w and "condor_release" in w for w in status["warnings"]), status["warnings"]
    text = _rlrep("status", str(copy)).stdout
    header = next(line for line in text.splitlines() if line.startswith("NODE"))
    row = next(line for line in text.splitlines() if line.startswith("A "))
    assert header.split()[4:8] == ["RUN", "IDLE", "HELD", "REMOVED"], header
    assert row.split()[4:7] == ["0", "0", "2"], row
    pool.check(["condor_rm", str(dagman)], cwd=base)
    assert pool.wait_dag(copy, timeout=180) != 0
    time.sleep(1)
    after = {n["node"]: n for n in _rlrep_json("status", str(copy))["nodes"]}
    report = _rlrep_json("report", str(copy), "-o", str(base / "report"))
    (run,) = report["runs"] if "runs" in report else [report]
    reported = {n["node"]: n for n in run["nodes"]}
    assert after["A"]["removed"] == reported["A"]["removed"] == 2, (after["A"], reported["A"])
    assert run["removed"] == 2


RESCUE = {
    # A fails until the file OK exists (instrument wrote A's replica description: the user's cannot be edited)
    "a.sub": ("executable = /bin/sh\narguments = \"-c 'test -e {ok}'\"\nlog = a.log\nrequest_memory = 32MB\n"
              "request_disk = 1MB\nqueue\n"),
    "w.dag": 'JOB N a.sub NOOP\nJOB A a.sub\nPARENT N CHILD A\nVARS ALL_NODES rlrep_estimate="20"\n',
}


def test_item15_after_a_rescue_a_noop_node_is_done_and_the_run_finished(pool: Pool) -> None:
    """The first DAGMan fails at A (exit 1) after the NOOP N; the rescue,
    with A fixed, exits 0: N (done by the first DAGMan, whose node log the
    rescue replaced) is done, and report finds the run finished. (The FINAL
    node: test_item6's DAG.)"""
    base = pool.workdir("issue23-rescue")
    for file, text in RESCUE.items():
        (base / file).write_text(text.replace("{ok}", str(base / "OK")))
    pool.own(base)
    pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", "fixed:2", cwd=base)
    copy = base / "run" / "w.rlrep.dag"
    pool.submit_dag(copy)
    assert pool.wait_dag(copy, timeout=180) == 1
    assert list((base / "run").glob("w.rlrep.dag.rescue*"))
    (base / "OK").write_text("")
    pool.own(base)
    pool.submit_dag(copy)
    assert pool.wait_dag(copy, timeout=180, after=1) == 0
    status = _rlrep_json("status", str(copy))
    nodes = {n["node"]: n["state"] for n in status["nodes"]}
    assert nodes == {"N": "done", "A": "done"}, status["nodes"]
    assert "exited 0 at" in _rlrep("status", str(copy)).stdout.splitlines()[1]
    report = _rlrep_json("report", str(copy), "-o", str(base / "report"))
    runs = report["runs"] if "runs" in report else [report]
    assert runs[-1]["finished"], runs[-1]
