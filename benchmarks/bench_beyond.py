"""Cost of the beyond-the-paper policies against the paper's, side by side (issue 14).

The anchor is the same simulation under ``single`` and ``fixed:2`` (the
engine's own random match: one list pick per replica). Ours: ``idle-single``
(every decision takes the longest-idle free machines from the order
``placement.IdleOrder`` keeps as machines come and go), ``model:3`` (that, plus a survival
estimate per candidate and one record per first invocation) and the
contextual bandit ``linucb:3,alpha=3`` (that ranking, a 32-feature context,
two small matrix products per decision and a rank-one ridge update per
judged task). Each repetition runs all policies in alternating order
(forward, then reversed); figures are medians. Printed: wall and CPU
seconds per run (CPU is what to compare on a shared machine), the CPU ratio
to ``single``, and the extra CPU per task decision in µs.

    python benchmarks/bench_beyond.py [--days 28] [--repeat 3] [--trace-seed 1] [--policies P …]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.run import load_trace, simulate

POLICIES = ("single", "fixed:2", "idle-single", "model:3", "linucb:3,alpha=3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=28.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trace-seed", type=int, default=1)
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), metavar="POLICY")
    args = parser.parse_args()
    policies = list(args.policies)
    if "single" not in policies:
        policies.insert(0, "single")
    trace = load_trace(preset="newcastle-2010", seed=args.trace_seed, days=args.days)
    wall: dict[str, list[float]] = {p: [] for p in policies}
    cpu: dict[str, list[float]] = {p: [] for p in policies}
    tasks: dict[str, int] = {}
    for rep in range(args.repeat):
        order = policies if rep % 2 == 0 else list(reversed(policies))
        for policy in order:
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            result = simulate(trace, SimConfig(policy=policy, phi=0.1, seed=1))
            cpu[policy].append(time.process_time() - c0)
            wall[policy].append(time.perf_counter() - t0)
            tasks[policy] = int(len(result.tasks["submit"]))
    base = statistics.median(cpu["single"])
    print(f"{args.days:g} days, trace seed {args.trace_seed}, {args.repeat} repetitions, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'policy':<20}{'wall s':>9}{'CPU s':>9}{'CPU × single':>14}{'CPU µs/task over single':>26}")
    for policy in policies:
        med = statistics.median(cpu[policy])
        extra = (med - base) / tasks[policy] * 1e6
        print(f"{policy:<20}{statistics.median(wall[policy]):>9.2f}{med:>9.2f}{med / base:>14.2f}{extra:>26.1f}")


if __name__ == "__main__":
    main()
