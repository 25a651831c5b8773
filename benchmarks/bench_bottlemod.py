"""BottleMod analysis speed (issue 7 targets).

Run:  /work/venv/bin/python benchmarks/bench_bottlemod.py [--quick]

Prints the median CPU (and wall) time of one ``analyze()`` call for: the paper's 50:50
scenario, the same with a 100 GB input, streaming chains of 1/10/100 tasks,
and one task whose input function has 10/100/1000/3000 pieces, plus the
ratios that show how the cost grows.  Targets: ≤ 2 ms (50:50), ≤ 90 ms
(100-task chain), ≤ 250 ms (1000 pieces), cost growing no faster than
linearly, 100 GB within noise of 50:50.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from condor_rlrep.bottlemod import DataInput, PFunc, Resource, Task, Workflow, analyze, load_model

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "bottlemod"


def median_time(fn, repeat: int, min_time: float = 0.2) -> tuple[float, float]:
    """Median (CPU seconds, wall seconds) of one call.

    CPU time (``time.process_time``) is the primary figure: this machine is
    shared and wall time mostly measures the other tenants.
    """
    fn()  # warm-up
    cpu, wall = [], []
    start = time.perf_counter()
    while len(cpu) < repeat or (time.perf_counter() - start < min_time and len(cpu) < 50 * repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def chain(n: int, varied: bool = False) -> Workflow:
    """``n`` streaming tasks, each consuming its predecessor's output.

    The CPU allocation drops and recovers mid-run, so the first task switches
    between data- and CPU-bound.  With ``varied`` each task's allocation
    changes at its own times: every task then adds breakpoints of its own,
    which all later tasks inherit (the output really has O(n²) pieces).
    """
    ident = PFunc.from_points([0, 100], [0, 100])
    tasks = []
    for i in range(n):
        if varied:
            rate = PFunc.from_steps([0, 20 + i, 60 + i], [1.0 + (i % 3) * 0.5, 0.6, 1.2])
        else:
            rate = PFunc.from_steps([0, 20, 60], [2.0, 0.6, 1.2])
        src = dict(source=PFunc.from_points([0, 30], [0, 100])) if i == 0 else dict(from_task=f"t{i - 1}")
        tasks.append(Task(f"t{i}", 100.0, (DataInput("in", ident, **src),),
                          (Resource("cpu", PFunc.constant(1.0), allocation=rate),)))
    return Workflow(tuple(tasks))


def pieces(n: int, seed: int = 0) -> Workflow:
    """One task whose input arrives in ``n`` irregular pieces (with jumps and
    pauses), so the limit switches between data and CPU many times."""
    rng = np.random.default_rng(seed)
    dt = rng.uniform(0.5, 2.0, n)
    dy = rng.uniform(0.0, 2.0, n) * (rng.random(n) < 0.8)
    xs = np.concatenate([[0.0], np.cumsum(dt)])
    ys = np.concatenate([[0.0], np.cumsum(dy)])
    total = float(ys[-1])
    inp = PFunc.from_points(xs, ys)
    req = PFunc.from_points([0, total], [0, total])
    return Workflow((Task("t", total, (DataInput("in", req, source=inp),),
                          (Resource("cpu", PFunc.constant(1.0), allocation=PFunc.constant(0.9)),)),))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    rep = 5 if args.quick else 30
    rows: list[tuple[str, float, float, str]] = []

    def run(label: str, wf: Workflow, target_ms: float | None = None, repeat: int = rep) -> float:
        c, w = median_time(lambda: analyze(wf), repeat)
        note = ""
        if target_ms:
            note = f"target ≤ {target_ms:g} ms: {'met' if c * 1e3 <= target_ms else 'MISSED'}"
        rows.append((label, c, w, note))
        return c

    # 50:50 and its 100 GB variant are timed alternately, call by call, so
    # that both see the same background load.
    wf_small = load_model(EXAMPLES / "paper_50_50.toml")
    wf_big = load_model(EXAMPLES / "paper_50_50_100gb.toml")
    pair: dict[str, list[tuple[float, float]]] = {"small": [], "big": []}
    for wf in (wf_small, wf_big):
        analyze(wf)
    for _ in range(max(40, 10 * rep)):
        for key, wf in (("small", wf_small), ("big", wf_big)):
            c0, w0 = time.process_time(), time.perf_counter()
            analyze(wf)
            pair[key].append((time.process_time() - c0, time.perf_counter() - w0))
    for key, label, target in (("small", "paper 50:50", 2), ("big", "paper 50:50, 100 GB input", None)):
        c = statistics.median(x for x, _ in pair[key])
        w = statistics.median(y for _, y in pair[key])
        note = f"target ≤ {target:g} ms: {'met' if c * 1e3 <= target else 'MISSED'}" if target else ""
        rows.append((label, c, w, note))
    base = rows[0][1]
    big = rows[1][1]
    run("paper 95:5", load_model(EXAMPLES / "paper_95_5.toml"))
    ch = {n: run(f"chain of {n} tasks", chain(n), 90 if n == 100 else None, max(3, rep // (1 + n // 10)))
          for n in (1, 10, 100)}
    varied = chain(100, varied=True)
    tv = run("chain of 100 varied tasks", varied, None, 3)
    npieces = sum(r.progress.n for r in analyze(varied).tasks.values())
    pc = {n: run(f"input of {n} pieces", pieces(n), 250 if n == 1000 else None, max(3, rep // (1 + n // 100)))
          for n in (10, 100, 1000, 3000)}

    print(f"{'scenario':32s} {'CPU ms':>9s} {'wall ms':>9s}   (medians)")
    for label, c, w, note in rows:
        print(f"{label:32s} {c * 1e3:9.3f} {w * 1e3:9.3f}   {note}")
    print()
    print(f"100 GB / 1.1 GB time ratio:          {big / base:6.2f}  (1.0 = no dependence on data size)")
    print(f"chain 100 / chain 10 time ratio:     {ch[100] / ch[10]:6.2f}  (linear: 10)")
    print(f"pieces 1000 / pieces 100 time ratio: {pc[1000] / pc[100]:6.2f}  (linear: 10)")
    print(f"pieces 3000 / pieces 1000 ratio:     {pc[3000] / pc[1000]:6.2f}  (linear: 3)")
    print(f"varied 100-chain: {npieces} progress pieces in all, {tv / npieces * 1e6:.1f} µs per piece")
    for n in (10, 100, 1000, 3000):
        print(f"  per input piece at {n:5d}: {pc[n] / n * 1e6:8.1f} µs")


if __name__ == "__main__":
    main()
