"""The live slot turnaround a replay measures for the simulator
(condor_rlrep/replay/turnaround.py), by hand, and on node-log lines as
HTCondor 25.14 writes them."""

from __future__ import annotations

from datetime import datetime

import pytest

from condor_rlrep.replay.plan import ReplayPlan
from condor_rlrep.replay.results import NO_LATENCY, Row
from condor_rlrep.replay.run import ReplaySettings, simulated_rows
from condor_rlrep.replay.turnaround import measure_turnaround, turnaround_from_events

SUB, EXE, EVI, TER, ABO = 0, 1, 4, 5, 9


def _no_owner_but(sessions):
    def present(slot, t0, t1):
        return any(a <= t1 and b > t0 for a, b in sessions.get(slot, ()))
    return present


# Two slots. Node 1 has two replicas: (1,0) wins on slot 0 at 10, (1,1) is
# removed on slot 1 at 11. (2,0) waits from 2 and takes slot 0 at 11: a
# completion's gap of 1 s. (3,0) waits from 3 and takes slot 1 at 14: a
# removal's gap of 14 − 10 (the winner's end) = 4 s. (2,0) ends at 15 and
# (4,0) arrives only at 20 (nobody waited: no gap); the owner of slot 0
# evicts it at 25 (not a removal: no gap) and it runs again at 31.
EVENTS = [
    (0.0, SUB, (1, 0), None), (0.0, SUB, (1, 1), None), (0.0, EXE, (1, 0), 0), (0.0, EXE, (1, 1), 1),
    (2.0, SUB, (2, 0), None), (3.0, SUB, (3, 0), None),
    (10.0, TER, (1, 0), None), (11.0, EVI, (1, 1), None), (11.0, ABO, (1, 1), None),
    (11.0, EXE, (2, 0), 0), (14.0, EXE, (3, 0), 1), (15.0, TER, (2, 0), None),
    (20.0, SUB, (4, 0), None), (21.0, EXE, (4, 0), 0), (25.0, EVI, (4, 0), None), (31.0, EXE, (4, 0), 0),
    (40.0, TER, (4, 0), None), (41.0, TER, (3, 0), None),
    (0.5, SUB, (9, 0), None), (0.5, EXE, (9, 0), None),  # the reaper: local universe, no slot, never waits
]


def test_gaps_and_the_turnaround_by_hand():
    got = turnaround_from_events(EVENTS, _no_owner_but({0: [(25.0, 30.0)]}), slots=2)
    assert got["completed"] == {"gaps": 1, "mean_s": 1.0}
    assert got["removed"] == {"gaps": 1, "mean_s": 4.0}
    assert got["turnaround_s"] == 3.0


def test_a_free_slot_elsewhere_means_nobody_waited_for_this_one():
    # a third slot, free all along: at 10 two jobs wait for two free slots
    # (the gap counts), at 11 one waits and two are free — (3,0) not taking
    # slot 1 until 14 is no longer the removed replica's slot's doing
    got = turnaround_from_events(EVENTS, _no_owner_but({0: [(25.0, 30.0)]}), slots=3)
    assert got["completed"]["gaps"] == 1 and got["removed"]["gaps"] == 0
    assert got["turnaround_s"] is None


def test_an_owner_between_the_end_and_the_next_start_drops_the_gap():
    got = turnaround_from_events(EVENTS, _no_owner_but({0: [(25.0, 30.0)], 1: [(12.0, 13.0)]}), slots=2)
    assert got["removed"]["gaps"] == 0 and got["completed"]["gaps"] == 1
    assert got["turnaround_s"] is None  # nothing removed to measure (as for single)


def _stamp(second: int) -> str:
    return f"2026-12-06 05:35:{second:02d}"


def _execute(cluster: int, proc: int, second: int, slot: int) -> str:
    return (f"001 ({cluster:03d}.{proc:03d}.000) {_stamp(second)} Job executing on host: "
            f"<127.0.0.1:44957?addrs=127.0.0.1-44957&alias=vm>\n\tSlotName: slot{slot}_1@vm\n"
            "\tCpus = 1\n\tDisk = 1048576\n\tMemory = 128\n...\n")


def _submit(cluster: int, proc: int, second: int, node: str) -> str:
    return (f"000 ({cluster:03d}.{proc:03d}.000) {_stamp(second)} Job submitted from host: "
            f"<127.0.0.1:36973?addrs=127.0.0.1-36973&alias=vm>\n"
            f'    [ DAGNodeName = "{node}"; JobBatchName = "wf0001" ]\n...\n')


def _terminated(cluster: int, proc: int, second: int) -> str:
    return (f"005 ({cluster:03d}.{proc:03d}.000) {_stamp(second)} Job terminated.\n"
            "\t(1) Normal termination (return value 0)\n"
            "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n"
            "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n"
            "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Remote Usage\n"
            "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n"
            "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n"
            "\t0  -  Total Bytes Sent By Job\n\t0  -  Total Bytes Received By Job\n...\n")


def _removed(cluster: int, proc: int, second: int) -> str:
    return (f"004 ({cluster:03d}.{proc:03d}.000) {_stamp(second)} Job was evicted.\n"
            "\t(0) Job was not checkpointed.\n"
            "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n"
            "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n"
            "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n"
            "\tJob terminated by user (removed by the replica reaper)\n\tCode 1023 Subcode 0\n...\n"
            f"009 ({cluster:03d}.{proc:03d}.000) {_stamp(second)} Job was aborted.\n"
            "\tremoved by the replica reaper\n...\n")


