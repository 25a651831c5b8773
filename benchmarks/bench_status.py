"""``condor-rlrep status`` on a 10,000-node instrumented DAG with a 100 MB node log.

Target (issue 12): ≤ 2 s. Anchor, run alternately with ours in the same
run: a bare loop over ``htcondor2.JobEventLog(path).events(stop_after=0)``
reading each event's type, cluster and proc (what any tool that reads the
node log pays at least), as a process of its own like ours. Ours is timed
cold (no checkpoint: the first ``status`` of the run) and warm (the second
and later calls, which resume the node log and ``.dagman.out`` from the
per-user checkpoint and read what was appended since: here, nothing).

The run is synthetic but has every file a real one has: the instrumented
DAG (``instrument`` of a layered DAG, fixed:3), ``run.json``, one node state
and two journal records per node, a ``.dagman.out`` with DAGMan's script
lines, and a node log where each node's cluster has ``--replicas`` procs
(submit, execute, the winner's
terminate, the others removed, POST's 016) and proc 1 is evicted and
restarted as often as it takes to bring the log to ``--log-mb``. Usage::

    python benchmarks/bench_status.py [--nodes 10000] [--log-mb 100] [--repeat 3]

Issue 28's case is --nodes 5000 --log-mb 50 (goal: cold ≤ ×1.25 of the anchor's CPU, ≤ 100 MB RSS).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hooks import make_dag  # noqa: E402

from condor_rlrep.condor.eventlog_writer import EventLogWriter  # noqa: E402
from condor_rlrep.instrument import InstrumentOptions, instrument  # noqa: E402

T0 = 1_780_000_000.0
ANCHOR = ("import sys, htcondor2\n"
          "n = 0\n"
          "for e in htcondor2.JobEventLog(sys.argv[1]).events(stop_after=0):\n"
          "    e.type, e.cluster, e.proc\n"
          "    n += 1\n"
          "print(n)\n")


class _Buffered(EventLogWriter):
    """The project's writer, into memory (one open per event would dominate the set-up)."""

    def __init__(self) -> None:
        super().__init__(path="")
        self.parts: list[str] = []

    def _append(self, text: str) -> None:
        self.parts.append(text)


def make_run(work: Path, nodes: int, log_mb: float, replicas: int) -> Path:
    dag = make_dag(work, nodes, seed=1)
    out = work / "run" / "big.rlrep.dag"
    result = instrument(dag, out, InstrumentOptions(policy=f"fixed:{replicas}"))
    context = Path(result.context)
    names = list(result.replicated)
    dagid = "4242"
    start = T0
    (context / "run.json").write_text(json.dumps({"start": start, "run_id": f"{dagid}@{int(start)}",
                                                  "dagids": [dagid]}) + "\n")
    (context / "state").mkdir(exist_ok=True)
    writer = _Buffered()
    journal, dagman = [], [f"{time.strftime('%m/%d/%y %H:%M:%S', time.localtime(start))} "
                           "** condor_dagman (CONDOR_DAGMAN) STARTING UP\n",
                           f"{time.strftime('%m/%d/%y %H:%M:%S', time.localtime(start))} "
                           f"Workflow batch-id: <{dagid}.0>\n"]
    # evictions per node that bring the log to ``log_mb``: measured on one node's events
    probe = _Buffered()
    for proc in range(replicas):
        probe.submit(1, proc, start, "N0")
        probe.execute(1, proc, start, "host0", slot=proc + 1)
    probe.terminate(1, 0, start, exit_code=0)
    for proc in range(1, replicas):
        probe.remove(1, proc, start)
    probe.post_script_terminated(1, 0, start, "N0")
    base = sum(map(len, probe.parts))
    probe.parts.clear()
    probe.evict(1, 1, start)
    probe.execute(1, 1, start, "host9", slot=9)
    cycle_bytes = sum(map(len, probe.parts))
    cycles = max(0, round((log_mb * 1e6 / len(names) - base) / cycle_bytes))
    for index, name in enumerate(names):
        cluster = index + 1
        at = start + index * 3.0
        stamp = time.strftime("%m/%d/%y %H:%M:%S", time.localtime(at))
        state = {"node": name, "retry": 0, "dagid": dagid, "run_id": f"{dagid}@{int(start)}", "workflow_start": start,
                 "pre_time": at, "submit_time": at, "decision_id": None, "replicas": replicas, "mode": "replicas",
                 "phi_prime": 1.0, "decided_at": at, "estimate": 60.0, "chosen": "fixed", "log_offset": 0}
        (context / "state" / f"{name}.json").write_text(json.dumps(state, sort_keys=True) + "\n")
        journal.append(json.dumps({"v": 1, "hook": "PRE", "at": at, **state}, sort_keys=True) + "\n")
        dagman.append(f"{stamp} Running PRE script of Node {name}...\n{stamp} PRE Script of node {name} "
                      "completed successfully.\n")
        for proc in range(replicas):
            writer.submit(cluster, proc, at + 1, name)
        for proc in range(replicas):
            writer.execute(cluster, proc, at + 2, f"host{proc}", slot=proc + 1)
        for cycle in range(cycles):  # proc 1 evicted and restarted elsewhere, again and again
            writer.evict(cluster, 1, at + 3 + cycle)
            writer.execute(cluster, 1, at + 3 + cycle, f"host{9 + cycle % 50}", slot=9)
        writer.terminate(cluster, 0, at + 60, exit_code=0)
        for proc in range(1, replicas):
            writer.remove(cluster, proc, at + 61)
        writer.post_script_terminated(cluster, 0, at + 62, name)
        invocations = [[0, "host0", "slot1_1@host0", at + 2, at + 60, "success", 0]]
        journal.append(json.dumps({"v": 1, "hook": "POST", "node": name, "at": at + 62, "exit": 0, "cluster": cluster,
                                   "dagid": dagid, "retry": 0, "run_id": f"{dagid}@{int(start)}", "pre_time": at,
                                   "submit_time": at + 1, "procs": list(range(replicas)), "evictions": cycles,
                                   "holds": 0, "invocations": invocations}, sort_keys=True) + "\n")
        dagman.append(f"{stamp} Running POST script of Node {name}...\n{stamp} POST Script of node {name} "
                      "completed successfully.\n")
    log = Path(str(out) + ".nodes.log")
    log.write_text("".join(writer.parts))
    (context / "journal.jsonl").write_text("".join(journal))
    end = time.strftime("%m/%d/%y %H:%M:%S", time.localtime(start + len(names) * 3 + 70))
    dagman.append(f"{end} **** condor_dagman (condor_DAGMAN) pid 1 EXITING WITH STATUS 0\n")
    Path(str(out) + ".dagman.out").write_text("".join(dagman))
    return out


