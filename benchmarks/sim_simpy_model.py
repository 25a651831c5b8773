"""Reference: the simulator's cluster and workflow model written idiomatically in SimPy.

What a user who reaches for the library would write: a process per
machine replaying its owner's sessions, a process replaying the job
arrivals, one for the nightly reboot, a process per job (it requests a
machine, holds it for its run time, and is ``interrupt``-ed by a login, the
reboot or the removal of a surplus replica), a process per workflow task
(it waits for its parents with ``all_of``, starts its replicas and waits
for the first to finish, which removes the others at that moment). Shared state (free machines, the queue)
lives in one ``Cluster`` object whose methods do the bookkeeping at the
moment things happen; the processes carry the control flow.

The model is ours rule for rule (see ``sim_heapq_model.py``), but SimPy
orders simultaneous events by when they were scheduled and delivers an
interrupt a moment later, so random draws happen in a slightly different
order: its results agree with ours statistically, not bit for bit.
``bench_sim.py`` prints them side by side.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from itertools import count
from operator import itemgetter

import numpy as np
import simpy

from sim_model_inputs import ModelInput, ModelOutput, finish_output, phi_edges, task_deadline

__all__ = ["run_simpy_model"]

_BY_START = itemgetter(0, 1)


class Task:
    """A task's replicas; ``won`` fires when the first of them finishes."""

    __slots__ = ("jobs", "runs", "won")

    def __init__(self, env: simpy.Environment):
        self.jobs: list[Job] = []
        self.runs: list = []
        self.won = env.event()


class Job:
    __slots__ = ("duration", "task", "runs", "replica", "machine", "started", "request", "cancelled", "process")

    def __init__(self, duration: float, task: Task | None, replica: int):
        self.duration = duration
        self.task = task
        self.runs = task.runs if task is not None else None  # the task's invocations
        self.replica = replica
        self.machine = -1
        self.started = 0.0
        self.request: simpy.Event | None = None
        self.cancelled = False
        self.process: simpy.Process | None = None


class Cluster:
    """Machines, the queue and the energy books."""

    def __init__(self, env: simpy.Environment, inp: ModelInput, counters: dict[str, int]):
        self.env = env
        self.watts = inp.trace.active_watts.astype(np.float64).tolist()
        machines = inp.trace.machine_count
        self.free = list(range(machines))
        self.pos = list(range(machines))
        self.logged = [0] * machines
        self.running: list[Job | None] = [None] * machines
        self.queue: deque[Job] = deque()
        self.rng = np.random.default_rng(inp.engine_seed)
        self.rand: list[float] = []
        self.rand_i = 1 << 16
        self.background_j = 0.0
        self.counters = counters

    # -- machine choice ------------------------------------------------------
    def _uniform(self) -> float:
        if self.rand_i >= len(self.rand):
            self.rand = self.rng.random(1 << 16).tolist()
            self.rand_i = 0
        self.rand_i += 1
        return self.rand[self.rand_i - 1]

    def _take_free(self, m: int) -> None:
        p = self.pos[m]
        last = self.free.pop()
        if last != m:
            self.free[p] = last
            self.pos[last] = p
        self.pos[m] = -1

    def _give_free(self, m: int) -> None:
        self.pos[m] = len(self.free)
        self.free.append(m)

    def _assign(self, job: Job, m: int) -> None:
        job.machine = m
        job.started = self.env.now
        self.running[m] = job
        job.request.succeed(m)

    # -- requests ------------------------------------------------------------
    def request(self, job: Job, front: bool = False) -> simpy.Event:
        job.request = self.env.event()
        while self.queue and self.queue[0].cancelled:
            self.queue.popleft()
        if self.free and not self.queue:
            m = self.free[int(self._uniform() * len(self.free))]
            self._take_free(m)
            self._assign(job, m)
        elif front:
            self.queue.appendleft(job)
        else:
            self.queue.append(job)
        return job.request

    def release(self, m: int) -> None:
        while self.queue:
            job = self.queue.popleft()
            if not job.cancelled:
                self._assign(job, m)
                return
        self._give_free(m)

    def close(self, job: Job, reason: str) -> None:
        """End the invocation of ``job`` on its machine (the machine is left to the caller)."""
        m = job.machine
        self.running[m] = None
        job.machine = -1
        energy_w = self.watts[m]
        if job.runs is None:
            self.background_j += (self.env.now - job.started) * energy_w
        else:
            job.runs.append((job.started, job.replica, self.env.now, reason, energy_w))

    # -- owners and the reboot -----------------------------------------------
    def login(self, m: int) -> None:
        self.logged[m] += 1
        if self.logged[m] == 1:
            job = self.running[m]
            if job is not None:
                self.close(job, "evicted")
                self.counters["evictions"] += 1
                job.process.interrupt("evicted")
            elif self.pos[m] >= 0:
                self._take_free(m)

    def logout(self, m: int) -> None:
        self.logged[m] -= 1
        if self.logged[m] == 0:
            self.release(m)

    def reboot(self) -> None:
        killed = [job for job in self.running if job is not None]
        for job in killed:
            m = job.machine
            self.close(job, "evicted")
            self.counters["evictions"] += 1
            job.process.interrupt("evicted")
            if self.logged[m] == 0:
                self._give_free(m)
        while self.queue and self.free:
            job = self.queue.popleft()
            if not job.cancelled:
                m = self.free[int(self._uniform() * len(self.free))]
                self._take_free(m)
                self._assign(job, m)

    def cancel(self, job: Job) -> None:
        """Remove a surplus replica wherever it is."""
        job.cancelled = True
        if job.machine >= 0:
            m = job.machine
            self.close(job, "removed")
            self.release(m)
        if job.process.is_alive:
            job.process.interrupt("removed")


