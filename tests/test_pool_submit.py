"""One step to submit, on a real pool: ``instrument --submit`` and
``condor-rlrep submit RUN.dag`` queue the instrumented DAG through
``htcondor2.Submit.from_dag`` + ``Schedd.submit``, with condor_submit_dag's
options passed through, print the DAGMan job id and the status command, and
the DAG runs to the end under real DAGMan."""

from __future__ import annotations

import json
import re

import pytest

from _pool import Pool
from test_pool_live import figure1

pytestmark = pytest.mark.pool


def test_instrument_submit_and_submit_queue_the_dag_with_condor_submit_dag_options(pool: Pool) -> None:
    work = figure1(pool, "submit", 2)
    out = pool.rlrep("instrument", "figure1.dag", "-o", "run/figure1.rlrep.dag", "--policy", "fixed:2", "--submit",
                     "--submit-args", "-maxjobs 2 -batch-name rlrep-submit -append 'My.RlrepSubmitTest = 7'", cwd=work)
    dag = work / "run" / "figure1.rlrep.dag"
    match = re.search(r"submitted (\S+): DAGMan job (\d+) on schedd (\S+)", out)
    assert match, out
    assert match.group(1) == str(dag)
    assert f"follow it with: condor-rlrep status {dag} --watch" in out
    cluster = match.group(2)
    assert pool.wait_dag(dag, timeout=300) == 0
    # the DAGMan job carried the options as condor_submit_dag would have set them
    ad = pool.check(["condor_history", cluster, "-limit", "1", "-af", "JobBatchName", "RlrepSubmitTest", "Args",
                     "Arguments"], cwd=work)
    assert ad.split()[:2] == ["rlrep-submit", "7"], ad
    assert "-MaxJobs 2" in ad, ad
    status = json.loads(pool.rlrep("status", str(dag), "--json", cwd=work))
    assert status["dagman"] == "exited 0"
    assert all(n["state"] == "done" for n in status["nodes"] if n["node"] not in ("S", "T")), status
    # `submit` of an instrumented copy (again: -force replaces the first run's .condor.sub); --json
    done = pool.run([str(pool.venv / "bin" / "condor-rlrep"), "submit", "--json", str(dag), "-force"], cwd=work)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["dagman_cluster"] > int(cluster) and doc["follow"] == f"condor-rlrep status {dag} --watch"
    assert pool.wait_dag(dag, timeout=300, after=1) == 0
    # a plain DAG is refused, naming it
    plain = pool.run([str(pool.venv / "bin" / "condor-rlrep"), "submit", str(work / "figure1.dag")], cwd=work)
    assert plain.returncode == 2 and "not an instrumented DAG" in plain.stderr
