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
from condor_rlrep.rundir.layout import HookSettings
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
    # only the procs still queued (proc 1 has ended), never a finished one
    assert spec == removal_constraint(10, [0]) == (
        "ClusterId == 10 && (ProcId == 0) && RlrepReplicas > 1 && JobStatus =!= 4 && JobStatus =!= 3"
    )
    assert reason is None  # with a reason HTCondor logs the removal as an eviction (code 1009)
    w.remove(10, 0, T0 + 8)
    w.terminate(10, 0, T0 + 8, exit_code=0)  # a late second success: already reaped
    assert reaper.poll() == [] and len(schedd.calls) == 1
    assert reaper.reaped == {10: 2}
    assert reaper.done_nodes == {"A", "B"}
    assert "1 replica cluster(s) seen, 1 with a winner: 1 reaped" in reaper.summary()


def test_two_winners_in_one_poll_remove_nothing_that_ended(tmp_path: Path) -> None:
    """Two replicas exiting 0 in the same second: neither is removed."""
    log = tmp_path / "n.log"
    w = EventLogWriter(log)
    for proc in range(3):
        w.submit(12, proc, T0, "A")
        w.execute(12, proc, T0 + 1, "h")
    w.terminate(12, 0, T0 + 5, exit_code=0)
    w.terminate(12, 2, T0 + 5, exit_code=0)
    schedd = FakeSchedd()
    reaper = Reaper(log, schedd=schedd)
    assert reaper.poll() == [12]
    assert schedd.calls[0][1] == removal_constraint(12, [1])
    w.terminate(12, 1, T0 + 5, exit_code=0)
    assert reaper.poll() == [] and len(schedd.calls) == 1


def test_summary_counts_only_what_was_removed(tmp_path: Path) -> None:
    log = tmp_path / "n.log"
    w = EventLogWriter(log)
    for proc in range(2):
        w.submit(13, proc, T0, "A")
    w.terminate(13, 1, T0 + 2, exit_code=0)
    w.terminate(13, 0, T0 + 2, exit_code=0)  # both ended before the reaper looked

    class Nothing(FakeSchedd):
        def act(self, action, job_spec, reason=None):
            super().act(action, job_spec, reason)
            return {"TotalSuccess": 0}

    reaper = Reaper(log, schedd=Nothing())
    reaper.poll()
    assert reaper.reaped == {} and reaper.nothing_left == {13}
    assert "0 reaped (0 proc(s) removed), 1 with nothing left" in reaper.summary()


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

    assert run_reaper([f"--ctx={context}", "--interval=0.5"], schedd=schedd, sleep=sleep) == 0
    assert len(schedd.calls) == 1 and sleeps == [0.5, 0.5, 0.5]
    (context / "reaper.stop").unlink()
    # DAGMan writes <dag>.metrics when it exits: the reaper ends after one more poll
    (tmp_path / "w.dag.metrics").write_text("{}")
    os.utime(tmp_path / "w.dag.metrics", (time.time() + 5, time.time() + 5))
    assert run_reaper([f"--ctx={context}"], schedd=FakeSchedd(), sleep=lambda s: None) == 0
    log = (context / "hooks.log").read_text()
    assert "replica 30.1 won" in log and "stopped" in log


def test_reaper_executable_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    """DAGMan removes the SERVICE node at the end of the DAG: SIGTERM."""
    context = _context(tmp_path)
    exe = Path(sys.executable).parent / "rlrep-reaper"
    proc = subprocess.Popen([str(exe), f"--ctx={context}", "--interval=0.1"], stdin=subprocess.DEVNULL)
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
    assert reaper.poll() == [] and schedd.calls == [] and 40 in reaper.nothing_left


