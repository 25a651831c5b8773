"""What the replicas of a finished run did: the model of ``condor-rlrep report``.

:func:`build_reports` makes one :class:`RunReport` per run of the DAG (a
run is what ``run.json`` calls one: a first DAGMan and the rescues that
continue it; a fresh submission after a success is a new run), each with

* per attempt of each node (:class:`NodeReport`): replicas decided and seen,
  the winner with its host and slot, evictions survived, good and bad
  energy, σ and the task's own deadline as POST judged them
  (:func:`condor_rlrep.outcome.evaluate`, s_t = the cluster's submit event),
  how the count was chosen, the outcome and the reward the store recorded;
* per run: makespan c(W) − s(W) against CR(W) and the deadline
  (1+φ)·CR(W), p(W) = (c(W) − s(W))/CR(W) − 1 (eq. 1), energy of the
  replicas against a single-replica run's estimate Σ e_t · W, the nodes that
  failed with the tail of their stderr;
* every replica invocation as a bar on its slot (:class:`Bar`) for the
  Gantt chart, and the agent's policy in the states the run visited
  (:class:`PolicyRow`).

Energies are joules at the instrumented DAG's power table (hooks.json).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from condor_rlrep.runreport.attempts import Attempt
from condor_rlrep.runreport.load import RunData
from condor_rlrep.rundir.layout import REAPER_NODE
from condor_rlrep.runreport.status import finite, rescue_done

__all__ = ["NodeReport", "Bar", "PolicyRow", "RunReport", "build_reports", "STDERR_TAIL_LINES"]

STDERR_TAIL_LINES = 20


@dataclass
class Bar:
    """One invocation of one replica, on its slot."""

    node: str
    cluster: int
    proc: int
    slot: str
    host: str | None
    start: float
    end: float
    ended_by: str
    winner: bool


@dataclass
class NodeReport:
    node: str
    attempt: int
    """1 for the node's first attempt in the run, 2 for its retry or rescue, …"""
    dagid: str | None
    retry: int | None
    chosen: str | None
    replicas: int
    procs: int
    cluster: int | None
    decision_id: int | None
    phi_prime: float | None
    estimate_s: float | None
    submit_time: float | None
    finish_time: float | None
    task_deadline: float | None
    duration_s: float | None
    winner: int | None
    winner_host: str | None
    winner_slot: str | None
    evictions: int
    removed: int
    failed_replicas: int
    good_energy_j: float | None
    bad_energy_j: float | None
    sigma: float | None
    outcome: str
    """``success`` (in time), ``late`` (completed after the task deadline),
    ``failed`` (no replica succeeded), ``removed`` (the DAG was removed),
    ``running``, ``no decision`` (not decided: judged by POST's exit only)."""
    reward: float | None
    """The reward :func:`~condor_rlrep.outcome.evaluate` gives this attempt."""
    reward_recorded: float | None
    """What the store holds for the decision (None: pending, pruned or no store)."""
    post_code: int | None
    stderr: str | None = None
    stderr_tail: list[str] = field(default_factory=list)
    stderr_note: str | None = None


@dataclass
class PolicyRow:
    """The agent's estimates in one state the run visited."""

    state: int
    hour: int
    phi_bin: int
    phi_range: str
    q: list[float]
    n: list[int]
    greedy: int
    taken: list[int]
    """Replica counts this run's decisions chose in this state."""


@dataclass
class RunReport:
    dag: str
    run_id: str | None
    dagids: list[str]
    workflow_start: float | None
    completion: float | None
    makespan_s: float | None
    critical_path_s: float
    phi: float
    deadline: float | None
    p_w: float | None
    met_deadline: bool | None
    finished: bool
    """Every node of the DAG ended successfully in this run."""
    nodes: list[NodeReport]
    bars: list[Bar]
    policy: list[PolicyRow]
    good_energy_j: float
    bad_energy_j: float
    single_replica_estimate_j: float
    replicas: int
    evictions: int
    removed: int
    watts_default: float
    failed: list[NodeReport]
    warnings: list[str] = field(default_factory=list)

    @property
    def replica_energy_j(self) -> float:
        return self.good_energy_j + self.bad_energy_j

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["replica_energy_j"] = self.replica_energy_j
        return finite(data)


