"""Cost of the beyond-the-paper policies against the paper's, side by side (issue 14).

The anchor is the same simulation under ``single`` and ``fixed:2`` (the
engine's own random match: one list pick per replica). Ours: ``idle-single``
(every decision ranks the free machines by idle time: a numpy gather and
partition over ≈1,000 machines) and ``model:3`` (that, plus a survival
estimate per candidate and one record per first invocation). Each
repetition runs all policies in alternating order (forward, then
reversed); figures are medians. Printed: seconds per run, the ratio to
``single``, and the extra cost per task decision in µs.

    python benchmarks/bench_beyond.py [--days 28] [--repeat 3] [--trace-seed 1]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

from condor_rlrep.sim.run import SimConfig, load_trace, simulate

POLICIES = ("single", "fixed:2", "idle-single", "model:3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=28.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trace-seed", type=int, default=1)
    args = parser.parse_args()
    trace = load_trace(preset="newcastle-2010", seed=args.trace_seed, days=args.days)
    times: dict[str, list[float]] = {p: [] for p in POLICIES}
    tasks: dict[str, int] = {}
    for rep in range(args.repeat):
        order = POLICIES if rep % 2 == 0 else tuple(reversed(POLICIES))
        for policy in order:
            gc.collect()
            t0 = time.perf_counter()
            result = simulate(trace, SimConfig(policy=policy, phi=0.1, seed=1))
            times[policy].append(time.perf_counter() - t0)
            tasks[policy] = int(len(result.tasks["submit"]))
    base = statistics.median(times["single"])
    print(f"{args.days:g} days, trace seed {args.trace_seed}, {args.repeat} repetitions, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'policy':<14}{'median s':>10}{'× single':>10}{'µs/task over single':>22}")
    for policy in POLICIES:
        med = statistics.median(times[policy])
        extra = (med - base) / tasks[policy] * 1e6
        print(f"{policy:<14}{med:>10.2f}{med / base:>10.2f}{extra:>22.1f}")


if __name__ == "__main__":
    main()
