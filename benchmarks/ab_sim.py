"""CPU of ``condor-rlrep simulate`` from two checkouts, alternating, in one run.

Both checkouts simulate the same trace folder (generated once by the first)
with the same policy and seed; which runs first flips every round, so both
see the same machine load. The figure is the CPU time (user + sys) of the
whole process, import included, and the two result folders are compared
byte for byte (a change meant to keep behaviour must keep every output).

    python benchmarks/ab_sim.py OLD=/path/to/old NEW=/path/to/new \\
        [--days 28] [--policies single,model:3,linucb:3,alpha=3] [--rounds 4]

Each checkout needs ``.venv`` with itself installed. Prints medians, the
NEW/OLD ratio per policy and whether the outputs were identical.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from policy_list import split_policies


def _cpu(argv: list[str], cwd: Path) -> float:
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr.read().decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def _same_tree(a: Path, b: Path) -> bool:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return files_a == files_b and all(filecmp.cmp(a / f, b / f, shallow=False) for f in files_a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs=2, metavar="LABEL=PATH")
    parser.add_argument("--days", type=float, default=28.0)
    parser.add_argument("--policies", default="single,model:3")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--trace-seed", type=int, default=2010)
    args = parser.parse_args()
    sides = [(label, Path(path).resolve() / ".venv" / "bin" / "condor-rlrep")
             for label, path in (spec.split("=", 1) for spec in args.trees)]
    root = Path(tempfile.mkdtemp(prefix="ab-sim-"))
    try:
        trace = root / "trace"
        subprocess.run([str(sides[0][1]), "-q", "trace", "generate", "--preset", "newcastle-2010",
                        "--seed", str(args.trace_seed), "--days", str(args.days), "-o", str(trace)], check=True)
        for policy in split_policies(args.policies):
            cpu: dict[str, list[float]] = {label: [] for label, _ in sides}
            for index in range(args.rounds):
                for label, exe in (sides if index % 2 == 0 else sides[::-1]):
                    out = root / f"{label}-{policy.replace(':', '_')}-{index}"
                    cpu[label].append(_cpu([str(exe), "-q", "simulate", "--trace", str(trace), "--policy", policy,
                                            "--seed", "1", "-o", str(out)], root))
            (old, _), (new, _) = sides
            same = all(_same_tree(root / f"{old}-{policy.replace(':', '_')}-{i}",
                                  root / f"{new}-{policy.replace(':', '_')}-{i}") for i in range(args.rounds))
            med = {label: statistics.median(values) for label, values in cpu.items()}
            print(f"{policy}: {old} {med[old]:.2f} CPU-s, {new} {med[new]:.2f} CPU-s (medians of {args.rounds}), "
                  f"{new}/{old} {med[new] / med[old]:.3f} (spread {min(cpu[new]) / max(cpu[old]):.3f}–"
                  f"{max(cpu[new]) / min(cpu[old]):.3f}); outputs identical: {same}")
        print(f"load {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
