"""Where every node of an instrumented run stands: the model of ``condor-rlrep status``.

:func:`run_status` turns a :class:`~.load.RunData` into one
:class:`NodeStatus` per node of the DAG and the run's totals. A node's
state comes from its latest attempt:

* ``waiting`` — not started (a parent has not finished); ``not run`` once
  DAGMan has exited without reaching it;
* ``PRE`` — DAGMan runs its PRE script (``.dagman.out``);
* ``idle`` / ``held`` / ``running`` — its replicas are in the queue and none
  has won: running as soon as one runs, idle while none does (and none is held);
* ``won`` — a replica exited 0; its siblings are leaving the queue or POST
  has not started;
* ``POST`` — the POST script runs, or every replica has ended and DAGMan is
  about to run it;
* ``done`` / ``failed`` — POST's verdict (the 016 event, or the journal for an
  attempt of an earlier DAGMan); for a node with no POST script (a FINAL or
  a node left alone), its job's own end (DAGMan's rule: done iff no proc
  failed or was removed); ``done`` also for a node the rescue DAG that this
  DAGMan runs marks DONE (a NOOP node whose events went with the earlier
  node log); ``failed`` also for a PRE that failed, and for a node whose
  POST never ran because DAGMan exited first.

A node whose replicas are all held waits for ever, as it would without
condor-rlrep: its note, and a warning, say so and name the commands that
show why (``condor_q -hold``) and end the wait (``condor_release``).

**Slack** is the time the node leaves in hand against the workflow deadline
d = s(W) + (1+φ)·CR(W) (eq. 2), with the plan's estimates for what is still
to come: a finished node ended at f: ``d − f − max_{j∈C_t} L′_j``; a running
one, started at r, is expected to end at ``max(now, r + e_t)``; a node not yet
running at ``now + e_t``. Negative: the workflow is expected to be late by
that much along this node's path.

A queue seam (:class:`QueueState`) lets ``--schedd`` overlay the schedd's
idea of each proc (JobStatus) on the node log's; nothing here talks to a
schedd.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from condor_rlrep.runreport.attempts import Attempt
from condor_rlrep.runreport.load import RunData
from condor_rlrep.rundir.layout import REAPER_NODE
from condor_rlrep.runreport.clusters import proc_states

__all__ = ["NodeStatus", "RunStatus", "run_status", "proc_states", "STATES", "QueueState", "finite"]

STATES = ("waiting", "PRE", "idle", "held", "running", "won", "POST", "done", "failed", "not run")
_JOB_STATUS = {1: "idle", 2: "running", 3: "removed", 4: "done", 5: "held", 6: "running", 7: "idle"}

QueueState = Mapping[tuple[int, int], int]
"""(cluster, proc) → the schedd's ``JobStatus`` (1 idle, 2 running, 5 held …)."""


@dataclass
class NodeStatus:
    node: str
    kind: str
    state: str
    instrumented: bool
    attempts: int = 0
    retry: int | None = None
    chosen: str | None = None
    decided: int | None = None
    """Replicas PRE decided (None: no decision, e.g. not ours or not yet)."""
    cluster: int | None = None
    procs: int = 0
    idle: int = 0
    running: int = 0
    held: int = 0
    removed: int = 0
    evictions: int = 0
    failed_replicas: int = 0
    winner: int | None = None
    phi_prime: float | None = None
    submit_time: float | None = None
    end_time: float | None = None
    slack_s: float | None = None
    note: str | None = None


