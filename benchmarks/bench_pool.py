"""The plugin's cost on a real pool, side by side with the plain DAG.

Anchor: the user's own DAG run by the same condor_dagman on the same
personal HTCondor 25.14 pool (``../shared/htcondor``) *at the same time*.
Each round runs, per workflow, three pairs one after the other, each the
plain DAG together with (both DAGMan jobs submitted held and released by one
``condor_release``, the order alternating between rounds):

* its copy instrumented with ``--policy fixed:1`` (the hooks' cost alone:
  one replica, no store);
* its copy instrumented with the default policy (a fresh store: what a new
  user gets);
* the anchor: the plain DAG with a PRE and a POST script on every job node
  that only ``import htcondor2`` — what any Python hook costs a DAG (DAGMan
  acts on a POST's end only at its next node-log scan).

A pair's makespans (DAGMan's ``.metrics`` start → end) give one ratio. Then
a reaper scenario measures how fast surplus replicas go.

Reported (issue 10, "Measure"):

* makespan of figure1 (60 s tasks) and Montage_25 (its DAX runtimes) per
  variant, and the ratio to plain in the same round (targets: fixed:1
  figure1 ≤ +2 %);
* PRE and POST process wall time on the pool, median and p95 (a wrapper
  around the installed hook records exec → exit with ``$EPOCHREALTIME``),
  split into PREs that overlapped another PRE (concurrent cold starts) and
  the rest (target: median ≤ 0.15 s);
* the same as DAGMan sees them: ``.dagman.out`` sub-second times from
  "Running PRE/POST script" to "… completed" (a POST ends, for DAGMan, only
  at its next node-log scan: DAGMAN_USER_LOG_SCAN_INTERVAL);
* winner's terminate → node end: a watcher polls the node log every 10 ms
  and timestamps the winner's terminate event as it appears; the node ends
  at DAGMan's "job(s) have exited the queue" (target: the reaper reacts
  within 1 s).

Usage (as root or a normal user; needs ../shared/htcondor; ~25 min for 2 rounds)::

    python benchmarks/bench_pool.py [--rounds 2] [--task-seconds 60] [--skip-montage] [--skip-figure1] [--keep]
        [--variants fixed1,default,anchor] [--together] [--skip-reaper]

Issue 10's fixed:1 goal, everything side by side in one submission per round::

    python benchmarks/bench_pool.py --skip-montage --skip-reaper --together \
        --variants fixed1,fixed1-pre,anchor,fixed2,fixed3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from _pool import Pool, PoolUnavailable, start_pool, write  # noqa: E402

FIGURE1 = REPO / "examples" / "figure1"
MONTAGE = REPO.parent / "shared" / "data" / "dax" / "Montage_25.xml"
VARIANTS = ("plain", "fixed1", "default", "anchor")
"""``fixedK`` (any K): ``--policy fixed:K`` as instrument writes it (no PRE;
K = 1 no POST either); ``fixedK-pre``: the same with ``--always-pre`` (PRE and
POST on every node, as before fixed policies lost their PRE)."""
_FIXED = re.compile(r"fixed(\d+)(-pre)?")

ANCHOR_HOOK = """#!{python}
# bench_pool's anchor: the cheapest Python hook that talks to HTCondor
import htcondor2  # noqa: F401
"""

TIMING_WRAPPER = """#!/bin/bash
# bench_pool: time the real hook from exec to exit (no fork: bash's clock)
start=$EPOCHREALTIME
{real} "$@"
rc=$?
echo "{kind} $start $EPOCHREALTIME $rc" >> {log}
exit $rc
"""


def hooks_bin(pool: Pool, name: str, *, anchor: bool = False) -> tuple[Path, Path]:
    """A --hooks-bin directory whose PRE/POST time themselves into a log
    (``anchor``: PRE and POST are ``import htcondor2`` and nothing else)."""
    directory = pool.base / f"bin-{name}"
    directory.mkdir(exist_ok=True)
    log = directory / "timing.log"
    for kind in ("pre", "post"):
        real = pool.venv / "bin" / f"rlrep-{kind}"
        if anchor:
            real = directory / f"anchor-{kind}"
            write(real, ANCHOR_HOOK.format(python=pool.venv / "bin" / "python"), 0o755)
        write(directory / f"rlrep-{kind}", TIMING_WRAPPER.format(real=real, kind=kind, log=log), 0o755)
    write(directory / "rlrep-reaper", f'#!/bin/sh\nexec {pool.venv / "bin" / "rlrep-reaper"} "$@"\n', 0o755)
    write(log, "")
    pool.own(directory)
    return directory, log


def prepare_figure1(pool: Pool, work: Path, seconds: int) -> Path:
    shutil.copy(FIGURE1 / "task.sub", work / "task.sub")
    text = (FIGURE1 / "figure1.dag").read_text().replace('"1920"', f'"{seconds}"')
    write(work / "figure1.dag", text)
    pool.own(work)
    return work / "figure1.dag"


def prepare_montage(pool: Pool, work: Path) -> Path:
    pool.rlrep("export", str(MONTAGE), "-o", str(work), cwd=work)
    return work / "Montage_25.dag"


def prepare(pool: Pool, workflow: str, round_no: int, variants: tuple[str, ...],
            seconds: int = 60) -> dict[str, tuple[Path, Path | None]]:
    """Fresh copies of a workflow: variant → (DAG to submit, timing log)."""
    out: dict[str, tuple[Path, Path | None]] = {}
    for variant in variants:
        work = pool.workdir(f"{workflow}-{round_no}-{variants[-1]}-{variant}")
        dag = prepare_figure1(pool, work, seconds) if workflow == "figure1" else prepare_montage(pool, work)
        if variant == "plain":
            out[variant] = (dag, None)
            continue
        bin_dir, log = hooks_bin(pool, f"{workflow}-{round_no}-{variant}", anchor=variant == "anchor")
        if variant == "anchor":
            out[variant] = (with_anchor_hooks(dag, bin_dir), log)
            continue
        args = ["instrument", dag.name, "-o", f"run/{dag.stem}.rlrep.dag", "--hooks-bin", str(bin_dir)]
        fixed = _FIXED.fullmatch(variant)
        if fixed:
            args += ["--policy", f"fixed:{fixed.group(1)}"] + (["--always-pre"] if fixed.group(2) else [])
        elif variant == "default":
            args += ["--store", str(work / "agent.sqlite")]
        else:
            raise SystemExit(f"unknown variant {variant!r}")
        pool.rlrep(*args, cwd=work)
        out[variant] = (work / "run" / f"{dag.stem}.rlrep.dag", log)
    return out


def with_anchor_hooks(dag: Path, bin_dir: Path) -> Path:
    """The plain DAG with the anchor's PRE and POST on every job node."""
    from condor_rlrep.dag.parser import read_dag

    nodes = [n.name for n in read_dag(dag).nodes.values() if n.kind == "JOB" and not n.noop]
    lines = [f"SCRIPT {kind} {name} {bin_dir / ('rlrep-' + kind.lower())}" for name in nodes for kind in ("PRE", "POST")]
    anchored = dag.with_name(dag.stem + ".anchor.dag")
    write(anchored, dag.read_text() + "\n" + "\n".join(lines) + "\n")
    return anchored


