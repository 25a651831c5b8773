"""Node event logs: real logs from a 25.14 pool, the old test_condor.log, and
logs our writer produces, all read by the real ``htcondor2.JobEventLog``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _hookutil import SHARED_DATA
from condor_rlrep.condor.eventlog import (
    EventLogError,
    cluster_nodes,
    clusters_of_node,
    host_of_execute,
    read_events,
    rebuild_cluster,
)
from condor_rlrep.condor.eventlog_writer import EventLogWriter

REAL = SHARED_DATA / "eventlogs" / "real-dagman"
T0 = 1_780_000_000.0


def real(name: str) -> list:
    path = REAL / name / "test.dag.nodes.log"
    if not path.exists():
        pytest.skip(f"{path} not available")
    return read_events(path)


def test_first_wins_real_log() -> None:
    events = real("replicas-first-wins")
    assert cluster_nodes(events) == {5: "A", 6: "B"}  # ClassAd-form submit notes and 016 events
    h = rebuild_cluster(events, 5)
    assert h.node == "A" and h.procs == {0, 1, 2, 3}
    assert h.succeeded and h.winner == 0
    assert h.exit_codes == {0: 0} and h.aborted == {1, 2, 3}
    assert h.first_failure_code == -1002  # what DAGMan put in $RETURN
    ends = sorted((inv.replica, inv.ended_by, inv.seconds) for inv in h.invocations)
    assert ends == [(0, "success", 5.0), (1, "removed", 5.0), (2, "removed", 5.0), (3, "removed", 5.0)]
    assert h.evictions == 0  # a condor_rm (code 1023) is not an owner eviction
    assert {inv.host for inv in h.invocations} == {"vm"}


def test_vacate_is_an_eviction_followed_by_a_new_invocation() -> None:
    h = rebuild_cluster(real("eviction"), 16)
    assert [(i.ended_by, i.seconds) for i in h.invocations] == [("evicted", 3.0), ("success", 20.0)]
    assert h.evictions == 1 and h.succeeded


@pytest.mark.parametrize(("variant", "succeeded", "first"), [("with-tolerance", True, 1), ("no-tolerance", False, 1)])
def test_failing_replica(variant: str, succeeded: bool, first: int) -> None:
    events = real(f"replica-fails-others-continue/{variant}")
    cluster = 8 if variant == "with-tolerance" else 11
    h = rebuild_cluster(events, cluster)
    assert h.succeeded is succeeded and h.first_failure_code == first


def test_noop_nodes_are_not_clusters() -> None:
    events = real("noop-and-final")
    assert cluster_nodes(events) == {17: "A", 19: "F"}


def test_old_format_log_with_foreign_events() -> None:
    path = SHARED_DATA / "eventlogs" / "test_condor.log"
    if not path.exists():
        pytest.skip("test_condor.log not available")
    events = read_events(path)
    assert cluster_nodes(events) == {2758: "A", 2759: "C"}  # 'DAG Node: X' notes
    assert clusters_of_node(events, "C") == [2759]
    h = rebuild_cluster(events, 2758)
    assert h.succeeded and h.invocations[0].seconds == 7.0
    assert rebuild_cluster(events, -1).event_count > 0  # the bogus cluster is read without crashing


def test_unreadable_log_is_an_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(EventLogError, match="not found"):
        read_events(tmp_path / "missing.log")
    with pytest.raises(EventLogError, match=str(tmp_path)):
        read_events(tmp_path)


def test_writer_round_trip_every_event_kind(tmp_path: Path) -> None:
    log = tmp_path / "n.log"
    w = EventLogWriter(log, classad_notes=False)
    for proc in range(4):
        w.submit(3, proc, T0, "N")
        w.execute(3, proc, T0 + 10, f"h{proc}")
    w.evict(3, 0, T0 + 20)                          # owner eviction: requeued
    w.execute(3, 0, T0 + 30, "h5")
    w.terminate(3, 1, T0 + 40, signal=9)            # killed
    w.hold(3, 2, T0 + 41)                           # held: the run stops
    w.shadow_exception(3, 3, T0 + 42)
    w.terminate(3, 0, T0 + 50, exit_code=0, run_seconds=20)
    w.remove(3, 2, T0 + 51, running=False)          # surplus removed while held
    w.post_script_terminated(3, 0, T0 + 60, "N")
    w.partial()                                     # truncated last event: not returned
    events = read_events(log)
    assert [int(e.type) for e in events][-1] == 16
    h = rebuild_cluster(events, 3)
    assert h.node == "N" and h.winner == 0
    got = sorted((i.replica, i.host, i.start - T0, i.end - T0, i.ended_by, i.exit_code) for i in h.invocations)
    assert got == [
        (0, "h0", 10, 20, "evicted", None),
        (0, "h5", 30, 50, "success", 0),
        (1, "h1", 10, 40, "failure", -9),
        (2, "h2", 10, 41, "held", None),
        (3, "h3", 10, 42, "failure", None),
    ]
    assert h.first_failure_code == -9 and h.holds == 1 and h.aborted == {2} and h.evictions == 1
    assert host_of_execute(events[1]) == "h0"


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["win", "fail", "evict-win", "removed", "signal"]), min_size=1, max_size=5))
def test_round_trip_property(tmp_path_factory, outcomes: list[str]) -> None:
    """Whatever the replicas did, the rebuilt history agrees with the script."""
    log = tmp_path_factory.mktemp("p") / "n.log"
    w = EventLogWriter(log)
    t = T0
    for proc in range(len(outcomes)):
        w.submit(9, proc, t, "X")
    for proc, what in enumerate(outcomes):
        t += 7
        w.execute(9, proc, t, f"h{proc}")
        t += 11
        if what == "win":
            w.terminate(9, proc, t, exit_code=0)
        elif what == "fail":
            w.terminate(9, proc, t, exit_code=4)
        elif what == "signal":
            w.terminate(9, proc, t, signal=15)
        elif what == "removed":
            w.remove(9, proc, t)
        else:
            w.evict(9, proc, t)
            w.execute(9, proc, t + 1, "again")
            w.terminate(9, proc, t + 2, exit_code=0)
    h = rebuild_cluster(read_events(log), 9)
    assert h.succeeded == any(o in ("win", "evict-win") for o in outcomes)
    assert len(h.invocations) == len(outcomes) + outcomes.count("evict-win")
    assert all(inv.seconds >= 0 for inv in h.invocations)
    assert h.aborted == {p for p, o in enumerate(outcomes) if o == "removed"}
    failures = [o for o in outcomes if o in ("fail", "signal", "removed")]
    expected_first = {"fail": 4, "signal": -15, "removed": -1002}[failures[0]] if failures else None
    assert h.first_failure_code == expected_first


@pytest.mark.parametrize("cut", [0, 1, 7, -1])
def test_read_from_offset_starts_at_the_next_event(tmp_path: Path, cut: int) -> None:
    """POST reads from the log size PRE saw; that may fall inside another event."""
    log = tmp_path / "n.log"
    w = EventLogWriter(log)
    w.submit(1, 0, T0, "OLD")
    w.execute(1, 0, T0 + 1, "h")
    size = log.stat().st_size
    w.terminate(1, 0, T0 + 2, exit_code=0)  # the event in flight when PRE looked
    w.submit(2, 0, T0 + 3, "NEW")
    w.terminate(2, 0, T0 + 4, exit_code=0)
    offset = size + cut if cut >= 0 else size
    events = read_events(log, offset=offset)
    clusters = [e.cluster for e in events]
    assert clusters[-2:] == [2, 2] and set(clusters) <= {1, 2}
    if cut > 0:
        assert clusters == [2, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["n.log"]  # scratch copy removed


def test_event_time_matches_the_bindings_timestamp() -> None:
    path = SHARED_DATA / "eventlogs" / "test_condor.log"
    events = read_events(path) if path.exists() else real("eviction")
    from condor_rlrep.condor.eventlog import event_time

    assert all(event_time(e) == float(e.timestamp) for e in events)


def test_writer_reproduces_a_real_log(tmp_path: Path) -> None:
    """Re-writing the real first-wins events with our writer rebuilds to the same history."""
    events = real("replicas-first-wins")
    w = EventLogWriter(tmp_path / "copy.log")
    for e in events:
        kind, c, p, at = int(e.type), e.cluster, e.proc, float(e.timestamp)
        if kind == 0:
            w.submit(c, p, at, "A" if c == 5 else "B")
        elif kind == 1:
            w.execute(c, p, at, host=str(e.get("SlotName")).split("@")[1])
        elif kind == 4:
            w.evict(c, p, at, code=e.get("ReasonCode"), reason=e.get("Reason"))
        elif kind == 5:
            w.terminate(c, p, at, exit_code=e.get("ReturnValue"))
        elif kind == 9:
            w.abort(c, p, at, reason=e.get("Reason"))
        elif kind == 16:
            w.post_script_terminated(c, p, at, "A" if c == 5 else "B", e.get("ReturnValue"))
    copy = read_events(tmp_path / "copy.log")
    assert [(int(e.type), e.cluster, e.proc, e.timestamp) for e in copy] == [
        (int(e.type), e.cluster, e.proc, e.timestamp) for e in events
    ]
    for cluster in (5, 6):
        a, b = rebuild_cluster(events, cluster), rebuild_cluster(copy, cluster)
        assert a.invocations == b.invocations and a.node == b.node
        assert (a.exit_codes, a.aborted, a.first_failure_code) == (b.exit_codes, b.aborted, b.first_failure_code)


def test_a_loser_removed_while_its_shadow_starts_has_no_invocation(tmp_path: Path) -> None:
    # seen on a busy pool: condor_rm of a proc whose shadow had started logs
    # 004 code 1023 with no 001 before it; it never ran, so it costs nothing
    w = EventLogWriter(str(tmp_path / "n.log"))
    for proc in range(3):
        w.submit(7, proc, T0, "A")
    w.execute(7, 0, T0 + 1, "h1")
    w.execute(7, 2, T0 + 1, "h2")
    w.terminate(7, 0, T0 + 5)
    w.remove(7, 1, T0 + 6)
    w.remove(7, 2, T0 + 6)
    h = rebuild_cluster(read_events(str(tmp_path / "n.log")), 7)
    assert h.winner == 0 and h.evictions == 0 and h.aborted == {1, 2}
    assert sorted((inv.replica, inv.ended_by) for inv in h.invocations) == [(0, "success"), (2, "removed")]


def test_a_hold_logged_as_evict_then_held_is_a_hold_not_an_eviction(tmp_path: Path) -> None:
    """Issue 23 item 10: condor_hold of a running job logs 004 (Code 1) then
    012; only the machine's evictions count as evictions."""
    log = tmp_path / "n.log"
    w = EventLogWriter(log, classad_notes=False)
    w.submit(4, 0, T0, "N")
    w.execute(4, 0, T0 + 10, "h0")
    w.evict(4, 0, T0 + 13, code=1, reason="via condor_hold (by user u)")   # the hold's 004
    w.hold(4, 0, T0 + 13)
    w.execute(4, 0, T0 + 20, "h0")
    w.evict(4, 0, T0 + 25)                                                 # a real (owner) eviction
    w.execute(4, 0, T0 + 30, "h1")
    w.terminate(4, 0, T0 + 40, exit_code=0)
    h = rebuild_cluster(read_events(log), 4)
    assert [(i.start - T0, i.ended_by) for i in h.invocations] == [
        (10, "held"), (20, "evicted"), (30, "success")]
    assert (h.evictions, h.holds) == (1, 1)


