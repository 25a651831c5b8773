"""Tuning runs of the contextual bandits on the TUNING trace seed only.

One simulated year per run, in-process (as the runs of ``../beyond/tuning.md``):
``load_trace(preset="newcastle-2010", seed=1)``, Figure-1 workflows, w = 10 %,
simulation seed 1, ε₁ = 0.5, ε₂ = 0.05 (what ``beyond-ctx-seed*.toml`` run;
the ε values only matter to rl policies). Appends one JSON line per run to
LOG: the numbers of a row of ``tuning.md`` and the run's CPU seconds.
``--seed`` changes the simulation seed (which trace jobs become workflows,
the engine's machine choice, Thompson's draws) on the same tuning trace:
a probe of how much a result moves by chance, not a held-out test.

    python sim/tuning/tune_policies.py LOG PHI POLICY [POLICY …] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import time

from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.run import load_trace, simulate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("phi", type=float)
    parser.add_argument("policies", nargs="+")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    log, phi, policies = args.log, args.phi, args.policies
    trace = load_trace(preset="newcastle-2010", seed=1)
    for policy in policies:
        config = SimConfig(workflows=("figure1",), fraction=0.10, policy=policy, phi=phi, seed=args.seed,
                           epsilon_high=0.5, epsilon_low=0.05, strategy="epsilon-greedy")
        cpu = time.process_time()
        result = simulate(trace, config)
        cpu = time.process_time() - cpu
        s = result.summary()
        row = {"policy": policy, "phi": phi, "seed": args.seed, "within": s["within"][f"{phi:g}"], "workflows": s["workflows"],
               "energy_mwh": s["energy_kwh"]["total"] / 1000.0, "replicas_per_task": s["replicas"] / s["tasks"],
               "cpu_s": cpu, "when": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
