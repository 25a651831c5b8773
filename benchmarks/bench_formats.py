"""Speed of the DAX/WfFormat readers and the DAGMan export.

Target: loading Montage_1000 (1,000 jobs, 2,485 edges, 1 MB of DAX) well under
0.5 s. Prints the median of several runs (first import excluded) and the ratio
to the target. Run: ``/work/venv/bin/python benchmarks/bench_formats.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from condor_rlrep.dag.export import export_dagman
from condor_rlrep.dag.load import load_workflow

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TARGET_SECONDS = 0.5


def median_seconds(action, repeat: int) -> float:
    action()  # warm-up: imports, caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    cases = [DATA / "dax" / "Montage_1000.xml", DATA / "wfformat" / "montage-chameleon-2mass-005d-001.json"]
    for path in cases:
        if not path.exists():
            print(f"{path.name}: absent, skipped")
            continue
        seconds = median_seconds(lambda: load_workflow(path), args.repeat)
        workflow = load_workflow(path)
        print(
            f"load {path.name}: {len(workflow.nodes)} nodes, {len(workflow.edges)} edges: "
            f"median {seconds * 1e3:.1f} ms ({seconds / TARGET_SECONDS:.3f} of the {TARGET_SECONDS} s target)"
        )
    big = cases[0]
    if big.exists():
        workflow = load_workflow(big)
        with tempfile.TemporaryDirectory() as out:
            seconds = median_seconds(lambda: export_dagman(workflow, out), max(3, args.repeat // 5))
        print(f"export {big.name} (1,000 submit files + DAG): median {seconds * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
