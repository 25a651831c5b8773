"""Another user of a shared access point must not be able to act as you
(issue 24 items 1–5), played for real: the other user is the unprivileged
account ``condorpool`` (the pool's, ``../shared/htcondor/README.md``),
whose every step runs through ``runuser``; the victim is the user running
the tests (root). Everything lives in a world-writable sticky folder under
/tmp, like /tmp itself. Each test fails on the code before the fix."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from _hookutil import FIGURE1, pre_macros, run_script

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("runuser") is None or subprocess.run(
        ["id", "condorpool"], capture_output=True, check=False).returncode != 0,
    reason="needs root, runuser and the pool's user condorpool (../shared/htcondor/README.md)")

CLI = str(Path(sys.executable).parent / "condor-rlrep")
OTHER = "condorpool"


@pytest.fixture
def shared() -> Path:
    """A world-writable sticky folder (like /tmp) that both users reach."""
    path = Path(tempfile.mkdtemp(prefix="rlrep-security-", dir="/tmp"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def as_other(script: str, *, group: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (sh) as the other user (with ``group`` as primary group)."""
    argv = ["runuser", "-u", OTHER] + (["-g", group] if group else []) + ["--", "sh", "-c", script]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def rlrep(*args: str, cwd: Path | None = None, umask: int | None = None) -> subprocess.CompletedProcess[str]:
    def set_umask() -> None:
        if umask is not None:
            os.umask(umask)

    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, cwd=cwd, check=False,
                          preexec_fn=set_umask)


def secret(shared: Path) -> Path:
    """A file of the victim's that the other user cannot read."""
    path = shared / "secret.txt"
    path.write_text("TOPSECRET-line\n" * 3)
    path.chmod(0o600)
    return path


def figure1(shared: Path, name: str = "src") -> Path:
    src = shared / name
    shutil.copytree(FIGURE1.parent, src)
    return src / FIGURE1.name


# -- item 1: report executes nothing, reads only what the run's owner could ---------------


def _failed_run(work: Path) -> Path:
    """A recorded real DAGMan run whose node A failed (exit 3), replayed with PRE and POST for A
    (the recording ran A without scripts; the calls DAGMan would have made are added)."""
    import _runreport

    if not _runreport.RECORDED.is_dir():
        pytest.skip(f"recorded runs absent: {_runreport.RECORDED}")
    recorded = _runreport._recorded_calls

    def with_a(scenario: Path, first_day: str) -> list:
        calls = recorded(scenario, first_day)
        at = {kind: datetime.strptime(f"{first_day} {t}", "%Y-%m-%d %H:%M:%S").timestamp()
              for kind, t in (("PRE", "11:13:42"), ("POST", "11:13:53"))}
        calls.append(("PRE", "A", at["PRE"], ["A", "0", "0", "20", "0", "0"]))
        calls.append(("POST", "A", at["POST"], ["A", "0", "0", "20", "2", "1", "21.0", "21", "3", "False"]))
        return sorted(calls, key=lambda c: c[2])

    from datetime import datetime

    _runreport._recorded_calls = with_a
    try:
        return _runreport.replay("noop-and-final-dag-failed", work, estimate=5)
    finally:
        _runreport._recorded_calls = recorded


def _others_failed_run(shared: Path) -> Path:
    """The other user's run (the files chowned to them) with a failed node."""
    work = shared / "theirs"
    dag = _failed_run(work)
    subprocess.run(["chown", "-R", OTHER, str(work)], check=True)
    return dag


