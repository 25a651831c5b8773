"""A throw-away PostgreSQL cluster for tests and benchmarks.

``initdb`` into a temporary directory and ``pg_ctl start`` it, listening on
127.0.0.1 (a free port, password logins only) and on a Unix socket in that
directory (trusted: only its owner can reach it). PostgreSQL refuses to run
as root, so a root caller runs the server as the unprivileged ``postgres``
user (Debian's packages create it); anyone else runs it as themselves.
:func:`start_cluster` raises :class:`ClusterUnavailable` with the reason when
any of that is impossible, so that tests can skip saying why.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

__all__ = ["ClusterUnavailable", "Cluster", "start_cluster", "find_bindir"]

BINDIRS = ("/usr/lib/postgresql/15/bin",)
"""Where Debian's postgresql-15 puts the server programs (the guide's image)."""
ROLE, PASSWORD = "rlrep", "s3cret-pass-word"
"""A password login for the TCP tests; the password is only ever a test's."""


class ClusterUnavailable(RuntimeError):
    """No PostgreSQL server can be started here; ``str()`` says why."""


def find_bindir() -> str:
    for candidate in (os.environ.get("RLREP_PG_BINDIR"), *BINDIRS):
        if candidate and os.access(os.path.join(candidate, "initdb"), os.X_OK):
            return candidate
    raise ClusterUnavailable(f"no PostgreSQL server programs (initdb) in {', '.join(BINDIRS)}")


@dataclass
class Cluster:
    bindir: str
    base: Path
    port: int
    run_as: str | None
    """OS user running the server (None: this process's user)."""
    options: tuple[str, ...] = ()
    _databases: set[str] = field(default_factory=set)

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base / "sock"

    @property
    def log(self) -> Path:
        return self.base / "server.log"

    def url(self, database: str = "postgres", *, user: str = "postgres") -> str:
        """A URL over the Unix socket (trusted: no password)."""
        return f"postgresql://{user}@/{database}?host={quote(str(self.socket_dir), safe='/')}&port={self.port}"

    def tcp_url(self, database: str, *, password: str | None = PASSWORD, user: str = ROLE) -> str:
        """A password login over 127.0.0.1 (``password=None``: none in the URL)."""
        secret = "" if password is None else ":" + quote(password, safe="")
        return f"postgresql://{user}{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str, *, owner: str = ROLE) -> str:
        """A fresh, empty database (dropped first if it exists); returns its socket URL."""
        self.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.sql(f'CREATE DATABASE "{name}" OWNER {owner}')
        self._databases.add(name)
        return self.url(name, user=owner)

    def sql(self, statement: str, database: str = "postgres") -> str:
        result = subprocess.run(
            [os.path.join(self.bindir, "psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h",
             str(self.socket_dir), "-p", str(self.port), "-U", "postgres", "-d", database, "-c", statement],
            capture_output=True, text=True, env=_clean_env(), timeout=60,
        )
        if result.returncode:
            raise RuntimeError(f"psql {statement!r}: {result.stderr.strip()}")
        return result.stdout

    def start(self) -> None:
        opts = [
            f"-c listen_addresses=127.0.0.1 -c port={self.port}",
            f"-c unix_socket_directories='{self.socket_dir}'",
            "-c max_connections=120 -c shared_buffers=64MB -c logging_collector=off",
            *self.options,
        ]
        self._ctl("start", "-w", "-t", "60", "-l", str(self.log), "-o", " ".join(opts))

    def stop(self, mode: str = "fast") -> None:
        self._ctl("stop", "-w", "-t", "60", "-m", mode)

    def restart(self) -> None:
        self.stop()
        self.start()

    def destroy(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self.stop("immediate")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def _ctl(self, *args: str) -> None:
        _run_as(self.run_as, [os.path.join(self.bindir, "pg_ctl"), "-D", str(self.data), *args], self.base)


def start_cluster(*, fsync: bool = True, options: tuple[str, ...] = ()) -> Cluster:
    """initdb and start a cluster; :class:`ClusterUnavailable` if that cannot be done.

    ``fsync=False`` (tests) keeps every commit safe from a killed client or
    server process, only not from an OS crash, which no test makes."""
    bindir = find_bindir()
    run_as = _server_user()
    base = Path(tempfile.mkdtemp(prefix="rlrep-pg-"))
    try:
        uid, gid = (pwd.getpwnam(run_as).pw_uid, pwd.getpwnam(run_as).pw_gid) if run_as else (-1, -1)
        (base / "sock").mkdir(mode=0o700)
        if run_as:
            for path in (base, base / "sock"):
                os.chown(path, uid, gid)
        os.chmod(base, 0o700)
        password_file = base / "pwfile"
        password_file.write_text("postgres-unused\n")
        if run_as:
            os.chown(password_file, uid, gid)
        _run_as(run_as, [os.path.join(bindir, "initdb"), "-D", str(base / "data"), "-U", "postgres", "-E", "UTF8",
                         "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={password_file}",
                         "--no-sync"], base)
        cluster = Cluster(bindir, base, _free_port(), run_as,
                          options=(*options, "" if fsync else "-c fsync=off"))
        cluster.start()
        cluster.sql(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
    except (OSError, subprocess.SubprocessError, RuntimeError, KeyError) as err:
        log = base / "server.log"
        detail = log.read_text(errors="replace")[-800:] if log.exists() else ""
        shutil.rmtree(base, ignore_errors=True)
        raise ClusterUnavailable(f"cannot start PostgreSQL: {err} {detail}".strip()) from err
    return cluster


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError as err:
        raise ClusterUnavailable("running as root and there is no unprivileged 'postgres' user to run the server") from err
    return "postgres"


def _run_as(user: str | None, argv: list[str], cwd: Path) -> None:
    kwargs = {} if user is None else {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}
    result = subprocess.run(argv, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=120, **kwargs)
    if result.returncode:
        raise RuntimeError(f"{os.path.basename(argv[0])} {argv[1:3]} failed: {(result.stderr or result.stdout).strip()}")


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = env["LANG"] = "C.UTF-8"
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_down(cluster: Cluster, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while (cluster.data / "postmaster.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
