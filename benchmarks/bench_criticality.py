"""Benchmark: DAG parse + estimates + graph + φ′ of every node (issue 2).

Generates a random layered (hence acyclic) DAG file with ``JOB``, ``VARS
rlrep_estimate`` and one ``PARENT a CHILD b`` line per edge, then times

* ``read_dag``               (condor_rlrep.dag.parser; skipped if not there yet),
* ``resolve_estimates``      (VARS rlrep_estimate of every node),
* ``dependency_graph``       (validated compact graph + topological order),
* ``plan_workflow`` + ``planned_phi_prime()`` (L′, es, CR, d, φ′ of all nodes),

the path the simulator and the PRE hook take; and, for information, the
networkx form ``build_graph`` (``nx`` column, not part of the total).

Each size runs in a fresh subprocess so that its peak RSS is its own.
Prints medians of wall-clock and of process CPU time (the latter is the
fairer figure on a machine shared with other jobs), the growth ratio between sizes and the budget check
(target at 100k nodes / 300k edges: total ≤ 3 s, graph + φ′ ≤ 1.2 s,
peak memory ≤ 1 GB).

    python benchmarks/bench_criticality.py                  # 1k, 10k, 100k
    python benchmarks/bench_criticality.py --sizes 1000     # CI smoke
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

EDGES_PER_NODE = 3
SEED = 20260


def generate_dag(path: Path, nodes: int, edges: int, seed: int = SEED) -> None:
    """Write a random layered DAG: edges go from one of the 3 previous layers."""
    rng = np.random.default_rng(seed)
    layers = max(2, int(round(nodes**0.5 / 3)))
    per_layer = -(-nodes // layers)
    first_child = per_layer
    if edges > 0 and nodes <= first_child:
        raise ValueError("too few nodes for the requested layers")
    chosen = np.empty(0, dtype=np.int64)
    while chosen.size < edges:
        k = 2 * (edges - chosen.size) + 16
        child = rng.integers(first_child, nodes, size=k)
        child_layer = child // per_layer
        parent_layer = child_layer - 1 - rng.integers(0, np.minimum(3, child_layer), size=k)
        parent = parent_layer * per_layer + rng.integers(0, per_layer, size=k)
        keys = np.unique(np.concatenate([chosen, parent * nodes + child]))
        chosen = rng.permutation(keys)[:edges] if keys.size >= edges else keys
    estimates = rng.integers(60, 3600, size=nodes)
    with path.open("w") as out:
        out.write(f"# random layered DAG: {nodes} nodes, {edges} edges, seed {seed}\n")
        for i in range(nodes):
            out.write(f"JOB n{i} job.sub\n")
        for i in range(nodes):
            out.write(f'VARS n{i} rlrep_estimate="{estimates[i]}"\n')
        for key in np.sort(chosen):
            out.write(f"PARENT n{key // nodes} CHILD n{key % nodes}\n")


def _workflow_without_parser(path: Path):
    """Fallback while condor_rlrep.dag.parser is missing: a minimal reader of
    exactly the generated lines (not timed as 'parse')."""
    from condor_rlrep.dag.model import Node, VarAssignment, Workflow

    workflow = Workflow(source_path=str(path))
    for line in path.read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "JOB":
            workflow.nodes[words[1]] = Node(words[1], submit=words[2])
        elif words[0] == "VARS":
            key, value = words[2].split("=", 1)
            workflow.nodes[words[1]].vars.append(VarAssignment(key, value.strip('"')))
        elif words[0] == "PARENT":
            workflow.edges.add((words[1], words[3]))
    return workflow


def run_one(nodes: int, repeats: int) -> dict:
    from condor_rlrep.workflowplan import plan_workflow
    from condor_rlrep.estimates import resolve_estimates
    from condor_rlrep.dag.graph import dependency_graph
    from condor_rlrep.dag.nxgraph import build_graph

    import networkx  # noqa: F401  (imported here, not inside the timed build_graph)

    try:
        from condor_rlrep.dag.parser import read_dag
    except ImportError:
        read_dag = None

    steps = ("parse", "estimates", "graph", "phi", "nx")
    wall: dict[str, list[float]] = {step: [] for step in steps}
    cpu: dict[str, list[float]] = {step: [] for step in steps}

    def timed(step: str, function, *args):
        w0, c0 = time.perf_counter(), time.process_time()
        result = function(*args)
        wall[step].append(time.perf_counter() - w0)
        cpu[step].append(time.process_time() - c0)
        return result

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"random{nodes}.dag"
        generate_dag(path, nodes, EDGES_PER_NODE * nodes)
        fallback = None if read_dag is not None else _workflow_without_parser(path)
        for _ in range(repeats):
            if read_dag is not None:
                workflow = timed("parse", read_dag, path)
            else:
                workflow = fallback
            estimates = timed("estimates", resolve_estimates, workflow)
            graph = timed("graph", dependency_graph, workflow, estimates)
            phis = timed("phi", lambda: plan_workflow(graph, 0.5).planned_phi_prime())
            assert len(phis) == nodes and min(phis.values()) >= 0.5 - 1e-9
            nx_graph = timed("nx", build_graph, workflow, estimates)
            del workflow, estimates, graph, phis, nx_graph
            # every repeat starts from the same heap: the cyclic GC's scans of
            # this repeat's objects are not left to land in the next one
            gc.collect()
    def medians(times: dict[str, list[float]]) -> dict[str, float | None]:
        return {step: statistics.median(values) if values else None for step, values in times.items()}

    return {
        "nodes": nodes,
        "edges": EDGES_PER_NODE * nodes,
        "parser": read_dag is not None,
        "wall_s": medians(wall),
        "cpu_s": medians(cpu),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.repeats)))
        return

    results = []
    for size in args.sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(size), "--repeats", str(args.repeats)],
            check=True, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))

    for clock in ("wall", "cpu"):
        _print_table(results, clock)


def _print_table(results: list[dict], clock: str) -> None:
    print(f"median {clock} time, seconds (machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})")
    print(f"{'nodes':>8} {'edges':>8} {'parse':>7} {'estim':>7} {'graph':>7} {'phi':>7} "
          f"{'g+phi':>7} {'total':>7} {'x prev':>7} {'peakMB':>7} {'nx':>7}")
    previous = None
    for r in results:
        m = r[f"{clock}_s"]
        parse = m["parse"]
        graph_phi = m["graph"] + m["phi"]
        total = (parse or 0.0) + m["estimates"] + graph_phi
        ratio = f"{total / previous:7.1f}" if previous else f"{'':>7}"
        previous = total
        print(f"{r['nodes']:>8} {r['edges']:>8} {parse if parse is not None else float('nan'):7.3f} "
              f"{m['estimates']:7.3f} {m['graph']:7.3f} {m['phi']:7.3f} {graph_phi:7.3f} {total:7.3f} "
              f"{ratio} {r['peak_rss_mb']:7.0f} {m['nx']:7.3f}")
    big = next((r for r in results if r["nodes"] == 100_000), None)
    if big is not None:
        m = big[f"{clock}_s"]
        graph_phi = m["graph"] + m["phi"]
        total = (m["parse"] or 0.0) + m["estimates"] + graph_phi
        note = "" if big["parser"] else " (parser missing: parse not timed)"
        print(f"budget 100k/300k ({clock}): graph+phi {graph_phi:.2f} s (<= 1.2: {graph_phi <= 1.2}), "
              f"total {total:.2f} s (<= 3: {total <= 3.0}), peak {big['peak_rss_mb']:.0f} MB "
              f"(<= 1024: {big['peak_rss_mb'] <= 1024}){note}")
    print()


if __name__ == "__main__":
    main()
