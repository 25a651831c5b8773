"""Benchmark: DAG parse time and peak memory on generated DAGs.

For each size N it writes a DAG of N ``JOB`` lines and about 3·N
``PARENT a CHILD b`` lines (each node's parents drawn from earlier nodes, so
the DAG is acyclic) into a temporary directory and prints the median and
minimum wall time and the median CPU time of ``read_dag`` over several runs,
the time per node, the
time to write it back (``write_dag_lines``), and the peak memory of one parse
(tracemalloc). ``order`` is the order of the JOB lines: ``fwd`` (parents
first: file order is topological, no graph search), ``rev`` (children first:
the reverse is topological, no graph search) or ``shuf`` (random: the full
Kahn cycle check runs).

The machine this runs on is shared and noisy: ``ref`` is the time of a
reference loop (strip+split of every line, GC off) measured right before each
size, and ``ratio`` = median parse time / ref, which stays comparable between
runs when absolute times do not. Each timed parse starts after the previous
workflow is freed and collected (``gc.collect()``), so it measures the parse
alone; the cyclic GC's later scans of the objects a parse creates (see
bench_criticality.py) are not in it.

    /work/venv/bin/python benchmarks/bench_parse.py [--sizes 1000,10000,100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from condor_rlrep.dag import read_dag, write_dag_lines


def generate(path: Path, n: int, edges_per_node: int = 3, seed: int = 0, order: str = "fwd") -> int:
    """Write the benchmark DAG (JOB lines in ``order``: fwd, rev or shuf); return its number of edges."""
    rng = np.random.default_rng(seed)
    ids = {"fwd": np.arange(n), "rev": np.arange(n)[::-1], "shuf": rng.permutation(n)}[order]
    with path.open("w") as f:
        for i in ids:
            f.write(f"JOB n{i} job.sub\n")
        count = 0
        for i in range(1, n):
            k = min(i, edges_per_node)
            parents = rng.choice(i, size=k, replace=False) if i > k else range(i)
            for p in parents:
                f.write(f"PARENT n{p} CHILD n{i}\n")
                count += 1
    return count


def reference(path: Path) -> float:
    lines = path.read_text().split("\n")
    gc.disable()
    try:
        t0 = time.perf_counter()
        for line in lines:
            line.strip().split()
        return time.perf_counter() - t0
    finally:
        gc.enable()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    cases = [(n, "fwd") for n in sizes] + [(sizes[-1], "rev"), (sizes[-1], "shuf")]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'nodes':>8} {'order':>5} {'edges':>8} {'median s':>9} {'min s':>7} {'cpu s':>6} {'us/node':>8} "
              f"{'ref s':>7} {'ratio':>6} {'write s':>8} {'peak MiB':>9}")
        for n, order in cases:
            path = Path(tmp) / f"gen{n}{order}.dag"
            m = generate(path, n, order=order)
            ref = min(reference(path) for _ in range(3))
            times, cpus = [], []
            wf = None
            for _ in range(args.repeat):
                # Free the previous result and let the cyclic GC scan it now:
                # otherwise the next timed parse pays for both.
                wf = None
                gc.collect()
                t0, c0 = time.perf_counter(), time.process_time()
                wf = read_dag(path)
                times.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
            t0 = time.perf_counter()
            for _ in write_dag_lines(wf):
                pass
            wtime = time.perf_counter() - t0
            del wf
            tracemalloc.start()
            read_dag(path)
            _cur, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            med = statistics.median(times)
            print(f"{n:>8} {order:>5} {m:>8} {med:>9.3f} {min(times):>7.3f} {statistics.median(cpus):>6.3f} {1e6 * med / n:>8.2f} "
                  f"{ref:>7.3f} {med / ref:>6.1f} {wtime:>8.3f} {peak / 2**20:>9.1f}")


if __name__ == "__main__":
    main()