def test_measured_on_node_log_lines(tmp_path):
    # the same story as EVENTS (seconds after 05:35:00, slots 1 and 2) in a DAG's node log
    log = "".join([
        _submit(3, 0, 0, "A"), _submit(3, 1, 0, "A"), _execute(3, 0, 0, 1), _execute(3, 1, 0, 2),
        _submit(4, 0, 2, "B"), _submit(5, 0, 3, "C"),
        _terminated(3, 0, 10), _removed(3, 1, 11), _execute(4, 0, 11, 1), _execute(5, 0, 14, 2),
        _terminated(4, 0, 15), _terminated(5, 0, 41),
    ])
    dag = tmp_path / "run.dag"
    (tmp_path / "run.dag.nodes.log").write_text(log)
    origin = datetime(2026, 12, 6, 5, 35, 0).timestamp()
    plan = ReplayPlan(source="hand", trace_start="2010-01-04T00:00:00+00:00", window_start=0.0,
                      window_seconds=600.0, compression=60.0, machines=["a", "b"], active_watts=[100.0] * 2,
                      idle_watts=[1.0] * 2, sessions=[[], []], arrivals=[0.0], task_seconds=10.0, drain_seconds=200.0)
    got = measure_turnaround([dag], plan, origin)
    assert got == {"completed": {"gaps": 1, "mean_s": 1.0}, "removed": {"gaps": 1, "mean_s": 4.0},
                   "turnaround_s": 3.0}
    assert measure_turnaround([tmp_path / "missing.dag"], plan, origin)["turnaround_s"] is None


def test_the_simulated_row_uses_the_measured_turnaround_and_the_papers_row_does_not():
    plan = ReplayPlan(source="hand", trace_start="2010-01-04T00:00:00+00:00", window_start=0.0,
                      window_seconds=600.0, compression=192.0, machines=["a", "b", "c"], active_watts=[100.0] * 3,
                      idle_watts=[1.0] * 3, sessions=[[], [], []], arrivals=[0.0], task_seconds=10.0,
                      drain_seconds=400.0)
    live = Row(policy="fixed:2", side="live", workflows=1, completed=1, within={}, p=[0.3], tasks=8, replicas=16,
               evictions=0, good_kwh=0.0, bad_kwh=0.0,
               extra={"dagman_latency": {"mean_s": 0.0}, "slot_turnaround": {"turnaround_s": 20.0}})
    settings = ReplaySettings(policies=["fixed:2"], phi=0.1, seed=0, negotiation_interval=0.0, release=None)  # type: ignore[arg-type]
    sim, bare = simulated_rows("fixed:2", plan, settings, live)
    assert sim.extra["slot_turnaround_s"] == 20.0 and sim.extra["slot_turnaround_from"] == "measured live"
    assert sim.extra["config"]["slot_turnaround"] == 20.0
    assert bare.side == NO_LATENCY and "slot_turnaround" not in bare.extra["config"]
    # Figure 1's 3 roots × 2 replicas on 3 slots: the removed losers' slots come back 20 s late
    assert sim.p[0] > bare.p[0]
    settings.slot_turnaround = 0.0  # given: overrides the measurement
    sim, _ = simulated_rows("fixed:2", plan, settings, live)
    assert sim.extra["slot_turnaround_from"] == "given" and "slot_turnaround" not in sim.extra["config"]
    assert sim.p[0] == pytest.approx(bare.p[0])


def test_the_report_names_the_measured_and_the_simulated_turnaround(tmp_path):
    from pathlib import Path

    from condor_rlrep.replay.render import write_report

    plan = ReplayPlan(source="hand", trace_start="2010-01-04T00:00:00+00:00", window_start=0.0,
                      window_seconds=600.0, compression=60.0, machines=["a", "b"], active_watts=[100.0] * 2,
                      idle_watts=[1.0] * 2, sessions=[[], []], arrivals=[0.0], task_seconds=10.0, drain_seconds=200.0)

    def row(side: str, extra: dict) -> Row:
        return Row(policy="fixed:2", side=side, workflows=1, completed=1, within={"0.1": 0.0, "0.5": 1.0, "1": 1.0,
                                                                                   "2": 1.0},
                   p=[0.3], tasks=8, replicas=16, evictions=0, good_kwh=0.001, bad_kwh=0.001, extra=extra)

    live = row("live", {"dagman_latency": {"mean_s": 2.0, "nodes": 8},
                        "slot_turnaround": {"completed": {"gaps": 85, "mean_s": 1.09},
                                            "removed": {"gaps": 40, "mean_s": 3.4}, "turnaround_s": 2.31}})
    sim = row("simulated", {"dagman_latency_s": 2.0, "slot_turnaround_s": 2.31})
    paths = write_report(tmp_path / "out", plan, {"fixed:2": [live, sim]}, {"phi": 0.1})
    text = Path(paths["md"]).read_text()
    assert ("slot turnaround 2.31 s (next start after a completion 1.09 s over 85, after a removal 3.40 s over 40), "
            "simulated 2.31 s") in text