def job_process(env: simpy.Environment, cluster: Cluster, job: Job, counters: dict[str, int]):
    front = False
    while not job.cancelled:
        try:
            yield cluster.request(job, front)
            yield env.timeout(job.duration)
        except simpy.Interrupt:
            front = True  # evicted: back to the head of the queue (or removed: the loop ends)
            continue
        counters["events"] += 1
        m = job.machine
        cluster.close(job, "success")
        cluster.release(m)
        task = job.task
        if task is not None and not task.won.triggered:
            # First finish wins: the other replicas go at this very moment.
            for other in task.jobs:
                if other is not job and not other.cancelled:
                    cluster.cancel(other)
            task.won.succeed()
        return


class EpsilonGreedy:
    """The paper's ε-greedy agent (initially-high schedule, sample means)."""

    def __init__(self, inp: ModelInput):
        cfg = inp.agent
        self.R = inp.replicas
        self.edges = phi_edges(cfg)
        self.n_bins = cfg.n_bins + 2
        states = 24 * self.n_bins
        self.q = [[cfg.initial_estimate] * self.R for _ in range(states)]
        self.n = [[0] * self.R for _ in range(states)]
        self.seen = 0
        self.cfg = cfg
        rng = np.random.default_rng(inp.agent_seed)
        self._uniforms = iter(())
        self._rng = rng

    def _u(self) -> float:
        try:
            return next(self._uniforms)
        except StopIteration:
            self._uniforms = iter(self._rng.random(4096).tolist())
            return next(self._uniforms)

    def state(self, hour: int, phi: float) -> int:
        return hour * self.n_bins + bisect_left(self.edges, phi)

    def choose(self, state: int) -> int:
        eps = self.cfg.epsilon_high if self.seen < self.cfg.switch_after else self.cfg.epsilon_low
        if self._u() < eps:
            return min(int(self._u() * self.R), self.R - 1) + 1
        row = self.q[state]
        return row.index(max(row)) + 1

    def learn(self, state: int, action: int, reward: float) -> None:
        i = action - 1
        self.n[state][i] += 1
        self.q[state][i] += (reward - self.q[state][i]) / self.n[state][i]
        self.seen += 1


