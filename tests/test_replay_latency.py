"""The replay's side of DAGMan's latency and compression, by hand: the
policy a replay runs (model:R's prior × C), the per-level latency measured
from a run's node times, the simulated rows with and without it, and the
report's sentence naming each gap's cause."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from condor_rlrep.replay.causes import gap_causes, noise_points
from condor_rlrep.replay.plan import ReplayPlan, compressed_policy
from condor_rlrep.replay.results import NO_LATENCY, Row, _latency_summary, _node_delays, _ready_waits, measure_latency
from condor_rlrep.replay.run import ReplaySettings, latency_workflows, simulated_rows, start_samples


def test_compressed_policy_scales_only_a_model_prior():
    assert compressed_policy("model:3", 60.0) == "model:3,prior=7.5"
    assert compressed_policy("model:2,target=0.9", 240.0) == "model:2,target=0.9,prior=30"
    assert compressed_policy("model:3,prior=1", 60.0) == "model:3,prior=1"  # the user's own prior is kept
    assert compressed_policy("model:3", 1.0) == "model:3"
    for policy in ("single", "fixed:2", "agent", "rl:3"):
        assert compressed_policy(policy, 60.0) == policy


def _node(name: str, submit: float, finish: float) -> SimpleNamespace:
    return SimpleNamespace(node=name, submit_time=submit, finish_time=finish, cluster=None)


def test_ready_waits_of_a_figure1_run_by_hand():
    # arrival at 100.2; roots submitted at the stamps 102 (+0.5: 2.3 s), 102, 103;
    # A ends 135, B 136, C 137; D (parent A) at 138: 3; E (A, B) at 139: 3;
    # F (C, D) — D ends 171 — at 175: 4; G (D, E: E ends 172) at 174: 2; H (F, G: 207, 206) at 210: 3.
    nodes = [_node("A", 102, 135), _node("B", 102, 136), _node("C", 103, 137), _node("D", 138, 171),
             _node("E", 139, 172), _node("F", 175, 207), _node("G", 174, 206), _node("H", 210, 242),
             _node("A", 150, 160)]  # a second attempt of A: the first one counts
    # first executions: A 2 s after its submission (an evicted first run, its rerun later), B 3, C 3,
    # D 4, E 10 (queued behind a busy slot), F 3, G 5, H 1; starts sorted 1 2 3 3 3 4 5 10: median 3
    bar = lambda node, start: SimpleNamespace(node=node, cluster=1, start=start)  # noqa: E731
    bars = [bar("A", 104), bar("A", 120), bar("B", 105), bar("C", 106), bar("D", 142), bar("E", 149),
            bar("F", 178), bar("G", 179), bar("H", 211)]
    turns, starts, both, both_starts = _ready_waits(SimpleNamespace(nodes=nodes, bars=bars), 100.2)
    assert sorted(turns) == pytest.approx(sorted([2.3, 2.3, 3.3, 3, 3, 4, 2, 3]))
    assert sorted(starts) == [1, 2, 3, 3, 3, 4, 5, 10]
    # turn + start of each node: A 2.3 + 2, B 2.3 + 3, C 3.3 + 3, D 3 + 4, E 3 + 10, F 4 + 3, G 2 + 5, H 3 + 1
    assert sorted(both) == pytest.approx([4, 4.3, 5.3, 6.3, 7, 7, 7, 13])
    # and each sum's start, in the same order
    assert sorted((s, round(b, 6)) for s, b in zip(both_starts, both)) == [
        (1, 4), (2, 4.3), (3, 5.3), (3, 6.3), (3, 7), (4, 7), (5, 7), (10, 13)]
    summary = _latency_summary(turns, starts)
    assert summary["nodes"] == 8 and summary["mean_s"] == pytest.approx(22.9 / 8)
    assert summary["start_median_s"] == 3.0 and summary["start_mean_s"] == pytest.approx(31 / 8)
    row = Row(policy="single", side="live", workflows=1, completed=1, within={}, p=[0.1], tasks=8, replicas=8,
              evictions=0, good_kwh=0.0, bad_kwh=0.0, extra={"dagman_latency": summary})
    assert measure_latency(row) == pytest.approx(22.9 / 8)  # the mean turn; the start is the simulator's own
    assert measure_latency(Row(**{**row.__dict__, "extra": {}})) is None


def _plan() -> ReplayPlan:
    # three slots without owners, one workflow at 0 of 10-s tasks: CR = 40 s
    return ReplayPlan(source="hand", trace_start="2010-01-04T00:00:00+00:00", window_start=0.0, window_seconds=600.0,
                      compression=192.0, machines=["a", "b", "c"], active_watts=[100.0] * 3, idle_watts=[1.0] * 3,
                      sessions=[[], [], []], arrivals=[0.0], task_seconds=10.0, drain_seconds=200.0)


def test_the_simulated_rows_with_the_measured_latency_and_without():
    # p(W) = 4 L / CR: L = 2.5 s → 0.25 (outside 0.1, within 0.5); without latency 0. No owner, three
    # free slots, immediate matching: every simulated start waits 0 s
    live = Row(policy="single", side="live", workflows=1, completed=1, within={}, p=[0.3], tasks=8, replicas=8,
               evictions=0, good_kwh=0.0, bad_kwh=0.0, extra={"dagman_latency": {"mean_s": 2.5, "median_s": 2.0,
                                                                                  "nodes": 8, "start_median_s": 0.5}})
    settings = ReplaySettings(policies=["single"], phi=0.1, seed=0, negotiation_interval=0.0, release=None)  # type: ignore[arg-type]
    sim, bare = simulated_rows("single", _plan(), settings, live)
    assert sim.side == "simulated" and bare.side == NO_LATENCY
    assert sim.p == [pytest.approx(0.25)] and bare.p == [pytest.approx(0.0)]
    assert sim.within["0.1"] == 0.0 and sim.within["0.5"] == 1.0 and bare.within["0.1"] == 1.0
    assert sim.extra["dagman_latency_s"] == 2.5 and sim.extra["dagman_latency_from"] == "measured live"
    assert sim.extra["start_wait_mean_s"] == pytest.approx(0.0, abs=1e-9)
    settings.dagman_latency = 5.0  # given: overrides the measurement
    sim, _ = simulated_rows("single", _plan(), settings, live)
    assert sim.p == [pytest.approx(0.5)] and sim.extra["dagman_latency_from"] == "given"


def test_the_start_excess_is_added_to_a_measured_latency_and_slot_order_places_the_modelled_row():
    # live starts took 3 s on average, the simulated ones 0 s (free slots, immediate matching): the modelled
    # latency is the turn 2.5 s + 3 s → p(W) = 4 × 5.5 / 40 = 0.55; the paper's row keeps random placement
    live = Row(policy="single", side="live", workflows=1, completed=1, within={}, p=[0.6], tasks=8, replicas=8,
               evictions=0, good_kwh=0.0, bad_kwh=0.0,
               extra={"dagman_latency": {"mean_s": 2.5, "start_mean_s": 3.0, "nodes": 8}})
    settings = ReplaySettings(policies=["single"], phi=0.1, seed=0, negotiation_interval=0.0, release=None)  # type: ignore[arg-type]
    sim, bare = simulated_rows("single", _plan(), settings, live)
    assert sim.p == [pytest.approx(0.55)] and bare.p == [pytest.approx(0.0)]
    assert sim.extra["turn_s"] == 2.5 and sim.extra["start_excess_s"] == pytest.approx(3.0)
    assert sim.extra["dagman_latency_s"] == pytest.approx(5.5)
    assert sim.extra["config"]["machine_choice"] == "slot-order" and bare.extra["config"]["machine_choice"] == "random"
    # a live start no longer than the simulated one adds nothing; a given latency is the whole latency
    live.extra["dagman_latency"]["start_mean_s"] = 0.0
    assert simulated_rows("single", _plan(), settings, live)[0].extra["start_excess_s"] == 0.0
    live.extra["dagman_latency"]["start_mean_s"] = 3.0
    settings.dagman_latency = 1.0
    sim, _ = simulated_rows("single", _plan(), settings, live)
    assert sim.p == [pytest.approx(0.1)] and sim.extra["start_excess_s"] == 0.0


def test_each_simulated_task_draws_its_latency_from_the_live_nodes():
    # every live node took 5.5 s (turn + start) and the simulated start is 0: every task's latency is 5.5 s,
    # p(W) = 4 × 5.5 / 40 as with the mean; with 0 s and 11 s the mean is the same but levels differ
    live = Row(policy="single", side="live", workflows=1, completed=1, within={}, p=[0.6], tasks=8, replicas=8,
               evictions=0, good_kwh=0.0, bad_kwh=0.0,
               extra={"dagman_latency": {"mean_s": 2.5, "start_mean_s": 3.0, "nodes": 8,
                                         "turn_plus_start": [5.5] * 8}})
    settings = ReplaySettings(policies=["single"], phi=0.1, seed=0, negotiation_interval=0.0, release=None)  # type: ignore[arg-type]
    sim, _ = simulated_rows("single", _plan(), settings, live)
    assert sim.p == [pytest.approx(0.55)] and sim.extra["latency_samples"] == 8
    assert sim.extra["config"]["dagman_latency_samples"] == [5.5] * 8
    live.extra["dagman_latency"]["turn_plus_start"] = [0.0, 11.0] * 4
    spread = [simulated_rows("single", _plan(), ReplaySettings(policies=["single"], phi=0.1, seed=seed,
                                                               negotiation_interval=0.0, release=None),  # type: ignore[arg-type]
                             live)[0].p[0] for seed in range(12)]
    # each task draws 0 or 11 s: the workflow's p(W) depends on the draws (from 0 to 4 levels of 11 s over the
    # 40-s critical path, plus a wait for one of the three slots), where the mean gives every seed 0.55
    assert len({round(v, 6) for v in spread}) > 1 and min(spread) >= 0.0 and max(spread) <= 44 / 40 + 0.5
    # the same seed draws the same latencies
    assert simulated_rows("single", _plan(), settings, live)[0].p == simulated_rows("single", _plan(), settings, live)[0].p


def _row(side: str, within: dict[str, float], p: list[float | None], evictions: int = 3, replicas: int = 80,
         **extra) -> Row:
    return Row(policy="single", side=side, workflows=10, completed=10, within=within, p=p, tasks=80,
               replicas=replicas, evictions=evictions, good_kwh=0.07, bad_kwh=0.0, extra=extra)


def test_noise_is_one_workflow_or_five_points():
    assert noise_points(10) == 10.0 and noise_points(200) == 5.0 and noise_points(20) == 5.0


def test_a_gap_the_latency_explains_and_one_it_does_not():
    cr = 128.0
    live = _row("live", {"0.1": 0.0, "0.5": 0.5}, [0.2] * 10)
    sim = _row("simulated", {"0.1": 0.0, "0.5": 1.0}, [0.15] * 10, dagman_latency_s=2.0,
               dagman_latency_from="measured live")
    bare = _row(NO_LATENCY, {"0.1": 0.3, "0.5": 1.0}, [0.0] * 10)
    lines = gap_causes("single", [live, sim, bare], cr)
    assert len(lines) == 2
    # within 0.1: all −30 points explained by the latency (2 s × 4 / 128 s = +0.0625)
    assert lines[0].startswith("within 0.1: live 0.0 %, simulated 0.0 % (30.0 % without DAGMan latency)")
    assert "+0.062 on p(W)), the negotiator's slot order and the slot turnaround — accounts for -30.0 points" \
        in lines[0]
    assert "the remaining +0.0 points are within noise (one workflow = 10 points)" in lines[0]
    # within 0.5: −50 points left, the per-level time not modelled: (0.2 − 0.15)·128/4 = +1.60 s
    assert "the remaining -50.0 points are beyond noise" in lines[1]
    assert "+1.60 s per level more than simulated" in lines[1]
    assert "evicted" not in lines[1] and "replicas/task" not in lines[1] and "waited" not in lines[1]
    # a live start longer than the simulated one is named, with both means
    live.extra["dagman_latency"] = {"start_mean_s": 6.5}
    sim.extra["start_wait_mean_s"] = 1.0
    assert "live jobs waited 6.5 s on average from submission to their first start, simulated ones 1.0 s" in \
        gap_causes("single", [live, sim, bare], cr)[1]


def test_evictions_replicas_and_energy_are_named_when_they_differ():
    live = _row("live", {"0.1": 0.0, "0.5": 0.2}, [1.0] * 10, evictions=12, replicas=160)
    sim = _row("simulated", {"0.1": 0.0, "0.5": 0.8}, [0.3] * 10, evictions=4, replicas=80)
    sim.good_kwh = 0.05
    lines = gap_causes("fixed:2", [live, sim], 128.0)
    assert "owners evicted 12 runs live and 4 simulated" in lines[0]
    assert "2.00 replicas/task live and 1.00 simulated" in lines[0]
    assert lines[-1].startswith("replica energy: live 0.0700 kWh vs simulated 0.0500 kWh (+40.0 %)")


def test_rows_within_noise_need_no_sentence():
    live = _row("live", {"0.1": 0.1, "0.5": 0.5}, [0.2] * 10)
    sim = _row("simulated", {"0.1": 0.2, "0.5": 0.5}, [0.2] * 10)
    assert gap_causes("single", [live, sim], 128.0) == []


def test_a_montage_plan_submits_the_25_task_montage_and_simulates_it():
    from condor_rlrep.sim.workflows import montage_workflow

    plan = _plan()
    plan.workflow, plan.compression, plan.machines = "montage", 60.0, [f"m{i}" for i in range(9)]
    plan.active_watts, plan.idle_watts, plan.sessions = [100.0] * 9, [1.0] * 9, [[] for _ in range(9)]
    plan.drain_seconds = 600.0
    # the built-in montage at 120/60 = 2× the generator's seconds: CR = 2 × 80.97 s over 9 levels
    # (mProjectPP 13.59, mDiffFit 10.59, mConcatFit 0.08·9, mBgModel 0.13·9, mBackground 10.74,
    # mImgTbl 1.39, mAdd 30.11, mShrink 12.21, mJPEG 0.45)
    cr, levels, edges = plan.shape()
    assert cr == pytest.approx(2 * 80.97) and levels == 9 and len(plan.dag_workflow().nodes) == 25
    assert edges == sorted(montage_workflow().edges)
    assert plan.workflow_spec() == "montage@2.0" and plan.to_json()["workflow"] == "montage"
    live = Row(policy="single", side="live", workflows=1, completed=1, within={}, p=[0.3], tasks=25, replicas=25,
               evictions=0, good_kwh=0.0, bad_kwh=0.0, extra={"dagman_latency": {"mean_s": 2.0, "nodes": 25}})
    settings = ReplaySettings(policies=["single"], phi=0.1, seed=0, negotiation_interval=0.0, release=None)  # type: ignore[arg-type]
    sim, bare = simulated_rows("single", plan, settings, live)
    # nine levels of 2 s each on a free pool: p = 18 / CR; without latency every task starts when ready
    assert sim.p == [pytest.approx(18.0 / cr)] and bare.p == [pytest.approx(0.0, abs=1e-12)]
    assert sim.tasks == 25


def test_a_figure1_plan_reads_as_before_and_a_bad_workflow_is_refused():
    from _simutil import make_trace
    from condor_rlrep.errors import InputError
    from condor_rlrep.replay.plan import make_plan

    trace = make_trace(machines=4, length=20_000.0, job_submit=[100.0, 200.0, 300.0], job_duration=[60.0] * 3)
    plan = make_plan(trace, slots=2, window_start=0.0, window_seconds=3600.0, compression=60.0, workflows=2)
    assert "workflow" not in plan.to_json()  # the plan.json of a replay made before the choice still matches
    assert plan.drain_seconds == pytest.approx(3 * 4 * 32.0 + 60.0)
    montage = make_plan(trace, slots=2, window_start=0.0, window_seconds=3600.0, compression=60.0, workflows=2,
                        workflow="montage")
    assert montage.drain_seconds == pytest.approx(3 * 2 * 80.97 + 60.0)
    assert ReplayPlan.from_json(montage.to_json()).workflow == "montage"
    with pytest.raises(InputError, match="workflow must be one of figure1, montage"):
        make_plan(trace, slots=2, window_start=0.0, window_seconds=3600.0, compression=60.0, workflows=2,
                  workflow="cybershake")


def test_the_modelled_row_decides_before_the_live_start_wait():
    # each live node: turn 2.5 s + start 3 s; the simulated start is 0 s, so each task's latency is 5.5 s of
    # which 3 s come after the decision (the PRE hook decides before the replicas wait to be matched)
    live = Row(policy="single", side="live", workflows=1, completed=1, within={}, p=[0.6], tasks=8, replicas=8,
               evictions=0, good_kwh=0.0, bad_kwh=0.0,
               extra={"dagman_latency": {"mean_s": 2.5, "start_mean_s": 3.0, "nodes": 8,
                                         "turn_plus_start": [5.5] * 8, "start_of_turn_plus_start": [3.0] * 8}})
    settings = ReplaySettings(policies=["single"], phi=0.1, seed=0, negotiation_interval=0.0, release=None)  # type: ignore[arg-type]
    sim, _ = simulated_rows("single", _plan(), settings, live)
    assert sim.p == [pytest.approx(0.55)]  # the makespan is that of the whole latency
    assert sim.extra["config"]["dagman_start_samples"] == [3.0] * 8 and sim.extra["decided_before_start"]
    # a start longer than its latency sample is cut to the sample;
    # a row rescored from before the starts were kept decides at submission as before
    assert start_samples(live, sim, (2.0,) * 8) == (2.0,) * 8
    del live.extra["dagman_latency"]["start_of_turn_plus_start"]
    sim, _ = simulated_rows("single", _plan(), settings, live)
    assert "dagman_start_samples" not in sim.extra["config"] and not sim.extra["decided_before_start"]


def test_node_delays_pair_each_nodes_latency_with_its_winners_run_excess():
    # roots of a workflow arriving at 100.2: A submitted at the stamp 102 (turn 2.3 s), first run 104 (start
    # 2 s) evicted, its rerun won 120 → 133 (a 10-s task: 3 s excess); B at 102 (2.3 s), runs 105 → 115 (the
    # excess 0), a loser of B 105 → 110; C at 99 — its floored stamp before the arrival: turn −0.7 s, start
    # 1 s, latency cut to 0 — and no winner (still running): left out
    nodes = [_node("A", 102, 133), _node("B", 102, 115), _node("C", 99, None)]
    bar = lambda node, start, end, winner: SimpleNamespace(node=node, cluster=1, start=start, end=end,  # noqa: E731
                                                           winner=winner)
    bars = [bar("A", 104, 110, False), bar("A", 120, 133, True), bar("B", 105, 115, True),
            bar("B", 105, 110, False), bar("C", 100, None, False)]
    report = SimpleNamespace(nodes=nodes, bars=bars)
    named: list = []
    _ready_waits(report, 100.2, None, named)
    assert [(n, round(lat, 6), s) for n, lat, s in named] == [("A", 4.3, 2), ("B", 5.3, 3), ("C", 0.3, 1)]
    assert _node_delays(report, named, {"A": 10.0, "B": 10.0, "C": 10.0}) == [["A", 4.3, 2, 3.0],
                                                                                ["B", 5.3, 3, 0.0]]
    # a latency below 0 is cut to 0 and its start part with it
    assert _node_delays(report, [("B", -0.5, 1.0)], {"B": 10.0}) == [["B", 0.0, 0.0, 0.0]]


def test_the_modelled_row_replays_each_live_workflows_node_delays():
    # the live workflow's every node: turn 2.5 s + start 3 s, its winner 1 s longer than the 10-s task. The
    # simulated workflow takes them node for node and matches at once (the live start holds the match):
    # each of the 4 levels takes 5.5 + 10 + 1 s → makespan 66 s, p(W) = 26 / 40
    delays = [[0.0, [[n, 5.5, 3.0, 1.0] for n in "ABCDEFGH"]]]
    live = Row(policy="single", side="live", workflows=1, completed=1, within={}, p=[0.6], tasks=8, replicas=8,
               evictions=0, good_kwh=0.0, bad_kwh=0.0,
               extra={"dagman_latency": {"mean_s": 2.5, "start_mean_s": 3.0, "nodes": 8,
                                         "turn_plus_start": [5.5] * 8, "start_of_turn_plus_start": [3.0] * 8},
                      "node_delays": delays})
    settings = ReplaySettings(policies=["single"], phi=0.1, seed=0, negotiation_interval=2.0, release=None)  # type: ignore[arg-type]
    sim, bare = simulated_rows("single", _plan(), settings, live)
    assert sim.p == [pytest.approx(26 / 40)]
    assert sim.extra["config"]["negotiation_interval"] == 0.0 and bare.extra["config"]["negotiation_interval"] == 2.0
    assert sim.extra["config"]["latency_workflows"] == [[0.0, [["A", 5.5, 3.0, 1.0]] + [[n, 5.5, 3.0, 1.0]
                                                                                         for n in "BCDEFGH"]]]
    assert sim.extra["config"]["latency_neighbours"] == 1 and "dagman_latency_samples" not in sim.extra["config"]
    assert sim.extra["latency_workflows"] == 1 and sim.extra["run_excess_s"] == 1.0
    assert sim.extra["dagman_latency_s"] == 5.5 and sim.extra["start_excess_s"] == 0.0
    assert sim.extra["start_wait_mean_s"] is None  # finish − submit − 10 s would count the run excess as a wait
    assert latency_workflows(live) == ((0.0, tuple((n, 5.5, 3.0, 1.0) for n in "ABCDEFGH")),)
    # a given latency is the whole latency, as before: the delays are not used
    settings.dagman_latency = 1.0
    sim, _ = simulated_rows("single", _plan(), settings, live)
    assert "latency_workflows" not in sim.extra["config"] and sim.extra["config"]["dagman_latency"] == 1.0