@dataclass
class RunStatus:
    dag: str
    now: float
    run_id: str | None
    dagid: str | None
    dagman: str
    """``running``, ``exited N`` or ``not started``."""
    dagman_exited_at: float | None
    workflow_start: float | None
    critical_path_s: float
    phi: float
    deadline: float | None
    nodes: list[NodeStatus]
    counts: dict[str, int] = field(default_factory=dict)
    replicas: dict[str, int] = field(default_factory=dict)
    slack_s: float | None = None
    """The least slack over the nodes: the workflow's expected time in hand."""
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values; a non-finite φ′ (a node with no work left) is null."""
        data = {key: value for key, value in self.__dict__.items() if key != "nodes"}
        data = finite(data)
        data["nodes"] = [_node_json(node) for node in self.nodes]
        return data


def _node_json(node: NodeStatus) -> dict[str, Any]:
    data = dict(node.__dict__)  # every field is a scalar
    for key in ("phi_prime", "slack_s"):
        value = data[key]
        if value is not None and not math.isfinite(value):
            data[key] = None
    return data


def finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def run_status(data: RunData, *, queue: QueueState | None = None) -> RunStatus:
    """The status of every node at ``data.now`` (see the module doc)."""
    plan = data.plan
    settings = data.files.settings
    phi = float(settings.phi)
    start = data.run_start(data.current_run)
    cr = float(plan.critical_path_seconds)
    deadline = None if start is None else start + (1.0 + phi) * cr
    session = data.session
    if session is None:
        dagman = "not started"
    elif session.exit_status is None:
        dagman = "running"
    else:
        dagman = f"exited {session.exit_status}"
    statuses: dict[str, NodeStatus] = {}
    rescued = rescue_done(data)
    estimates = plan.nodes  # every node's at once: one lookup each (``plan.node`` finds its bucket first)
    for name in _topological(data):
        if name == REAPER_NODE:  # the plugin's own SERVICE node, not the user's work
            continue
        info = data.nodes[name]
        attempts = [a for a in data.attempts.get(name, ()) if data.current_run is None or a.run_id in (None, data.current_run)]
        status = NodeStatus(name, info.kind, "waiting", info.instrumented, attempts=len(attempts))
        noop = data.nodelog.noops.get(name)
        if attempts:
            _from_attempt(status, attempts[-1], data, queue, info.has_post)
        elif name in rescued:
            status.state, status.note = "done", "done before this DAGMan (its rescue DAG says DONE)"
        elif noop is not None:
            status.submit_time, status.end_time = noop.submit_time, noop.end_time
            status.state = "done" if (noop.post_code if noop.post_code is not None else noop.exit_code) == 0 else (
                "failed" if noop.end_time is not None else "idle")
        _scripts(status, data)
        if status.state == "waiting" and dagman.startswith("exited"):
            status.state = "not run"
        elif status.state in ("won", "POST") and dagman.startswith("exited"):
            status.state = "failed"  # DAGMan will not run its POST any more: the node did not complete
            status.note = "DAGMan exited before its POST ran (a rescue DAG runs the node again)"
        elif status.state == "held":
            status.note = (f"every replica is held: DAGMan waits for ever (as without condor-rlrep); "
                           f"condor_q -hold {status.cluster} says why, condor_release {status.cluster} resumes")
        status.slack_s = _slack(status, estimates, deadline, data.now)
        statuses[name] = status
    nodes = list(statuses.values())
    counts = {state: 0 for state in STATES}
    for status in nodes:
        counts[status.state] = counts.get(status.state, 0) + 1
    replicas = {
        "decided": sum(s.decided or 0 for s in nodes),
        "idle": sum(s.idle for s in nodes),
        "running": sum(s.running for s in nodes),
        "held": sum(s.held for s in nodes),
        "removed": sum(s.removed for s in nodes),
        "evictions": sum(s.evictions for s in nodes),
    }
    slacks = [s.slack_s for s in nodes if s.slack_s is not None]
    warnings = list(data.warnings)
    held = [s for s in nodes if s.state == "held"]
    if held and dagman == "running":
        clusters = " ".join(str(s.cluster) for s in held)
        warnings.append(f"{len(held)} node(s) ({', '.join(s.node for s in held[:5])}) have every replica on hold and "
                        f"will wait for ever, as without condor-rlrep: `condor_q -hold {clusters}` shows why, "
                        f"`condor_release {clusters}` lets them run again (or `condor_rm` them to fail the node)")
    spooled = spooled_entries(data.files.context)
    if spooled:
        warnings.append(f"{spooled} outcome(s)/model update(s) wait in {data.files.context}/spool: the store could not "
                        f"take them and no hook has flushed them yet; `condor-rlrep agent flush {data.files.dag}` "
                        "records them")
    return RunStatus(
        dag=data.files.dag, now=data.now, run_id=data.current_run, dagid=data.current_dagid, dagman=dagman,
        dagman_exited_at=None if session is None else session.exited_at, workflow_start=start, critical_path_s=cr, phi=phi, deadline=deadline, nodes=nodes,
        counts={k: v for k, v in counts.items() if v}, replicas=replicas, slack_s=min(slacks) if slacks else None,
        warnings=warnings,
    )


def rescue_done(data: RunData) -> set[str]:
    """Nodes the rescue DAG that the current DAGMan runs marks DONE (the
    previous DAGMan of the same run wrote it)."""
    sessions = data.sessions
    if len(sessions) < 2 or not sessions[-2].rescue:
        return set()
    import os

    path = os.path.join(os.path.dirname(data.files.dag), sessions[-2].rescue)
    done: set[str] = set()
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                words = line.split()
                if len(words) >= 2 and words[0].upper() == "DONE":
                    done.add(words[1])
    except OSError:
        return set()
    return done


def spooled_entries(context: str) -> int:
    """Outcomes and model updates waiting in the run's spool."""
    import os

    try:
        return sum(1 for n in os.listdir(os.path.join(context, "spool")) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return 0


def _from_attempt(status: NodeStatus, attempt: Attempt, data: RunData, queue: QueueState | None,
                  has_post: bool = True) -> None:
    status.retry = attempt.retry
    status.chosen = attempt.chosen
    status.decided = attempt.replicas if attempt.mode in ("replicas",) else None
    status.phi_prime = attempt.phi_prime
    status.note = attempt.fail_open
    summary = attempt.summary
    if summary is None:
        status.state = "PRE" if attempt.post_code is None else ("done" if attempt.post_code == 0 else "failed")
        return
    status.cluster = summary.cluster
    status.submit_time = summary.submit_time
    status.winner = summary.winner
    status.evictions = summary.evictions
    procs = dict(summary.states)
    if queue:
        for proc in list(procs):
            job_status = queue.get((summary.cluster, proc))
            seen = _JOB_STATUS.get(job_status) if job_status is not None else None
            if seen in ("idle", "running", "held") and procs[proc] not in ("success", "failure", "removed"):
                procs[proc] = seen
    status.procs = summary.procs or len(procs)
    values = list(procs.values())
    status.idle = values.count("idle")
    status.running = values.count("running")
    status.held = values.count("held")
    status.removed = values.count("removed") + values.count("removing")
    status.failed_replicas = values.count("failure")
    if attempt.post_code is not None:
        status.state = "done" if attempt.post_code == 0 else "failed"
        status.end_time = attempt.post_time
    elif not has_post and values and summary.unfinished == 0:
        # no POST script: DAGMan's verdict is the job's (success iff no proc failed or was removed)
        status.state = "done" if all(v == "success" for v in values) else "failed"
    elif status.winner is not None:
        status.state = "won"
    elif status.running:
        status.state = "running"
    elif status.idle:
        status.state = "idle"
    elif status.held:
        status.state = "held"
    else:
        status.state = "POST"
    if status.end_time is None and status.state in ("won", "POST", "done", "failed") and summary.last_end is not None:
        status.end_time = summary.last_end


def _scripts(status: NodeStatus, data: RunData) -> None:
    """What ``.dagman.out`` adds: a PRE or POST running, a PRE that failed."""
    session = data.session
    if session is None:
        return
    scripts = session.nodes.get(status.node)
    if scripts is None:
        return
    if scripts.pre == "running" and status.state in ("waiting", "PRE", "done", "failed"):
        status.state = "PRE"
    elif scripts.pre == "failed" and status.state in ("waiting", "PRE"):
        status.state, status.note = "failed", f"PRE exited {scripts.pre_code}"
    if scripts.post == "running" and status.state in ("won", "POST", "running", "idle", "held"):
        status.state = "POST"


def _slack(status: NodeStatus, estimates: Mapping[str, Any], deadline: float | None, now: float) -> float | None:
    if deadline is None:
        return None
    entry = estimates.get(status.node)
    if entry is None:
        return None
    estimate, _remaining, max_child = float(entry[0]), float(entry[1]), float(entry[2])
    if status.state in ("done", "won", "POST") and status.end_time is not None:
        end = status.end_time
    elif status.state == "running" and status.submit_time is not None:
        end = max(now, status.submit_time + estimate)
    elif status.state == "failed" or status.state == "not run":
        return None
    else:
        end = now + estimate
    return deadline - end - max_child


def _topological(data: RunData) -> list[str]:
    """Node names parents first (file order among equals): the order a reader follows."""
    order: list[str] = []
    indegree = {name: len(info.parents) for name, info in data.nodes.items()}
    ready = [name for name, degree in indegree.items() if degree == 0]
    ready.reverse()
    while ready:
        name = ready.pop()
        order.append(name)
        newly = []
        for child in data.nodes[name].children:
            indegree[child] -= 1
            if indegree[child] == 0:
                newly.append(child)
        ready.extend(reversed(newly))
    seen = set(order)
    order.extend(name for name in data.nodes if name not in seen)
    return order