def build_reports(data: RunData, *, store: Any = None, run_ids: Iterable[str] | None = None,
                  tail_lines: int = STDERR_TAIL_LINES) -> list[RunReport]:
    """One report per run (``run_ids``: only those, in that order).

    ``store``: an open :class:`~condor_rlrep.store.interface.AgentStore`
    (or None) for the recorded rewards and the policy.
    """
    wanted = list(run_ids) if run_ids is not None else data.run_ids()
    known = set(data.run_ids())
    missing = [r for r in wanted if r not in known]
    if missing:
        from condor_rlrep.runreport.sources import RunInputError

        raise RunInputError(f"no run {', '.join(missing)} of this DAG (runs: {', '.join(sorted(known)) or 'none'})",
                            path=data.files.dag)
    agent = _agent(store)
    records = _records(store, data)
    return [_run_report(data, run_id, agent, records, store, tail_lines) for run_id in wanted]


def _agent(store: Any) -> Any:
    if store is None:
        return None
    return store.load_agent(rng=0)


def _records(store: Any, data: RunData) -> dict[int, Any]:
    if store is None:
        return {}
    from condor_rlrep.errors import StoreError

    out: dict[int, Any] = {}
    for items in data.attempts.values():
        for attempt in items:
            if attempt.decision_id is None:
                continue
            try:
                out[attempt.decision_id] = store.decision(attempt.decision_id)
            except (StoreError, KeyError, LookupError):
                continue  # pruned: the journal still has the outcome
    return out


def _run_report(data: RunData, run_id: str, agent: Any, records: dict[int, Any], store: Any,
                tail_lines: int) -> RunReport:
    settings = data.files.settings
    power = settings.power_table()
    failure_reward = float(store.config.failure_reward) if store is not None else -5.0
    plan = data.plan
    phi = float(settings.phi)
    cr = float(plan.critical_path_seconds)
    start = data.run_start(run_id)
    deadline = None if start is None else start + (1.0 + phi) * cr
    nodes: list[NodeReport] = []
    bars: list[Bar] = []
    dagids: list[str] = []
    for name, items in data.attempts.items():
        if name == REAPER_NODE:
            continue
        mine = [a for a in items if a.run_id == run_id or (a.run_id is None and run_id == data.current_run)]
        for index, attempt in enumerate(mine, start=1):
            if attempt.dagid and attempt.dagid not in dagids:
                dagids.append(attempt.dagid)
            report = _node_report(attempt, index, power, failure_reward, records, data.now)
            nodes.append(report)
            bars.extend(_bars(attempt))
    nodes.sort(key=lambda n: (n.submit_time if n.submit_time is not None else math.inf, n.node, n.attempt))
    if run_id == data.current_run and data.run_record:
        dagids = [str(d) for d in data.run_record.get("dagids", [])] or dagids
    last = {}
    for report in nodes:
        last[report.node] = report
    job_nodes = [n for n, info in data.nodes.items() if info.kind != "SERVICE" and n != REAPER_NODE]
    noops = data.nodelog.noops if run_id == data.current_run else {}
    rescued = rescue_done(data) if run_id == data.current_run else set()  # done before this DAGMan (its rescue DAG)
    done = all((last[n].post_code == 0 if n in last else (n in rescued or (n in noops and noops[n].exit_code == 0)))
               for n in job_nodes)
    ends = [r.finish_time for r in nodes if r.finish_time is not None]
    ends += [noops[n].end_time for n in noops if noops[n].end_time is not None]
    completion = max(ends) if ends and done else None
    makespan = None if completion is None or start is None else completion - start
    p_w = None if makespan is None or cr <= 0 else makespan / cr - 1.0
    # the node's verdict decides (a user's POST may accept failed replicas); without one, the replicas'
    failed = [r for r in nodes if r.post_code not in (None, 0) or (r.post_code is None and r.outcome == "failed")]
    for report in failed:
        later = _later_attempts(data, report)
        if later:  # the user's error file now holds a later attempt's stderr: not this one's
            report.stderr_note = f"overwritten since by {later} later attempt(s) of {report.node}"
        else:
            _stderr(report, data, tail_lines)
    single = sum(float(plan.node(n)[0]) for n in job_nodes if _in_plan(plan, n)) * power.default_watts
    warnings = list(data.warnings)
    # a rescue moves s(W) (it resumes on schedule): what ran under the earlier DAGMan is not early
    first = _float_or((data.run_record or {}).get("first_start"), start) if run_id == data.current_run else start
    early = sorted(r.node for r in nodes if first is not None and r.submit_time is not None and r.submit_time < first)
    if early:
        warnings.append(f"{', '.join(early)} submitted before s(W), the run's first PRE (a node the plugin leaves "
                        "alone ran first): makespan and p(W) count from s(W), as the deadline does")
    visited = _policy(agent, [r for r in nodes if r.decision_id is not None], records)
    return RunReport(
        dag=data.files.dag, run_id=run_id, dagids=dagids, workflow_start=start, completion=completion,
        makespan_s=makespan, critical_path_s=cr, phi=phi, deadline=deadline, p_w=p_w,
        met_deadline=None if p_w is None else p_w <= phi + 1e-9, finished=done, nodes=nodes, bars=bars,
        policy=visited, good_energy_j=sum(r.good_energy_j or 0.0 for r in nodes),
        bad_energy_j=sum(r.bad_energy_j or 0.0 for r in nodes), single_replica_estimate_j=single,
        replicas=sum(r.procs for r in nodes), evictions=sum(r.evictions for r in nodes),
        removed=sum(r.removed for r in nodes), watts_default=power.default_watts, failed=failed,
        warnings=warnings,
    )


