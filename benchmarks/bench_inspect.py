"""Benchmark: whole-process ``condor-rlrep inspect --json`` against a naive 60-line script (issue 16).

Writes a random layered DAG (bench_criticality.generate_dag: JOB, VARS
rlrep_estimate and one PARENT line per edge; default 100k nodes, 300k
edges), then runs, alternately, as fresh processes with stdout to a file:

* ``inspect``: ``condor-rlrep inspect --json FILE`` (compact JSON);
* ``indent``: the same with ``--indent 2`` (Python's pure-Python encoder);
* ``naive``: ``benchmarks/naive_inspect.py FILE``, plain dicts, the anchor.

It checks that inspect and the anchor print the same per-node figures, then
prints medians of wall time and peak RSS, and the ratios to the anchor
measured in the same run (target: inspect ≤ 3 s and ≤ 1.0× naive).

    python benchmarks/bench_inspect.py [--nodes 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_criticality import generate_dag  # noqa: E402


def timed(cmd: list[str], out: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with out.open("w") as handle:
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=handle, check=True)
        wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # max over children so far
    return wall, max(peak, before) / 1024


def same_figures(ours: Path, naive: Path) -> int:
    a, b = json.loads(naive.read_text()), json.loads(ours.read_text())
    assert a["critical_path_seconds"] == b["critical_path_seconds"]
    bad = 0
    for name, figures in a["nodes"].items():
        for key, value in figures.items():
            other = b["nodes"][name][key]
            if isinstance(value, float) and isinstance(other, float):
                bad += not math.isclose(value, other, rel_tol=1e-12, abs_tol=1e-9)
            else:
                bad += value != other
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    exe = shutil.which("condor-rlrep") or str(Path(sys.executable).parent / "condor-rlrep")
    with tempfile.TemporaryDirectory() as tmp:
        dag = Path(tmp) / "w.dag"
        generate_dag(dag, args.nodes, 3 * args.nodes)
        runs = {
            "inspect": [exe, "inspect", "--json", str(dag)],
            "indent": [exe, "inspect", "--json", "--indent", "2", str(dag)],
            "naive": [sys.executable, str(HERE / "naive_inspect.py"), str(dag)],
        }
        walls: dict[str, list[float]] = {k: [] for k in runs}
        rss: dict[str, list[float]] = {k: [] for k in runs}
        load = [os.getloadavg()]
        for _ in range(args.repeat):
            for name, cmd in runs.items():  # alternated: the same noise for all
                wall, _peak = timed(cmd, Path(tmp) / f"{name}.json")
                walls[name].append(wall)
        # peak RSS once per command, each in a process of its own
        for name, cmd in runs.items():
            out = subprocess.run(
                [sys.executable, "-c", "import resource,subprocess,sys;"
                 "subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,check=True);"
                 "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)", *cmd],
                capture_output=True, text=True, check=True).stdout
            rss[name].append(int(out) / 1024)
        load.append(os.getloadavg())
        mismatches = same_figures(Path(tmp) / "inspect.json", Path(tmp) / "naive.json")
    anchor = statistics.median(walls["naive"])
    print(f"{args.nodes} nodes, {3 * args.nodes} edges; load average before {load[0][0]:.2f}, after {load[1][0]:.2f}")
    print(f"per-node figures differing between inspect and the anchor: {mismatches}")
    print(f"{'run':>8} {'median s':>9} {'min s':>7} {'x naive':>8} {'peak MiB':>9}")
    for name in runs:
        med = statistics.median(walls[name])
        print(f"{name:>8} {med:>9.2f} {min(walls[name]):>7.2f} {med / anchor:>8.2f} {rss[name][0]:>9.0f}")


if __name__ == "__main__":
    main()