def test_survival_cells_count_evictions_not_holds() -> None:
    from condor_rlrep.survival.live import cells_of

    runs = [{"replica": 0, "start": 0.0, "end": 100.0, "ended_by": ended, "keyboard_idle": None}
            for ended in ("held", "evicted", "success")]
    (cell,) = cells_of(runs, lambda t: 0, lambda idle: 0)
    assert cell[2:] == [300.0, 1.0]  # every run's exposure, one eviction


# Cluster 23 of a live replay (HTCondor 25.14, 2026-12-06, fixed:2): replica
# 1 is preempted by its slot's owner (004 Code 1011) and requeued; its twin
# wins; the reaper then removes the idle replica 1, which HTCondor logs as a
# second 004 (Code 1023, the removal's own) and the 009.
REPLAY_CLUSTER_23 = """\
000 (023.000.000) 2026-12-06 05:42:56 Job submitted from host: <127.0.0.1:35233?addrs=127.0.0.1-35233&alias=vm>
    [ DAGNodeName = "A"; JobBatchName = "wf0004" ]
...
000 (023.001.000) 2026-12-06 05:42:56 Job submitted from host: <127.0.0.1:35233?addrs=127.0.0.1-35233&alias=vm>
    [ DAGNodeName = "A"; JobBatchName = "wf0004" ]
...
001 (023.000.000) 2026-12-06 05:43:02 Job executing on host: <127.0.0.1:34921?addrs=127.0.0.1-34921&alias=vm>
	SlotName: slot12_1@vm
	CondorScratchDir = "/var/tmp/sim27-exp/run/replay-figure1-phi01/fixed-2/pool/local/execute/dir_21949/scratch"
	Cpus = 1
	Disk = 1048576
	Memory = 128
...
001 (023.001.000) 2026-12-06 05:43:04 Job executing on host: <127.0.0.1:34921?addrs=127.0.0.1-34921&alias=vm>
	SlotName: slot7_1@vm
	CondorScratchDir = "/var/tmp/sim27-exp/run/replay-figure1-phi01/fixed-2/pool/local/execute/dir_21977/scratch"
	Cpus = 1
	Disk = 1048576
	Memory = 128
...
004 (023.001.000) 2026-12-06 05:43:23 Job was evicted. Code 1011 Subcode 0
	(0) CPU times
		Usr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage
		Usr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage
	0  -  Run Bytes Sent By Job
	366  -  Run Bytes Received By Job
	Reason: PREEMPT expression evaluated to True
	Partitionable Resources :    Usage  Request Allocated 
	   Cpus                 :        0        1         1 
	   Disk (KB)            :       23  1048576   1048576 
	   Memory (MB)          :        3      128       128 
	   TimeExecute (s)      :       19                    
	   TimeSlotBusy (s)     :       20                    
...
005 (023.000.000) 2026-12-06 05:43:34 Job terminated.
	(1) Normal termination (return value 0)
		Usr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage
		Usr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage
		Usr 0 00:00:00, Sys 0 00:00:00  -  Total Remote Usage
		Usr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage
	40  -  Run Bytes Sent By Job
	366  -  Run Bytes Received By Job
	40  -  Total Bytes Sent By Job
	366  -  Total Bytes Received By Job
	Partitionable Resources :    Usage  Request Allocated 
	   Cpus                 :     0.00        1         1 
	   Disk (KB)            :    23     1048576   1048576 
	   Memory (MB)          :     3         128       128 
	   TimeExecute (s)      :    32                       
	   TimeSlotBusy (s)     :    33                       
...
004 (023.001.000) 2026-12-06 05:43:35 Job was evicted. Code 1023 Subcode 0
	(0) CPU times
		Usr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage
		Usr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage
	0  -  Run Bytes Sent By Job
	366  -  Run Bytes Received By Job
	Reason: Python-initiated action (by user condorpool)
	Partitionable Resources :    Usage  Request Allocated 
	   Cpus                 :        0        1         1 
	   Disk (KB)            :       25  1048576   1048576 
	   Memory (MB)          :        3      128       128 
	   TimeExecute (s)      :       19                    
	   TimeSlotBusy (s)     :       20                    
...
009 (023.001.000) 2026-12-06 05:43:35 Job was aborted.
	Python-initiated action (by user condorpool)
...
016 (023.000.000) 2026-12-06 05:43:35 POST Script terminated.
	(1) Normal termination (return value 0)
    DAG Node: A
...
"""


def test_an_owner_eviction_then_a_removal_of_the_requeued_replica_stays_an_eviction(tmp_path: Path) -> None:
    """The removal's own 004 (Code 1023) explains the abort that follows: the
    owner's eviction before it must not be turned into the removal (the
    replay's report counted fixed:2's evictions 6 where its logs had 7)."""
    log = tmp_path / "run.dag.nodes.log"
    log.write_text(REPLAY_CLUSTER_23)
    h = rebuild_cluster(read_events(log), 23)
    assert h.evictions == 1 and h.aborted == {1} and h.winner == 0
    assert [(i.replica, i.end - i.start, i.ended_by) for i in h.invocations] == [
        (1, 19.0, "evicted"), (0, 32.0, "success")]