def _float_or(value: Any, default: float | None) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _later_attempts(data: RunData, report: NodeReport) -> int:
    """Attempts of the node (in any run) after the one ``report`` describes."""
    items = data.attempts.get(report.node, [])
    for index, attempt in enumerate(items):
        if attempt.cluster == report.cluster and attempt.dagid == report.dagid:
            return len(items) - index - 1
    return 0


def _in_plan(plan: Any, name: str) -> bool:
    try:
        plan.node(name)
    except KeyError:
        return False
    return True


def _node_report(attempt: Attempt, index: int, power: Any, failure_reward: float, records: dict[int, Any],
                 now: float) -> NodeReport:
    from condor_rlrep.outcome import evaluate, task_deadline

    history = attempt.history
    invocations = list(history.invocations) if history is not None else []
    # every removed proc, also one removed before it ran (as status counts them)
    removed = len(history.aborted | {inv.replica for inv in invocations if inv.ended_by == "removed"}) \
        if history is not None else 0
    failed_replicas = len({inv.replica for inv in invocations if inv.ended_by == "failure"})
    outcome = attempt.outcome(power, failure_reward)
    submit = attempt.submit_time if attempt.submit_time is not None else attempt.decided_at
    winner = history.winner if history is not None else None
    winner_inv = None
    if winner is not None:
        wins = [inv for inv in invocations if inv.replica == winner and inv.ended_by == "success"]
        winner_inv = min(wins, key=lambda inv: inv.end) if wins else None
    if outcome is None and invocations:  # not decided by us: energy still counts, no deadline to judge
        outcome = evaluate(invocations, submit_time=float(submit or invocations[0].start), phi_prime=math.inf,
                           estimate=0.0, replicas=max(1, len(history.procs)), power=power,
                           failure_reward=failure_reward, accepted=attempt.accepted)
        judged = False
    else:
        judged = outcome is not None
    if attempt.closed == "removed with the DAG":
        verdict = "removed"
        judged = False  # no POST judged it: the store closed it with its own estimate (nothing learnt)
    elif history is None or any(inv.ended_by == "running" for inv in invocations) and winner is None:
        verdict = "running" if attempt.post_code is None else ("failed" if attempt.post_code else "no decision")
    elif outcome is not None and outcome.completed:
        verdict = ("success" if outcome.success else "late") if judged else "no decision"
    else:
        verdict = "failed"
    record = records.get(attempt.decision_id) if attempt.decision_id is not None else None
    deadline = None
    if judged and submit is not None and attempt.phi_prime is not None and attempt.estimate is not None:
        deadline = task_deadline(float(submit), float(attempt.phi_prime), float(attempt.estimate))
    slot = None
    if winner_inv is not None and history is not None:
        slot = history.slots.get((winner_inv.replica, winner_inv.start))
    return NodeReport(
        node=attempt.node, attempt=index, dagid=attempt.dagid, retry=attempt.retry, chosen=attempt.chosen,
        replicas=attempt.replicas if attempt.decided else max(1, len(history.procs) if history else 1),
        procs=len(history.procs) if history is not None else 0, cluster=attempt.cluster,
        decision_id=attempt.decision_id, phi_prime=attempt.phi_prime, estimate_s=attempt.estimate,
        submit_time=submit, finish_time=outcome.finish_time if outcome is not None else None,
        task_deadline=deadline, duration_s=outcome.duration if outcome is not None else None,
        winner=winner, winner_host=winner_inv.host if winner_inv else None, winner_slot=slot,
        evictions=history.evictions if history is not None else 0, removed=removed, failed_replicas=failed_replicas,
        good_energy_j=outcome.good_energy_j if outcome is not None else None,
        bad_energy_j=outcome.bad_energy_j if outcome is not None else None,
        sigma=outcome.sigma if judged and outcome is not None else None, outcome=verdict,
        # a forced count (phi' <= 0) teaches nothing: no reward (docs/model.md §7)
        reward=outcome.reward if judged and outcome is not None and attempt.chosen != "forced" else None,
        reward_recorded=None if record is None else record.reward, post_code=attempt.post_code,
    )


