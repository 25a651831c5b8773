"""BottleMod build + analyze against the reference implementation, side by side.

Issue 28's row: ``analyze`` of the small models must be ≥ ×10 faster than the
BottleMod authors' own Python code (github.com/bottlemod/bottlemod: ``ppoly.py``,
``func.py``, ``task.py``) on every scenario. The reference is kept OUTSIDE this
project: give its checkout with ``--ref`` (skipped when absent) and the
interpreter that runs it with ``--ref-python``. The reference needs its
modified SciPy ``_ppoly`` (pieces in absolute, not local, coordinates); if
``REF/build/_ppoly*.so`` exists (the repository's ``custom_scipy`` .pyx
compiled against that interpreter's SciPy), the reference child puts it in
place of SciPy's own before importing the reference, else it runs on stock
SciPy (and its results are wrong: the benchmark then says so).

Scenarios: the paper's evaluation workflow (§5, Figure 5) — two downloads
sharing one link 50:50 or 95:5, and 50:50 with a 100 GB file — built in
each implementation's own Python API and analyzed, the way the authors'
``paper_figures_eval.py`` does it (one ``TaskExecution`` per task after the
first download has ended, the second download getting what the first leaves
of the link); ours from ``Task``/``Link``/``Workflow`` objects (and, for
reference, from the example TOML files, which adds the TOML parser). Each
round runs one child per side (order flipped every round); each child gives
the median CPU of one build+analyze per scenario and the makespan, which
must agree between the two.

What is timed, the same way on both sides: ``time.process_time()`` around
one build+analyze inside a running child, after one untimed warm-up, so the
interpreter's start and the imports (numpy, and SciPy on the reference's
side) are outside the timing on both sides. The reference's build+analyze
is its ``Task``/``PPoly``/``Func`` objects and one ``TaskExecution`` +
``get_result`` per task (it has no model file and does no validation).
Ours is building the ``Workflow`` (in code, or ``load_model`` of the TOML
file: reading, parsing, checking) and ``analyze`` (validating the model,
every task's progress, the shared link's fixed point, bottlenecks).

``--base TREE`` times a second tree of this project (e.g. a checkout of
main) in the same rounds, as a third child, for before/after ratios from
one run; it runs with this interpreter.

    python benchmarks/bench_bottlemod_ref.py --ref /tmp/bmref --ref-python /tmp/bmref/venv/bin/python \\
        [--rounds 5] [--repeat 30] [--base /path/to/other/tree]
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
SCENARIOS = {"paper_50_50": (50, 50, 1137486559, 500), "paper_95_5": (95, 5, 1137486559, 500),
             "paper_50_50_100gb": (50, 50, 100_000_000_000, 20000)}
"""name → (weight of dl1, weight of dl2, file size in bytes, the reference's horizon in s)."""

OURS = r"""
import hashlib, json, pickle, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from condor_rlrep.bottlemod import DataInput, Link, PFunc, Resource, Task, Workflow, analyze, load_model

OUT = 80 * 1024 * 1024
LINK = 12481 * 1024

def build(w1, w2, size):
    # the example TOMLs' model, in the Python API
    ident = PFunc.from_points([0, size], [0, size])
    dls = [Task(name, float(size), (DataInput("remote", ident, source=PFunc.constant(float(size))),),
                (Resource("net", PFunc.constant(1.0), link="net", weight=float(w)),))
           for name, w in (("dl1", w1), ("dl2", w2))]
    cpu = PFunc.constant(82 / OUT)
    one = PFunc.constant(1.0)
    whole = Task("whole", float(OUT), (DataInput("data", PFunc.from_points([0, size, size], [0, 0, OUT]), from_task="dl1"),),
                 (Resource("cpu", cpu, allocation=one),))
    stream = Task("stream", float(OUT), (DataInput("data", PFunc.from_points([0, size], [0, OUT]), from_task="dl2"),),
                  (Resource("cpu", cpu, allocation=one),))
    req = PFunc.from_points([0, OUT], [0, 2 * OUT])
    merge = Task("merge", float(2 * OUT), (DataInput("a", req, from_task="whole"), DataInput("b", req, from_task="stream")),
                 (Resource("cpu", PFunc.constant(1 / (2 * OUT)), allocation=one),))
    return Workflow((*dls, whole, stream, merge), (Link("net", PFunc.constant(float(LINK))),), "bench")

scen = json.loads(sys.argv[2]); examples = Path(sys.argv[3]); repeat = int(sys.argv[4])
out = {}
for name, (w1, w2, size, _h) in scen.items():
    for label, make in ((name, lambda: build(w1, w2, size)), (name + " (TOML file)", lambda: load_model(examples / f"{name}.toml"))):
        result = analyze(make())
        cpu = []
        for _ in range(repeat):
            t = time.process_time()
            result = analyze(make())
            cpu.append(time.process_time() - t)
        cpu.sort()
        out[label] = [cpu[len(cpu) // 2], float(result.makespan), hashlib.sha256(pickle.dumps(result)).hexdigest()[:16]]
print(json.dumps(out))
"""

REFERENCE = r"""
import glob, json, os, sys, time
ref = sys.argv[1]
patched = glob.glob(os.path.join(ref, "build", "_ppoly*.so"))
if patched:  # the reference's modified SciPy _ppoly, in place of SciPy's own
    import scipy.interpolate._interpolate as interp
    sys.path.insert(0, os.path.join(ref, "build"))
    import _ppoly
    interp._ppoly = _ppoly
sys.path.insert(0, ref)
from func import Func
from ppoly import PPoly
from task import Task, TaskExecution

OUT = 80 * 1024 * 1024
LINK = 12481 * 1024

def link(p1, p2, size, horizon):
    # the authors' LinkPrio (paper_figures_eval.py), with the file size and horizon as parameters
    dl = Task([PPoly([0, size], [[1]])], [Func([0, size], [[1, 0]])])
    whole = Task([PPoly([0, OUT], [[82 / OUT]])], [Func([0, size - 0.0001, size], [[0], [OUT]])])
    stream = Task([PPoly([0, OUT], [[82 / OUT]])], [Func([0, size - 0.0001, size], [[OUT / size, 0], [0, OUT]])])
    merge = Task([PPoly([0, 2 * OUT], [[1 / (2 * OUT)]])], [Func([0, OUT], [[2, 0]]), Func([0, OUT], [[2, 0]])])
    rate1 = LINK * p1 / (p1 + p2)
    d1, _ = TaskExecution(dl, [PPoly([0, horizon], [[rate1]])], [Func([0, horizon], [[size]])]).get_result()
    rate1 = PPoly([0, d1.x[1], horizon], [[rate1, 0]])
    o1, _ = TaskExecution(whole, [PPoly([0, horizon], [[1]])], [d1]).get_result()
    d2, _ = TaskExecution(dl, [PPoly([0, horizon], [[LINK]]) - rate1], [Func([0, horizon], [[size]])]).get_result()
    o2, _ = TaskExecution(stream, [PPoly([0, horizon], [[1]])], [d2]).get_result()
    o3, _ = TaskExecution(merge, [PPoly([0, horizon], [[1]])], [o1, o2]).get_result()
    return float(o3.x[-1])

scen = json.loads(sys.argv[2]); repeat = int(sys.argv[3])
out = {}
for name, (w1, w2, size, horizon) in scen.items():
    makespan = link(w1, w2, size, horizon)
    cpu = []
    for _ in range(repeat):
        t = time.process_time()
        makespan = link(w1, w2, size, horizon)
        cpu.append(time.process_time() - t)
    cpu.sort()
    out[name] = [cpu[len(cpu) // 2], makespan, "patched" if patched else "stock SciPy"]
print(json.dumps(out))
"""


def _child(argv: list[str]) -> dict:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", type=Path, default=Path("/tmp/bmref"), help="checkout of github.com/bottlemod/bottlemod")
    ap.add_argument("--ref-python", default=None, help="interpreter with the reference's SciPy (default REF/venv/bin/python)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--base", type=Path, default=None, help="another tree of this project, timed in the same rounds")
    args = ap.parse_args()
    ref_python = args.ref_python or str(args.ref / "venv" / "bin" / "python")
    have_ref = (args.ref / "task.py").is_file() and os.path.exists(ref_python)
    if not have_ref:
        print(f"reference absent ({args.ref}, {ref_python}): timing ours only")
    scen = json.dumps(SCENARIOS)
    ours_cmd = [sys.executable, "-c", OURS, str(HERE.parent), scen, str(HERE.parent / "examples" / "bottlemod"),
                str(args.repeat)]
    sides = [("ours", ours_cmd)]
    if have_ref:
        sides.append(("ref", [ref_python, "-c", REFERENCE, str(args.ref), scen, str(args.repeat)]))
    if args.base is not None:
        sides.append(("base", [*ours_cmd[:3], str(args.base), *ours_cmd[4:]]))
    runs: dict[str, list[dict]] = {side: [] for side, _ in sides}
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for side, cmd in sides[r % len(sides):] + sides[:r % len(sides)]:  # who goes first rotates
            runs[side].append(_child(cmd))
    loads.append(os.getloadavg()[0])
    ours, refs, bases = runs["ours"], runs.get("ref", []), runs.get("base", [])
    print(f"median of {args.rounds} rounds x {args.repeat} runs, CPU per build+analyze (in-process);"
          f" load average {loads[0]:.2f} at the start, {loads[1]:.2f} at the end")
    print("(best: the fastest round's median on each side; this machine is shared, and contention only adds time)")
    extra = f" {'base ms':>8s} {'base/ours':>9s} {'ref/base':>8s}" if bases else ""
    print(f"{'scenario':34s} {'ref ms':>8s} {'ours ms':>8s} {'ref/ours':>9s} {'best':>7s}{extra}  makespan ref / ours")
    for label in ours[0]:
        base = label.split(" ")[0]
        mine = statistics.median(o[label][0] for o in ours) * 1e3
        span = ours[0][label][1]
        digests = {o[label][2] for o in ours}
        col = ""
        if bases:
            old = statistics.median(o[label][0] for o in bases) * 1e3
            digests |= {o[label][2] for o in bases}
            col = f" {old:8.3f} {old / mine:8.2f}x"
        if refs:
            theirs = statistics.median(o[base][0] for o in refs) * 1e3
            rspan, how = refs[0][base][1], refs[0][base][2]
            best = min(o[base][0] for o in refs) / min(o[label][0] for o in ours)
            if bases:
                col += f" {theirs / old:7.2f}x"
            print(f"{label:34s} {theirs:8.3f} {mine:8.3f} {theirs / mine:8.2f}x {best:6.2f}x{col}  {rspan:.3f} / {span:.3f}"
                  f" ({how}){'' if abs(rspan - span) < 1e-3 * span else '  MAKESPANS DIFFER'}"
                  f"{'' if len(digests) == 1 else '  RESULTS VARY'}")
        else:
            print(f"{label:34s} {'-':>8s} {mine:8.3f} {'-':>9s}{col}  - / {span:.3f}"
                  f"{'' if len(digests) == 1 else '  RESULTS VARY'}")


if __name__ == "__main__":
    main()
