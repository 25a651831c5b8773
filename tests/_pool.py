"""A real HTCondor pool for the pool tests (``../shared/htcondor``).

One personal pool per test session (``pool start DIR``), with a virtual
environment *inside* the pool's directory holding this checkout
(``pip install`` of a copy of it, as the pool user), because under root the
daemons, DAGMan, every job and every hook run as the unprivileged user
``condorpool``: a checkout under a 0700 directory is not reachable by it.
Everything a test hands to the pool lives under :attr:`Pool.work`, owned by
that user.

Under pytest-xdist each worker that runs pool tests starts its own pool (its
own directory and ports, so no test sees another's jobs), and all of them
share one installed checkout (:func:`shared_install`, made by whichever
worker needs it first): the hooks only read their venv.

Tests that need it skip, with the reason, when ``../shared/htcondor`` is
absent or the pool does not start.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HTCONDOR = REPO.parent / "shared" / "htcondor"
POOL_SCRIPT = HTCONDOR / "pool"
POOL_USER = "condorpool"

_EXIT = re.compile(r"EXITING WITH STATUS (\d+)")


class PoolUnavailable(RuntimeError):
    pass


def _pool_user() -> str:
    return POOL_USER if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name


class Pool:
    """A started pool: ``run`` commands as its user, ``own`` files for it."""

    def __init__(self, base: Path):
        self.base = base
        self.dir = base / "pool"
        self.work = base / "work"
        self.venv = base / "venv"
        self.user = _pool_user()

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> None:
        done = subprocess.run([str(POOL_SCRIPT), "start", str(self.dir)], capture_output=True, text=True,
                              timeout=240, stdin=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            raise PoolUnavailable(f"pool start failed: {(done.stderr or done.stdout).strip()[-500:]}")
        self.work.mkdir(exist_ok=True)
        self.own(self.work)

    def install(self, into: Path | None = None) -> None:
        """This checkout into a venv the pool user owns (the hooks DAGMan runs):
        ``into`` (default: the pool's own folder) gets ``src/`` and ``venv/``."""
        into = into or self.base
        self.venv = into / "venv"
        source = into / "src"
        shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
            ".git", ".venv", "results", "__pycache__", "*.egg-info", "build", ".hypothesis", ".pytest_cache"))
        self.own(into)
        for argv in (["python3", "-m", "venv", str(self.venv)],
                     [str(self.venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", f"{source}[postgresql]"]):
            done = self.run(argv, cwd=into, timeout=900)
            if done.returncode != 0:
                raise PoolUnavailable(f"{' '.join(argv[:3])} failed: {(done.stderr or done.stdout).strip()[-800:]}")

    def stop(self) -> None:
        subprocess.run([str(POOL_SCRIPT), "stop", str(self.dir)], capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL, check=False)

    # -- helpers -------------------------------------------------------------

    def own(self, path: Path) -> None:
        """Hand ``path`` (recursively) to the pool user."""
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", self.user, str(path)], check=True)

    def run(self, argv: Sequence[str], *, cwd: Path | str, timeout: float = 300,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``pool run DIR argv…`` in ``cwd``, as the pool user."""
        prefix = [str(POOL_SCRIPT), "run", str(self.dir)]
        if env:
            prefix += ["env", *[f"{k}={v}" for k, v in env.items()]]
        return subprocess.run([*prefix, *map(str, argv)], cwd=str(cwd), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)

    def check(self, argv: Sequence[str], *, cwd: Path | str, timeout: float = 300,
              env: dict[str, str] | None = None) -> str:
        done = self.run(argv, cwd=cwd, timeout=timeout, env=env)
        assert done.returncode == 0, f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def rlrep(self, *args: str, cwd: Path | str, env: dict[str, str] | None = None) -> str:
        return self.check([str(self.venv / "bin" / "condor-rlrep"), *args], cwd=cwd, env=env)

    def workdir(self, name: str) -> Path:
        path = self.work / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        self.own(path)
        return path

    def submit_dag(self, dag: Path, *args: str) -> int:
        """``condor_submit_dag`` from the DAG's directory; the DAGMan job's cluster."""
        self.own(dag.parent)
        out = self.check(["condor_submit_dag", *args, dag.name], cwd=dag.parent)
        match = re.search(r"submitted to cluster (\d+)", out)
        assert match, out
        return int(match.group(1))

    def wait_dag(self, dag: Path, timeout: float = 300, *, after: int = 0) -> int:
        """DAGMan's exit status, from its ``.dagman.out`` (the ``after``-th exit on)."""
        out = Path(str(dag) + ".dagman.out")
        deadline = time.time() + timeout
        while time.time() < deadline:
            if out.exists():
                exits = _EXIT.findall(out.read_text(errors="replace"))
                if len(exits) > after:
                    self.wait_queue_empty(timeout=max(5.0, deadline - time.time()))
                    return int(exits[after])
            time.sleep(0.5)
        status = self.run(["condor_q", "-nobatch"], cwd=self.work).stdout
        raise AssertionError(f"{dag.name} did not finish in {timeout:.0f} s; condor_q:\n{status}\n"
                             + (out.read_text(errors='replace')[-3000:] if out.exists() else ""))

    def wait_queue_empty(self, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            done = self.run(["condor_q", "-af", "ClusterId"], cwd=self.work)
            if done.returncode == 0 and not done.stdout.strip():
                return
            time.sleep(0.5)

    def wait_for(self, predicate, timeout: float = 120, what: str = "condition", step: float = 0.25):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(step)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def start_pool(shared: Path | None = None) -> Pool:
    """Start a pool and install the checkout in it (PoolUnavailable: why not);
    with ``shared`` (a folder reachable by the pool user), the install there is
    made once and used by every pool given the same folder."""
    if not POOL_SCRIPT.exists():
        raise PoolUnavailable(f"{HTCONDOR} is absent")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(POOL_USER)
        except KeyError:
            pass  # pool start creates it
    base = Path(tempfile.mkdtemp(prefix="rlrep-pool-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    pool = Pool(base)
    try:
        pool.start()
        if shared is None:
            pool.install()
        else:
            shared_install(pool, shared)
    except BaseException:
        pool.stop()
        shutil.rmtree(base, ignore_errors=True)
        raise
    return pool


def shared_install(pool: Pool, shared: Path) -> None:
    """Point ``pool`` at the checkout installed in ``shared``, installing it
    first if no pool has (under a lock: pytest-xdist workers start their pools
    at the same time). A failed install is remembered, so that every worker
    skips with its reason instead of trying again."""
    failed = shared / "install.failed"
    with open(shared / "install.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if failed.exists():
            raise PoolUnavailable(failed.read_text())
        if (shared / "installed").exists():
            pool.venv = shared / "venv"
            return
        try:
            pool.install(into=shared)
        except Exception as err:
            failed.write_text(str(err) or repr(err))
            raise
        (shared / "installed").touch()


def dagman_out(dag: Path) -> str:
    return Path(str(dag) + ".dagman.out").read_text(errors="replace")


def hooks_log(dag: Path) -> list[str]:
    path = Path(str(dag) + ".rlrep") / "hooks.log"
    return path.read_text().splitlines() if path.exists() else []


def forced_nodes(dag: Path) -> list[str]:
    """Nodes PRE gave one forced replica (phi' <= 0: not asked of the agent,
    not in the store; issue 23 item 12): a loaded pool runs late."""
    found = [re.search(r" PRE (\S+) .*\(forced\)", line) for line in hooks_log(dag)]
    return [match.group(1) for match in found if match]


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path
