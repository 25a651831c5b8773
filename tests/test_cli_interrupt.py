"""One Ctrl-C stops every long command at once: the real ``condor-rlrep``
process (in a process group of its own, as a shell's job is) gets SIGINT on
its whole process group, as a terminal sends it, and must exit 130 within a few
seconds with one line saying what it kept, leave no process of its group
behind, and (a sweep) keep every run that finished.

Before the fix, a parallel sweep ignored the first Ctrl-C for minutes while
its workers started new simulations, and left orphaned workers on the third.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = str(Path(sys.executable).parent / "condor-rlrep")
DEFAULT_SIGINT = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"


def group_members(pgid: int) -> list[int]:
    """Live processes (zombies aside) whose process group is ``pgid``, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def start(args: list[str], cwd: Path, **env: str) -> subprocess.Popen[str]:
    # A process group of its own in the test's session, as a shell's job is — not
    # a session of its own: Linux schedules each session as one group (autogroup),
    # and under pytest -n 4 the workers' shared session gets a small share beside
    # the pool daemons'. A command in its own session then ran at full speed while
    # this test, starved, was still waiting to read its first progress line: a
    # 28-day simulation finished (exit 0) before the Ctrl-C was sent.
    # SIGINT at its default, as a terminal's foreground job has it: a test run
    # started in the background of a script (a CI runner's `cmd &`) ignores
    # SIGINT, every child inherits that across exec, and the command would then
    # rightly ignore the Ctrl-C. The shim resets it and execs the command (same pid).
    full = {**os.environ, "RLREP_PROGRESS_INTERVAL": "0", **env}
    return subprocess.Popen([sys.executable, "-c", DEFAULT_SIGINT, CLI, *args], cwd=cwd, env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, process_group=0)


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def interrupt(process: subprocess.Popen[str], within: float = 5.0) -> tuple[int, str, float]:
    """Ctrl-C as a terminal sends it (the whole group); exit status, stderr,
    seconds to exit. Whatever is still alive afterwards is killed, and the
    test fails."""
    pgid = process.pid
    sent = time.monotonic()
    os.killpg(pgid, signal.SIGINT)
    try:
        _, err = process.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        os.killpg(pgid, signal.SIGKILL)
        process.communicate()
        raise AssertionError(f"still running {within} s after one Ctrl-C") from None
    took = time.monotonic() - sent
    time.sleep(0.3)  # a terminated worker is reaped by its parent at once; give stragglers a moment
    left = group_members(pgid)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left behind: {left}"
    return process.returncode, err, took


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if "interrupted" in line]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "Aborted" not in err, err
    return lines[0]


@pytest.mark.slow
def test_parallel_sweep_stops_at_once_keeps_finished_runs_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "q"
    process = start(["sweep", "paper-figure1", "--quick", "--jobs", "2", "--out", str(out), "--no-report"], tmp_path)
    wait_for(lambda: len(list((out / "runs").glob("*.json"))) >= 2 if (out / "runs").is_dir() else False, 240,
             "two finished runs")
    code, err, took = interrupt(process)
    assert code == 130, err
    line = one_line(err)
    kept = sorted(path.name for path in (out / "runs").glob("*.json"))
    assert f"{len(kept)} of 27 runs finished and kept in {out}" in line
    assert "the same command resumes" in line
    assert took < 5
    # resuming skips what was kept (progress says so up front) and does the rest
    again = subprocess.run([CLI, "sweep", "paper-figure1", "--quick", "--jobs", "2", "--out", str(out), "--no-report"],
                           capture_output=True, text=True, timeout=600, cwd=tmp_path,
                           env={**os.environ, "RLREP_PROGRESS_INTERVAL": "3600"})
    assert again.returncode == 0, again.stderr
    assert f"{len(kept)} already finished" in again.stderr
    assert f"27 runs: {27 - len(kept)} ran" in again.stdout


@pytest.mark.slow
@pytest.mark.parametrize("command", ["simulate", "train"])
def test_simulate_and_train_stop_at_once_and_write_nothing(tmp_path: Path, command: str) -> None:
    store = tmp_path / "agent.sqlite"
    extra = ["--store", str(store)] if command == "train" else ["-o", str(tmp_path / "out")]
    process = start([command, "--preset", "newcastle-2010", "--days", "28", "--policy" if command == "simulate"
                     else "--max-replicas", "rl:3" if command == "simulate" else "3", *extra], tmp_path)
    # interrupt inside the simulation, after it announced itself and made some progress
    lines: list[str] = []

    def progressed() -> bool:
        line = process.stderr.readline()
        lines.append(line)
        return "% done" in line or process.poll() is not None

    wait_for(progressed, 240, "simulation progress")
    code, err, took = interrupt(process)
    assert code == 130, "".join(lines) + err
    line = one_line(err)
    assert f"{command} stopped at" in line
    assert ("store was not changed" if command == "train" else "nothing was written") in line
    assert not store.exists() and not (tmp_path / "out").exists()


def test_status_watch_stops_on_ctrl_c(tmp_path: Path) -> None:
    from _runreport import RECORDED, replay

    if not RECORDED.is_dir():
        pytest.skip(f"recorded DAGMan runs not found at {RECORDED}")
    dag = replay("eviction", tmp_path / "ev", estimate=30)
    # a run DAGMan is still in: its .dagman.out without the exit line
    out = Path(f"{dag}.dagman.out")
    out.write_text("".join(line for line in out.read_text().splitlines(keepends=True) if "EXITING WITH STATUS" not in line))
    process = start(["status", str(dag), "--watch", "0.2"], tmp_path, XDG_CACHE_HOME=str(tmp_path / "cache"))
    wait_for(lambda: process.stdout.readline() != "" or process.poll() is not None, 60, "the first table")
    assert process.poll() is None, "status --watch ended by itself on a running DAG"
    code, err, took = interrupt(process)
    assert code == 130, err
    assert "stopped watching" in one_line(err)