# -- reading what happened ---------------------------------------------------

_STAMP = re.compile(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?) (.*)$")


def dagman_lines(dag: Path) -> list[tuple[float, str]]:
    lines = []
    for line in Path(str(dag) + ".dagman.out").read_text(errors="replace").splitlines():
        match = _STAMP.match(line)
        if match:
            stamp = match.group(1)
            fmt = "%m/%d/%y %H:%M:%S.%f" if "." in stamp else "%m/%d/%y %H:%M:%S"
            lines.append((datetime.strptime(stamp, fmt).timestamp(), match.group(2)))
    return lines


def dagman_script_times(dag: Path) -> dict[str, list[float]]:
    """PRE/POST durations as DAGMan logs them (start line → completion line)."""
    started: dict[tuple[str, str], float] = {}
    times: dict[str, list[float]] = {"PRE": [], "POST": []}
    for at, text in dagman_lines(dag):
        match = re.match(r"Running (PRE|POST) script of Node (\S+?)\.\.\.", text)
        if match:
            started[(match.group(1), match.group(2))] = at
            continue
        match = re.match(r"(PRE|POST) Script of [Nn]ode (\S+) (?:completed successfully|failed)", text)
        if match and (match.group(1), match.group(2)) in started:
            times[match.group(1)].append(at - started.pop((match.group(1), match.group(2))))
    return times


def hook_times(log: Path) -> dict[str, list[tuple[float, float]]]:
    spans: dict[str, list[tuple[float, float]]] = {"pre": [], "post": []}
    for line in log.read_text().splitlines():
        kind, start, end, _ = line.split()
        spans[kind].append((float(start), float(end)))
    return spans


