"""A personal HTCondor pool for one replay: started from a release, stopped by its own pid.

:class:`ReplayPool` writes the configuration
(:func:`condor_rlrep.replay.poolconfig.pool_config`) into its folder, starts
``condor_master`` (as the current user, recording its pid), waits until the
schedd answers and all S slots are in the collector, and on :meth:`stop`
shuts the master down (``condor_off -fast``), then waits for that pid only —
a replay leaves no daemon behind and touches no other pool.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from condor_rlrep.errors import RlrepError
from condor_rlrep.replay.plan import ReplayPlan
from condor_rlrep.replay.poolconfig import pool_config

__all__ = ["ReplayPool", "PoolError", "find_release"]


class PoolError(RlrepError):
    """The replay's pool could not be started or used."""


def find_release(given: str | None = None) -> Path:
    """The HTCondor release folder (holding ``sbin/condor_master``): ``given``,
    else the one of ``condor_master`` on PATH."""
    if given:
        release = Path(given).resolve()
    else:
        master = shutil.which("condor_master")
        if not master:
            raise PoolError("no condor_master on PATH: give the HTCondor release folder (--condor DIR)")
        release = Path(master).resolve().parent.parent
    if not (release / "sbin" / "condor_master").exists():
        raise PoolError(f"{release}: no sbin/condor_master in this HTCondor release folder")
    return release


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ReplayPool:
    """One personal pool in ``folder`` for ``plan``, its clock's origin at ``origin`` (epoch)."""

    def __init__(self, folder: str | os.PathLike[str], release: Path, plan: ReplayPlan, origin: float,
                 negotiation_interval: float = 2.0):
        self.folder = Path(folder).resolve()
        self.release = release
        self.plan = plan
        self.origin = origin
        self.negotiation_interval = negotiation_interval
        self.config = self.folder / "condor_config"
        self.pidfile = self.folder / "master.pid"
        self.pid: int | None = None

    @property
    def env(self) -> dict[str, str]:
        """The environment under which HTCondor's tools (and DAGMan) see this pool."""
        env = dict(os.environ)
        env["CONDOR_CONFIG"] = str(self.config)
        env["PATH"] = f"{self.release / 'bin'}:{self.release / 'sbin'}:{env.get('PATH', '')}"
        return env

    def tool(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)

    def start(self, wait: float = 120) -> None:
        local = self.folder / "local"
        for sub in ("log", "spool", "execute", "lock", "run"):
            (local / sub).mkdir(parents=True, exist_ok=True)
        self.config.write_text(pool_config(self.plan, release=str(self.release), local_dir=str(local),
                                           port=_free_port(), origin=self.origin,
                                           negotiation_interval=self.negotiation_interval), encoding="utf-8")
        started = subprocess.run([str(self.release / "sbin" / "condor_master"), "-pidfile", str(self.pidfile)],
                                 env=self.env, capture_output=True, text=True, timeout=60,
                                 stdin=subprocess.DEVNULL, check=False, start_new_session=True)
        if started.returncode != 0:
            raise PoolError(f"condor_master failed: {(started.stderr or started.stdout).strip()[-300:]}")
        deadline = time.time() + wait
        while time.time() < deadline:
            if self.pid is None and self.pidfile.exists():
                text = self.pidfile.read_text().strip()
                self.pid = int(text) if text.isdigit() else None
            slots = self.tool("condor_status", "-af", "Name", timeout=20)
            queue = self.tool("condor_q", "-totals", timeout=20)
            if (slots.returncode == 0 and len(slots.stdout.split()) >= self.plan.slots
                    and queue.returncode == 0 and self.pid is not None):
                return
            time.sleep(1)
        self.stop()
        raise PoolError(f"the replay pool was not up after {wait:.0f} s; its logs are in {local / 'log'}")

    def stop(self, wait: float = 60) -> None:
        """Shut the master down and wait for it (by pid); SIGKILL only as a last resort."""
        if self.pid is None and self.pidfile.exists():
            text = self.pidfile.read_text().strip()
            self.pid = int(text) if text.isdigit() else None
        if not self.config.exists():
            return
        try:
            self.tool("condor_off", "-master", "-fast", timeout=30)
        except subprocess.TimeoutExpired:
            pass
        if self.pid is None:
            return
        deadline = time.time() + wait
        while time.time() < deadline and _alive(self.pid):
            time.sleep(0.5)
        if _alive(self.pid):
            try:
                os.kill(self.pid, signal.SIGQUIT)  # the master's own fast shutdown of its children
            except ProcessLookupError:
                pass
            end = time.time() + 20
            while time.time() < end and _alive(self.pid):
                time.sleep(0.5)
        self.pid = None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours counts as gone
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return False
