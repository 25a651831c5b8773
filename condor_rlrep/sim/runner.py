"""Enactment of workflow instances on the engine (§4.1 of the replication paper).

:class:`WorkflowRunner` is the engine's :class:`~condor_rlrep.sim.engine.Listener`.
When a replaced trace job arrives, the instance's root tasks are submitted;
a task's replica count comes from the policy, its ``φ′`` from the
template's plan at the real submission time (the very function the live
PRE hook uses). When a task's first replica finishes, the other replicas
are removed, the outcome is judged by
:func:`condor_rlrep.outcome.evaluate_runs` (the rules of the live POST
hook) and the policy learns the reward; the tasks whose parents are all
done are then submitted.

The per-decision log is kept as columns (see :data:`TASK_COLUMNS`): what
is known at the decision in plain lists, appended once per task; the
floats found when the task is judged in ``array`` blocks, written in place
(no float object per value: a year of decisions stays a few tens of MB).
The end of a run turns them into numpy arrays without building a row
object per task.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from condor_rlrep.energy import PowerTable
from condor_rlrep.outcome import DEFAULT_FAILURE_REWARD, Run, evaluate_runs
from condor_rlrep.sim.policies import OraclePolicy
from condor_rlrep.sim.workflows import WorkflowTemplate

__all__ = ["TASK_COLUMNS", "WorkflowRunner"]

TASK_COLUMNS: tuple[str, ...] = (
    "workflow", "node", "submit", "hour", "phi_prime", "state", "replicas", "explored",
    "finish", "success", "good_j", "bad_j", "sigma", "reward", "invocations", "evictions",
)
"""Columns of the per-decision log, one entry per task (jobless tasks included)."""

_FLOAT_COLUMNS = frozenset({"submit", "phi_prime", "finish", "good_j", "bad_j", "sigma", "reward"})
_BOOL_COLUMNS = frozenset({"explored", "success"})
_NAN = math.nan
_BLOCK = 1 << 14


class WorkflowRunner:
    """Enacts workflow instances on an :class:`~condor_rlrep.sim.engine.Engine`."""

    def __init__(
        self,
        templates: Sequence[WorkflowTemplate],
        which: np.ndarray,
        policy: Any,
        power: PowerTable,
        machine_names: Sequence[str],
        clock: Any,
        *,
        failure_reward: float = DEFAULT_FAILURE_REWARD,
        dagman_latency: float = 0.0,
        latency_samples: Sequence[float] = (),
        start_samples: Sequence[float] = (),
        latency_rng: np.random.Generator | None = None,
        latency_workflows: Sequence[tuple[float, Sequence[tuple[str, float, float, float]]]] = (),
        latency_neighbours: int = 1,
    ):
        self.templates = list(templates)
        self.dagman_latency = float(dagman_latency)
        """Seconds between a task becoming ready (its workflow arrived, or
        its last parent finished) and its decision and submission: DAGMan's
        turn (log scan, POST, PRE, submit). 0: at once."""
        self._latency_samples = [float(v) for v in latency_samples]
        """When not empty, each task's latency is one of these, drawn with ``latency_rng``."""
        self._start_samples = [float(v) for v in start_samples]
        """When not empty, the part of the drawn latency after the decision (same index)."""
        if self._start_samples and len(self._start_samples) != len(self._latency_samples):
            raise ValueError("one start sample per latency sample")
        self._latency_rng = latency_rng
        if self._latency_samples and latency_rng is None:
            raise ValueError("latency samples need a random generator")
        self._measured = [{str(n): (float(lat), float(after), float(excess)) for n, lat, after, excess in nodes}
                          for _, nodes in latency_workflows]
        """Per measured workflow: node → (latency, part after the decision, run excess) (SimConfig.latency_workflows)."""
        self._measured_arrival = np.asarray([float(a) for a, _ in latency_workflows], dtype=np.float64)
        self._neighbours = int(latency_neighbours)
        if self._measured and latency_rng is None:
            raise ValueError("measured latency workflows need a random generator")
        self._wf_delays: list[list[tuple[float, float, float]]] = []
        """Per workflow instance (with measured workflows): each task's (latency, after, run excess)."""
        self.which = which
        self.policy = policy
        self.power = power
        self.names = list(machine_names)
        self.watts = [power.watts(name) for name in self.names]
        self.clock = clock
        self.failure_reward = failure_reward
        self.engine: Any = None
        self.oracle = isinstance(policy, OraclePolicy)
        self._hour = clock.hour
        self._choose = policy.choose
        self._learn = policy.learn
        self._machines = len(self.names)
        self._default_watts = power.default_watts
        # Workflow instances
        self.wf_template: list[int] = []
        self.wf_trace_job: list[int] = []
        self.wf_start: list[float] = []
        self.wf_finish: list[float] = []
        self._wf_tpl: list[WorkflowTemplate] = []
        self._wf_left: list[int] = []
        self._wf_pending: list[list[int] | None] = []
        # Tasks: the decision log as columns (see TASK_COLUMNS): known at
        # the decision (lists) ...
        self._tasks = 0
        self._node: list[int] = []
        self._hours: list[int] = []
        self._state: list[int] = []
        self._replicas: list[int] = []
        self._explored: list[bool] = []
        # ... and written in place, grown in blocks (arrays)
        self._wf = array("l")
        self._submit = array("d")
        self._phi = array("d")
        self._finish = array("d")
        self._success = array("b")
        self._good = array("d")
        self._bad = array("d")
        self._sigma = array("d")
        self._reward = array("d")
        self._invocations = array("l")
        # ... and the live state of open tasks
        self.task_first = array("l")
        """Id of a task's first replica job; its replicas are consecutive ids."""
        self.task_runs: list[list[Run] | None] = []
        """Invocations of an open task; None once judged."""

    def attach(self, engine: Any) -> None:
        self.engine = engine
        if self.oracle:
            engine.track_logins()

    @property
    def tasks(self) -> int:
        return self._tasks

    def take_columns(self) -> dict[str, np.ndarray]:
        """The per-decision log as numpy columns (see :data:`TASK_COLUMNS`),
        after the run. Evictions per task are summed from the engine's
        per-job counts (a task's replicas are consecutive job ids). The
        runner's lists are released as they are converted."""
        engine = self.engine
        n = self._tasks
        first = np.frombuffer(self.task_first, dtype=np.dtype(self.task_first.typecode))[:n].astype(np.int64)
        replicas = np.asarray(self._replicas, dtype=np.int64)
        if engine is not None and len(first):
            per_job = np.cumsum(np.asarray(engine.jevict[: engine.njobs], dtype=np.int64))
            per_job = np.concatenate(([0], per_job))
            evictions = per_job[first + replicas] - per_job[first]
        else:
            evictions = np.zeros(len(first), dtype=np.int64)
        sources = {
            "workflow": "_wf", "node": "_node", "submit": "_submit", "hour": "_hours", "phi_prime": "_phi",
            "state": "_state", "replicas": "_replicas", "explored": "_explored", "finish": "_finish",
            "success": "_success", "good_j": "_good", "bad_j": "_bad", "sigma": "_sigma", "reward": "_reward",
            "invocations": "_invocations",
        }
        columns: dict[str, np.ndarray] = {}
        for name in TASK_COLUMNS:
            if name == "evictions":
                columns[name] = evictions
                continue
            if name == "replicas":
                columns[name] = replicas
                continue
            dtype = np.float64 if name in _FLOAT_COLUMNS else bool if name in _BOOL_COLUMNS else np.int64
            values = getattr(self, sources[name])
            if isinstance(values, array):
                columns[name] = np.frombuffer(values, dtype=np.dtype(values.typecode))[:n].astype(dtype)
                setattr(self, sources[name], array(values.typecode))
            else:
                columns[name] = np.fromiter(values, dtype=dtype, count=n)
        self.task_first = array("l")
        self.task_runs = []
        return columns

    # -- engine callbacks ------------------------------------------------------
    def workflow_start(self, index: int, now: float) -> None:
        t = int(self.which[index])
        tpl = self.templates[t]
        w = len(self.wf_start)
        self.wf_template.append(t)
        self.wf_trace_job.append(index)
        self.wf_start.append(now)
        self.wf_finish.append(_NAN)
        self._wf_tpl.append(tpl)
        self._wf_left.append(len(tpl.tasks))
        self._wf_pending.append(list(tpl.n_parents))
        if self._measured:
            self._wf_delays.append(self._measured_delays(tpl, now))
        for i in tpl.roots:
            self._ready(w, i, now)

    def invocation_end(self, job: int, owner: int, machine: int, start: float, end: float, reason: str) -> None:
        self.task_runs[owner].append((start, job - self.task_first[owner], end, reason, self.watts[machine]))  # type: ignore[union-attr]

    def job_done(self, job: int, owner: int, now: float) -> None:
        if self.task_runs[owner] is None:
            return
        count = self._replicas[owner]
        if count > 1:
            first = self.task_first[owner]
            cancel = self.engine.cancel
            for other in range(first, first + count):
                if other != job:
                    cancel(other, now)
        self._finish_task(owner, now, True)

    # -- enactment -------------------------------------------------------------
    def _submit_task(self, w: int, i: int, now: float, decided: float | None = None) -> None:
        """Submit task ``i`` of workflow ``w`` at ``now``, its φ′ taken at
        ``decided`` (default: now)."""
        tpl = self._wf_tpl[w]
        phi = tpl.criticality(tpl.tasks[i], (now if decided is None else decided) - self.wf_start[w])
        hour = self._hour(now)
        engine = self.engine
        k = self._tasks
        if k == len(self._finish):
            self._grow()
        self._tasks = k + 1
        self._wf[k] = w
        self._node.append(i)
        self._submit[k] = now
        self._hours.append(hour)
        self._phi[k] = phi
        self.task_first[k] = engine.njobs
        if tpl.jobless[i]:
            self._state.append(-1)
            self._replicas.append(0)
            self._explored.append(False)
            self._finish[k] = now
            self._success[k] = 1
            self.task_runs.append(None)
            self._advance(w, i, now)
            return
        a, explored, state = self._choose(hour, phi)
        if a.__class__ is not int or not 1 <= a <= self._machines:
            a = max(1, min(int(a), self._machines))
        runtime = tpl.runtime[i]
        if self._measured:
            runtime += self._wf_delays[w][i][2]  # the run excess: live, a run takes longer than its task
        machine = None
        if self.oracle:
            machine, blocked_by_reboot = self._oracle_machine(now, runtime)
            if machine is not None or blocked_by_reboot:
                a = 1  # a sure machine; or every run started now dies at the reboot: spend least
        self._state.append(state)
        self._replicas.append(a)
        self._explored.append(explored)
        self.task_runs.append([])
        if machine is not None:
            engine.submit(runtime, k, now, machine=machine)
        else:
            self._submit_replicas(runtime, k, now, a)

    def _submit_replicas(self, runtime: float, k: int, now: float, count: int) -> None:
        """Start task ``k``'s replicas; a seam for runners that place them
        (:mod:`condor_rlrep.sim.beyond`)."""
        self.engine.submit_many(runtime, k, now, count)

    def _grow(self) -> None:
        """One more block of defaults for the columns written in place: an
        open task (not finished, nothing judged; sigma 0 as for a jobless one)."""
        nan = array("d", [_NAN]) * _BLOCK
        zero = array("d", bytes(8 * _BLOCK))
        ints = array("l", bytes(array("l").itemsize * _BLOCK))
        self._wf.extend(ints)
        self._submit.extend(zero)
        self.task_first.extend(ints)
        self._phi.extend(nan)
        self._finish.extend(nan)
        self._success.extend(array("b", bytes(_BLOCK)))
        self._good.extend(zero)
        self._bad.extend(zero)
        self._sigma.extend(zero)
        self._reward.extend(nan)
        self._invocations.extend(ints)

    def _oracle_machine(self, now: float, runtime: float) -> tuple[int | None, bool]:
        """A free machine on which a run started now ends before any login
        and reboot, or None; and whether the reboot alone rules all out."""
        engine = self.engine
        finish = now + runtime
        if engine.next_reboot(now) < finish:
            return None, True
        free = engine.free_machines()
        if not free:
            return None, False
        ids = np.asarray(free, dtype=np.int64)
        ok = ids[engine.next_login(ids) >= finish]
        if len(ok) == 0:
            return None, False
        if engine.config.machine_choice == "efficient":
            watts = np.asarray(engine.trace.active_watts)[ok]
            ok = ok[watts == watts.min()]
            ok = np.sort(ok)
        elif engine.config.machine_choice == "slot-order":
            ok = ok[ok == ok.min()]
        return int(ok[int(engine._u() * len(ok))]), False

    def _finish_task(self, k: int, now: float, completed: bool) -> None:
        runs = self.task_runs[k]
        self.task_runs[k] = None  # judged; frees the invocations
        tpl = self._wf_tpl[self._wf[k]]
        # The outcome rules of the live POST hook (outcome.evaluate), on runs
        # whose power is already known.
        _done, success, finish, good, bad, sigma, reward, _winner = evaluate_runs(
            runs,  # type: ignore[arg-type]
            submit_time=self._submit[k],
            phi_prime=self._phi[k],
            estimate=tpl.estimate[self._node[k]],
            replicas=self._replicas[k],
            default_watts=self._default_watts,
            failure_reward=self.failure_reward,
        )
        self._invocations[k] = len(runs)  # type: ignore[arg-type]
        self._good[k] = good
        self._bad[k] = bad
        self._sigma[k] = sigma
        if completed:
            self._finish[k] = finish if finish is not None else now
            self._success[k] = success
            self._reward[k] = reward
            state = self._state[k]
            if state >= 0:
                self._learn(state, self._replicas[k], reward)
            self._advance(self._wf[k], self._node[k], now)

    def _advance(self, w: int, i: int, now: float) -> None:
        left = self._wf_left[w] - 1
        self._wf_left[w] = left
        if left == 0:
            self.wf_finish[w] = now
            self._wf_pending[w] = None
            return
        pending = self._wf_pending[w]
        for c in self._wf_tpl[w].children[i]:
            count = pending[c] - 1  # type: ignore[index]
            pending[c] = count  # type: ignore[index]
            if count == 0:
                self._ready(w, c, now)

    def _ready(self, w: int, i: int, now: float) -> None:
        """Task ``i`` of workflow ``w`` may run: submit it now, or after
        DAGMan's latency (decided then too, as the PRE hook runs then; or,
        with start samples, that much before the submission)."""
        decided = None
        samples = self._latency_samples
        if self._measured:
            latency, after, _excess = self._wf_delays[w][i]
            decided = now + latency - after
        elif samples:
            drawn = int(self._latency_rng.random() * len(samples))  # type: ignore[union-attr]
            latency = samples[drawn]
            if self._start_samples:
                decided = now + latency - self._start_samples[drawn]
                # scheduled even when the latency is 0, as it always was (the event order stays)
                self.engine.call_at(now + latency, lambda t: self._submit_task(w, i, t, decided))
                return
        else:
            latency = self.dagman_latency
        if latency > 0:
            self.engine.call_at(now + latency, lambda t: self._submit_task(w, i, t, decided))
        else:
            self._submit_task(w, i, now, decided)

    def _measured_delays(self, tpl: WorkflowTemplate, now: float) -> list[tuple[float, float, float]]:
        """Each task's delays for a workflow arriving ``now``: those of one
        measured workflow drawn among the ``latency_neighbours`` that arrived
        nearest to ``now`` (ties in a random order: a burst of arrivals
        shares them alike), node for node; a node it lacks takes one of its
        other nodes' at random."""
        rng = self._latency_rng
        order = rng.permutation(len(self._measured))  # type: ignore[union-attr]
        order = order[np.argsort(np.abs(self._measured_arrival[order] - now), kind="stable")]
        near = order[: self._neighbours]
        nodes = self._measured[int(near[int(rng.random() * len(near))])]  # type: ignore[union-attr]
        others = list(nodes.values())
        return [nodes[name] if name in nodes else others[int(rng.random() * len(others))]  # type: ignore[union-attr]
                for name in tpl.tasks]

    def close(self, now: float) -> None:
        """End of the run: judge the tasks still open (no reward is learnt:
        their outcome is not known yet)."""
        for k, runs in enumerate(self.task_runs):
            if runs is not None:
                self._finish_task(k, now, False)
