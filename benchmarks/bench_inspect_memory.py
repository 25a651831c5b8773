"""Benchmark: bytes per node of ``condor-rlrep inspect --json`` beside the naive floor (issues 24 and 28).

Peak RSS of whole processes, run alternately in one session, on random
layered DAGs (bench_criticality.generate_dag: JOB, VARS rlrep_estimate and
about 3 PARENT lines per node) of two sizes N and 2·N:

* ``inspect``: ``condor-rlrep inspect --json FILE``;
* ``floor``: ``benchmarks/naive_parse.py FILE``, a naive parser only (plain
  dicts and lists, no checks, no output): issue 28's anchor, the floor;
* ``naive``: ``benchmarks/naive_inspect.py FILE`` (plain dicts, no checks,
  the same JSON as ``inspect --json``), for comparison;
* ``table``: ``condor-rlrep inspect FILE`` (the table instead of JSON).

The goal (issue 28) is ``inspect`` ≤ 1.5 × the floor, in peak RSS and in
bytes per node.

Bytes per node are the slope (RSS(2N) − RSS(N)) / N, so the interpreter and
the imports (a fixed cost) drop out, and, for comparison, RSS(2N) / 2N.
``--splice-levels L`` also times a chain of L nested SPLICE files (each
with one JOB: DAGMan's names grow with the depth, so the names alone are
O(L²) bytes) under ``prlimit --as`` (``--limit-gb``, default 2).

    python benchmarks/bench_inspect_memory.py [--nodes 100000] [--repeat 2] [--splice-levels 10000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_criticality import generate_dag  # noqa: E402


def peak(cmd: list[str], out: Path) -> tuple[float, float, int]:
    """Peak RSS (MiB), CPU seconds and exit status of one child process."""
    with out.open("w") as handle:
        proc = subprocess.Popen(cmd, stdout=handle, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def splice_chain(folder: Path, levels: int) -> Path:
    folder.mkdir()
    (folder / "a.sub").write_text("executable = /bin/true\nqueue\n")
    for i in range(levels):
        text = f"JOB A{i} a.sub\nVARS A{i} rlrep_estimate=\"60\"\n"
        if i + 1 < levels:
            text += f"SPLICE S{i + 1} s{i + 1}.dag\nPARENT A{i} CHILD S{i + 1}\n"
        (folder / f"s{i}.dag").write_text(text)
    return folder / "s0.dag"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--splice-levels", type=int, default=0)
    parser.add_argument("--limit-gb", type=float, default=2.0)
    args = parser.parse_args()
    exe = str(Path(sys.executable).with_name("condor-rlrep"))
    root = Path(tempfile.mkdtemp(prefix="bench-inspect-mem-"))
    try:
        sizes = (args.nodes, 2 * args.nodes)
        dags = {n: root / f"g{n}.dag" for n in sizes}
        for n, path in dags.items():
            generate_dag(path, n, 3 * n)
        rss: dict[tuple[str, int], list[float]] = {}
        cmds = {
            "inspect": [exe, "inspect", "--json"],
            "table": [exe, "inspect"],
            "floor": [sys.executable, str(HERE / "naive_parse.py")],
            "naive": [sys.executable, str(HERE / "naive_inspect.py")],
        }
        for _ in range(args.repeat):
            for n in sizes:
                for label, cmd in cmds.items():
                    mib, _cpu, status = peak([*cmd, str(dags[n])], root / "out.json")
                    if status != 0:
                        raise SystemExit(f"{label} failed on {n} nodes")
                    rss.setdefault((label, n), []).append(mib)
        small, big = sizes
        print(f"random layered DAG, {small:,} and {big:,} nodes (3 edges per node), medians of {args.repeat}:")
        slopes, peaks = {}, {}
        for label in cmds:
            a, b = (statistics.median(rss[label, n]) for n in sizes)
            peaks[label] = (a, b)
            slopes[label] = (b - a) * 2**20 / (big - small)
            print(f"  {label:8s} peak RSS {a:7.1f} MiB / {b:7.1f} MiB;  {slopes[label]:6.0f} B per node (slope), "
                  f"{b * 2**20 / big:6.0f} B per node (RSS / nodes)")
        for label in ("inspect", "table", "naive"):
            print(f"  {label} / floor: bytes per node (slope) {slopes[label] / slopes['floor']:.2f}, "
                  f"peak RSS {peaks[label][0] / peaks['floor'][0]:.2f} / {peaks[label][1] / peaks['floor'][1]:.2f}")
        if args.splice_levels:
            dag = splice_chain(root / "chain", args.splice_levels)
            limit = str(int(args.limit_gb * 2**30))
            mib, cpu, status = peak(["prlimit", f"--as={limit}", exe, "inspect", str(dag)], root / "chain.txt")
            size = (root / "chain.txt").stat().st_size
            print(f"{args.splice_levels:,} nested SPLICE files, inspect (table) under prlimit --as={args.limit_gb:g}G: "
                  f"exit {status}, peak RSS {mib:.0f} MiB, {cpu:.1f} CPU-s, output {size / 1e6:.0f} MB")
        print(f"load {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
