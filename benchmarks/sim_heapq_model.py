"""Reference: the simulator's cluster and workflow model as a bare ``heapq`` loop.

One function, plain lists, no objects per job, the hot paths written out
inline: the floor a hand-written simulator of this model reaches in
CPython. Two ways of feeding it:

* ``feed="heap"`` — the textbook loop: one heap of ``(time, kind, …)``
  tuples, every event popped from it, each source scheduling its successor
  when it fires (the next login, the next job arrival, the next reboot; a
  login schedules its logout, a start its completion);
* ``feed="stream"`` (default, the stronger anchor) — the events known in
  advance are merged once into a sorted numpy stream and only completions
  live in the heap, as in our engine.

The model is ours (``condor_rlrep.sim.engine`` and ``.workflows``) rule for
rule — one slot per machine, a login evicts (the job goes back to the head
of the queue), the nightly reboot kills everything, immediate matching on a
uniformly random free machine, replicas with first-finish-wins, good/bad
energy, φ′ at real submission, the ε-greedy agent with the paper's reward —
and so is the order of simultaneous events (completions first, by start
order; then logins, logouts, reboots, job and workflow arrivals by index).
Fed the same seeds it makes the same random draws, so its results equal
ours exactly; ``bench_sim.py`` checks that before it reports a ratio.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections import deque
from operator import itemgetter

import numpy as np

from sim_model_inputs import ModelInput, ModelOutput, finish_output, phi_edges, task_deadline

__all__ = ["run_heapq_model"]

COMPLETION, LOGIN, LOGOUT, REBOOT, JOB, WORKFLOW = range(6)
QUEUED, RUNNING, DONE, CANCELLED = range(4)
_BY_START = itemgetter(0, 1)


def run_heapq_model(inp: ModelInput, feed: str = "stream") -> ModelOutput:
    """Simulate ``inp``. ``feed="heap"``: every event goes through the heap,
    each source scheduling its successor. ``feed="stream"``: the events
    known in advance (logins, logouts, arrivals, reboots) are merged once
    into a sorted numpy stream and only completions live in the heap (the
    technique our engine uses)."""
    if feed not in ("stream", "heap"):
        raise ValueError(f"feed must be 'stream' or 'heap', not {feed!r}")
    stream = feed == "stream"
    tr = inp.trace
    until = inp.until
    M = tr.machine_count
    watts = tr.active_watts.astype(np.float64).tolist()
    login_machine = tr.login_machine.tolist()
    login_start = tr.login_start.astype(np.float64).tolist()
    login_end = tr.login_end.astype(np.float64).tolist()
    n_logins = bisect_left(login_start, until)
    submit = tr.job_submit.astype(np.float64)
    in_span = submit < until
    background = np.flatnonzero(~inp.replaced & in_span).tolist()
    arrivals = np.flatnonzero(inp.replaced & in_span).tolist()
    job_submit = submit.tolist()
    which = inp.which.tolist()
    reboots = inp.reboots.tolist()
    templates = inp.templates
    clock_hour = inp.clock.hour

    # Machines; free machines in a swap-remove list.
    logged = [0] * M
    run_job = [-1] * M
    run_seq = [-1] * M
    run_start = [0.0] * M
    free = list(range(M))
    pos = list(range(M))
    # Jobs: trace jobs keep their index, replicas are appended.
    jdur = tr.job_duration.astype(np.float64).tolist()
    jowner = [-1] * len(jdur)
    jstate = [CANCELLED if r else QUEUED for r in inp.replaced.tolist()]
    jmachine = [-1] * len(jdur)
    queue: deque[int] = deque()
    seq = 0

    engine_rng = np.random.default_rng(inp.engine_seed)
    rand: list[float] = []
    rand_i = 1 << 16

    # Agent (ε-greedy, initially-high schedule, sample-mean estimates)
    cfg = inp.agent
    R = inp.replicas
    learn = inp.learn
    edges = phi_edges(cfg)
    n_bins = cfg.n_bins + 2
    q = [[cfg.initial_estimate] * R for _ in range(24 * n_bins)]
    n = [[0] * R for _ in range(24 * n_bins)]
    greedy = [0] * (24 * n_bins)
    rewards_seen = 0
    agent_rng = np.random.default_rng(inp.agent_seed)
    arand: list[float] = []
    arand_i = 4096
    eps_high, eps_low, switch_after = cfg.epsilon_high, cfg.epsilon_low, cfg.switch_after
    failure_reward = inp.failure_reward

    # Workflows and tasks
    wf_template: list[int] = []
    wf_start: list[float] = []
    wf_finish: list[float] = []
    wf_left: list[int] = []
    wf_pending: list[list[int]] = []
    task_wf: list[int] = []
    task_node: list[int] = []
    task_submit: list[float] = []
    task_phi: list[float] = []
    task_state: list[int] = []
    task_count: list[int] = []
    task_first: list[int] = []
    task_runs: list[list | None] = []
    task_good: list[float] = []
    task_bad: list[float] = []

    events = stale = evictions = submissions = 0
    background_j = 0.0

    def run_anywhere(j: int, now: float) -> None:
        nonlocal rand, rand_i, seq
        if rand_i >= 1 << 16:
            rand = engine_rng.random(1 << 16).tolist()
            rand_i = 0
        p = int(rand[rand_i] * len(free))
        rand_i += 1
        m = free[p]
        last = free.pop()
        if last != m:
            free[p] = last
            pos[last] = p
        pos[m] = -1
        start(j, m, now)

    def start(j: int, m: int, now: float) -> None:
        nonlocal seq
        run_job[m] = j
        seq += 1
        run_seq[m] = seq
        run_start[m] = now
        jstate[j] = RUNNING
        jmachine[j] = m
        if stream:
            heapq.heappush(heap, (now + jdur[j], seq, m))
        else:
            heapq.heappush(heap, (now + jdur[j], COMPLETION, seq, m))

    def no_live_queue() -> bool:
        while queue and jstate[queue[0]] != QUEUED:
            queue.popleft()
        return not queue

    def release(m: int, now: float) -> None:
        while queue:
            j = queue.popleft()
            if jstate[j] == QUEUED:
                start(j, m, now)
                return
        pos[m] = len(free)
        free.append(m)

    def end_run(m: int, now: float, reason: str) -> int:
        nonlocal background_j
        j = run_job[m]
        begun = run_start[m]
        w = watts[m]
        run_job[m] = -1
        run_seq[m] = -1
        owner = jowner[j]
        if owner < 0:
            background_j += (now - begun) * w
        else:
            task_runs[owner].append((begun, j - task_first[owner], now, reason, w))
        return j

    def submit_task(w: int, i: int, now: float) -> None:
        nonlocal arand, arand_i, submissions
        tpl = templates[wf_template[w]]
        phi = tpl.criticality(tpl.tasks[i], now - wf_start[w])
        k = len(task_wf)
        task_wf.append(w)
        task_node.append(i)
        task_submit.append(now)
        task_phi.append(phi)
        task_first.append(len(jdur))
        if tpl.jobless[i]:
            task_state.append(-1)
            task_count.append(0)
            task_runs.append(None)
            task_good.append(0.0)
            task_bad.append(0.0)
            advance(w, i, now)
            return
        if learn:
            state = clock_hour(now) * n_bins + bisect_left(edges, phi)
            eps = eps_high if rewards_seen < switch_after else eps_low
            if arand_i >= 4096:
                arand = agent_rng.random(4096).tolist()
                arand_i = 0
            u = arand[arand_i]
            arand_i += 1
            if u < eps:
                if arand_i >= 4096:
                    arand = agent_rng.random(4096).tolist()
                    arand_i = 0
                a = min(int(arand[arand_i] * R), R - 1) + 1
                arand_i += 1
            else:
                a = greedy[state] + 1
        else:
            state = -1
            a = R
        a = max(1, min(a, M))
        task_state.append(state)
        task_count.append(a)
        task_runs.append([])
        task_good.append(0.0)
        task_bad.append(0.0)
        submissions += a
        runtime = tpl.runtime[i]
        for _ in range(a):
            j = len(jdur)
            jdur.append(runtime)
            jowner.append(k)
            jstate.append(QUEUED)
            jmachine.append(-1)
            if free and (not queue or no_live_queue()):
                run_anywhere(j, now)
            else:
                queue.append(j)

    def finish_task(k: int, now: float, completed: bool) -> None:
        nonlocal rewards_seen
        runs = sorted(task_runs[k], key=_BY_START)
        task_runs[k] = None
        winner = -1
        for index, run in enumerate(runs):
            if run[3] == "success" and (winner < 0 or (run[2], run[1]) < (runs[winner][2], runs[winner][1])):
                winner = index
        good = bad = watts_sum = 0.0
        for index, (begun, _r, end, _how, w) in enumerate(runs):
            watts_sum += w
            energy = max(end - begun, 0.0) * w
            if index == winner:
                good += energy
            else:
                bad += energy
        task_good[k] = good
        task_bad[k] = bad
        if not completed:
            return
        state = task_state[k]
        if learn and state >= 0:
            end = runs[winner][2]
            s_t = task_submit[k]
            duration = max(0.0, end - s_t)
            tpl = templates[wf_template[task_wf[k]]]
            ok = end <= task_deadline(s_t, task_phi[k], tpl.estimate[task_node[k]])
            denominator = task_count[k] * duration * (watts_sum / len(runs))
            if denominator <= 0:
                sigma = 0.0 if bad <= 0 else 1.0
            else:
                sigma = min(1.0, bad / denominator)
            reward = 1.0 - sigma if ok else failure_reward
            index = task_count[k] - 1
            row = q[state]
            counts = n[state]
            seen = counts[index] + 1
            row[index] = row[index] + (reward - row[index]) / seen
            counts[index] = seen
            rewards_seen += 1
            best = 0
            for a in range(1, R):
                if row[a] > row[best]:
                    best = a
            greedy[state] = best
        advance(task_wf[k], task_node[k], now)

    def advance(w: int, i: int, now: float) -> None:
        wf_left[w] -= 1
        if wf_left[w] == 0:
            wf_finish[w] = now
            return
        pending = wf_pending[w]
        for c in templates[wf_template[w]].children[i]:
            pending[c] -= 1
            if pending[c] == 0:
                submit_task(w, c, now)

    def workflow_start(index: int, now: float) -> None:
        tpl = templates[which[index]]
        w = len(wf_template)
        wf_template.append(which[index])
        wf_start.append(now)
        wf_finish.append(math.nan)
        wf_left.append(len(tpl.tasks))
        wf_pending.append(list(tpl.n_parents))
        for i in tpl.roots:
            submit_task(w, i, now)

    heap: list[tuple] = []
    heappop, heappush = heapq.heappop, heapq.heappush

    def task_won(j: int, owner: int, now: float) -> None:
        first = task_first[owner]
        for other in range(first, first + task_count[owner]):
            if other != j:
                state = jstate[other]
                if state == RUNNING:
                    mm = jmachine[other]
                    jstate[other] = CANCELLED
                    end_run(mm, now, "removed")
                    release(mm, now)
                elif state == QUEUED:
                    jstate[other] = CANCELLED
        finish_task(owner, now, True)

    def reboot(now: float) -> None:
        nonlocal evictions
        killed = []
        for m in range(M):
            if run_job[m] >= 0:
                killed.append(end_run(m, now, "evicted"))
                evictions += 1
                if logged[m] == 0:
                    pos[m] = len(free)
                    free.append(m)
        for j in reversed(killed):
            jstate[j] = QUEUED
            queue.appendleft(j)
        while queue and free:
            j = queue.popleft()
            if jstate[j] == QUEUED:
                run_anywhere(j, now)

    if stream:
        parts_t = [tr.login_start[:n_logins], tr.login_end[tr.login_end < until], inp.reboots,
                   submit[background], submit[arrivals]]
        parts_i = [np.arange(n_logins), np.flatnonzero(tr.login_end < until), np.arange(len(reboots)),
                   np.asarray(background, dtype=np.int64), np.asarray(arrivals, dtype=np.int64)]
        kinds = [LOGIN, LOGOUT, REBOOT, JOB, WORKFLOW]
        times = np.concatenate([np.asarray(t, dtype=np.float64) for t in parts_t])
        codes = np.concatenate([(np.int64(k - 1) << 40) | i.astype(np.int64) for k, i in zip(kinds, parts_i)])
        order = np.lexsort((codes, times))
        times, codes = times[order], codes[order]
        for lo in range(0, len(times), 1 << 16):
            chunk = codes[lo : lo + (1 << 16)]
            for now, kind, index in zip(times[lo : lo + (1 << 16)].tolist(), ((chunk >> 40) + 1).tolist(),
                                        (chunk & ((1 << 40) - 1)).tolist()):
                while heap and heap[0][0] <= now:
                    t, sq, m = heappop(heap)
                    if run_seq[m] != sq:
                        stale += 1
                        continue
                    events += 1
                    j = run_job[m]
                    jstate[j] = DONE
                    begun = run_start[m]
                    w = watts[m]
                    run_job[m] = -1
                    run_seq[m] = -1
                    owner = jowner[j]
                    if owner < 0:
                        background_j += (t - begun) * w
                        release(m, t)
                    else:
                        task_runs[owner].append((begun, j - task_first[owner], t, "success", w))
                        release(m, t)
                        if task_runs[owner] is not None:
                            task_won(j, owner, t)
                events += 1
                if kind == LOGIN:
                    m = login_machine[index]
                    c = logged[m]
                    logged[m] = c + 1
                    if c == 0:
                        if run_job[m] >= 0:
                            j = end_run(m, now, "evicted")
                            evictions += 1
                            jstate[j] = QUEUED
                            if free and (not queue or no_live_queue()):
                                run_anywhere(j, now)
                            else:
                                queue.appendleft(j)
                        elif pos[m] >= 0:
                            p = pos[m]
                            last = free.pop()
                            if last != m:
                                free[p] = last
                                pos[last] = p
                            pos[m] = -1
                elif kind == LOGOUT:
                    m = login_machine[index]
                    c = logged[m] - 1
                    logged[m] = c
                    if c == 0:
                        release(m, now)
                elif kind == JOB:
                    if free and (not queue or no_live_queue()):
                        run_anywhere(index, now)
                    else:
                        queue.append(index)
                elif kind == WORKFLOW:
                    workflow_start(index, now)
                else:
                    reboot(now)
        while heap and heap[0][0] <= until:
            t, sq, m = heappop(heap)
            if run_seq[m] != sq:
                stale += 1
                continue
            events += 1
            j = run_job[m]
            jstate[j] = DONE
            owner = jowner[j]
            end_run(m, t, "success")
            release(m, t)
            if owner >= 0 and task_runs[owner] is not None:
                task_won(j, owner, t)
    else:
        if n_logins:
            heap.append((login_start[0], LOGIN, 0))
        if background:
            heap.append((job_submit[background[0]], JOB, 0))
        if arrivals:
            heap.append((job_submit[arrivals[0]], WORKFLOW, 0))
        if reboots:
            heap.append((reboots[0], REBOOT, 0))
        heapq.heapify(heap)
        n_background, n_arrivals, n_reboots = len(background), len(arrivals), len(reboots)
        while heap:
            event = heappop(heap)
            now = event[0]
            kind = event[1]
            if kind == COMPLETION:
                if now > until:
                    break
                m = event[3]
                if run_seq[m] != event[2]:
                    stale += 1
                    continue
                events += 1
                j = run_job[m]
                jstate[j] = DONE
                begun = run_start[m]
                w = watts[m]
                run_job[m] = -1
                run_seq[m] = -1
                owner = jowner[j]
                if owner < 0:
                    background_j += (now - begun) * w
                    release(m, now)
                else:
                    task_runs[owner].append((begun, j - task_first[owner], now, "success", w))
                    release(m, now)
                    if task_runs[owner] is not None:
                        task_won(j, owner, now)
                continue
            events += 1
            index = event[2]
            if kind == LOGIN:
                if index + 1 < n_logins:
                    heappush(heap, (login_start[index + 1], LOGIN, index + 1))
                if login_end[index] < until:
                    heappush(heap, (login_end[index], LOGOUT, index))
                m = login_machine[index]
                c = logged[m]
                logged[m] = c + 1
                if c == 0:
                    if run_job[m] >= 0:
                        j = end_run(m, now, "evicted")
                        evictions += 1
                        jstate[j] = QUEUED
                        if free and (not queue or no_live_queue()):
                            run_anywhere(j, now)
                        else:
                            queue.appendleft(j)
                    elif pos[m] >= 0:
                        p = pos[m]
                        last = free.pop()
                        if last != m:
                            free[p] = last
                            pos[last] = p
                        pos[m] = -1
            elif kind == LOGOUT:
                m = login_machine[index]
                c = logged[m] - 1
                logged[m] = c
                if c == 0:
                    release(m, now)
            elif kind == JOB:
                if index + 1 < n_background:
                    heappush(heap, (job_submit[background[index + 1]], JOB, index + 1))
                j = background[index]
                if free and (not queue or no_live_queue()):
                    run_anywhere(j, now)
                else:
                    queue.append(j)
            elif kind == WORKFLOW:
                if index + 1 < n_arrivals:
                    heappush(heap, (job_submit[arrivals[index + 1]], WORKFLOW, index + 1))
                workflow_start(arrivals[index], now)
            else:  # REBOOT
                if index + 1 < n_reboots:
                    heappush(heap, (reboots[index + 1], REBOOT, index + 1))
                reboot(now)

    for m in range(M):
        if run_job[m] >= 0:
            end_run(m, until, "running")
    for k, runs in enumerate(task_runs):
        if runs is not None:
            finish_task(k, until, False)
    good = np.asarray(task_good, dtype=np.float64)
    bad = np.asarray(task_bad, dtype=np.float64)
    return finish_output(
        inp, wf_template, wf_start, wf_finish,
        events=events, stale_pops=stale, replica_submissions=submissions, tasks=len(task_wf),
        good_j=float(good.sum()), bad_j=float(bad.sum()), background_j=background_j, evictions=evictions,
    )
