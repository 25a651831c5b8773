"""Simulator speed: one simulated year of the newcastle-2010 preset with 10 %
of its jobs replaced by Figure-1 workflows under ``rl:3`` (issue 5).

Targets (DESIGN §5, issue 5): ≤ 120 s wall and ≤ 2 GB for the year; aim for
≥ 270 k model events/s, i.e. within 3× of a bare ``heapq`` loop. The bare
loop here pushes and pops the same number of events through a heap holding
as many pending events as the cluster has machines, in the same process.

    /work/venv/bin/python benchmarks/bench_sim.py [--days 365] [--repeat 3] [--trace DIR]

Prints the median over ``--repeat`` runs of each figure, and the ratio, in
wall time and in CPU time of this process (the CPU figures are the fair ones
on a shared, loaded machine; the load average is printed with them).
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import resource
import statistics
import sys
import time


def bare_heapq(events: int, pending: int, seed: int = 0) -> tuple[float, float]:
    """(wall, CPU) seconds to pop ``events`` events off a heap of ``pending`` and push a
    successor for each: the floor of any heap-driven event loop."""
    import numpy as np

    rng = np.random.default_rng(seed)
    gaps = rng.exponential(3600.0, size=1 << 16).tolist()
    heap = [(gaps[i % len(gaps)], i, i % pending) for i in range(pending)]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    mask = len(gaps) - 1
    seq = pending
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(events):
        t, _s, payload = pop(heap)
        push(heap, (t + gaps[seq & mask], seq, payload))
        seq += 1
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=365.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--policy", default="rl:3")
    parser.add_argument("--phi", type=float, default=0.1)
    parser.add_argument("--trace", default=None, help="A trace folder instead of generating the preset.")
    parser.add_argument("--trace-seed", type=int, default=2010)
    args = parser.parse_args()

    from condor_rlrep.sim.run import SimConfig, load_trace, simulate

    t0 = time.perf_counter()
    trace = (
        load_trace(trace_dir=args.trace)
        if args.trace
        else load_trace(preset="newcastle-2010", days=args.days, seed=args.trace_seed)
    )
    trace_seconds = time.perf_counter() - t0
    config = SimConfig(workflows=("figure1",), fraction=0.10, policy=args.policy, phi=args.phi, seed=1,
                       days=args.days)
    walls, cpus, runs, rates, cpu_rates, bare_rates, bare_cpu_rates = [], [], [], [], [], [], []
    result = None
    for _ in range(args.repeat):
        c0 = time.process_time()
        result = simulate(trace, config)
        cpu = time.process_time() - c0
        walls.append(result.wall_seconds)
        cpus.append(cpu)
        runs.append(result.extra["run_seconds"])
        rates.append(result.events / result.wall_seconds)
        cpu_rates.append(result.events / cpu)
        bare_wall, bare_cpu = bare_heapq(result.events, trace.machine_count)
        bare_rates.append(result.events / bare_wall)
        bare_cpu_rates.append(result.events / bare_cpu)
    assert result is not None
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    ours, floor = statistics.median(rates), statistics.median(bare_rates)
    ours_cpu, floor_cpu = statistics.median(cpu_rates), statistics.median(bare_cpu_rates)
    summary = result.summary()
    report = {
        "trace": f"{trace.machine_count} machines, {trace.login_count} logins, {trace.job_count} jobs, "
                 f"{trace.length / 86400:g} days",
        "trace_seconds": round(trace_seconds, 2),
        "policy": args.policy,
        "workflows": summary["workflows"],
        "tasks": summary["tasks"],
        "events": result.events,
        "wall_seconds_median": round(statistics.median(walls), 2),
        "cpu_seconds_median": round(statistics.median(cpus), 2),
        "event_loop_wall_seconds_median": round(statistics.median(runs), 2),
        "events_per_second_median": round(ours),
        "bare_heapq_events_per_second_median": round(floor),
        "ratio_bare_over_ours": round(floor / ours, 2),
        "events_per_cpu_second_median": round(ours_cpu),
        "bare_heapq_events_per_cpu_second_median": round(floor_cpu),
        "ratio_bare_over_ours_cpu": round(floor_cpu / ours_cpu, 2),
        "peak_rss_mb": round(rss_mb),
        "within_120s": statistics.median(walls) <= 120.0,
        "within_2GB": rss_mb <= 2048.0,
        "aim_270k_events_per_second": ours >= 270_000,
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
