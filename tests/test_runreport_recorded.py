"""``status`` and ``report`` on recorded real DAGMan 25.14 runs, every figure checked by hand.

Each scenario of ``../shared/data/eventlogs/real-dagman`` is replayed through
the real hooks (``_runreport.replay``: instrument, then PRE and POST at the
recorded times against the node log as it stood) and reported with the real
CLI. The expected numbers below were read off the recorded node log and
``scripts.out`` by eye (the lines are quoted) and worked out on paper at the
default 75 W per machine; they do not come from the code under test.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from _runreport import RECORDED, replay, rlrep, trained_store

pytestmark = pytest.mark.skipif(not RECORDED.is_dir(), reason=f"recorded runs absent: {RECORDED}")


def t(clock: str) -> float:
    """Epoch of a recorded local time on 2026-12-02 (the runs' day)."""
    return datetime.strptime(f"2026-12-02 {clock}", "%Y-%m-%d %H:%M:%S").timestamp()


def report_json(dag: Path, out: Path) -> dict:
    done = rlrep("report", str(dag), "-o", str(out), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(path))
    return path


def test_eviction_every_figure_by_hand(tmp_path: Path, cache: Path) -> None:
    # eviction/test.dag.nodes.log:
    #   000 (016.000.000) 2026-12-02 11:11:40 Job submitted
    #   001 (016.000.000) 2026-12-02 11:11:49 Job executing ... SlotName: slot1_2@vm
    #   004 (016.000.000) 2026-12-02 11:11:52 Job was evicted. Code 1022   (vacated: 3 s wasted)
    #   001 (016.000.000) 2026-12-02 11:11:57 Job executing ... SlotName: slot1_1@vm
    #   005 (016.000.000) 2026-12-02 11:12:17 Job terminated. (return value 0)   (20 s run)
    #   016 (016.000.000) 2026-12-02 11:12:20 POST Script terminated.
    # scripts.out: PRE_A at 11:11:39 -> s(W) = 11:11:39 (the run's first PRE)
    store = trained_store(tmp_path / "store" / "agent.sqlite", prefer=1)
    dag = replay("eviction", tmp_path / "ev", estimate=30, phi=1.0, store=store)
    doc = report_json(dag, tmp_path / "out")
    (run,) = doc["runs"]
    sw = t("11:11:39")
    cr = 30.0                                  # one node, e = 30 s
    assert run["workflow_start"] == sw
    assert run["critical_path_s"] == cr
    assert run["deadline"] == sw + 2 * cr      # (1 + φ)·CR(W), φ = 1
    assert run["completion"] == t("11:12:17")  # the last task's winner exits
    assert run["makespan_s"] == 38.0           # 11:12:17 − 11:11:39
    assert run["p_w"] == pytest.approx(38 / 30 - 1)
    assert run["met_deadline"] is True and run["finished"] is True
    (node,) = run["nodes"]
    assert node["node"] == "A" and node["chosen"] == "greedy" and node["replicas"] == 1 and node["procs"] == 1
    assert node["cluster"] == 16 and node["winner"] == 0
    assert node["winner_host"] == "vm" and node["winner_slot"] == "slot1_1@vm"
    assert node["evictions"] == 1 and node["removed"] == 0
    # A starts the workflow: φ′ at s(W) = (d − s(W))/L′ − 1 = 60/30 − 1
    assert node["phi_prime"] == pytest.approx(1.0)
    assert node["submit_time"] == t("11:11:40")                 # s_t: the submit event
    assert node["task_deadline"] == t("11:11:40") + 2 * 30      # s_t + (1 + φ′)·e_t
    assert node["duration_s"] == 37.0                           # D_t = 11:12:17 − 11:11:40
    assert node["good_energy_j"] == 20 * 75.0                   # the run that won
    assert node["bad_energy_j"] == 3 * 75.0                     # the evicted run
    sigma = 225.0 / (1 * 37 * 75.0)                             # σ = bad / (a · D_t · Ξ)
    assert node["sigma"] == pytest.approx(sigma)
    assert node["outcome"] == "success"
    assert node["reward"] == pytest.approx(1 - sigma)
    assert node["reward_recorded"] == pytest.approx(1 - sigma)  # what POST stored
    assert run["good_energy_j"] == 1500.0 and run["bad_energy_j"] == 225.0 and run["replica_energy_j"] == 1725.0
    assert run["single_replica_estimate_j"] == 30 * 75.0
    assert run["replicas"] == 1 and run["evictions"] == 1 and run["removed"] == 0
    bars = sorted((b["slot"], b["start"], b["end"], b["ended_by"], b["winner"]) for b in run["bars"])
    assert bars == [("slot1_1@vm", t("11:11:57"), t("11:12:17"), "success", True),
                    ("slot1_2@vm", t("11:11:49"), t("11:11:52"), "evicted", False)]
    # the agent's policy in the one state visited: 11:00, φ′ = 1 in (0.9, 1]
    (state,) = run["policy"]
    assert state["hour"] == datetime.fromtimestamp(sw).hour and state["phi_range"] == "0.9 < φ′ ≤ 1"
    assert state["taken"] == [1] and state["greedy"] == 1
    assert state["n"][0] == 2  # trained once, then this run's reward
    assert state["q"][0] == pytest.approx((1.0 + (1 - sigma)) / 2)
    out = tmp_path / "out"
    assert {p.name for p in out.iterdir()} >= {"report.md", "report.html", "report.json"}
    assert any(p.suffix == ".svg" and "gantt" in p.name for p in out.iterdir())
    md = (out / "report.md").read_text()
    assert "| A | 1 | 14 | greedy | 1 | 16.0 | vm (slot1_1@vm) | 1 | 0 | 1.000 | 30.0 | 37.0 | 60.0 | 1,500 | 225 |" in md


def test_replicas_first_wins_removals_and_a_node_left_alone(tmp_path: Path, cache: Path) -> None:
    # replicas-first-wins: A queues 4 procs (instrument leaves a multi-proc node alone), B one.
    #   000 (005.00{0..3}.000) 11:07:45 submitted; 001 11:07:54 on slot1_1..slot1_4@vm
    #   005 (005.000.000) 11:07:59 terminated (0); 004 Code 1023 + 009 for 005.001-003 at 11:07:59
    #   000 (006.000.000) 11:08:10; 001 11:08:15 slot1_1@vm; 005 11:08:17 (0)
    # scripts.out: PRE_B at 11:08:05: B's PRE is the run's first, s(W) = 11:08:05
    store = trained_store(tmp_path / "store" / "agent.sqlite", prefer=1)
    dag = replay("replicas-first-wins", tmp_path / "fw", estimate=10, phi=1.0, store=store)
    status = rlrep("status", str(dag), "--json")
    assert status.returncode == 0, status.stderr
    st = json.loads(status.stdout)
    assert st["dagman"] == "exited 0" and st["dagid"] == "4"
    assert [(n["node"], n["state"], n["procs"], n["removed"], n["winner"]) for n in st["nodes"]] == [
        ("A", "done", 4, 3, 0), ("B", "done", 1, 0, 0)]
    assert st["replicas"] == {"decided": 1, "idle": 0, "running": 0, "held": 0, "removed": 3, "evictions": 0}
    doc = report_json(dag, tmp_path / "out")
    (run,) = doc["runs"]
    sw = t("11:08:05")
    assert run["workflow_start"] == sw and run["critical_path_s"] == 20.0 and run["deadline"] == sw + 40
    assert run["makespan_s"] == 12.0 and run["p_w"] == pytest.approx(12 / 20 - 1)
    assert any("A submitted before s(W)" in w for w in run["warnings"])
    a, b = run["nodes"]
    assert a["node"] == "A" and a["chosen"] == "unmodified" and a["procs"] == 4 and a["winner"] == 0
    assert a["removed"] == 3 and a["outcome"] == "no decision" and a["reward"] is None
    assert a["good_energy_j"] == 5 * 75.0 and a["bad_energy_j"] == 3 * 5 * 75.0
    assert a["duration_s"] == 14.0  # 11:07:59 − 11:07:45
    assert b["node"] == "B" and b["chosen"] == "greedy" and b["replicas"] == 1
    assert b["phi_prime"] == pytest.approx(40 / 10 - 1)           # (d − s_t)/L′_B − 1 at s(W)
    assert b["submit_time"] == t("11:08:10") and b["duration_s"] == 7.0
    assert b["task_deadline"] == t("11:08:10") + 4 * 10
    assert b["good_energy_j"] == 150.0 and b["bad_energy_j"] == 0.0 and b["sigma"] == 0.0
    assert b["outcome"] == "success" and b["reward"] == 1.0 and b["reward_recorded"] == 1.0
    assert run["replica_energy_j"] == 375 + 1125 + 150.0 and run["single_replica_estimate_j"] == 20 * 75.0
    assert run["removed"] == 3 and run["replicas"] == 5
    removed = sorted((x["slot"], x["ended_by"]) for x in run["bars"] if x["node"] == "A")
    assert removed == [("slot1_1@vm", "success"), ("slot1_2@vm", "removed"), ("slot1_3@vm", "removed"),
                       ("slot1_4@vm", "removed")]
    assert [x["winner"] for x in run["bars"] if x["node"] == "A" and x["proc"] == 0] == [True]


def test_retry_and_pre_failure_status_shows_the_failed_pre(tmp_path: Path, cache: Path) -> None:
    # retry-and-pre-failure: RETRY A 1 (exit 1 then 0), C's PRE exits 1 -> the DAG fails
    dag = replay("retry-and-pre-failure", tmp_path / "rp", estimate=5, phi=1.0, policy="fixed:1")
    st = json.loads(rlrep("status", str(dag), "--json").stdout)
    states = {n["node"]: (n["state"], n["attempts"]) for n in st["nodes"]}
    assert st["dagman"].startswith("exited") and st["dagman"] != "exited 0"
    assert states["A"] == ("done", 2)  # two attempts: the retry succeeded
    assert states["C"][0] == "failed"