def test_run_reaper_ends_by_itself_when_every_replicable_node_finished(tmp_path: Path) -> None:
    context = _context(tmp_path)
    (context / "replicable.txt").write_text("A\nB\n")
    # a rescue DAG marks B done: only A is left to watch
    (tmp_path / "w.dag.rescue001").write_text("# Rescue DAG\nDONE B\n")
    w = EventLogWriter(tmp_path / "w.dag.nodes.log")
    for proc in range(2):
        w.submit(50, proc, T0, "A")
    polls: list[float] = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 2:
            w.terminate(50, 0, T0 + 3, exit_code=0)
        if len(polls) == 3:
            w.remove(50, 1, T0 + 3, running=False)
        assert len(polls) < 10, "the reaper should have ended"

    assert run_reaper([f"--ctx={context}", "--interval=0.2"], schedd=FakeSchedd(), sleep=sleep) == 0
    assert len(polls) == 3
    assert "all 1 replicable node(s) finished" in (context / "hooks.log").read_text()


def test_a_loser_ending_with_the_winner_is_not_removed(tmp_path: Path) -> None:
    """Its terminate event lands while the reaper settles: it is left alone."""
    log = tmp_path / "n.log"
    w = EventLogWriter(log)
    for proc in range(3):
        w.submit(14, proc, T0, "A")
        w.execute(14, proc, T0 + 1, "h")
    w.terminate(14, 0, T0 + 5, exit_code=0)
    schedd = FakeSchedd()
    reaper = Reaper(log, schedd=schedd, sleep=lambda s: w.terminate(14, 1, T0 + 5, exit_code=0))
    assert reaper.poll() == [14]
    assert schedd.calls[0][1] == removal_constraint(14, [2])


def test_a_winner_read_while_settling_is_reaped_too(tmp_path: Path) -> None:
    log = tmp_path / "n.log"
    w = EventLogWriter(log)
    for cluster in (15, 16):
        for proc in range(2):
            w.submit(cluster, proc, T0, "A" if cluster == 15 else "B")
            w.execute(cluster, proc, T0 + 1, "h")
    w.terminate(15, 0, T0 + 5, exit_code=0)
    schedd = FakeSchedd()
    settles: list[float] = []

    def settle(seconds: float) -> None:
        settles.append(seconds)
        if len(settles) == 1:  # B's winner lands while A's removal waits
            w.terminate(16, 1, T0 + 5, exit_code=0)

    reaper = Reaper(log, schedd=schedd, sleep=settle)
    assert sorted(reaper.poll()) == [15, 16]
    assert sorted(call[1] for call in schedd.calls) == sorted([removal_constraint(15, [1]), removal_constraint(16, [0])])
    assert reaper.poll() == [] and len(schedd.calls) == 2


def test_run_reaper_ends_when_the_users_post_accepts_a_node_whose_replicas_all_failed(tmp_path: Path) -> None:
    """Issue 23 item 6: no replica of A exits 0, the user's POST accepts A:
    the reaper must end by itself (else DAGMan removes it at the DAG's end
    and logs a BAD EVENT). It learns A's verdict from POST's journal record
    of A's cluster in the node log (the reaper may start after that POST);
    a record of another cluster (an earlier DAGMan's) does not count."""
    from condor_rlrep.rundir.journal import append

    context = _context(tmp_path)
    (context / "replicable.txt").write_text("A\n")
    append(str(context), "POST", "A", {"exit": 0, "cluster": 59}, now=time.time() - 3600)  # the DAG's previous run
    w = EventLogWriter(tmp_path / "w.dag.nodes.log")
    for proc in range(2):
        w.submit(60, proc, T0, "A")
    polls: list[float] = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 2:
            w.terminate(60, 0, T0 + 3, exit_code=1)
            w.terminate(60, 1, T0 + 4, exit_code=2)
        if len(polls) == 4:
            append(str(context), "POST", "A", {"exit": 1, "cluster": 60})  # a failing attempt (DAGMan may retry)
        if len(polls) == 6:
            append(str(context), "POST", "A", {"exit": 0, "cluster": 60})  # the user's POST accepted the node
        assert len(polls) < 10, "the reaper should have ended"

    assert run_reaper([f"--ctx={context}", "--interval=0.2"], schedd=FakeSchedd(), sleep=sleep) == 0
    assert len(polls) == 6
    assert "all 1 replicable node(s) finished" in (context / "hooks.log").read_text()


