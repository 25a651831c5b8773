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
    "b.sub": "executable = /bin/touch\narguments = B.ran\nlog = b.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n",
    "w.dag": ('JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nSCRIPT POST A /bin/true\n'
              'VARS ALL_NODES rlrep_estimate="30"\n'),
}


def test_item6_reaper_ends_when_the_users_post_accepts_failed_replicas(pool: Pool) -> None:
    """Every replica of A exits 1, the user's POST accepts A: both DAGs exit
    0, and the reaper ends by itself, so .dagman.out stays clean."""
    plain, inst = twins(pool, "issue23-accepted", ACCEPTED)
    plain_exit, inst_exit, copy = run_both(pool, plain, inst, "--policy", "fixed:2")
    assert (plain_exit, inst_exit) == (0, 0)
    assert (plain / "B.ran").exists() and (inst / "B.ran").exists()
    log = "\n".join(hooks_log(copy))
    assert "stopped (all 2 replicable node(s) finished)" in log, log
    assert clean_dagman_out(copy) == [], dagman_out(copy)
    assert "BAD EVENT" not in dagman_out(copy)
    status = _rlrep_json("status", str(copy))
    nodes = {n["node"]: n for n in status["nodes"]}
    assert nodes["A"]["state"] == "done", nodes["A"]
    report = _rlrep("report", str(copy), "-o", str(inst / "report"))
    assert report.returncode == 0 and "not finished" not in report.stdout, report.stdout + report.stderr
    assert "Failed nodes" not in (inst / "report" / "report.md").read_text() or \
        "| A |" not in (inst / "report" / "report.md").read_text().split("Failed nodes", 1)[1]
