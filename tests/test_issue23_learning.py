"""Issue 23 items 13 (what a fresh store does, said truly) and the
status/report items that need no pool (14–16), on the real CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from condor_rlrep.store.sqlite import SqliteStore

CLI = str(Path(sys.executable).parent / "condor-rlrep")


def rlrep(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)


def _user_dag(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="60"\n')


def test_item13_model_policy_on_a_new_store_is_not_described_as_epsilon_greedy(tmp_path: Path) -> None:
    _user_dag(tmp_path)
    done = rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", "model:3",
                 "--store", str(tmp_path / "new.sqlite"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if "agent store" in line)
    assert "created now" in line and "survival model, no runs yet" in line, line
    assert "epsilon 0.1" not in line and "epsilon-greedy" not in line, line
    again = rlrep("instrument", "w.dag", "-o", "run2/w.rlrep.dag", "--policy", "model:3",
                  "--store", str(tmp_path / "new.sqlite"), cwd=tmp_path)
    line = next(line for line in again.stdout.splitlines() if "agent store" in line)
    assert "existing" in line and "survival model, no runs yet" in line, line


def test_item13_a_new_agent_store_says_it_runs_one_replica_but_when_exploring(tmp_path: Path) -> None:
    """What the description says is what the store does: a fresh store's
    greedy choice is 1 replica (untried counts tie; ties go to fewer)."""
    _user_dag(tmp_path)
    store = tmp_path / "new.sqlite"
    done = rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--store", str(store), "--policy", "agent",
                 cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if "agent store" in line)
    assert "epsilon 0.1 then 0.05" in line and "untried counts tie" in line and "runs 1 replica" in line, line
    assert "explores (10% of decisions" in line, line
    with SqliteStore(store) as opened:
        chosen = [opened.decide(phi_prime=1.0, hour=3, rng=seed) for seed in range(200)]
    assert {d.replicas for d in chosen if not d.explored} == {1}
    assert {d.replicas for d in chosen if d.explored} == {1, 2, 3}
    assert 5 <= sum(d.explored for d in chosen) <= 40  # ε = 0.1 of 200


def _attempt(**fields):
    from condor_rlrep.condor.eventlog import ClusterHistory
    from condor_rlrep.outcome import Invocation
    from condor_rlrep.runreport.attempts import Attempt

    history = ClusterHistory(cluster=7, node="A", procs={0, 1, 2}, submit_time=1000.0)
    history.invocations = [Invocation(0, "h", 1000.0, 1040.0, "removed"), Invocation(1, "h", 1000.0, 1030.0, "failure", 1)]
    history.exit_codes = {1: 1}
    history.aborted = {0, 2}  # proc 2 was held and removed before it ever ran
    defaults = dict(node="A", mode="replicas", chosen="greedy", decision_id=4, replicas=3, phi_prime=0.5,
                    estimate=60.0, cluster=7, history=history)
    return Attempt(**{**defaults, **fields})


def test_item16_report_of_a_removed_attempt_shows_no_reward_and_counts_every_removed_proc() -> None:
    from types import SimpleNamespace

    from condor_rlrep.energy import PowerTable
    from condor_rlrep.runreport.report import _node_report

    records = {4: SimpleNamespace(reward=0.0)}
    removed = _node_report(_attempt(closed="removed with the DAG"), 1, PowerTable(), -5.0, records, 2000.0)
    assert (removed.outcome, removed.reward, removed.reward_recorded) == ("removed", None, 0.0)
    assert removed.removed == 2  # the held proc that never ran too, as status counts it
    judged = _node_report(_attempt(post_code=1, closed="POST"), 1, PowerTable(), -5.0, records, 2000.0)
    assert (judged.outcome, judged.reward) == ("failed", -5.0)
    # the user's POST accepted the node: the reward follows its verdict (item 11); failed replica 1 is kept
    accepted = _node_report(_attempt(post_code=0, closed="POST", accepted=True), 1, PowerTable(), -5.0, records, 2000.0)
    assert accepted.outcome == "success" and accepted.winner is None and accepted.finish_time == 1030.0
    forced = _node_report(_attempt(chosen="forced", decision_id=None, post_code=1, closed="POST"), 1, PowerTable(),
                          -5.0, {}, 2000.0)
    assert forced.reward is None  # a forced count teaches nothing (item 12)
