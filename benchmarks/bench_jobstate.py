"""What the reaper's JOBSTATE_LOG translation costs, beside what it already does.

A 10,000-node run, 2 replicas a node (one removed), written as DAGMan writes
its JOBSTATE_LOG (12 lines a node) and its node log (the events the reaper
reads anyway). Timed in one run: translating the whole JOBSTATE_LOG into the
user's file (:class:`condor_rlrep.rundir.jobstatelog.JobstateFollower`, from
the node log's verdicts), and, as the anchor, the reaper reading the same
node log (``Reaper.observe``). Also: one follower poll when nothing changed
(the reaper's cost on every idle poll). Usage::

    python benchmarks/bench_jobstate.py [--nodes 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.condor.reaper import Reaper
from condor_rlrep.rundir.jobstatelog import INTERNAL_JOBSTATE, JobstateFollower
from condor_rlrep.rundir.layout import REPLICABLE_FILE, HookSettings

T0 = 1_780_000_000


def make_run(folder: Path, nodes: int) -> tuple[Path, HookSettings]:
    ctx = folder / "w.dag.rlrep"
    ctx.mkdir()
    (ctx / REPLICABLE_FILE).write_text("".join(f"N{i}\n" for i in range(nodes)))
    log = EventLogWriter(folder / "w.dag.nodes.log")
    lines = [f"{T0} INTERNAL *** DAGMAN_STARTED 1.0 ***", f"{T0} RLREP_REAPER SUBMIT 2.0 - - 1"]
    for i in range(nodes):
        c, t, n, seq = 3 + i, T0 + i, f"N{i}", 2 + i
        for proc in (0, 1):
            log.submit(c, proc, t, n)
            log.execute(c, proc, t + 1, f"h{proc}")
        log.terminate(c, 0, t + 2, exit_code=0)
        log.abort(c, 1, t + 3)
        lines += [f"{t} {n} SUBMIT {c}.0 - - {seq}", f"{t} {n} SUBMIT {c}.1 - - {seq}",
                  f"{t + 1} {n} EXECUTE {c}.0 - - {seq}", f"{t + 1} {n} EXECUTE {c}.1 - - {seq}",
                  f"{t + 2} {n} JOB_TERMINATED {c}.0 - - {seq}", f"{t + 3} {n} JOB_EVICTED {c}.1 - - {seq}",
                  f"{t + 3} {n} JOB_ABORTED {c}.1 - - {seq}", f"{t + 3} {n} JOB_FAILURE -1002 - - {seq}",
                  f"{t + 3} {n} PRE_SCRIPT_STARTED - - - {seq}", f"{t + 3} {n} POST_SCRIPT_STARTED {c}.0 - - {seq}",
                  f"{t + 4} {n} POST_SCRIPT_TERMINATED {c}.0 - - {seq}",
                  f"{t + 4} {n} POST_SCRIPT_SUCCESS {c}.0 - - {seq}"]
    lines.append(f"{T0 + nodes + 9} INTERNAL *** DAGMAN_FINISHED 0 ***")
    (ctx / INTERNAL_JOBSTATE).write_text("\n".join(lines) + "\n")
    settings = HookSettings(jobstate_log=str(folder / "w.jobstate.log"), reaper_node="RLREP_REAPER",
                            user_scripts={"PRE": [], "POST": []})
    return ctx, settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    anchor, translate, idle = [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            ctx, settings = make_run(Path(tmp), args.nodes)
            start = time.process_time()
            reaper = Reaper(Path(tmp) / "w.dag.nodes.log")
            reaper.observe()
            anchor.append(time.process_time() - start)
            follower = JobstateFollower(str(ctx), settings)
            start = time.process_time()
            written = follower.poll(reaper)
            translate.append(time.process_time() - start)
            assert written == 4 * args.nodes + 2, written
            start = time.perf_counter()
            for _ in range(1000):
                follower.poll(reaper)
            idle.append((time.perf_counter() - start) / 1000)
    a, t = statistics.median(anchor), statistics.median(translate)
    print(f"{args.nodes} nodes, {12 * args.nodes + 3} JOBSTATE_LOG lines, CPU medians of {args.repeat}:")
    print(f"  reaper reads the node log (anchor): {a:.3f} s")
    print(f"  JOBSTATE_LOG translated:            {t:.3f} s  ({t / a:.2f} x the anchor, "
          f"{1e6 * t / (12 * args.nodes):.1f} us a line)")
    print(f"  idle poll (nothing new):            {1e6 * statistics.median(idle):.1f} us wall")


if __name__ == "__main__":
    main()
