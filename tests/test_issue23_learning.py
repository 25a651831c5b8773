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
    done = rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if "agent store" in line)
    assert "epsilon 0.1 then 0.05" in line and "untried counts tie" in line and "runs 1 replica" in line, line
    assert "explores (10% of decisions" in line, line
    with SqliteStore(store) as opened:
        chosen = [opened.decide(phi_prime=1.0, hour=3, rng=seed) for seed in range(200)]
    assert {d.replicas for d in chosen if not d.explored} == {1}
    assert {d.replicas for d in chosen if d.explored} == {1, 2, 3}
    assert 5 <= sum(d.explored for d in chosen) <= 40  # ε = 0.1 of 200
