"""A policy's live row (from the runs' own files) and simulated row (from the simulator).

**Live.** Every workflow's instrumented DAG is read with the code behind
``status`` and ``report`` (:class:`~condor_rlrep.runreport.load.RunReader`,
:func:`~condor_rlrep.runreport.report.build_reports`): completion c(W),
replicas, evictions, good and bad energy. p(W) counts from the workflow's
arrival (the DAGMan job's submission, as the simulator's s(W) is the
arrival), so DAGMan's own start-up is part of the live makespan;
``report``'s p(W) (from the first node's start) is kept beside it as
``p_report``. A workflow not finished by the end of the replay is outside
every P.

**Simulated.** :func:`~condor_rlrep.sim.run.simulate` on the plan's own
trace (:meth:`~condor_rlrep.replay.plan.ReplayPlan.trace`): the same slots
and owner sessions, every job replaced by a Figure-1 workflow of the
compressed run times (``ReplayPlan.workflow_spec``), no reboot of its own (the plan's reboots are owner
sessions), negotiation at the pool's interval, the policy as the replay ran
it (:func:`~condor_rlrep.replay.plan.compressed_policy`) and DAGMan's
per-level latency (``SimConfig.dagman_latency``) as measured on the live
run (:func:`measure_latency`) unless one is given.

**DAGMan's latency, measured.** From each workflow's own files, per node:
its *turn*, the first submission (node log event 000) minus the moment it
became ready — its last parent's end (event 005 of the winning replica),
or for a root the DAGMan job's submission plus 0.5 s (event stamps are
whole seconds, the arrival is not: a floored stamp is 0.5 s early on
average; between two stamps the flooring cancels); and its *start*, the
first execution (event 001) minus that submission. The per-level latency
the simulator adds to every task (:func:`measure_latency`) is the mean
turn; :func:`~condor_rlrep.replay.run.simulated_rows` adds to it the *start
excess*, the mean live start minus the simulated one (which is only the
wait for a negotiation tick and a free slot): on the replay pool claim
activation, shadow and starter take ≈ 2 s more than the tick
(``sim/results/replay-figure1-seq/``), and a single replica's workflow pays
it at every level. The modelled row also places jobs as the negotiator
does (``slot-order``, the lowest free slot first): live, jobs ran almost
only on the low-numbered slots and met a third more owner evictions than
the simulator's random placement gives; slot order gives the live count.
The live row also keeps, per workflow, each node's turn + start, start and
*run excess* (its winning run's execute → terminate beyond its task's
seconds: ``node_delays``), which the modelled row replays workflow by
workflow (:func:`~condor_rlrep.replay.run.latency_workflows`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from condor_rlrep.replay.plan import ReplayPlan
from condor_rlrep.sim.metrics import P_GRID

__all__ = ["Row", "live_row", "simulated_row", "sim_policy", "measure_latency", "measured_turnaround", "NO_LATENCY"]

J_PER_KWH = 3.6e6
NO_LATENCY = "simulated, no DAGMan latency"
"""The side of the simulated row run without :attr:`SimConfig.dagman_latency` (the paper's simulator)."""


@dataclass
class Row:
    policy: str
    side: str
    """``live`` or ``simulated``."""
    workflows: int
    completed: int
    within: dict[str, float]
    """P → share of workflows with p(W) ≤ P (unfinished ones count as outside)."""
    p: list[float | None]
    tasks: int
    replicas: int
    evictions: int
    good_kwh: float
    bad_kwh: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def replicas_per_task(self) -> float:
        return self.replicas / self.tasks if self.tasks else math.nan

    @property
    def replica_kwh(self) -> float:
        return self.good_kwh + self.bad_kwh

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["replicas_per_task"] = self.replicas_per_task
        data["replica_kwh"] = self.replica_kwh
        return data


def _within(ps: list[float | None], grid: tuple[float, ...]) -> dict[str, float]:
    n = len(ps)
    return {f"{p:g}": (sum(1 for v in ps if v is not None and v <= p + 1e-9) / n if n else math.nan) for p in grid}


def live_row(policy: str, plan: ReplayPlan, record: dict[str, Any], grid: tuple[float, ...] = P_GRID) -> Row:
    """The live row of one policy's replay from its DAGs' files and ``record`` (from :func:`run_live`)."""
    from condor_rlrep.runreport.load import RunReader
    from condor_rlrep.replay.turnaround import measure_turnaround
    from condor_rlrep.runreport.report import build_reports

    origin = float(record["origin"])
    ps: list[float | None] = []
    p_report: list[float | None] = []
    tasks = replicas = evictions = completed = 0
    good = bad = 0.0
    decisions: dict[int, int] = {}
    per_dag: list[dict[str, Any]] = []
    waits: list[float] = []
    starts: list[float] = []
    levels: list[float] = []
    level_starts: list[float] = []
    node_delays: list[list[Any]] = []
    edges = plan.shape()[2]
    runtimes = {name: float(node.runtime or 0.0) for name, node in plan.dag_workflow().nodes.items()}
    for entry in record["dags"]:
        dag = Path(entry["dag"])
        try:
            data = RunReader(str(dag)).read()
            reports = build_reports(data)
        except Exception as err:  # a DAG that never started leaves no run to read: outside every P
            ps.append(None)
            p_report.append(None)
            per_dag.append({"dag": str(dag), "error": str(err)})
            continue
        report = reports[-1] if reports else None
        p = None
        if report is not None and report.finished and report.completion is not None:
            makespan = report.completion - (origin + float(entry["submitted"]))
            p = makespan / report.critical_path_s - 1.0
            completed += 1
        ps.append(p)
        p_report.append(None if report is None else report.p_w)
        if report is not None:
            named: list[tuple[str, float, float]] = []
            turns, begins, both, both_starts = _ready_waits(report, origin + float(entry["submitted"]), edges, named)
            delays = _node_delays(report, named, runtimes)
            if delays:
                node_delays.append([float(entry.get("arrival", entry["submitted"])), delays])
            waits.extend(turns)
            starts.extend(begins)
            levels.extend(both)
            level_starts.extend(both_starts)
            for node in report.nodes:
                tasks += 1
                if node.decision_id is not None:
                    decisions[node.decision_id] = decisions.get(node.decision_id, 0) + 1
            replicas += report.replicas
            evictions += report.evictions
            good += report.good_energy_j
            bad += report.bad_energy_j
        per_dag.append({"dag": str(dag), "p": p, "p_report": p_report[-1],
                        "replicas": None if report is None else report.replicas,
                        "evictions": None if report is None else report.evictions})
    return Row(policy=policy, side="live", workflows=len(record["dags"]), completed=completed,
               within=_within(ps, grid), p=ps, tasks=tasks, replicas=replicas, evictions=evictions,
               good_kwh=good / J_PER_KWH, bad_kwh=bad / J_PER_KWH,
               extra={"p_report": p_report, "dags": per_dag, "decisions_reported_twice":
                      sorted(k for k, v in decisions.items() if v > 1),
                      "unfinished_removed": record.get("unfinished", []), "pool_up": record.get("pool_up"),
                      "dagman_latency": dict(_latency_summary(waits, starts),
                                             turn_plus_start=[round(v, 3) for v in levels],
                                             start_of_turn_plus_start=[round(v, 3) for v in level_starts]),
                      "node_delays": node_delays,
                      "slot_turnaround": measure_turnaround([Path(e["dag"]) for e in record["dags"]], plan, origin)})


def _ready_waits(report: Any, arrival: float, edges: Any = None,
                 named: list[tuple[str, float, float]] | None = None,
                 ) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per node: seconds from becoming ready to its first submission, and
    from that submission to its first execution (module docstring); and,
    for the nodes where both are known, their sum and (same order) the
    start; ``edges`` of the workflow (default: Figure 1's). ``named``, when
    given, gets ``(node, sum, start)`` of those nodes too."""
    from condor_rlrep.sim.workflows import FIGURE1_EDGES

    if edges is None:
        edges = FIGURE1_EDGES
    first: dict[str, Any] = {}
    for node in report.nodes:
        if node.node not in first:
            first[node.node] = node
    began: dict[str, float] = {}
    for bar in getattr(report, "bars", ()):
        if bar.node in first and first[bar.node].cluster in (None, bar.cluster):
            began[bar.node] = min(began.get(bar.node, bar.start), bar.start)
    parents: dict[str, list[str]] = {}
    for parent, child in edges:
        parents.setdefault(child, []).append(parent)
    turns: list[float] = []
    starts: list[float] = []
    both: list[float] = []
    both_starts: list[float] = []
    for name, node in first.items():
        if node.submit_time is None:
            continue
        start = began[name] - node.submit_time if name in began else None
        if start is not None:
            starts.append(start)
        mine = parents.get(name)
        turn = None
        if not mine:
            turn = node.submit_time + 0.5 - arrival
        else:
            ends = [first[p].finish_time for p in mine if p in first]
            if len(ends) == len(mine) and all(e is not None for e in ends):
                turn = node.submit_time - max(ends)
        if turn is not None:
            turns.append(turn)
            if start is not None:
                both.append(turn + start)
                both_starts.append(start)
                if named is not None:
                    named.append((name, turn + start, start))
    return turns, starts, both, both_starts


def _node_delays(report: Any, named: list[tuple[str, float, float]],
                 runtimes: dict[str, float]) -> list[list[Any]]:
    """``[node, latency, after, run excess]`` of the nodes of ``named``
    (``(node, turn + start, start)``) whose winning run is known: the run
    excess is how much longer that run took (execute to terminate) than
    its task's seconds, ≥ 0 (whole-second stamps: an integral task never
    shows less). What :attr:`SimConfig.latency_workflows` takes per node."""
    first_cluster: dict[str, Any] = {}
    for node in report.nodes:
        first_cluster.setdefault(node.node, node.cluster)
    won: dict[str, float] = {}
    for bar in getattr(report, "bars", ()):
        if bar.winner and bar.end is not None and first_cluster.get(bar.node) in (None, bar.cluster):
            won.setdefault(bar.node, bar.end - bar.start)
    out = []
    for name, latency, start in named:
        if name in won:
            latency = round(max(0.0, latency), 3)  # a root's floored stamp can put it a fraction before its arrival
            out.append([name, latency, min(latency, round(max(0.0, start), 3)),
                        round(max(0.0, won[name] - runtimes.get(name, 0.0)), 3)])
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2.0


def _latency_summary(turns: list[float], starts: list[float] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {"mean_s": sum(turns) / len(turns) if turns else None, "median_s": _median(turns) if turns else None,
            "nodes": len(turns), "start_median_s": _median(list(starts)) if starts else None,
            "start_mean_s": sum(starts) / len(starts) if starts else None, "starts": len(starts)}


def measure_latency(live: Row) -> float | None:
    """DAGMan's per-level latency of a live row for the simulator: the mean
    turn (module docstring); None when nothing was measured."""
    summary = live.extra.get("dagman_latency") or {}
    turn = summary.get("mean_s")
    return None if turn is None else max(0.0, float(turn))


def measured_turnaround(live: Row) -> float | None:
    """The slot turnaround of a live row for the simulator
    (:mod:`condor_rlrep.replay.turnaround`); None when nothing was measured."""
    value = (live.extra.get("slot_turnaround") or {}).get("turnaround_s")
    return None if value is None else float(value)


def sim_policy(policy: str) -> str:
    """The simulator's name for a live policy (``agent`` is the bandit over at most 3)."""
    return "rl:3" if policy == "agent" else policy


def simulated_row(policy: str, plan: ReplayPlan, *, phi: float, seed: int, negotiation_interval: float,
                  dagman_latency: float = 0.0, slot_turnaround: float = 0.0, side: str = "simulated",
                  machine_choice: str = "random", latency_samples: tuple[float, ...] = (),
                  start_samples: tuple[float, ...] = (), latency_workflows: tuple[Any, ...] = (),
                  latency_neighbours: int = 1, grid: tuple[float, ...] = P_GRID) -> Row:
    from condor_rlrep.replay.plan import compressed_policy
    from condor_rlrep.sim.config import SimConfig
    from condor_rlrep.sim.run import simulate

    extra: dict[str, Any] = {}
    if policy == "agent":
        from condor_rlrep.instrument import LIVE_EPSILON_HIGH

        extra["epsilon_high"] = LIVE_EPSILON_HIGH
    config = SimConfig(workflows=(plan.workflow_spec(),), fraction=1.0,
                       policy=sim_policy(compressed_policy(policy, plan.compression)), phi=phi, seed=seed,
                       negotiation_interval=negotiation_interval, dagman_latency=dagman_latency,
                       dagman_latency_samples=latency_samples, dagman_start_samples=start_samples,
                       latency_workflows=latency_workflows, latency_neighbours=latency_neighbours,
                       slot_turnaround=slot_turnaround, machine_choice=machine_choice, reboot_hour=None,
                       **extra)
    result = simulate(plan.trace(), config)
    ps = [None if math.isnan(v) else float(v) for v in result.wf_p]
    return Row(policy=policy, side=side, workflows=result.workflows, completed=result.completed,
               within=_within(ps, grid), p=ps, tasks=int(len(result.tasks["submit"])),
               replicas=int(result.tasks["replicas"].sum()) if len(result.tasks["replicas"]) else 0,
               evictions=int(result.wf_evictions.sum()),
               good_kwh=float(result.wf_good_j.sum()) / J_PER_KWH, bad_kwh=float(result.wf_bad_j.sum()) / J_PER_KWH,
               extra={"config": config.to_dict(), "start_wait_mean_s": _sim_start_wait(result, plan)})


def _sim_start_wait(result: Any, plan: ReplayPlan) -> float | None:
    """Mean seconds from a simulated task's submission to its winning run's
    start, over tasks no owner interrupted (finish − submit − run time): the
    simulator's side of the live *start*."""
    wf = plan.dag_workflow()
    names = result.task_names[0]
    t = result.tasks
    waits = [float(f - s - float(wf.nodes[names[int(n)]].runtime or 0.0))
             for n, s, f, e in zip(t["node"], t["submit"], t["finish"], t["evictions"])
             if e == 0 and not math.isnan(f)]  # finished (in time or late), never interrupted
    return sum(waits) / len(waits) if waits else None
