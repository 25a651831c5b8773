"""A/B: CPU time of ``read_dag`` on grouped and shuffled lines (issue 28: shuffled ≤ 1.2 × grouped).

The two files of ``bench_parse_shapes.write_edges_dag`` (N JOB lines and ~3·N
``PARENT a CHILD b`` lines, first grouped, then in random order). Each round
runs one fresh process per tree (alternating), which parses both files
``--repeat`` times in turn and keeps the least CPU time (``process_time``,
numpy imported first: the cycle check of a shuffled file needs it, and
``inspect`` loads it anyway). Printed per tree: the per-round minima, the
ratio shuffled / grouped per round and its median; and grouped NEW / OLD.

    python benchmarks/ab_parse_shuffled.py OLD=/work/wt/base NEW=. [--nodes 100000] [--rounds 5] [--repeat 3]

Each tree's own ``.venv/bin/python`` runs its own code.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_parse_shapes import write_edges_dag  # noqa: E402

CHILD = """
import gc, sys, time
import numpy
from condor_rlrep.dag import read_dag
best = {}
for _ in range(int(sys.argv[1])):
    for path in sys.argv[2:]:
        gc.collect()
        t = time.process_time()
        workflow = read_dag(path)
        best[path] = min(best.get(path, 1e9), time.process_time() - t)
        del workflow
print(" ".join(str(best[path]) for path in sys.argv[2:]))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs=2, help="OLD=path NEW=path")
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    trees = dict(tree.split("=", 1) for tree in args.trees)
    with tempfile.TemporaryDirectory() as tmp:
        files = [Path(tmp) / "grouped.dag", Path(tmp) / "shuffled.dag"]
        for path, shuffled in zip(files, (False, True)):
            write_edges_dag(path, args.nodes, shuffled)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                python = str(Path(tree).resolve() / ".venv" / "bin" / "python")
                out = subprocess.run([python, "-c", CHILD, str(args.repeat), *map(str, files)], cwd=tree,
                                     check=True, capture_output=True, text=True).stdout
                grouped, shuffled = map(float, out.split())
                times[name].append((grouped, shuffled))
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.nodes} nodes, "
          f"{args.rounds} rounds, least of {args.repeat} parses each")
    for name, rounds in times.items():
        ratios = [s / g for g, s in rounds]
        print(f"{name}: grouped {' '.join(f'{g:.3f}' for g, _ in rounds)} s; shuffled {' '.join(f'{s:.3f}' for _, s in rounds)} s;"
              f" shuffled/grouped {' '.join(f'{r:.2f}' for r in ratios)}, median {statistics.median(ratios):.3f}")
    names = list(times)
    if len(names) == 2:
        per_round = [n[0] / o[0] for o, n in zip(times[names[0]], times[names[1]])]
        print(f"grouped {names[1]}/{names[0]}: {' '.join(f'{r:.3f}' for r in per_round)}, median {statistics.median(per_round):.3f}")


if __name__ == "__main__":
    main()
