"""PRE and POST CPU of two checkouts, call by call, in one run.

A change that should cost nothing (a restructure, a fix on the hooks' path)
is measured against the code it replaces: each checkout instruments the same
10,000-node DAG (``bench_hooks.make_dag``) with its own virtual environment,
9,000 nodes already finished in the node log, and the two are called
alternately (which goes first flips every round), so both see the same
machine load. CPU time (user + sys of the hook process) is the figure: on a
shared machine wall time mostly measures the neighbours. Each checkout's
``python -c "import htcondor2"`` is timed beside its hooks as the anchor.

    python benchmarks/ab_hooks.py OLD=/path/to/old/checkout NEW=/path/to/new/checkout \\
        [--rounds 60] [--policy agent|model:3|fixed:2]

Each checkout needs a virtual environment ``.venv`` with itself installed
(``python3 -m venv .venv && .venv/bin/pip install -e .``). Prints the
medians per checkout and NEW/OLD ratios of the medians.
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

T0 = 1_780_000_000.0
FINISHED = 9_000

_SETUP = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from bench_hooks import make_dag
from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.instrument import InstrumentOptions, instrument

work, policy = Path(sys.argv[1]), sys.argv[2]
work.mkdir(parents=True, exist_ok=True)
dag = make_dag(work, 10_000, 1)
out = work / "run" / "big.rlrep.dag"
result = instrument(dag, out, InstrumentOptions(store=str(work / "agent.sqlite"), policy=policy))
writer = EventLogWriter(str(out) + ".nodes.log")
for cluster, name in enumerate(result.replicated[:{finished}], start=1):
    writer.submit(cluster, 0, {t0}, name)
    writer.execute(cluster, 0, {t0} + 1, "h")
    writer.terminate(cluster, 0, {t0} + 9, exit_code=0)
    writer.post_script_terminated(cluster, 0, {t0} + 10, name)
print(out)
""".format(finished=FINISHED, t0=T0)


def _cpu(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")
    return usage.ru_utime + usage.ru_stime


class Side:
    """One checkout's instrumented run and its samples."""

    def __init__(self, label: str, tree: Path, work: Path, policy: str) -> None:
        self.label = label
        self.python = str(tree / ".venv" / "bin" / "python")
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")  # bytecode as an installation has it
        work.mkdir(parents=True)
        dag = subprocess.run([self.python, "-c", _SETUP, str(work), policy, str(tree / "benchmarks")],
                             check=True, capture_output=True, text=True, cwd=work, env=self.env).stdout.strip()
        subprocess.run([self.python, "-c", _READ_DAG, dag], check=True, env=self.env, cwd=work,
                       stdout=open(work / "nodes.txt", "w"))
        self.nodes = [line.split("\t") for line in (work / "nodes.txt").read_text().splitlines()]
        from condor_rlrep.condor.eventlog_writer import EventLogWriter

        self.writer = EventLogWriter(dag + ".nodes.log")
        self.samples: dict[str, list[float]] = {"anchor": [], "pre": [], "post": []}

    def round(self, index: int, keep: bool) -> None:
        name, directory, pre_argv, post_argv, submit = self.nodes[FINISHED + index]
        anchor = _cpu([self.python, "-c", "import htcondor2"], directory, self.env)
        macros = {"$JOB": name, "$RETRY": "0", "$MAX_RETRIES": "0", "$DAGID": "4242"}
        pre = _cpu([macros.get(t, t) for t in pre_argv.split("\x1f")], directory, self.env) if pre_argv else 0.0
        replicas = int(Path(submit).read_text().rsplit("queue ", 1)[1].split()[0])
        cluster = 100_000 + index
        for proc in range(replicas):
            self.writer.submit(cluster, proc, T0 + 20, name)
            self.writer.execute(cluster, proc, T0 + 21, f"h{proc}")
        self.writer.terminate(cluster, 0, T0 + 80, exit_code=0)
        for proc in range(1, replicas):
            self.writer.remove(cluster, proc, T0 + 81)
        macros.update({"$JOBID": f"{cluster}.0", "$CLUSTERID": str(cluster), "$RETURN": "-1002", "$SUCCESS": "False"})
        post = _cpu([macros.get(t, t) for t in post_argv.split("\x1f")], directory, self.env) if post_argv else 0.0
        if keep:
            self.samples["anchor"].append(anchor)
            self.samples["pre"].append(pre)
            self.samples["post"].append(post)


_READ_DAG = """
import sys
from condor_rlrep.dag.parser import read_dag
wf = read_dag(sys.argv[1])
names = sorted((n for n in wf.nodes if n.startswith("N")), key=lambda n: int(n[1:]))
for n in names:
    node = wf.nodes[n]
    pre = node.scripts.get("PRE"); post = node.scripts.get("POST")
    print("\\t".join([n, node.directory, "\\x1f".join(pre.argv) if pre else "",
                      "\\x1f".join(post.argv) if post else "", node.submit]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs=2, metavar="LABEL=PATH")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--policy", default="agent")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ab-hooks-"))
    try:
        sides = []
        for spec in args.trees:
            label, path = spec.split("=", 1)
            sides.append(Side(label, Path(path).resolve(), root / label, args.policy))
        for index in range(args.rounds + 1):
            for side in (sides if index % 2 == 0 else sides[::-1]):
                side.round(index, keep=index > 0)  # round 0 warms each plan cache
        load = os.getloadavg()[0]
        print(f"policy {args.policy}, {args.rounds} calls each, load {load:.1f}")
        for side in sides:
            med = {k: statistics.median(v) * 1000 for k, v in side.samples.items()}
            print(f"{side.label}: CPU medians import htcondor2 {med['anchor']:.1f} ms, "
                  f"PRE {med['pre']:.1f} ms, POST {med['post']:.1f} ms")
        old, new = sides
        for key in ("pre", "post", "anchor"):
            a, b = statistics.median(old.samples[key]), statistics.median(new.samples[key])
            if a:
                print(f"{new.label}/{old.label} {key.upper()} CPU median ratio: {b / a:.3f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
