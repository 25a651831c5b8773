"""``condor-rlrep replay`` end to end on a real pool (HTCondor 25.14, ``../shared/htcondor``).

A hand-made trace of three desktops whose owners come back in short
sessions while two Figure-1 workflows run (tasks of 8 s: the trace is
compressed ×240), replayed for ``single`` and ``model:3``, each in a fresh
pool the replay starts from the test pool's HTCondor release. Checked: the
owners' arrivals evict replicas through the startd's own policy (events 004
in the node logs; nobody calls condor_vacate_job), the live row counts
exactly those evictions, every ``model:3`` decision is closed once in the
store, the live and simulated rows have the same workflows, tasks and (for
single) replicas and both see evictions, and no daemon of the replay's
pools is left afterwards.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from _pool import POOL_SCRIPT, Pool, write

pytestmark = pytest.mark.pool

COMPRESSION = 240.0


def _trace(folder: Path) -> Path:
    def trace_s(replay_s: float) -> int:
        return int(replay_s * COMPRESSION)

    write(folder / "trace.toml", 'start = "2010-01-04T09:00:00+00:00"\nlength = 7200\nsource = "replay test"\n')
    write(folder / "machines.csv", "machine,room,active_watts,idle_watts\nm0,r,100,10\nm1,r,150,15\nm2,r,200,20\n")
    logins = ["machine,start,end"]
    for machine, at in [("m0", 9), ("m1", 9), ("m0", 13), ("m1", 13), ("m2", 11), ("m0", 17), ("m1", 17),
                        ("m2", 19), ("m0", 21), ("m1", 21), ("m0", 25), ("m1", 25)]:
        logins.append(f"{machine},{trace_s(at)},{trace_s(at + 2)}")  # 2 replay seconds each
    write(folder / "logins.csv", "\n".join(logins) + "\n")
    write(folder / "jobs.csv", f"job,submit,duration\nj1,0,600\nj2,{trace_s(5)},600\n")
    return folder


def test_replay_evicts_through_the_startd_and_agrees_with_the_simulator(pool: Pool):
    work = pool.workdir("replay")
    trace = _trace(work / "trace")
    out = work / "out"
    pool.own(work)
    began = time.monotonic()
    printed = pool.rlrep("replay", "-o", str(out), "--trace", str(trace), "--window-start", "0", "--window", "2",
                         "--slots", "3", "--compression", str(COMPRESSION), "--workflows", "2",
                         "--policy", "single", "--policy", "model:3", "--condor", str(pool.dir / "release"),
                         "--json", cwd=work)
    took = time.monotonic() - began
    rows = json.loads(printed)["rows"]
    print(f"replay took {took:.0f} s:", json.dumps({p: [{k: r[k] for k in ("side", "completed", "within", "replicas",
                                                                    "evictions", "good_kwh", "bad_kwh")}
                                                         for r in pair] for p, pair in rows.items()}))
    assert took < 300  # CI-sized: two policies in under five minutes
    for name in ("report.md", "report.html", "report.json"):
        assert (out / name).exists()
    for policy, folder in (("single", "single"), ("model:3", "model-3")):
        live, sim, bare = rows[policy]
        assert (live["side"], sim["side"], bare["side"]) == ("live", "simulated", "simulated, no DAGMan latency")
        # DAGMan's per-level latency measured on the live run is the simulated row's (seconds, not zero)
        measured = live["extra"]["dagman_latency"]
        assert measured["nodes"] == 16 and 0.5 < measured["mean_s"] < 30, measured
        # the modelled row: each simulated workflow replays the live workflow's own per-node delays
        # (turn + start, its start part, the winner's run excess), jobs matched at once, in slot order
        assert sim["extra"]["turn_s"] == pytest.approx(measured["mean_s"])
        delays = live["extra"]["node_delays"]
        nodes = [node for _, entry in delays for node in entry]
        assert len(delays) == 2 and len(nodes) == len(measured["turn_plus_start"]) == 16
        assert sorted(n[1] for n in nodes) == pytest.approx(sorted(max(0.0, v) for v in measured["turn_plus_start"]),
                                                            abs=1e-3)
        assert all(0 <= n[2] <= n[1] and n[3] >= 0 for n in nodes)
        assert sim["extra"]["config"]["latency_workflows"] == delays
        assert sim["extra"]["config"]["negotiation_interval"] == 0.0 and sim["extra"]["start_excess_s"] == 0.0
        assert sim["extra"]["dagman_latency_s"] == pytest.approx(sum(n[1] for n in nodes) / 16)
        assert "dagman_latency_samples" not in sim["extra"]["config"]
        assert sim["extra"]["config"]["machine_choice"] == "slot-order"
        assert bare["extra"]["config"]["machine_choice"] == "random"
        assert "dagman_latency" not in bare["extra"]["config"]
        # owners evicted replicas through START/PREEMPT: 004 events in the node logs, counted by the live
        # row — all but the reaper's removals of surplus replicas (also a 004, with code 1023)
        evicted = sum(len(re.findall(r"^004 \(.*Job was evicted\. Code (?!1023\b)", log.read_text(), re.M))
                      for log in (out / folder).glob("wf*/run.dag.nodes.log"))
        preempted = sum(log.read_text().count("Reason: PREEMPT expression evaluated to True")
                        for log in (out / folder).glob("wf*/run.dag.nodes.log"))
        assert preempted > 0, f"{policy}: no eviction by the startd's PREEMPT"
        assert evicted > 0, f"{policy}: no eviction in the node logs"
        # equal also for model:3's replicas evicted by an owner and later removed as surplus (the removal's
        # own 004 no longer turns the eviction before it into the removal)
        assert live["evictions"] == evicted, (policy, live["evictions"], evicted)
        # the slot turnaround measured live is the simulated row's (none measured: 0, not recorded)
        turnaround = live["extra"]["slot_turnaround"]["turnaround_s"]
        assert sim["extra"]["slot_turnaround_s"] == pytest.approx(turnaround or 0.0)
        assert sim["extra"]["config"].get("slot_turnaround", 0.0) == pytest.approx(turnaround or 0.0)
        assert "slot_turnaround" not in bare["extra"]["config"]
        # the same stream on both sides: workflows, tasks, all finished; both saw owners evict
        assert live["workflows"] == sim["workflows"] == 2
        assert live["completed"] == sim["completed"] == 2, live["extra"]
        assert live["tasks"] == sim["tasks"] == 16
        assert sim["evictions"] > 0
    assert rows["single"][0]["replicas"] == rows["single"][1]["replicas"] == 16
    # model:3 ran with its prior rate × the compression (240/8 per hour), live and simulated alike
    settings = json.loads(next((out / "model-3").glob("wf*/run.dag.rlrep/hooks.json")).read_text())
    assert settings["policy"] == "model:3,prior=30"
    assert rows["model:3"][1]["extra"]["config"]["policy"] == "model:3,prior=30"
    assert "Why they differ" in (out / "report.md").read_text()
    # model:3: every decision closed once, one per task: one PRE and one verdict per node in each journal,
    # each task's runs counted once in the store's survival model
    for context in sorted((out / "model-3").glob("wf*/run.dag.rlrep")):
        lines = [json.loads(line) for line in (context / "journal.jsonl").read_text().splitlines()]
        decided = Counter(line["node"] for line in lines if line["hook"] == "PRE")
        closed = Counter(line["node"] for line in lines if line["hook"] in ("POST", "CLOSE"))
        assert decided == closed == {node: 1 for node in "ABCDEFGH"}, (context, decided, closed)
    from condor_rlrep.store import SqliteStore

    store = SqliteStore(str(out / "model-3" / "agent.sqlite"))
    try:
        stats = store.stats()
    finally:
        store.close()
    assert stats.survival_runs == 16 and stats.pending == 0
    assert rows["model:3"][0]["extra"]["decisions_reported_twice"] == []
    # the replay's pools are stopped: no process runs from their folders
    left = subprocess.run(["pgrep", "-af", str(out)], capture_output=True, text=True, check=False).stdout
    assert not left.strip(), left


def test_ctrl_c_stops_the_pool_in_one_line(pool: Pool):
    """Ctrl-C during the live run: one line on stderr, exit 130, the pool stopped, no process left;
    the plan stays for a resume, the interrupted policy has no rows."""
    import os
    import signal

    work = pool.workdir("replay-interrupt")
    trace = _trace(work / "trace")
    out = work / "out"
    pool.own(work)
    command = (f"{pool.venv / 'bin' / 'condor-rlrep'} replay -o {out} --trace {trace} --window-start 0 --window 2 "
               f"--slots 3 --compression {COMPRESSION} --workflows 2 --condor {pool.dir / 'release'} "
               f"2> {work / 'err.log'}; echo $? > {work / 'rc'}")
    started = subprocess.Popen([str(POOL_SCRIPT), "run", str(pool.dir), "sh", "-c", command], cwd=work,
                               start_new_session=True, stdin=subprocess.DEVNULL)
    pool.wait_for(lambda: (work / "err.log").exists() and "submitted 1/2" in (work / "err.log").read_text(),
                  timeout=180, what="the first submission")
    # Ctrl-C reaches the command itself (the shell around it would die of it before writing the status)
    replay = subprocess.run(["pgrep", "-f", f"python[0-9.]* \\S*condor-rlrep replay -o {out}"], capture_output=True,
                            text=True, check=False).stdout.split()
    assert len(replay) == 1, replay
    for pid in replay:
        os.kill(int(pid), signal.SIGINT)
    pool.wait_for(lambda: (work / "rc").exists() and (work / "rc").read_text().strip(), timeout=120, what="the exit")
    started.wait(timeout=30)
    assert (work / "rc").read_text().strip() == "130"
    said = [line for line in (work / "err.log").read_text().splitlines() if not line.startswith("single: ")]
    assert said == [f"condor-rlrep: replay interrupted; pool stopped; rerun the same command to resume ({out})"]
    left = subprocess.run(["pgrep", "-af", str(out)], capture_output=True, text=True, check=False).stdout
    assert not left.strip(), left
    assert (out / "plan.json").exists() and not (out / "single" / "rows.json").exists()
