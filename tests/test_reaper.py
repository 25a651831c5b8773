"""The reaper removes a replica cluster's losers once one replica exits 0.

The schedd is faked (the one seam); the node log is written in HTCondor's
format and read by the real ``htcondor2.JobEventLog``, incrementally.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import htcondor2

from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.condor.reaper import Reaper, removal_constraint
from condor_rlrep.hooks.layout import HookSettings
from condor_rlrep.hooks.reaper import run_reaper

T0 = 1_780_000_000.0


class FakeSchedd:
    def __init__(self, fail: bool = False):
        self.calls: list[tuple] = []
        self.fail = fail

    def act(self, action, job_spec, reason=None):
        self.calls.append((action, job_spec, reason))
        if self.fail:
            raise RuntimeError("schedd unreachable")
        return {"TotalSuccess": 2}


def test_reaps_losers_once_and_only_replica_clusters(tmp_path: Path) -> None:
    log = tmp_path / "w.dag.nodes.log"
    schedd = FakeSchedd()
    reaper = Reaper(log, schedd=schedd)
    assert reaper.poll() == []  # no log yet: nothing, no error
    w = EventLogWriter(log)
    for proc in range(3):
        w.submit(10, proc, T0, "A")
        w.execute(10, proc, T0 + 1, f"h{proc}")
    w.submit(11, 0, T0, "B")  # a single-proc cluster
    w.execute(11, 0, T0 + 1, "h9")
    assert reaper.poll() == []
    w.terminate(10, 1, T0 + 5, exit_code=2)  # a failing replica is no winner
    w.terminate(11, 0, T0 + 6, exit_code=0)  # nothing to reap for B
    assert reaper.poll() == [] and schedd.calls == []
    w.terminate(10, 2, T0 + 7, exit_code=0)  # the winner
    assert reaper.poll() == [10]
    action, spec, reason = schedd.calls[0]
    assert action == htcondor2.JobAction.Remove
    assert spec == removal_constraint(10, 2) == "ClusterId == 10 && ProcId != 2 && RlrepReplicas > 1"
    assert "node A" in reason
    w.remove(10, 0, T0 + 8)
    w.terminate(10, 0, T0 + 8, exit_code=0)  # a late second success: already reaped
    assert reaper.poll() == [] and len(schedd.calls) == 1
    assert reaper.reaped == {10: 2}


def test_schedd_failure_is_survived_and_retried_on_next_success(tmp_path: Path) -> None:
    log = tmp_path / "n.log"
    w = EventLogWriter(log)
    for proc in range(3):
        w.submit(20, proc, T0, "A")
    w.terminate(20, 0, T0 + 1, exit_code=0)
    lines: list[str] = []
    reaper = Reaper(log, schedd=FakeSchedd(fail=True), on_line=lines.append)
    assert reaper.poll() == [] and reaper.errors == 1
    assert "failed" in lines[0]
    reaper._schedd = FakeSchedd()
    w.terminate(20, 1, T0 + 2, exit_code=0)
    assert reaper.poll() == [20]


def _context(tmp_path: Path) -> Path:
    context = tmp_path / "w.dag.rlrep"
    context.mkdir()
    HookSettings(dag=str(tmp_path / "w.dag"), policy="fixed:2").save(str(context))
    return context


def test_run_reaper_stops_on_stop_file_and_when_dag_is_done(tmp_path: Path) -> None:
    context = _context(tmp_path)
    w = EventLogWriter(tmp_path / "w.dag.nodes.log")
    for proc in range(2):
        w.submit(30, proc, T0, "A")
    w.terminate(30, 1, T0 + 3, exit_code=0)
    schedd = FakeSchedd()
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            (context / "reaper.stop").write_text("")

    assert run_reaper(["--ctx", str(context), "--interval", "0.5"], schedd=schedd, sleep=sleep) == 0
    assert len(schedd.calls) == 1 and sleeps == [0.5, 0.5, 0.5]
    (context / "reaper.stop").unlink()
    # DAGMan writes <dag>.metrics when it exits: the reaper ends after one more poll
    (tmp_path / "w.dag.metrics").write_text("{}")
    os.utime(tmp_path / "w.dag.metrics", (time.time() + 5, time.time() + 5))
    assert run_reaper(["--ctx", str(context)], schedd=FakeSchedd(), sleep=lambda s: None) == 0
    log = (context / "hooks.log").read_text()
    assert "replica 30.1 won" in log and "stopped" in log


def test_reaper_executable_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    """DAGMan removes the SERVICE node at the end of the DAG: SIGTERM."""
    context = _context(tmp_path)
    exe = Path(sys.executable).parent / "rlrep-reaper"
    proc = subprocess.Popen([str(exe), "--ctx", str(context), "--interval", "0.1"], stdin=subprocess.DEVNULL)
    log = context / "hooks.log"
    deadline = time.time() + 60
    while not (log.exists() and "following" in log.read_text()) and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    assert "stopped (signal 15)" in log.read_text()


def test_restarted_reaper_leaves_finished_clusters_alone(tmp_path: Path) -> None:
    log = tmp_path / "n.log"
    w = EventLogWriter(log)
    for proc in range(3):
        w.submit(40, proc, T0, "A")
    w.terminate(40, 0, T0 + 1, exit_code=0)
    w.remove(40, 1, T0 + 2, running=False)
    w.remove(40, 2, T0 + 2, running=False)
    schedd = FakeSchedd()
    reaper = Reaper(log, schedd=schedd)
    assert reaper.poll() == [] and schedd.calls == [] and 40 in reaper.reaped