def test_run_reaper_started_after_the_accepting_post_ends_at_once(tmp_path: Path) -> None:
    """On a busy pool the SERVICE node may start after A's POST has run."""
    from condor_rlrep.rundir.journal import append

    context = _context(tmp_path)
    (context / "replicable.txt").write_text("A\n")
    w = EventLogWriter(tmp_path / "w.dag.nodes.log")
    for proc in range(2):
        w.submit(61, proc, T0, "A")
        w.terminate(61, proc, T0 + 3, exit_code=1)
    append(str(context), "POST", "A", {"exit": 0, "cluster": 61})
    polls: list[float] = []
    assert run_reaper([f"--ctx={context}"], schedd=FakeSchedd(), sleep=polls.append) == 0
    assert polls == [] and "all 1 replicable node(s) finished" in (context / "hooks.log").read_text()


def test_run_reaper_writes_the_users_jobstate_log_and_waits_for_the_nodes_end_line(tmp_path: Path) -> None:
    """Issue 23 item 5: the reaper translates DAGMan's internal JOBSTATE_LOG into
    the user's as it goes, and, once its node has finished, waits for DAGMan
    to log that node's end before it ends (DAGMan does so before the POST)."""
    context = tmp_path / "w.dag.rlrep"
    context.mkdir()
    user = tmp_path / "w.jobstate.log"
    HookSettings(dag=str(tmp_path / "w.dag"), policy="fixed:2", jobstate_log=str(user), reaper_node="RLREP_REAPER",
                 user_scripts={"PRE": [], "POST": []}).save(str(context))
    (context / "replicable.txt").write_text("A\n")
    internal = context / "jobstate.log"
    internal.write_text(f"{T0:.0f} INTERNAL *** DAGMAN_STARTED 1.0 ***\n{T0:.0f} RLREP_REAPER SUBMIT 2.0 - - 1\n"
                        f"{T0:.0f} A SUBMIT 3.0 - - 2\n{T0:.0f} A SUBMIT 3.1 - - 2\n")
    w = EventLogWriter(tmp_path / "w.dag.nodes.log")
    for proc in range(2):
        w.submit(3, proc, T0, "A")
    polls: list[float] = []

    def sleep(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 1:
            w.terminate(3, 1, T0 + 3, exit_code=0)  # replica 1 wins; the reaper removes replica 0
            w.abort(3, 0, T0 + 4)
        if len(polls) == 4:  # DAGMan's next scan: the node's end, before its POST
            with internal.open("a") as handle:
                handle.write(f"{T0 + 3:.0f} A JOB_TERMINATED 3.1 - - 2\n{T0 + 4:.0f} A JOB_EVICTED 3.0 - - 2\n"
                             f"{T0 + 4:.0f} A JOB_ABORTED 3.0 - - 2\n{T0 + 4:.0f} A JOB_FAILURE -1002 - - 2\n")
        assert len(polls) < 10, "the reaper should have ended"

    assert run_reaper([f"--ctx={context}", "--interval=0.2"], schedd=FakeSchedd(), sleep=sleep) == 0
    assert len(polls) == 4  # it waited for the node's end line
    assert user.read_text() == (f"{T0:.0f} INTERNAL *** DAGMAN_STARTED 1.0 ***\n{T0:.0f} A SUBMIT 3.0 - - 1\n"
                                f"{T0 + 3:.0f} A JOB_TERMINATED 3.1 - - 1\n{T0 + 4:.0f} A JOB_SUCCESS 0 - - 1\n")
