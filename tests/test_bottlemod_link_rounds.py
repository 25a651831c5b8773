"""The shared-link fixed point: which tasks take part in the rounds.

``analyze`` iterates only over the link users and the tasks feeding them;
the tasks downstream of a link are analysed once, after the rounds. These
tests check that (a) the downstream tasks really are analysed once, and
(b) the results are exactly those of the plainest schedule: every task
recomputed in every round until the link users' finish times are stable.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import condor_rlrep.bottlemod.analysis as analysis
from condor_rlrep.bottlemod import Link, PFunc, analyze, load_model
from _bottlemod_util import const, external, res, task, upstream, workflow

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "bottlemod"


def test_tasks_downstream_of_the_link_are_analysed_once(monkeypatch):
    # 95:5: dl1 ends first, so dl2 is analysed again with the whole link;
    # whole, stream and merge only read the downloads' results
    calls: dict[str, int] = {}
    real = analysis._analyze_task

    def counting(t, allocs, results):
        calls[t.name] = calls.get(t.name, 0) + 1
        return real(t, allocs, results)

    monkeypatch.setattr(analysis, "_analyze_task", counting)
    a = analyze(load_model(EXAMPLES / "paper_95_5.toml"))
    assert calls == {"dl1": 1, "dl2": 2, "whole": 1, "stream": 1, "merge": 1}
    assert a.rounds == 3


def _every_task_every_round(wf):
    """The reference schedule: all tasks, in order, in every round."""
    order = wf.validate()
    links = {lk.name: lk.capacity for lk in wf.links}
    users = {name: [] for name in links}
    for t in order:
        for r in t.resources:
            if r.link is not None:
                users[r.link].append((t.name, t.start, r.weight))
    link_users = {u for us in users.values() for u, _, _ in us}
    finish = {t.name: math.inf for t in order}
    rounds = 0
    while True:
        rounds += 1
        results = {}
        for t in order:
            allocs = {r.name: analysis._allocation(r, t.name, t.start, links, users, finish) for r in t.resources}
            results[t.name] = analysis._analyze_task(t, allocs, results)
        new = {n: (r.finish if r.finish is not None else math.inf) for n, r in results.items()}
        stable = all(analysis._close(new[u], finish[u]) for u in link_users)
        finish = new
        if stable or not link_users or rounds >= len(link_users) + 2:
            return results, rounds


def _same(f: PFunc, g: PFunc) -> bool:
    return (f.left == g.left and f.end == g.end and np.array_equal(f.x, g.x) and np.array_equal(f.c, g.c))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([20.0, 50.0, 100.0, 300.0]), st.sampled_from([1.0, 2.0, 5.0]),
                          st.sampled_from([0.0, 0.0, 4.0]), st.booleans()), min_size=1, max_size=3),
       st.sampled_from([5.0, 10.0]), st.lists(st.tuples(st.integers(0, 9), st.sampled_from([0.5, 1.0, 3.0])),
                                              max_size=4))
def test_rounds_over_the_feeding_tasks_give_the_every_task_results(users, cap, downstream):
    # link users (some fed by a CPU task "feed"), then tasks reading from
    # earlier tasks: downstream of the link, or of the feeder only
    tasks = [task("feed", pmax=300.0, inputs=[external(source=PFunc.from_points([0, 30], [0, 300]),
                                                       requirement=PFunc.from_points([0, 300], [0, 300]))],
                  resources=[res(allocation=20.0)])]
    for k, (size, weight, start, fed) in enumerate(users):
        need = PFunc.from_points([0, size], [0, size])
        data = upstream("feed", requirement=need) if fed else external(source=const(size), requirement=need)
        tasks.append(task(f"u{k}", pmax=size, inputs=[data], start=start,
                          resources=[res("net", link="net", allocation=None, weight=weight)]))
    for k, (pick, rate) in enumerate(downstream):
        frm = tasks[pick % len(tasks)].name
        tasks.append(task(f"d{k}", pmax=100.0, inputs=[upstream(frm, requirement=PFunc.from_points([0, 50], [0, 100]))],
                          resources=[res(allocation=rate)]))
    wf = workflow(*tasks, links=[Link("net", const(cap))])
    got = analyze(wf)
    want, rounds = _every_task_every_round(wf)
    assert got.rounds == rounds
    assert list(got.tasks) == [t.name for t in wf.tasks]
    for name, r in want.items():
        g = got.tasks[name]
        assert (g.start, g.finish, g.bottlenecks) == (r.start, r.finish, r.bottlenecks), name
        assert _same(g.progress, r.progress) and _same(g.output, r.output), name
        assert g.allocations.keys() == r.allocations.keys()
        assert all(_same(g.allocations[k], r.allocations[k]) for k in r.allocations), name
