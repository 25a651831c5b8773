"""Benchmark: DAG parse cost in adversarial shapes (issue 16), against a bare loop.

Two shapes a generator (or an attacker) can produce:

* ``grouped`` / ``shuffled``: N ``JOB`` lines and ~3·N ``PARENT a CHILD b``
  lines (each node's parents drawn from earlier nodes), first in the usual
  order (all JOB lines, then the edges), then with every line in random
  order (PARENT before JOB, JOB lines scattered among edges). The parse
  must be linear in either order: ``shuf/grp`` is the ratio of the two
  medians, measured in the same run.
* ``join MxN``: M parent and N child ``JOB`` lines and one
  ``PARENT p1 … pM CHILD c1 … cN`` line. DAGMan represents such a line by
  a join node (M + N edges, not M·N); so must the parser, the dependency
  graph and φ′. ``graph+phi`` times ``dependency_graph`` + ``plan_workflow``
  + ``planned_phi_prime()`` on the result.

Anchor: a bare loop over the same file (read, ``strip()`` + ``split()`` of
every line, GC off), run alternately with each timed parse; ``ratio`` is
median parse time / median anchor time, comparable between runs on this
noisy shared machine when absolute times are not. Each case runs in a fresh
subprocess (``--case``), so that ``peak MiB`` (``ru_maxrss``) is its own;
``base MiB`` is the same subprocess's RSS before parsing (interpreter and
imports).

    python benchmarks/bench_parse_shapes.py                     # 5k..100k, 3000x3000
    python benchmarks/bench_parse_shapes.py --sizes 5000 --join 300 --repeat 3   # quick
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_edges_dag(path: Path, n: int, shuffled: bool, seed: int = 0, edges_per_node: int = 3) -> int:
    """N JOB lines and ~3·N single-edge PARENT lines; every line in random order if ``shuffled``."""
    rng = random.Random(seed)
    lines = [f"JOB n{i} job.sub" for i in range(n)]
    for i in range(1, n):
        k = min(i, edges_per_node)
        lines.extend(f"PARENT n{p} CHILD n{i}" for p in rng.sample(range(i), k))
    if shuffled:
        rng.shuffle(lines)
    path.write_text("\n".join(lines) + "\n")
    return len(lines) - n


def write_join_dag(path: Path, m: int, n: int) -> int:
    lines = [f"JOB p{i} job.sub" for i in range(m)] + [f"JOB c{i} job.sub" for i in range(n)]
    lines.append("PARENT " + " ".join(f"p{i}" for i in range(m)) + " CHILD " + " ".join(f"c{i}" for i in range(n)))
    path.write_text("\n".join(lines) + "\n")
    return m * n


def anchor(path: Path) -> float:
    gc.disable()
    try:
        t0 = time.perf_counter()
        for line in path.read_text().split("\n"):
            line.strip().split()
        return time.perf_counter() - t0
    finally:
        gc.enable()


def run_case(path: Path, repeat: int, with_plan: bool) -> dict:
    from condor_rlrep.dag import read_dag

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    parse_times, anchor_times, plan_times = [], [], []
    workflow = None
    for _ in range(repeat):
        anchor_times.append(anchor(path))
        workflow = None
        gc.collect()
        t0 = time.perf_counter()
        workflow = read_dag(path)
        parse_times.append(time.perf_counter() - t0)
        if with_plan:
            from condor_rlrep.workflowplan import plan_workflow
            from condor_rlrep.dag.graph import dependency_graph

            t0 = time.perf_counter()
            estimates = dict.fromkeys(workflow.nodes, 60.0)
            phis = plan_workflow(dependency_graph(workflow, estimates), 0.5).planned_phi_prime()
            plan_times.append(time.perf_counter() - t0)
            assert len(phis) == len(workflow.nodes)
            del phis, estimates
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert workflow is not None
    stored = len(workflow.edges) + sum(len(j.parents) + len(j.children) for j in getattr(workflow, "joins", ()))
    return {
        "parse": statistics.median(parse_times),
        "anchor": statistics.median(anchor_times),
        "plan": statistics.median(plan_times) if plan_times else None,
        "peak_mib": peak,
        "base_mib": base,
        "stored_edges": stored,
        "nodes": len(workflow.nodes),
    }


def _subprocess(path: Path, repeat: int, with_plan: bool) -> dict:
    cmd = [sys.executable, __file__, "--case", str(path), "--repeat", str(repeat)] + (["--plan"] if with_plan else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="5000,10000,20000,100000")
    ap.add_argument("--join", default="3000", help="M for the M x M PARENT/CHILD line (0: skip)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--plan", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        print(json.dumps(run_case(Path(args.case), args.repeat, args.plan)))
        return
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; python {sys.version.split()[0]}")
    print(f"{'case':>16} {'nodes':>7} {'dep.':>9} {'stored':>8} {'parse s':>8} {'anchor s':>8} {'ratio':>6} "
          f"{'shuf/grp':>8} {'graph+phi s':>11} {'peak MiB':>8} {'base MiB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",") if s):
            grouped = None
            for shuffled in (False, True):
                path = Path(tmp) / f"{'shuf' if shuffled else 'grp'}{n}.dag"
                deps = write_edges_dag(path, n, shuffled)
                r = _subprocess(path, args.repeat, with_plan=False)
                if not shuffled:
                    grouped = r["parse"]
                rel = f"{r['parse'] / grouped:8.2f}" if shuffled and grouped else f"{'':>8}"
                print(f"{('shuffled' if shuffled else 'grouped') + ' ' + str(n):>16} {r['nodes']:>7} {deps:>9} "
                      f"{r['stored_edges']:>8} {r['parse']:>8.3f} {r['anchor']:>8.4f} {r['parse'] / r['anchor']:>6.1f} "
                      f"{rel} {'':>11} {r['peak_mib']:>8.0f} {r['base_mib']:>8.0f}", flush=True)
        m = int(args.join)
        if m:
            path = Path(tmp) / f"join{m}.dag"
            deps = write_join_dag(path, m, m)
            r = _subprocess(path, args.repeat, with_plan=True)
            print(f"{f'join {m}x{m}':>16} {r['nodes']:>7} {deps:>9} {r['stored_edges']:>8} {r['parse']:>8.3f} "
                  f"{r['anchor']:>8.4f} {r['parse'] / r['anchor']:>6.1f} {'':>8} {r['plan']:>11.3f} "
                  f"{r['peak_mib']:>8.0f} {r['base_mib']:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
