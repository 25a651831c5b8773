"""Speed of the replica agent and its store; prints medians and ratios.

    /work/venv/bin/python benchmarks/bench_agent.py [--quick]

Targets (issue 3): ≥ 200,000 in-memory decisions/s; ≥ 1,000 decide+record
pairs/s against the SQLite store from one process; a whole hook-style decide
in a fresh process within 1.5× the time of ``python -c "import htcondor2"``.

In-memory rates are per CPU second (``time.process_time``), so that a busy
machine does not drown them; each strategy is also shown as a ratio to
ε-greedy in the same run, and ``choose+learn`` interleaves a reward after
every decision (as a simulation does: UCB1's per-state cache then always
misses).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from condor_rlrep.agent import Agent, AgentConfig
from condor_rlrep.store import SqliteStore


def _median_rate(fn, count: int, repeats: int, clock=time.perf_counter) -> float:
    rates = []
    for _ in range(repeats):
        start = clock()
        fn(count)
        rates.append(count / max(clock() - start, 1e-9))
    return statistics.median(rates)


def _cpu_rate(fn, count: int, repeats: int) -> float:
    return _median_rate(fn, count, repeats, time.process_time)


def _trained(config: AgentConfig) -> Agent:
    agent = Agent(config, rng=1)
    rng = np.random.default_rng(2)
    for s, a, r in zip(rng.integers(0, agent.n_states, 20_000), rng.integers(1, agent.n_actions + 1, 20_000),
                       rng.choice([1.0, 0.5, -5.0], 20_000)):
        agent.learn(int(s), int(a), float(r))
    return agent


def bench_memory(count: int, repeats: int) -> None:
    states = [int(s) for s in np.random.default_rng(3).integers(0, AgentConfig().n_states, count)]
    rewards = np.random.default_rng(5).choice([1.0, 0.5, -5.0], count).tolist()
    baseline = {}
    for strategy in ("epsilon-greedy", "ucb1", "thompson"):
        agent = _trained(AgentConfig(strategy=strategy, switch_after=0))

        def choose_loop(n: int, agent: Agent = agent) -> None:
            choose = agent.choose
            for s in states[:n]:
                choose(s)

        def choose_learn_loop(n: int, agent: Agent = agent) -> None:
            choose, learn = agent.choose, agent.learn
            for s, r in zip(states[:n], rewards[:n]):
                learn(s, choose(s).action, r)

        for label, loop in (("choose()", choose_loop), ("choose+learn", choose_learn_loop)):
            rate = _cpu_rate(loop, count, repeats)
            ratio = rate / baseline.setdefault(label, rate)
            target = f"  (target 200,000: x{rate / 2e5:.1f})" if label == "choose()" else ""
            print(f"memory  {strategy:15s} {label:13s} {rate:12,.0f} per CPU s  {ratio:5.2f} of ε-greedy{target}")
    agent = _trained(AgentConfig(switch_after=0))
    states_arr = np.random.default_rng(4).integers(0, agent.n_states, count)
    rate = _cpu_rate(lambda n: agent.choose_many(states_arr[:n]), count, repeats)
    print(f"memory  epsilon-greedy  choose_many() {rate:12,.0f} per CPU s")

    def learn_loop(n: int) -> None:
        learn = agent.learn
        for k in range(n):
            learn(k % agent.n_states, 1 + k % agent.n_actions, 0.5)

    rate = _cpu_rate(learn_loop, count, repeats)
    print(f"memory  epsilon-greedy  learn()       {rate:12,.0f} rewards per CPU s")


def bench_store(count: int, repeats: int, directory: str) -> None:
    path = os.path.join(directory, "bench.sqlite")
    store = SqliteStore.create(path, AgentConfig(schedule="sliding-window", switch_after=0))
    import random

    rng = random.Random(5)

    def pairs(n: int) -> None:
        for k in range(n):
            d = store.decide(phi_prime=rng.uniform(-0.5, 1.5), hour=k % 24, rng=rng)
            store.record(d.decision_id, 0.5, {"k": k})

    rate = _median_rate(pairs, count, repeats)
    store.close()
    print(f"sqlite  one connection  decide+record {rate:12,.0f} pairs/s  (target 1,000: x{rate / 1e3:.1f})")

    def hook_style(n: int) -> None:
        for k in range(n):
            with SqliteStore(path) as s:
                d = s.decide(phi_prime=0.3, hour=k % 24, rng=rng)
            with SqliteStore(path) as s:
                s.record(d.decision_id, 1.0, {"k": k})

    rate = _median_rate(hook_style, max(count // 5, 50), repeats)
    print(f"sqlite  open per call   decide+record {rate:12,.0f} pairs/s")


def bench_process(runs: int, directory: str) -> None:
    path = os.path.join(directory, "hook.sqlite")
    SqliteStore.create(path).close()
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="", PYTHONPYCACHEPREFIX=os.path.join(directory, "pyc"))
    hook = (
        "import sys\nfrom condor_rlrep.store.sqlite import SqliteStore\n"
        "with SqliteStore(sys.argv[1]) as s:\n    s.decide(phi_prime=0.3)\n"
    )

    def wall(argv: list[str]) -> float:
        times = []
        subprocess.run(argv, env=env, check=True)  # warm the byte-code cache
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(argv, env=env, check=True)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    bare = wall([sys.executable, "-c", "pass"])
    htcondor = wall([sys.executable, "-c", "import htcondor2"])
    decide = wall([sys.executable, "-c", hook, path])
    print(f"process python -c pass          {1e3 * bare:7.1f} ms")
    print(f"process import htcondor2        {1e3 * htcondor:7.1f} ms")
    print(f"process fresh decide (no numpy) {1e3 * decide:7.1f} ms  ratio to htcondor2 import {decide / htcondor:.2f}"
          " (budget 1.5 for a whole PRE call)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a CI smoke run")
    args = parser.parse_args()
    count, repeats, runs = (20_000, 3, 3) if args.quick else (200_000, 5, 15)
    with tempfile.TemporaryDirectory() as directory:
        bench_memory(count, repeats)
        bench_store(200 if args.quick else count // 50, 1 if args.quick else repeats, directory)
        bench_process(runs, directory)


if __name__ == "__main__":
    main()