def test_report_of_another_users_run_runs_none_of_its_commands_and_reads_none_of_your_files(shared: Path) -> None:
    dag = _others_failed_run(shared)
    hidden = secret(shared)
    marker = shared / "ran-as-root"
    # the owner's description of the failed node: a command include and an error file they cannot read
    edited = as_other(f"""cd {dag.parent.parent} && {{ echo 'include : /usr/bin/touch {marker} |';
                      echo 'error = {hidden}'; grep -v '^error' A.sub; }} > A.new && mv A.new A.sub""")
    assert edited.returncode == 0, edited.stderr
    done = rlrep("report", str(dag))
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "report ran a command of the run's owner"
    report = Path(str(dag) + ".report")
    for name in ("report.md", "report.html", "report.json"):
        assert "TOPSECRET" not in (report / name).read_text(), name
    assert "could not read" in (report / "report.md").read_text()


def test_report_writes_nowhere_through_a_planted_report_folder(shared: Path) -> None:
    dag = _others_failed_run(shared)
    target = shared / "their-choice"
    planted = as_other(f"mkdir {target} && ln -s {target} {dag}.report")
    assert planted.returncode == 0, planted.stderr
    done = rlrep("report", str(dag))
    assert done.returncode != 0 and "report folder" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert list(target.iterdir()) == []


def test_report_copies_a_private_stderr_privately(shared: Path) -> None:
    dag = _failed_run(shared / "mine")
    err = dag.parent.parent / "A.private.err"
    err.write_text("private-tail\n")
    err.chmod(0o600)
    sub = dag.parent.parent / "A.sub"
    sub.write_text(f"error = {err}\n" + "\n".join(line for line in sub.read_text().splitlines()
                                                  if not line.startswith("error")) + "\n")
    done = rlrep("report", str(dag), umask=0o022)
    assert done.returncode == 0, done.stderr
    md = Path(str(dag) + ".report") / "report.md"
    assert "private-tail" in md.read_text()
    assert stat.S_IMODE(md.stat().st_mode) == 0o600
    assert as_other(f"cat {md}").returncode != 0


# -- item 2: instrument never adopts a context someone else made ---------------------------


def test_instrument_refuses_a_context_folder_another_user_created(shared: Path) -> None:
    dag = figure1(shared)
    out = shared / "w.rlrep.dag"
    ctx = Path(str(out) + ".rlrep")
    planted = as_other(f"mkdir -m 0777 {ctx} {ctx}/nodes && chmod 0777 {ctx} {ctx}/nodes")
    assert planted.returncode == 0, planted.stderr
    done = rlrep("instrument", str(dag), "-o", str(out), "--policy", "fixed:2")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and str(ctx) in done.stderr, done.stderr
    assert "uid" in done.stderr
    assert not out.exists()


def test_instrument_makes_the_context_fresh_and_private(shared: Path) -> None:
    dag = figure1(shared)
    out = shared / "w.rlrep.dag"
    done = rlrep("instrument", str(dag), "-o", str(out), "--policy", "fixed:2", umask=0o000)
    assert done.returncode == 0, done.stderr
    ctx = Path(str(out) + ".rlrep")
    for root, dirs, _files in os.walk(ctx):
        for name in [root, *(os.path.join(root, d) for d in dirs)]:
            assert stat.S_IMODE(os.lstat(name).st_mode) == 0o700, name
    attack = as_other(f"ls {ctx}/nodes || touch {ctx}/nodes/x")
    assert attack.returncode != 0


# -- item 3: the hooks write only inside the context, never through a symlink --------------


def test_hooks_write_through_no_symlink_planted_in_the_context(shared: Path) -> None:
    dag = figure1(shared)
    out = shared / "run.rlrep.dag"
    done = rlrep("instrument", str(dag), "-o", str(out))
    assert done.returncode == 0, done.stderr
    ctx = Path(str(out) + ".rlrep")
    # the context became writable for the other user (adopted, or a loose umask on older versions)
    for root, dirs, _files in os.walk(ctx):
        os.chmod(root, 0o777)
    victims = {}
    plants = ["hooks.log", "journal.jsonl", ".run.json.tmp", "run.lock", "state/.A.json.tmp", "cache/build.lock",
              "cache/.digest.json.tmp-1"]
    for index, name in enumerate(plants):
        victim = shared / f"victim{index}"
        victim.write_text("root's file\n")
        victim.chmod(0o644)
        victims[name] = victim
        (ctx / name).unlink(missing_ok=True)
    script = " && ".join(f"ln -s {victims[name]} {ctx / name}" for name in plants)
    planted = as_other(script)
    assert planted.returncode == 0, planted.stderr
    run_script(out, "A", "PRE", pre_macros())
    for name, victim in victims.items():
        assert victim.read_text() == "root's file\n", f"PRE wrote through the symlink {name}"


