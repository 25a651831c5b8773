"""BottleMod build + analyze of the small models, two source trees side by side.

Each round runs one child process per tree (which runs first flips every
round, so both see the same load); a child times, per scenario, the median
CPU of building the model and analyzing it (``load_model`` of the example's
TOML, or the benchmark's own builders, then ``analyze``) and a digest of the
pickled results, so a speed-up that changes a result shows.

    python benchmarks/ab_bottlemod.py OLD=/path/to/old/tree NEW=/path/to/new/tree [--rounds 3] [--repeat 40]

A tree is a folder holding ``condor_rlrep/`` (a checkout, or ``git archive``
of one); both run with this interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = r"""
import hashlib, json, pickle, sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2])
from pathlib import Path
from bench_bottlemod import chain, pieces
from condor_rlrep.bottlemod import analyze, load_model
ex = Path(sys.argv[3])
scen = {p.stem: (lambda p=p: load_model(p)) for p in sorted(ex.glob("*.toml"))}
scen["chain of 1"] = lambda: chain(1)
scen["chain of 10"] = lambda: chain(10)
scen["input of 10 pieces"] = lambda: pieces(10)
repeat = int(sys.argv[4])
out = {}
for name, build in scen.items():
    analyze(build())
    cpu = []
    for _ in range(repeat):
        t = time.process_time()
        result = analyze(build())
        cpu.append(time.process_time() - t)
    cpu.sort()
    out[name] = [cpu[len(cpu) // 2], hashlib.sha256(pickle.dumps(result)).hexdigest()[:16]]
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs=2, help="OLD=path NEW=path")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=40)
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.trees)
    examples = HERE.parent / "examples" / "bottlemod"
    runs: dict[str, list[dict]] = {"OLD": [], "NEW": []}
    for r in range(args.rounds):
        for key in (("OLD", "NEW") if r % 2 == 0 else ("NEW", "OLD")):
            done = subprocess.run([sys.executable, "-c", CHILD, trees[key], str(HERE), str(examples), str(args.repeat)],
                                  capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": ""})
            runs[key].append(json.loads(done.stdout))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {args.rounds} rounds x {args.repeat} calls;"
          " median CPU of build + analyze")
    print(f"{'scenario':24s} {'OLD ms':>8s} {'NEW ms':>8s} {'OLD/NEW':>8s}  results")
    for name in runs["OLD"][0]:
        old = statistics.median(run[name][0] for run in runs["OLD"])
        new = statistics.median(run[name][0] for run in runs["NEW"])
        same = {run[name][1] for run in runs["OLD"]} == {run[name][1] for run in runs["NEW"]}
        print(f"{name:24s} {old * 1e3:8.3f} {new * 1e3:8.3f} {old / new:8.2f}  {'identical' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
