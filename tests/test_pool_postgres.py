"""An instrumented DAG whose hooks share a PostgreSQL store, under real condor_dagman.

The server is the session's throw-away PostgreSQL cluster, reached over
127.0.0.1 with a password login (its Unix socket directory is private to the
server's user). The URL given to ``instrument`` carries the password; the
run must not: the hooks, run by DAGMan as the pool user, find it in that
user's ``~/.pgpass`` the way any libpq client does (DAGMan passes ``HOME``
to its scripts).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from _pgcluster import PASSWORD, ROLE, Cluster
from _pool import REPO, Pool, dagman_out, forced_nodes, hooks_log, write
from condor_rlrep.store.location import open_store

pytestmark = pytest.mark.pool

FIGURE1 = REPO / "examples" / "figure1"


def test_figure1_on_a_postgresql_store_records_every_node_and_keeps_the_password_out_of_the_run(
    pool: Pool, pg_cluster: Cluster
) -> None:
    pg_cluster.create_database("rlrep_pool")
    url = pg_cluster.tcp_url("rlrep_pool")
    bare = pg_cluster.tcp_url("rlrep_pool", password=None)
    work = pool.workdir("figure1-pg")
    shutil.copy(FIGURE1 / "task.sub", work / "task.sub")
    write(work / "figure1.dag", (FIGURE1 / "figure1.dag").read_text().replace('"1920"', '"3"'))
    home = work / "home"
    pgpass = write(home / ".pgpass", f"127.0.0.1:{pg_cluster.port}:rlrep_pool:{ROLE}:{PASSWORD}\n", 0o600)
    pool.own(work)

    out = pool.rlrep("instrument", "figure1.dag", "-o", "run/figure1.rlrep.dag", "--phi", "1.0",
                     "--store", url, "--policy", "agent", cwd=work)
    assert f"agent store: {bare} created now" in out and "~/.pgpass" in out
    assert PASSWORD not in out
    dag = work / "run" / "figure1.rlrep.dag"
    run_files = [p for p in Path(str(dag) + ".rlrep").rglob("*") if p.is_file()] + [dag]
    assert not [p for p in run_files if PASSWORD in p.read_text(errors="replace")]
    settings = json.loads((Path(str(dag) + ".rlrep") / "hooks.json").read_text())
    assert settings["store"] == bare

    # DAGMan hands its scripts HOME: the pool user's home here is `home`, with the .pgpass
    pool.check(["env", f"HOME={home}", "condor_submit_dag", dag.name], cwd=dag.parent)
    assert pool.wait_dag(dag, timeout=300) == 0

    log = "\n".join(hooks_log(dag))
    assert "FAIL-OPEN" not in log and "spooled" not in log, log[-2000:]
    assert PASSWORD not in log and PASSWORD not in dagman_out(dag)
    # the reaper served the store to the hooks over one connection; hooks it did not serve went direct
    assert f"store broker for {bare} on " in log
    served = re.search(r"store broker stopped after (\d+) request\(s\), (\d+) failed", log)
    assert served and int(served.group(1)) > 0 and served.group(2) == "0", log[-2000:]
    with open_store(url) as store:
        rows = store.decisions()
        stats = store.stats()
    forced = forced_nodes(dag)  # late on a loaded pool: one replica, not asked of the agent (issue 23 item 12)
    assert sorted([row.context["node"] for row in rows] + forced) == list("ABCDEFGH")
    assert all(not row.pending and 1 <= row.replicas <= 3 for row in rows)
    assert all(row.outcome["completed"] for row in rows)
    assert stats.pending == 0 and stats.closed == 8 - len(forced)
    assert not (Path(str(dag) + ".rlrep") / "spool").exists() or not os.listdir(Path(str(dag) + ".rlrep") / "spool")
    assert pgpass.stat().st_mode & 0o777 == 0o600
