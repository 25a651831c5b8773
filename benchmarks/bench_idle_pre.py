"""What idle placement costs a PRE hook: ``idle-<policy>`` against ``<policy>``.

Anchor: the same PRE of the same policy without ``idle-``, run on the same
DAG, alternated call by call in one run (and ``python -c "import htcondor2"``
for scale). Target: ≤ 1.05 × the plain PRE's CPU time (the Rank is one
submit line; one replica still needs no submit parser). Usage::

    python benchmarks/bench_idle_pre.py [--nodes 2000] [--repeat 15]

Pairs measured: fixed:2 / idle-fixed:2 (the description is checked with
htcondor2.Submit) and single / idle-single (no parser: the lean path).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_hooks import ENV, make_dag, substitute, timed  # noqa: E402

from condor_rlrep.dag.parser import read_dag  # noqa: E402
from condor_rlrep.instrument import InstrumentOptions, instrument  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-idle-pre-"))
    ENV.update(os.environ)
    ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    try:
        dag = make_dag(work, args.nodes, args.seed)
        runs = {}
        for policy in ("fixed:2", "idle-fixed:2", "single", "idle-single"):
            out = work / policy.replace(":", "_") / "big.rlrep.dag"
            instrument(dag, out, InstrumentOptions(policy=policy))
            runs[policy] = read_dag(out)
        names = [n for n in runs["single"].nodes if not n.startswith("RLREP")]

        def pre(policy: str, name: str) -> float:
            node = runs[policy].nodes[name]
            argv = substitute(node.scripts["PRE"].argv, {"$JOB": name, "$RETRY": "0", "$MAX_RETRIES": "0",
                                                         "$DAGID": "4242"})
            _, code, cpu = timed(argv, node.directory)
            assert code == 0, (policy, name)
            return cpu

        baseline = [sys.executable, "-c", "import htcondor2"]
        for policy in runs:  # warm: byte-compiled modules, plan caches
            pre(policy, names[0])
        cpu: dict[str, list[float]] = {policy: [] for policy in runs}
        imports = []
        for index in range(args.repeat):
            name = names[1 + index]
            imports.append(timed(baseline, str(work))[2])
            order = list(runs) if index % 2 == 0 else list(reversed(runs))
            for policy in order:
                cpu[policy].append(pre(policy, name))
        med = {policy: statistics.median(values) for policy, values in cpu.items()}
        base = statistics.median(imports)
        print(f"DAG {args.nodes} nodes, {args.repeat} PRE calls per policy, alternated; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"python -c 'import htcondor2'  CPU median {base * 1000:6.1f} ms")
        ok = True
        for plain in ("fixed:2", "single"):
            idle = "idle-" + plain
            ratio = med[idle] / med[plain]
            ok &= ratio <= 1.05
            print(f"PRE {plain:<8} {med[plain] * 1000:6.1f} ms   PRE {idle:<13} {med[idle] * 1000:6.1f} ms   "
                  f"ratio x{ratio:.3f} (target <= 1.05)")
        print("PASS" if ok else "FAIL")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
