"""Idle placement under real condor_dagman (HTCondor 25.14): ``idle-`` policies.

A pool of its own (the session pool's venv supplies the hooks), reconfigured
to four static slots where slot 1 is connected to a console device that the
test "types on": a file whose access time HTCondor's startd reads as console
activity (``CONSOLE_DEVICES``; it prefixes ``/dev/``, so the file is named
through ``/dev/..``). Slot 1's ``KeyboardIdle`` stays a few seconds, the
others' grow from the startd's 1200 s ("no utmp: infinite idle"). The
negotiator's default ``NEGOTIATOR_POST_JOB_RANK`` prefers low ``SlotID`` among
equal job ranks, so without our rank the first replica goes to slot 1; with
it, no replica may.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from _pool import Pool, PoolUnavailable, dagman_out, write
from condor_rlrep.condor.eventlog import cluster_nodes, read_events, rebuild_cluster

pytestmark = pytest.mark.pool

STATIC_SLOTS = """
## test_pool_idle: four static slots; slot 1 sees the console the test types on
SLOT_TYPE_1 = cpus=2, memory=2000
SLOT_TYPE_1_PARTITIONABLE = False
NUM_SLOTS_TYPE_1 = 4
CONSOLE_DEVICES = ..{console}
SLOTS_CONNECTED_TO_CONSOLE = 1
SLOTS_CONNECTED_TO_KEYBOARD = 1
# Each job is matched by the negotiator (where Rank applies): no claim is kept
# for the schedd to start the next job of the user on, which ignores Rank.
CLAIM_WORKLIFE = 0
"""
JOB = """universe       = vanilla
executable     = /bin/sleep
arguments      = 8
request_cpus   = 1
request_memory = 64MB
request_disk   = 1MB
log            = w.jobs.log
queue
"""


class Owner(threading.Thread):
    """Someone at slot 1's console: touches the device's access time every second."""

    def __init__(self, console: Path):
        super().__init__(daemon=True)
        self.console = console
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            stat = self.console.stat()
            os.utime(self.console, (time.time(), stat.st_mtime))
            self.done.wait(1.0)


def slots(pool: Pool) -> dict[str, tuple[str, int]]:
    out = pool.run(["condor_status", "-af", "Name", "SlotType", "KeyboardIdle"], cwd=pool.work).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].lstrip("-").isdigit():
            found[parts[0].split("@")[0]] = (parts[1], int(parts[2]))
    return found


@pytest.fixture(scope="module")
def idle_pool(pool: Pool):
    base = Path(tempfile.mkdtemp(prefix="rlrep-idlepool-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    own = Pool(base)
    own.venv = pool.venv  # the session pool's install: executable by the pool user along its path
    try:
        own.start()
    except PoolUnavailable as err:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"no second HTCondor pool: {err}")
    console = base / "console"
    console.touch()
    os.chmod(console, 0o644)
    owner = Owner(console)
    try:
        with open(own.dir / "etc" / "condor_config", "a") as config:
            config.write(STATIC_SLOTS.format(console=console))
        # a startd spawned anew reads the configuration afresh (the pool has no condor_reconfig)
        own.check(["condor_off", "-daemon", "startd"], cwd=own.work)
        own.wait_for(lambda: not slots(own), timeout=60, what="the partitionable slot to leave")
        own.check(["condor_on", "-daemon", "startd"], cwd=own.work)
        own.wait_for(lambda: len(slots(own)) == 4, timeout=90, what="four static slots")
        owner.start()
        yield own, owner
    finally:
        owner.done.set()
        own.stop()
        if os.environ.get("RLREP_KEEP_POOL"):
            print(f"idle pool files kept in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


def placements(pool: Pool, dag: Path) -> dict[str, dict[int, str]]:
    """Node → replica (proc) → the slot it ran on, from the job ads (condor_history)."""
    events = read_events(str(dag) + ".nodes.log")
    found: dict[str, dict[int, str]] = {}
    for cluster, node in cluster_nodes(events).items():
        if node not in ("A", "B"):
            continue
        out = pool.check(["condor_history", str(cluster), "-af", "ProcId", "LastRemoteHost", "RemoteHost"],
                         cwd=pool.work)
        procs = {}
        for line in out.splitlines():
            proc, last, remote = line.split()
            host = last if last != "undefined" else remote
            if host != "undefined":
                procs[int(proc)] = host.split("@")[0]
        found[node] = procs
    return found


def run_dag(pool: Pool, name: str, policy: str) -> Path:
    work = pool.workdir(name)
    write(work / "job.sub", JOB)
    write(work / "w.dag", "JOB A job.sub\nJOB B job.sub\nPARENT A CHILD B\n"
                          "VARS A rlrep_estimate=\"8\"\nVARS B rlrep_estimate=\"8\"\n")
    pool.own(work)
    pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", policy, cwd=work)
    dag = work / "run" / "w.rlrep.dag"
    pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=300) == 0, dagman_out(dag)[-3000:]
    return dag


def test_idle_replicas_carry_the_rank_and_land_on_the_slots_idle_longest(idle_pool) -> None:
    pool, _ = idle_pool
    pool.wait_for(lambda: (s := slots(pool)) and s["slot1"][1] < 30 and min(v[1] for k, v in s.items() if k != "slot1") > 600,
                  timeout=60, what="slot 1 in use, the others idle")
    dag = run_dag(pool, "idle", "idle-fixed:3")
    events = read_events(str(dag) + ".nodes.log")
    ranks = {}
    for cluster, node in cluster_nodes(events).items():
        if node not in ("A", "B"):
            continue  # the reaper (local universe)
        history = rebuild_cluster(events, cluster)
        assert history.procs == {0, 1, 2}, node
        # -af:r: the expression as stored (plain -af evaluates it without a machine: 0.0)
        out = pool.check(["condor_history", str(cluster), "-af:r", "ProcId", "Rank"], cwd=pool.work)
        ranks[node] = [line.split(" ", 1)[1] for line in out.splitlines()]
    assert set(ranks) == {"A", "B"}
    for node, lines in ranks.items():
        assert len(lines) == 3 and all("TARGET.KeyboardIdle" in rank for rank in lines), (node, lines)
    placed = placements(pool, dag)
    print("idle placements", placed)
    for node in "AB":
        assert placed[node] and "slot1" not in placed[node].values(), placed
        # static slots hold one job each: the replicas spread over the idle slots
        assert len(set(placed[node].values())) == len(placed[node]), placed


def test_without_idle_placement_the_same_pool_puts_a_replica_on_the_busy_slot(idle_pool) -> None:
    """The control: the negotiator's own tie-break (lowest SlotID) picks slot 1."""
    pool, _ = idle_pool
    pool.wait_for(lambda: (s := slots(pool)) and s["slot1"][1] < 30, timeout=60, what="slot 1 in use")
    dag = run_dag(pool, "plain", "fixed:3")
    placed = placements(pool, dag)
    print("plain placements", placed)
    assert all("slot1" in placed[node].values() for node in "AB"), placed
