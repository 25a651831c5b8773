"""Tables and goal checks of the beyond-the-paper sweeps (issue 14).

    python sim/results/beyond/summarize.py [--model POLICY] > sim/results/beyond/table.md

Reads every ``seed-N/runs/*.json`` and ``seed-N-rl/runs/*.json`` next to
this file (written by ``condor-rlrep sweep beyond-seedN[-rl] --out
sim/results/beyond/seed-N[-rl]``) and
prints Markdown: per seed, every policy at P = 0.1 (workflows within P,
gain over single, replica energy, mean replicas per task, energy per
workflow within P), the candidate policy at every P against single and
fixed:2, and the issue's goals checked one by one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TUNING_SEED = 1


def load(folder: Path) -> dict[tuple[str, float], dict]:
    runs = {}
    for path in sorted((folder / "runs").glob("*.json")):
        data = json.loads(path.read_text())
        params, result = data["params"], data["result"]
        runs[(params["policy"], float(params["phi"]))] = result
    return runs


def within(result: dict, phi: float) -> int:
    return int(result["within"][f"{phi:g}"])


def row(policy: str, result: dict, phi: float, single: dict) -> str:
    n = result["workflows"]
    w = within(result, phi)
    gain = 100.0 * (w / within(single, phi) - 1.0)
    mwh = result["energy_kwh"]["workflow_total"] / 1000.0
    per = result["energy_kwh"]["workflow_total"] / w if w else float("nan")
    return (f"| {policy} | {100.0 * w / n:.1f} % | {gain:+.1f} % | {mwh:.1f} | "
            f"{result['mean_replicas']:.3f} | {per:.3f} |")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="model:3", help="the candidate policy checked against the goals")
    args = parser.parse_args(argv)
    model = args.model
    out = []
    verdicts = []
    # seed-N holds the grid, seed-N-rl the rl:3 run at P = 0.1
    seeds = sorted({int(p.name.split("-")[1]) for p in HERE.glob("seed-*") if (p / "runs").is_dir()})
    for seed in seeds:
        runs = {}
        for folder in (HERE / f"seed-{seed}", HERE / f"seed-{seed}-rl"):
            if (folder / "runs").is_dir():
                runs.update(load(folder))
        phis = sorted({phi for _, phi in runs})
        policies = list(dict.fromkeys(p for p, _ in runs))
        role = "tuning seed" if seed == TUNING_SEED else "held-out seed"
        out.append(f"\n## Trace seed {seed} ({role})\n")
        out.append("At P = 0.1 (φ = P). Energy: replica (workflow-job) energy of the year, MWh; per workflow: "
                   "kWh per workflow within P.\n")
        out.append("| policy | within P | vs single | energy MWh | replicas/task | kWh per workflow within P |")
        out.append("|---|---|---|---|---|---|")
        single = runs.get(("single", 0.1))
        if single is None:
            out.append("| (no single run at P = 0.1) |||||")
            continue
        for policy in policies:
            if (policy, 0.1) in runs:
                out.append(row(policy, runs[(policy, 0.1)], 0.1, single))
        out.append(f"\n{model} at every P:\n")
        out.append("| P | single | fixed:2 | rl:3 | oracle:3 | " + model + " | vs single | energy " + model
                   + " / fixed:2 / single MWh | replicas/task | kWh per workflow within P |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        ok_floor = ok_energy = True
        checked = 0
        for phi in phis:
            cells = []
            for p in ("single", "fixed:2", "rl:3", "oracle:3", model):
                r = runs.get((p, phi))
                cells.append(f"{100.0 * within(r, phi) / r['workflows']:.1f} %" if r else "–")
            m, s, f = runs.get((model, phi)), runs.get(("single", phi)), runs.get(("fixed:2", phi))
            if not (m and s and f):
                out.append(f"| {phi:g} | " + " | ".join(cells) + " | – | – | – | – |")
                continue
            gain = 100.0 * (within(m, phi) / within(s, phi) - 1.0)
            e = [r["energy_kwh"]["workflow_total"] / 1000.0 for r in (m, f, s)]
            checked += 1
            ok_floor &= gain >= -1.0
            ok_energy &= e[0] <= e[1]
            per = m["energy_kwh"]["workflow_total"] / within(m, phi)
            out.append(f"| {phi:g} | " + " | ".join(cells) + f" | {gain:+.1f} % | {e[0]:.1f} / {e[1]:.1f} / {e[2]:.1f}"
                       f" | {m['mean_replicas']:.3f} | {per:.3f} |")
        m, s, rl = runs.get((model, 0.1)), runs.get(("single", 0.1)), runs.get(("rl:3", 0.1))
        if m and s and rl:
            gain = 100.0 * (within(m, 0.1) / within(s, 0.1) - 1.0)
            e_m, e_rl = (r["energy_kwh"]["workflow_total"] / 1000.0 for r in (m, rl))
            verdicts.append(
                f"| {seed} | {role} | {gain:+.1f} % {'✓' if gain >= 45 else '✗'} | {e_m:.1f} ≤ {e_rl:.1f} "
                f"{'✓' if e_m <= e_rl else '✗'} | {'✓' if ok_floor else '✗'} ({checked} of {len(phis)} P) "
                f"| {'✓' if ok_energy else '✗'} ({checked} of {len(phis)} P) |"
            )
    print(f"# Beyond the paper: {model} against the goals of issue 14\n")
    print("| trace seed | role | P = 0.1 gain over single (goal ≥ +45 %) | energy ≤ rl:3's at P = 0.1 (MWh) "
          "| every P: ≥ single − 1 % | every P: energy ≤ fixed:2 |")
    print("|---|---|---|---|---|---|")
    print("\n".join(verdicts))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