def _bars(attempt: Attempt) -> list[Bar]:
    history = attempt.history
    if history is None:
        return []
    winner = history.winner
    won_at = None
    if winner is not None:
        won_at = min(inv.end for inv in history.invocations if inv.replica == winner and inv.ended_by == "success")
    bars = []
    for inv in history.invocations:
        slot = history.slots.get((inv.replica, inv.start)) or inv.host or "?"
        bars.append(Bar(attempt.node, history.cluster, inv.replica, slot, inv.host, inv.start, inv.end, inv.ended_by,
                        inv.replica == winner and inv.ended_by == "success" and inv.end == won_at))
    return bars


def _policy(agent: Any, decided: list[NodeReport], records: dict[int, Any]) -> list[PolicyRow]:
    if agent is None:
        return []
    space = agent.space
    taken: dict[int, list[int]] = {}
    for report in decided:
        record = records.get(report.decision_id)
        if record is None:
            continue
        taken.setdefault(int(record.state), []).append(int(record.replicas))
    rows = []
    edges = [space.p_max * k / space.n_bins for k in range(space.n_bins + 1)]
    for state in sorted(taken):
        hour, phi_bin = divmod(state, space.n_phi_bins)
        if phi_bin == 0:
            label = "φ′ ≤ 0"
        elif phi_bin > space.n_bins:
            label = f"φ′ > {edges[-1]:g}"
        else:
            label = f"{edges[phi_bin - 1]:g} < φ′ ≤ {edges[phi_bin]:g}"
        q = [float(v) for v in agent.estimates[state]]
        n = [int(v) for v in agent.counts[state]]
        greedy = int(max(range(len(q)), key=lambda i: (q[i], -i))) + 1
        rows.append(PolicyRow(state, hour, phi_bin, label, q, n, greedy, sorted(taken[state])))
    return rows


def _stderr(report: NodeReport, data: RunData, lines: int) -> None:
    """The failed node's stderr (the user's ``error`` file) and its last lines:
    only a regular file the run's owner could read (:mod:`.owner`)."""
    from condor_rlrep.runreport.owner import NotReadable, read_tail, run_owner

    owner = run_owner(data.files.context)
    path = _stderr_path(data, report.node, report.cluster, owner)
    report.stderr = path
    if path is None:
        return
    try:
        text = read_tail(path, owner)[0].decode("utf-8", "replace")
    except NotReadable as err:
        if err.errno == 13:
            report.stderr_note = f"{path}: the run's owner could not read it"
        return
    report.stderr_tail = text.splitlines()[-lines:]


def _owned_text(path: str, owner: Any) -> str:
    from condor_rlrep.runreport.owner import read_tail

    return read_tail(path, owner, 64 * 1024 * 1024)[0].decode("utf-8", "surrogateescape")


def _stderr_path(data: RunData, node: str, cluster: int | None, owner: Any = None) -> str | None:
    """Where the node's ``error`` went: read from the files of the run, as
    the owner could read them, and never running a line of the description
    (:mod:`condor_rlrep.condor.submitread`: no ``include : CMD |``)."""
    import json

    from condor_rlrep.condor.submitread import expand, submit_values
    from condor_rlrep.rundir.layout import node_vars_path

    settings = data.files.settings
    source = settings.source_dag
    if not source:
        return None
    try:
        from condor_rlrep.dag.parser import parse_dag

        workflow = parse_dag(_owned_text(str(source), owner).splitlines(), path=str(source),
                             allow_any_node_name_characters=bool(settings.allow_any_node_name_characters))
        entry = workflow.nodes.get(node)
        if entry is None or not entry.submit:
            return None
        base = os.path.dirname(os.path.abspath(str(source)))
        directory = os.path.join(base, entry.directory) if entry.directory else base
        submit_path = os.path.join(directory, entry.submit)
        text = _owned_text(submit_path, owner)
        try:
            macros = {str(k): str(v) for k, v in json.loads(_owned_text(node_vars_path(data.files.context, node),
                                                                        owner)).items()}
        except (OSError, ValueError, AttributeError):
            macros = {}
        values = {k.lower(): v for k, v in {"JOB": node, **macros}.items()}
        values.update(submit_values(text))
        number = str(cluster or 0)
        values.update({"cluster": number, "clusterid": number, "process": "0", "procid": "0"})
        if "error" not in values:
            return None
        name = expand(values["error"], values)
        if not name or name == "/dev/null":
            return None
        iwd = expand(values.get("initialdir", ""), values)
        iwd = os.path.join(directory, iwd) if iwd else directory
        return os.path.normpath(name if os.path.isabs(name) else os.path.join(iwd, name))
    except Exception:  # noqa: BLE001 - the tail is a courtesy; the verdict stands without it
        return None
