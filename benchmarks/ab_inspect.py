"""A/B: CPU time of a whole ``condor-rlrep inspect FILE`` process, two trees side by side.

Writes a random layered DAG (bench_criticality.generate_dag; default 100k
nodes, 300k edges), then runs, in interleaved rounds (A, B, B, A, …, so a
change of load hits both alike), each tree's ``.venv/bin/condor-rlrep
inspect FILE`` (optionally ``--json``) as a fresh process with stdout to a
file. It checks that both print the same bytes, and prints the median CPU
time (user + system, from wait4) and wall time of each tree and the ratio
B/A of the medians, measured in this one run.

    python benchmarks/ab_inspect.py base=/work/wt/base ours=. [--nodes 100000] [--rounds 7] [--json]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_criticality import generate_dag  # noqa: E402


def run(cli: str, args: list[str], out: Path) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of one child process."""
    with out.open("w") as handle:
        t0 = time.perf_counter()
        pid = os.posix_spawn(cli, [cli, *args], os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, handle.fileno(), 1)])
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cli} {' '.join(args)} failed with status {os.waitstatus_to_exitcode(status)}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs=2, metavar="LABEL=PATH")
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="inspect --json instead of the table")
    args = parser.parse_args()
    trees = [tree.split("=", 1) for tree in args.trees]
    clis = {label: str(Path(path).resolve() / ".venv" / "bin" / "condor-rlrep") for label, path in trees}
    with tempfile.TemporaryDirectory(prefix="ab-inspect-") as tmp:
        dag = Path(tmp) / "wf.dag"
        generate_dag(dag, args.nodes, 3 * args.nodes)
        command = ["inspect", str(dag), *(["--json"] if args.json else [])]
        cpu: dict[str, list[float]] = {label: [] for label in clis}
        wall: dict[str, list[float]] = {label: [] for label in clis}
        outs = {label: Path(tmp) / f"{label}.out" for label in clis}
        order = list(clis)
        for round_ in range(args.rounds):
            for label in (order if round_ % 2 == 0 else order[::-1]):
                seconds, elapsed = run(clis[label], command, outs[label])
                cpu[label].append(seconds)
                wall[label].append(elapsed)
        first, second = order
        same = filecmp.cmp(outs[first], outs[second], shallow=False)
    print(f"inspect{' --json' if args.json else ''}, {args.nodes} nodes, {args.rounds} interleaved rounds; "
          f"outputs identical: {same}")
    for label in order:
        print(f"  {label:8s} CPU median {statistics.median(cpu[label]):6.2f} s (min {min(cpu[label]):.2f})   "
              f"wall median {statistics.median(wall[label]):6.2f} s")
    ratio = statistics.median(cpu[second]) / statistics.median(cpu[first])
    low = min(cpu[second]) / min(cpu[first])
    print(f"  CPU {second}/{first}: {ratio:.3f} (medians), {low:.3f} (minima)")


if __name__ == "__main__":
    main()