# -- item 4: modes never follow the umask -----------------------------------------------------


def test_a_group_member_cannot_change_what_dagman_runs_whatever_the_umask(shared: Path) -> None:
    dag = figure1(shared)
    out = shared / "w.rlrep.dag"
    done = rlrep("instrument", str(dag), "-o", str(out), umask=0o002)
    assert done.returncode == 0, done.stderr
    ctx = Path(str(out) + ".rlrep")
    for root, dirs, files in os.walk(ctx):
        assert stat.S_IMODE(os.lstat(root).st_mode) == 0o700, root
        for name in files:
            mode = stat.S_IMODE(os.lstat(os.path.join(root, name)).st_mode)
            assert not mode & 0o022, (os.path.join(root, name), oct(mode))
    for name in ("reaper.sub", "nodes/A.sub"):
        # the other user, in the victim's group (root): cannot change a file DAGMan submits as the victim
        attack = as_other(f"echo 'executable = /bin/evil' >> {ctx / name}", group="root")
        assert attack.returncode != 0, name
        assert "evil" not in (ctx / name).read_text()


def test_agent_export_of_a_private_store_is_private(shared: Path) -> None:
    store = shared / "agent.sqlite"
    assert rlrep("agent", "init", "--store", str(store)).returncode == 0
    store.chmod(0o600)
    out = shared / "export.json"
    done = rlrep("agent", "export", "--store", str(store), "-o", str(out), umask=0o022)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert as_other(f"cat {out}").returncode != 0


# -- item 5: the status checkpoint is believed only from its owner ------------------------------


def test_status_believes_no_checkpoint_another_user_could_write(shared: Path) -> None:
    import hashlib
    import json
    import marshal

    from _runreport import RECORDED, replay, trained_store

    if not RECORDED.is_dir():
        pytest.skip(f"recorded runs absent: {RECORDED}")
    store = trained_store(shared / "store" / "agent.sqlite", prefer=1)
    dag = replay("eviction", shared / "ev", estimate=30, store=store)
    cache = shared / "cache"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}

    def status() -> dict:
        done = subprocess.run([CLI, "status", str(dag), "--json"], capture_output=True, text=True, env=env,
                              check=False)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        data = json.loads(done.stdout)
        data.pop("now")
        return data

    cold = status()
    assert cold["nodes"][0]["winner"] == 0
    (path,) = (cache / "condor-rlrep" / "status").glob("*.ckpt")
    # the other user's lie: this run's checkpoint, claiming A still runs with no winner,
    # under the digest anyone can compute (header, SHA-256 line, marshal payload)
    magic, _digest, payload = path.read_bytes().split(b"\n", 2)
    state = marshal.loads(payload)
    (entry,) = state["nodelog"]["clusters"]
    summary = list(entry[6])
    summary[4], summary[6], summary[7], summary[8] = None, [[0, "running"]], None, 1
    state["nodelog"]["clusters"] = [(*entry[:6], summary)]
    lie = marshal.dumps(state)
    (shared / "forged").write_bytes(magic + b"\n" + hashlib.sha256(lie).hexdigest().encode() + b"\n" + lie)
    os.chmod(path.parent, 0o777)  # the other user can write there (a shared cache folder)
    path.unlink()
    planted = as_other(f"cp {shared / 'forged'} {path}")
    assert planted.returncode == 0, planted.stderr
    assert status() == cold
