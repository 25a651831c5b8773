"""The agent store's backends side by side: SQLite and PostgreSQL in one run.

    nice -n 19 .venv/bin/python benchmarks/bench_store.py [--quick] [--only throughput,latency,export]
        [--export-decisions 1000000] [--baseline-src DIR]

Targets (issue 15 / 12):
- decide+record pairs/s from one process and from 16 concurrent processes;
  PostgreSQL ≥ 1,000 pairs/s with 16 clients (each client one connection,
  and "hook-style": a fresh connection per call, as the PRE/POST hooks open it);
- a store-open + decide (or + record) in a fresh process, as a hook does it,
  with PostgreSQL within 20 ms of SQLite (anchor: the same call on SQLite,
  plus ``python -c pass`` and ``python -c "import psycopg"`` to show where the
  time goes); PostgreSQL both direct and through the run's store broker
  (condor_rlrep/store/broker.py, which the reaper runs for a server store);
- ``agent export`` of N decisions within 200 MB peak memory at any size
  (anchor: ``--baseline-src`` = a checkout of the code before streaming,
  e.g. ``git archive main | tar -x -C DIR``, run on the same store).

The PostgreSQL server is a throw-away cluster (tests/_pgcluster.py) with its
defaults (fsync and synchronous_commit on); SQLite runs as the hooks use it
(WAL, synchronous=NORMAL). Backends alternate and each figure is the median
of the repeats. The load average is printed with the results.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from _pgcluster import ClusterUnavailable, start_cluster  # noqa: E402

from condor_rlrep.agent import AgentConfig  # noqa: E402
from condor_rlrep.store import backends  # noqa: E402


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


# -- pairs per second ------------------------------------------------------------


def _client(spec: str, seed: int, seconds: float, per_call: bool, barrier, results, broker: str | None = None) -> None:
    from condor_rlrep.store.location import open_store

    rng = random.Random(seed)
    pairs = 0
    store = None if per_call else backends.open_store(spec)
    barrier.wait()
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    while time.perf_counter() < deadline:
        if per_call:  # as a hook opens it: through the run's broker when one is given
            with open_store(spec, broker=broker) as s:
                d = s.decide(phi_prime=rng.uniform(-0.5, 1.5), hour=rng.randrange(24), rng=rng)
            with open_store(spec, broker=broker) as s:
                s.record(d.decision_id, rng.choice((1.0, 0.5, -5.0)), {"seed": seed})
        else:
            d = store.decide(phi_prime=rng.uniform(-0.5, 1.5), hour=rng.randrange(24), rng=rng)
            store.record(d.decision_id, rng.choice((1.0, 0.5, -5.0)), {"seed": seed})
        pairs += 1
    results.put((pairs, time.perf_counter() - start))
    if store is not None:
        store.close()


def pairs_per_second(spec: str, clients: int, seconds: float, per_call: bool, broker: str | None = None) -> float:
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(clients), ctx.Queue()
    procs = [ctx.Process(target=_client, args=(spec, k, seconds, per_call, barrier, results, broker))
             for k in range(clients)]
    for p in procs:
        p.start()
    got = [results.get(timeout=seconds * 10 + 120) for _ in procs]
    for p in procs:
        p.join()
    return sum(pairs for pairs, _ in got) / max(elapsed for _, elapsed in got)


def bench_throughput(specs: dict[str, str], seconds: float, repeats: int) -> None:
    print(f"\n== decide+record pairs/s ({seconds:g} s per run, median of {repeats}; {_load()})")
    for clients in (1, 16):
        for per_call, mode in ((False, "one connection per client"), (True, "hook-style: open per call")):
            rates: dict[str, list[float]] = {name: [] for name in specs}
            for _ in range(repeats):
                for name, spec in specs.items():  # alternated
                    rates[name].append(pairs_per_second(spec, clients, seconds, per_call))
                    if per_call and name == "postgresql":  # and through a broker, as the reaper serves it
                        sock = os.path.join(tempfile.mkdtemp(prefix="bench-broker-"), "store.sock")
                        broker = _start_broker(spec, sock)
                        try:
                            rates.setdefault("postgresql via broker", []).append(
                                pairs_per_second(spec, clients, seconds, per_call, broker=sock))
                        finally:
                            broker.kill()
                            broker.wait()
            medians = {name: statistics.median(values) for name, values in rates.items()}
            text = "  ".join(f"{name} {rate:8,.0f}" for name, rate in medians.items())
            ratio = medians.get("postgresql", 0) / medians["sqlite"] if "sqlite" in medians else 0
            target = ""
            if clients == 16 and not per_call and "postgresql" in medians:
                target = f"  (target PostgreSQL ≥ 1,000: x{medians['postgresql'] / 1e3:.2f})"
            if clients == 16 and per_call and "postgresql via broker" in medians:
                target = f"  (target PostgreSQL ≥ 1,000: via broker x{medians['postgresql via broker'] / 1e3:.2f})"
            print(f"{clients:2d} client(s), {mode:27s} {text}  postgresql/sqlite {ratio:.2f}{target}")
    print(f"({_load()})")


# -- a hook's call in a fresh process ----------------------------------------------

_DECIDE = ("import sys\nfrom condor_rlrep.store.backends import open_store\n"
           "with open_store(sys.argv[1]) as s:\n    print(s.decide(phi_prime=0.3).decision_id)\n")
_RECORD = ("import sys\nfrom condor_rlrep.store.backends import open_store\n"
           "with open_store(sys.argv[1]) as s:\n    s.record(int(sys.argv[2]), 1.0, {'k': 1})\n")
# as the hooks open a store: location.open_store, trying the run's broker first
_DECIDE_BROKER = ("import sys\nfrom condor_rlrep.store.location import open_store\n"
                  "with open_store(sys.argv[1], broker=sys.argv[2]) as s:\n"
                  "    print(s.decide(phi_prime=0.3).decision_id)\n")
_RECORD_BROKER = ("import sys\nfrom condor_rlrep.store.location import open_store\n"
                  "with open_store(sys.argv[1], broker=sys.argv[2]) as s:\n"
                  "    s.record(int(sys.argv[3]), 1.0, {'k': 1})\n")
_BROKER = ("import sys, time\nfrom condor_rlrep.store.broker import StoreBroker\n"
           "b = StoreBroker(sys.argv[1], sys.argv[2])\nb.start()\nprint('up', flush=True)\ntime.sleep(1e6)\n")


def _start_broker(spec: str, sock: str) -> subprocess.Popen:
    """A broker in its own process, as the reaper runs it."""
    proc = subprocess.Popen([sys.executable, "-c", _BROKER, spec, sock], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
    return proc


def bench_latency(specs: dict[str, str], runs: int) -> None:
    env = dict(os.environ)

    def once(argv: list[str]) -> tuple[float, str]:
        start = time.perf_counter()
        out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
        return time.perf_counter() - start, out

    py = sys.executable
    cases: dict[str, list[float]] = {"python -c pass": [], "python -c 'import psycopg'": []}
    for name in specs:
        cases[f"{name} open+decide"] = []
        cases[f"{name} open+record"] = []
    broker = None
    if "postgresql" in specs:
        sock = os.path.join(tempfile.mkdtemp(prefix="bench-broker-"), "store.sock")
        broker = _start_broker(specs["postgresql"], sock)
        cases["postgresql via broker open+decide"] = []
        cases["postgresql via broker open+record"] = []
    for argv in ([py, "-c", "pass"], [py, "-c", "import psycopg"]):
        once(argv)  # warm caches
    for _ in range(runs):  # alternated, so that both see the same machine
        cases["python -c pass"].append(once([py, "-c", "pass"])[0])
        cases["python -c 'import psycopg'"].append(once([py, "-c", "import psycopg"])[0])
        for name, spec in specs.items():
            seconds, out = once([py, "-c", _DECIDE, spec])
            cases[f"{name} open+decide"].append(seconds)
            cases[f"{name} open+record"].append(once([py, "-c", _RECORD, spec, out.strip()])[0])
        if broker is not None:
            seconds, out = once([py, "-c", _DECIDE_BROKER, specs["postgresql"], sock])
            cases["postgresql via broker open+decide"].append(seconds)
            cases["postgresql via broker open+record"].append(
                once([py, "-c", _RECORD_BROKER, specs["postgresql"], sock, out.strip()])[0])
    if broker is not None:
        broker.kill()
        broker.wait()
    for name, spec in specs.items():  # the same calls with every module already imported: the store's own cost
        warm_decide, warm_record = [], []
        for _ in range(runs * 4):
            start = time.perf_counter()
            with backends.open_store(spec) as s:
                decision_id = s.decide(phi_prime=0.3).decision_id
            middle = time.perf_counter()
            with backends.open_store(spec) as s:
                s.record(decision_id, 1.0, {"k": 1})
            warm_decide.append(middle - start)
            warm_record.append(time.perf_counter() - middle)
        cases[f"{name} open+decide, warm"] = warm_decide
        cases[f"{name} open+record, warm"] = warm_record
    medians = {case: 1e3 * statistics.median(times) for case, times in cases.items()}
    print(f"\n== a hook's store call in a fresh process (median of {runs}; {_load()})")
    for case, ms in medians.items():
        print(f"{case:38s} {ms:7.1f} ms")
    if "postgresql" in specs:
        for verb in ("decide", "record"):
            gap = medians[f"postgresql open+{verb}"] - medians[f"sqlite open+{verb}"]
            print(f"postgresql - sqlite, open+{verb}: {gap:+.1f} ms (target within 20 ms)")
            gap = medians[f"postgresql via broker open+{verb}"] - medians[f"sqlite open+{verb}"]
            print(f"postgresql via the run's broker - sqlite, open+{verb}: {gap:+.1f} ms (target within 20 ms)")
        psycopg_ms = medians["python -c 'import psycopg'"] - medians["python -c pass"]
        print(f"of which importing psycopg alone: {psycopg_ms:+.1f} ms")
        for verb in ("decide", "record"):
            gap = medians[f"postgresql open+{verb}, warm"] - medians[f"sqlite open+{verb}, warm"]
            print(f"postgresql - sqlite, open+{verb} with imports warm (connect, auth, queries): {gap:+.1f} ms")


# -- export memory -------------------------------------------------------------------


def _synthetic_document(path: Path, count: int) -> None:
    """A store document with ``count`` decisions shaped like the hooks' (two thirds closed)."""
    from condor_rlrep.store._docstream import write_document
    from condor_rlrep.store._sqlite_schema import SCHEMA_VERSION
    from condor_rlrep.store.interface import DOCUMENT_FORMAT

    config = AgentConfig()
    rng = random.Random(7)

    def decisions():
        for k in range(1, count + 1):
            hour, phi_bin = rng.randrange(24), rng.randrange(config.n_phi_bins)
            closed = k % 3 != 0
            made = 1.7e9 + k * 3.1
            yield {
                "decision_id": k, "made_at": made, "state": hour * config.n_phi_bins + phi_bin, "hour": hour,
                "phi_bin": phi_bin, "replicas": rng.randint(1, config.max_replicas), "phi_prime": rng.uniform(-1, 2),
                "estimate": rng.uniform(-5, 1), "explored": rng.random() < 0.1, "epsilon": 0.05,
                "context": {"dag": "/home/user/run/montage.dag", "node": f"mProject_{k % 5000}", "run": k // 5000},
                "closed_at": made + 600.0 if closed else None, "reward": rng.choice((1.0, 0.93, -5.0)) if closed else None,
                "outcome": {"bad_joules": 8.1e3, "evictions": 0, "good_joules": 1.2e5, "replicas": 3, "sigma": 0.07,
                            "success": True, "winner": 1} if closed else None,  # canonical (sorted) as stored
            }

    header = {"format": DOCUMENT_FORMAT, "schema_version": SCHEMA_VERSION, "config": config.to_dict(),
              "rewards_seen": 0, "last_decision_id": count, "retention": {"closed": None, "pending": None}}
    with open(path, "w", encoding="utf-8") as out:
        write_document(out, header, [], [], decisions())


_CLI = "import sys\nfrom condor_rlrep.cli.main import main\nmain(sys.argv[1:])\n"


def _peak_rss(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of a command, measured from a wrapper process."""
    wrapper = ("import resource, subprocess, sys, time\nt = time.perf_counter()\n"
               "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t)\n")
    out = subprocess.run([sys.executable, "-c", wrapper, *argv], env=env, check=True, capture_output=True,
                         text=True, cwd=cwd).stdout.split()
    return int(out[0]) / 1024, float(out[1])


def bench_export(specs: dict[str, str], count: int, baseline: str | None, directory: Path) -> None:
    print(f"\n== export/import of {count:,} decisions: peak memory ({_load()})")
    document = directory / "doc.json"
    _synthetic_document(document, count)
    print(f"document {document.stat().st_size / 1e6:,.0f} MB")
    cli = [sys.executable, "-c", _CLI, "agent"]
    env = dict(os.environ)
    for name, spec in specs.items():
        mb, seconds = _peak_rss([*cli, "import", "--store", spec, str(document), "--replace"], env)
        print(f"{name:10s} agent import  peak {mb:7.0f} MB  {seconds:6.1f} s")
        out = directory / f"export-{name}.json"
        mb, seconds = _peak_rss([*cli, "export", "--store", spec, "-o", str(out)], env)
        same = out.read_bytes() == document.read_bytes()
        print(f"{name:10s} agent export  peak {mb:7.0f} MB  {seconds:6.1f} s  (target ≤ 200 MB; identical to the"
              f" imported document: {same})")
        out.unlink()
    if baseline and "sqlite" in specs:
        import sqlite3

        old = directory / "schema2.sqlite"
        subprocess.run([sys.executable, "-c", "import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2])",
                        specs["sqlite"], str(old)], check=True)
        conn = sqlite3.connect(old)  # the same store at the schema the baseline knows
        conn.execute("DROP TABLE settings")
        conn.execute("DELETE FROM schema_version WHERE version > 2")
        conn.execute("PRAGMA user_version = 2")
        conn.commit()
        conn.close()
        base_env = dict(env, PYTHONPATH=baseline)
        mb, seconds = _peak_rss([sys.executable, "-c", _CLI, "agent", "export", "--store", str(old),
                                 "-o", str(directory / "export-baseline.json")], base_env, cwd=directory)
        print(f"{'baseline':10s} agent export  peak {mb:7.0f} MB  {seconds:6.1f} s  ({baseline})")
    print(f"({_load()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short runs, for a smoke test")
    parser.add_argument("--only", default="throughput,latency,export")
    parser.add_argument("--export-decisions", type=int, default=None)
    parser.add_argument("--baseline-src", default=None, help="source tree of the pre-streaming code (PYTHONPATH)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    seconds, repeats, runs = (1.0, 1, 3) if args.quick else (5.0, 3, 15)
    count = args.export_decisions or (20_000 if args.quick else 1_000_000)
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        directory = Path(tmp)
        specs = {"sqlite": str(directory / "bench.sqlite")}
        cluster = None
        try:
            cluster = start_cluster(fsync=True)
            cluster.sql("CREATE DATABASE bench OWNER rlrep")
            specs["postgresql"] = cluster.url("bench", user="rlrep")
        except ClusterUnavailable as err:
            print(f"PostgreSQL skipped: {err}")
        try:
            config = AgentConfig(schedule="sliding-window", switch_after=0)
            for spec in specs.values():
                backends.create_store(spec, config).close()
            if "throughput" in only:
                bench_throughput(specs, seconds, repeats)
            if "latency" in only:
                bench_latency(specs, runs)
            if "export" in only:
                bench_export(specs, count, args.baseline_src, directory)
        finally:
            if cluster is not None:
                cluster.destroy()


if __name__ == "__main__":
    main()