def overlapping(spans: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """Durations of the spans that overlapped another span, and of the rest."""
    together, alone = [], []
    for index, (start, end) in enumerate(spans):
        others = (s for j, s in enumerate(spans) if j != index)
        (together if any(s < end and start < e for s, e in others) else alone).append(end - start)
    return together, alone


def makespan(dag: Path) -> float:
    metrics = json.loads(Path(str(dag) + ".metrics").read_text())
    assert metrics["exitcode"] == 0, f"{dag} exited {metrics['exitcode']}"
    return float(metrics["end_time"]) - float(metrics["start_time"])


def stats(values: list[float]) -> str:
    if not values:
        return "n=0"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return f"median {statistics.median(ordered) * 1000:6.0f} ms  p95 {p95 * 1000:6.0f} ms  (n={len(ordered)})"


# -- the reaper: winner's terminate -> node end --------------------------------

class LogWatcher(threading.Thread):
    """Timestamps each event of a node log as it appears (10 ms polls)."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path = path
        self.seen: list[tuple[float, int, int, int, object]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        import htcondor2

        reader = None
        while not self.stop.is_set():
            if reader is None and self.path.exists():
                reader = htcondor2.JobEventLog(str(self.path))
            if reader is not None:
                for event in reader.events(stop_after=0):
                    self.seen.append((time.time(), int(event.type), event.cluster, event.proc,
                                      event.get("ReturnValue")))
            time.sleep(0.01)


REAPER_JOB = """#!/bin/sh
# proc 0 wins after a few seconds; the others would run a minute
if [ "$1" = 0 ]; then sleep 4; else sleep 60; fi
"""


def reaper_scenario(pool: Pool, nodes: int = 6) -> dict[str, list[float]]:
    work = pool.workdir("reaper")
    write(work / "job.sh", REAPER_JOB, 0o755)
    write(work / "j.sub", "executable = job.sh\narguments = $(ProcId)\noutput = $(JOB).out\nerror = $(JOB).err\n"
          "log = j.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n")
    lines = [f"JOB N{i} j.sub" for i in range(nodes)]
    lines += [f"PARENT N{i} CHILD N{i + 1}" for i in range(0, nodes - 1, 2)]
    write(work / "r.dag", "\n".join(lines) + '\nVARS ALL_NODES rlrep_estimate="60"\n')
    pool.own(work)
    pool.rlrep("instrument", "r.dag", "-o", "run/r.rlrep.dag", "--policy", "fixed:3", cwd=work)
    dag = work / "run" / "r.rlrep.dag"
    watcher = LogWatcher(Path(str(dag) + ".nodes.log"))
    watcher.start()
    pool.submit_dag(dag)
    pool.wait_dag(dag, timeout=600)
    watcher.stop.set()
    watcher.join()
    from condor_rlrep.condor.eventlog import cluster_nodes, read_events

    owners = cluster_nodes(read_events(str(dag) + ".nodes.log"))
    ended = {}
    for at, text in dagman_lines(dag):
        match = re.match(r"Node (\S+) job\(s\) have exited the queue", text)
        if match:
            ended[match.group(1)] = at
    reaped = {}
    for line in (Path(str(dag) + ".rlrep") / "hooks.log").read_text().splitlines():
        match = re.match(r"(\S+)Z REAPER - node (\S+): replica \d+\.\d+ won; asked", line)
        if match:
            reaped[match.group(2)] = datetime.fromisoformat(match.group(1) + "+00:00").timestamp()
    to_end, to_act, to_gone = [], [], []
    for cluster, node in owners.items():
        if node not in ended or node.startswith("RLREP_REAPER"):
            continue
        won = [t for t, kind, c, proc, ret in watcher.seen if c == cluster and kind == 5 and ret == 0]
        gone = [t for t, kind, c, proc, _ in watcher.seen if c == cluster and kind == 9]
        if won:
            to_end.append(ended[node] - won[0])
            if node in reaped:
                to_act.append(reaped[node] - won[0])
            if gone:
                to_gone.append(max(gone) - won[0])
    return {"terminate -> reaper acts": to_act, "terminate -> last abort logged": to_gone,
            "terminate -> node ends (DAGMan)": to_end}


# -- main ------------------------------------------------------------------------

def run_pair(pool: Pool, workflow: str, round_no: int, variant: str | tuple[str, ...], seconds: int,
             results: dict) -> None:
    """The plain DAG and one instrumented copy (or several: ``--together``), submitted together."""
    variants = (variant,) if isinstance(variant, str) else tuple(variant)
    copies = prepare(pool, workflow, round_no, ("plain", *variants), seconds)
    # all held, then released in one command, the order alternating: none
    # starts a negotiation cycle ahead of the others by being submitted first
    order = list(copies) if round_no % 2 else list(reversed(copies))
    clusters = [pool.submit_dag(copies[v][0], "-append", "hold = true") for v in order]
    pool.check(["condor_release", *map(str, clusters)], cwd=pool.work)
    for _, (dag, _) in copies.items():
        pool.wait_dag(dag, timeout=1800)
    plain = makespan(copies["plain"][0])
    load = os.getloadavg()
    for name in variants:
        mine = makespan(copies[name][0])
        results.setdefault(workflow, {}).setdefault(name, []).append((plain, mine))
        print(f"{workflow} round {round_no}: plain {plain:7.1f} s  {name:9s} {mine:7.1f} s  x{mine / plain:.3f}"
              f"   (load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})", flush=True)
        _hook_results(results, name, *copies[name])


def _hook_results(results: dict, variant: str, dag: Path, log: Path | None) -> None:
    if log is None:
        return
    hooks = hook_times(log)
    together, alone = overlapping(hooks["pre"])
    bucket = results.setdefault("hooks", {}).setdefault(variant, {})
    bucket.setdefault("PRE overlapping another PRE", []).extend(together)
    bucket.setdefault("PRE alone", []).extend(alone)
    bucket.setdefault("PRE all", []).extend(e - s for s, e in hooks["pre"])
    bucket.setdefault("POST all", []).extend(e - s for s, e in hooks["post"])
    seen = dagman_script_times(dag)
    view = results.setdefault("dagman", {}).setdefault(variant, {})
    view.setdefault("PRE", []).extend(seen["PRE"])
    view.setdefault("POST", []).extend(seen["POST"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--task-seconds", type=int, default=60, help="figure1 task length")
    parser.add_argument("--skip-montage", action="store_true")
    parser.add_argument("--skip-figure1", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the pool's files (printed)")
    parser.add_argument("--variants", default=",".join(VARIANTS[1:]),
                        help="comma-separated: fixedK, fixedK-pre (--always-pre), default, anchor [%(default)s]")
    parser.add_argument("--together", action="store_true",
                        help="submit the plain DAG and every variant at once (one ratio each per round) "
                             "instead of one pair per variant")
    parser.add_argument("--skip-reaper", action="store_true", help="skip the surplus-replica scenario")
    args = parser.parse_args()
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    # two copies at once, the default one with up to 3 replicas a node
    os.environ.setdefault("POOL_CPUS", "32")
    started = time.time()
    try:
        pool = start_pool()
    except PoolUnavailable as err:
        sys.exit(f"no pool: {err}")
    print(f"pool up with the checkout installed in {time.time() - started:.0f} s; "
          f"{os.environ['POOL_CPUS']} CPUs in one partitionable slot; load {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores", flush=True)
    results: dict = {}
    try:
        workflows = [w for w, skip in (("figure1", args.skip_figure1),
                                       ("montage", args.skip_montage or not MONTAGE.exists())) if not skip]
        for round_no in range(1, args.rounds + 1):
            for workflow in workflows:
                if args.together:
                    run_pair(pool, workflow, round_no, variants, args.task_seconds, results)
                    continue
                for variant in variants:
                    run_pair(pool, workflow, round_no, variant, args.task_seconds, results)
        reaper = {} if args.skip_reaper else reaper_scenario(pool)
    finally:
        pool.stop()
        if args.keep:
            print(f"pool files kept in {pool.base}")
        else:
            shutil.rmtree(pool.base, ignore_errors=True)

    print("\nmakespan: the instrumented copy against the plain DAG run at the same time")
    for workflow in ("figure1", "montage"):
        for variant, pairs in results.get(workflow, {}).items():
            ratio = statistics.mean(mine / plain for plain, mine in pairs)
            print(f"  {workflow:8s} {variant:8s} plain {statistics.mean(p for p, _ in pairs):7.1f} s  "
                  f"{variant} {statistics.mean(m for _, m in pairs):7.1f} s  x{ratio:.3f} "
                  f"(mean of {len(pairs)} paired ratio(s): " + ", ".join(f"{m / p:.3f}" for p, m in pairs) + ")")
    print("\nhook processes on the pool (exec -> exit); anchor: PRE = POST = python 'import htcondor2'")
    for variant, buckets in results.get("hooks", {}).items():
        for name, values in buckets.items():
            print(f"  {variant:8s} {name:28s} {stats(values)}")
    print("as DAGMan sees them (.dagman.out; a POST ends for DAGMan at its next node-log scan)")
    for variant, buckets in results.get("dagman", {}).items():
        for name, values in buckets.items():
            print(f"  {variant:8s} {name:28s} {stats(values)}")
    if reaper:
        print("surplus replicas (fixed:3, proc 0 exits 0 after 4 s, the others would run 60 s)")
    for name, values in reaper.items():
        print(f"  {name:32s} {stats(values)}")
    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {time.time() - started:.0f} s in all")


if __name__ == "__main__":
    main()