CPU: list[float] = []
RSS: list[float] = []


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds and stdout of one process; its CPU (user + sys) is appended
    to CPU and its peak RSS (MB) to RSS.

    The RSS comes from GNU time's %M, written to a file of its own: a forked
    child's own ru_maxrss would count this process's memory from before the exec."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as peak:
        t = time.perf_counter()
        proc = subprocess.Popen(["/usr/bin/time", "-o", peak.name, "-f", "%M", *argv], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        CPU.append(usage.ru_utime + usage.ru_stime)
        RSS.append(int(peak.read().split()[-1]) / 1024)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv)} exited {os.waitstatus_to_exitcode(status)}: {err.read().decode()}")
        out.seek(0)
        return wall, out.read().decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--log-mb", type=float, default=100.0)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="compile every module from source on each run (as under PYTHONDONTWRITEBYTECODE)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-status-"))
    try:
        t = time.perf_counter()
        dag = make_run(work, args.nodes, args.log_mb, args.replicas)
        setup = time.perf_counter() - t
        log = Path(str(dag) + ".nodes.log")
        env = dict(os.environ)
        env["XDG_CACHE_HOME"] = str(work / "cache")
        if not args.no_bytecode:  # bytecode as an installation has it (an editable one under
            # PYTHONDONTWRITEBYTECODE would compile ~20 modules on every call), for both sides
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        cli = str(Path(sys.executable).parent / "condor-rlrep")
        anchor = [sys.executable, "-c", ANCHOR, str(log)]
        ours = [cli, "status", str(dag), "--json"]
        timed(anchor, env)  # warm the page cache (and write the bytecode)
        timed(ours, env)
        shutil.rmtree(work / "cache", ignore_errors=True)
        anchors, colds, warms = [], [], []
        cpu: dict[str, list[float]] = {"anchor": [], "cold": [], "warm": []}
        rss: dict[str, list[float]] = {"anchor": [], "cold": [], "warm": []}
        events = nodes_seen = None
        for _ in range(args.repeat):
            wall, out = timed(anchor, env)
            anchors.append(wall)
            cpu["anchor"].append(CPU[-1])
            rss["anchor"].append(RSS[-1])
            events = int(out)
            shutil.rmtree(work / "cache", ignore_errors=True)
            wall, out = timed(ours, env)
            colds.append(wall)
            cpu["cold"].append(CPU[-1])
            rss["cold"].append(RSS[-1])
            nodes_seen = len(json.loads(out)["nodes"])
            wall, out = timed(ours, env)
            warms.append(wall)
            cpu["warm"].append(CPU[-1])
            rss["warm"].append(RSS[-1])
        a, c, w = statistics.median(anchors), statistics.median(colds), statistics.median(warms)
        ca, cc, cw = (statistics.median(cpu[k]) for k in ("anchor", "cold", "warm"))
        ra, rc, rw = (statistics.median(rss[k]) for k in ("anchor", "cold", "warm"))
        print(f"DAG {args.nodes} nodes ({nodes_seen} in the status), node log {log.stat().st_size / 1e6:.1f} MB, "
              f"{events} events; set-up {setup:.1f} s; load average {os.getloadavg()[0]:.2f} "
              f"on {os.cpu_count()} CPUs; median of {args.repeat}; "
              f"{'no bytecode (every module compiled)' if args.no_bytecode else 'bytecode written by a first run'}")
        print("                                          wall                        CPU (user+sys)")
        print(f"anchor: bare htcondor2.JobEventLog loop   {a:6.2f} s                    {ca:6.2f} s")
        print(f"status, cold (first call, no checkpoint)  {c:6.2f} s   x{c / a:.2f} of anchor   {cc:6.2f} s   x{cc / ca:.2f}")
        print(f"status, warm (checkpoint, log unchanged)  {w:6.2f} s   x{w / a:.2f} of anchor   {cw:6.2f} s   x{cw / ca:.2f}"
              "   (target 2 s)")
        print(f"peak RSS: anchor {ra:.0f} MB, status cold {rc:.0f} MB, warm {rw:.0f} MB")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