def run_simpy_model(inp: ModelInput) -> ModelOutput:
    env = simpy.Environment()
    counters = {"events": 0, "evictions": 0, "submissions": 0}
    cluster = Cluster(env, inp, counters)
    tr = inp.trace
    until = inp.until
    agent = EpsilonGreedy(inp) if inp.learn else None
    machines = tr.machine_count
    wf_template: list[int] = []
    wf_start: list[float] = []
    wf_finish: list[float] = []
    open_tasks: dict[int, list] = {}
    task_ids = count()
    good: list[float] = []
    bad: list[float] = []

    def owner(m: int, changes: list[tuple[float, int]]):
        for t, step in changes:
            yield env.timeout(t - env.now)
            counters["events"] += 1
            if step > 0:
                cluster.login(m)
            else:
                cluster.logout(m)

    def reboots():
        for t in inp.reboots.tolist():
            yield env.timeout(t - env.now)
            counters["events"] += 1
            cluster.reboot()

    def arrivals():
        submit = tr.job_submit.tolist()
        duration = tr.job_duration.tolist()
        replaced = inp.replaced.tolist()
        which = inp.which.tolist()
        for j, t in enumerate(submit):
            if t >= until:
                break
            yield env.timeout(t - env.now)
            counters["events"] += 1
            if replaced[j]:
                env.process(workflow(which[j]))
            else:
                job = Job(duration[j], None, 0)
                job.process = env.process(job_process(env, cluster, job, counters))

    def judge(runs: list, count_: int, submit: float, phi: float, estimate: float, completed: bool):
        ordered = sorted(runs, key=_BY_START)
        winner = -1
        for index, run in enumerate(ordered):
            if run[3] == "success" and (winner < 0 or (run[2], run[1]) < (ordered[winner][2], ordered[winner][1])):
                winner = index
        g = b = watts_sum = 0.0
        for index, (begun, _r, end, _how, w) in enumerate(ordered):
            watts_sum += w
            energy = max(end - begun, 0.0) * w
            if index == winner:
                g += energy
            else:
                b += energy
        good.append(g)
        bad.append(b)
        if not completed or winner < 0:
            return None
        end = ordered[winner][2]
        duration = max(0.0, end - submit)
        ok = end <= task_deadline(submit, phi, estimate)
        denominator = count_ * duration * (watts_sum / len(ordered))
        sigma = (0.0 if b <= 0 else 1.0) if denominator <= 0 else min(1.0, b / denominator)
        return 1.0 - sigma if ok else inp.failure_reward

    def task(tpl, i: int, start: float, parents: list[simpy.Event], done: simpy.Event):
        if parents:
            yield env.all_of(parents)
        now = env.now
        phi = tpl.criticality(tpl.tasks[i], now - start)
        if tpl.jobless[i]:
            done.succeed()
            return
        if agent is not None:
            state = agent.state(inp.clock.hour(now), phi)
            replicas = agent.choose(state)
        else:
            state, replicas = -1, inp.replicas
        replicas = max(1, min(replicas, machines))
        counters["submissions"] += replicas
        state_ = Task(env)
        runs = state_.runs
        state_.jobs = [Job(tpl.runtime[i], state_, r) for r in range(replicas)]
        key = next(task_ids)
        open_tasks[key] = [runs, replicas, now, phi, tpl.estimate[i]]
        for job in state_.jobs:
            job.process = env.process(job_process(env, cluster, job, counters))
        yield state_.won
        del open_tasks[key]
        reward = judge(runs, replicas, now, phi, tpl.estimate[i], True)
        if agent is not None and reward is not None:
            agent.learn(state, replicas, reward)
        done.succeed()

    def workflow(t: int):
        tpl = inp.templates[t]
        w = len(wf_template)
        wf_template.append(t)
        wf_start.append(env.now)
        wf_finish.append(math.nan)
        done = [env.event() for _ in tpl.tasks]
        parents: list[list[simpy.Event]] = [[] for _ in tpl.tasks]
        for p, children in enumerate(tpl.children):
            for c in children:
                parents[c].append(done[p])
        for i in range(len(tpl.tasks)):
            env.process(task(tpl, i, env.now, parents[i], done[i]))
        yield env.all_of(done)
        wf_finish[w] = env.now

    # Each machine's logins and logouts in time order (a login first at equal times).
    lm = tr.login_machine
    keep_s = tr.login_start < until
    keep_e = tr.login_end < until
    times = np.concatenate([tr.login_start[keep_s], tr.login_end[keep_e]])
    steps = np.concatenate([np.ones(int(keep_s.sum()), np.int64), -np.ones(int(keep_e.sum()), np.int64)])
    who = np.concatenate([lm[keep_s], lm[keep_e]])
    order = np.lexsort((-steps, times, who))
    who, times, steps = who[order], times[order], steps[order]
    bounds = np.searchsorted(who, np.arange(machines + 1))
    for m in range(machines):
        lo, hi = bounds[m], bounds[m + 1]
        if hi > lo:
            env.process(owner(m, list(zip(times[lo:hi].tolist(), steps[lo:hi].tolist()))))
    env.process(reboots())
    env.process(arrivals())
    env.run(until=until)
    # Charge what still runs, judge what is still open (no reward: not known yet).
    for job in list(cluster.running):
        if job is not None:
            cluster.close(job, "running")
    for runs, replicas, submit, phi, estimate in open_tasks.values():
        judge(runs, replicas, submit, phi, estimate, False)
    return finish_output(
        inp, wf_template, wf_start, wf_finish,
        events=counters["events"], stale_pops=-1, replica_submissions=counters["submissions"],
        tasks=len(good), good_j=float(np.sum(good)), bad_j=float(np.sum(bad)), background_j=cluster.background_j,
        evictions=counters["evictions"], extra={"simpy_scheduled_events": next(env._eid)},
    )
