"""The fault matrix of issue 11: every injected fault leaves the node with the
exit code the un-instrumented node would have had, and the hook log (or
stderr, when the hook log itself cannot be written) says why.

Baseline "without the plugin": the node's one job exits 0 or 3 and DAGMan,
with no POST script, concludes that. Scenarios: one replica (the agent chose
1) that succeeds or fails, and three replicas (a trained agent chose 3)
where proc 0 wins and DAGMan, under ``TOLERANCE 99% WAIT``, passes POST
``$RETURN -1002`` with ``$SUCCESS True`` (the losers were removed), or where
all three fail. The job's events are written for the procs the node's submit
file really queues (a PRE that failed open runs the user's single job).

Hooks run in this process with DAGMan's exact argv and cwd (hundreds of
cases); ``test_matrix_with_the_real_executables`` runs one case of each fault
family through the installed ``rlrep-pre``/``rlrep-post``.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import _faultfs
from _hookutil import script_argv, substitute
from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.rundir.layout import node_state_path, node_submit_path
from condor_rlrep.instrument import InstrumentOptions, instrument

T0 = 1_780_000_000.0
USER_SUB = "# user's job\nexecutable = /bin/true\narguments = $(rlrep_estimate)\nqueue\n"
CLUSTER = 7


def trained(path: Path, prefer: int) -> Path:
    """A store whose agent picks ``prefer`` of 1..3 replicas in every state."""
    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.agent.config import AgentConfig
    from condor_rlrep.store.sqlite import SqliteStore

    agent = Agent(AgentConfig(max_replicas=3, schedule="fixed", epsilon_low=0.0), rng=0)
    for state in range(agent.n_states):
        agent.learn(state, prefer, 1.0)
    SqliteStore.save_agent(str(path), agent)
    return path


SCENARIOS = {
    # name: (replicas the agent picks, proc 0's exit code, baseline exit code)
    "one-ok": (1, 0, 0),
    "one-fails": (1, 3, 3),
    "replicas-win": (3, 0, 0),
    "replicas-fail": (3, 3, 3),
}


class Node:
    """One instrumented node A (child B), its store and node log."""

    def __init__(self, tmp: Path, scenario: str, *, real: bool = False):
        self.tmp = tmp
        self.prefer, self.first_code, self.baseline = SCENARIOS[scenario]
        self.real = real
        user = tmp / "user"
        user.mkdir()
        (user / "a.sub").write_text(USER_SUB)
        (user / "w.dag").write_text('JOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\n'
                                    'VARS A rlrep_estimate="60"\nVARS B rlrep_estimate="60"\n')
        self.user = user
        self.store = trained(tmp / "agent.sqlite", self.prefer)
        self.dag = tmp / "run" / "w.rlrep.dag"
        result = instrument(user / "w.dag", self.dag, InstrumentOptions(store=str(self.store), store_timeout=0.3,
                                                                       dagman_version=(25, 14, 0)))
        self.context = Path(result.context)
        self.node_log = Path(str(self.dag) + ".nodes.log")
        self.submit = Path(node_submit_path(str(self.context), "A"))
        self.state = Path(node_state_path(str(self.context), "A"))
        self.stderr = ""
        self.capture: pytest.CaptureFixture[str] | None = None
        self.env: dict[str, str] = {}
        # read now: DAGMan has the DAG in memory, the file may change or vanish
        self.scripts = {kind: script_argv(self.dag, "A", kind) for kind in ("PRE", "POST")}

    # -- the hooks, as DAGMan runs them
    def hook(self, kind: str, macros: dict[str, object]) -> int:
        argv, cwd = self.scripts[kind]
        full = substitute(argv, {"$JOB": "A", **macros})
        if self.real:
            done = subprocess.run(full, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  env={**os.environ, **self.env}, timeout=120, check=False)
            self.stderr += done.stderr
            return done.returncode
        from condor_rlrep.hooks.post import run_post
        from condor_rlrep.hooks.pre import run_pre

        old = os.getcwd()
        os.chdir(cwd)
        try:
            return (run_pre if kind == "PRE" else run_post)(full[1:])
        finally:
            os.chdir(old)
            if self.capture is not None:
                self.stderr += self.capture.readouterr().err

    def pre(self) -> int:
        return self.hook("PRE", {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": 100})

    def procs(self) -> int:
        """Procs DAGMan's submit queues from the node's submit file (0: the submit fails)."""
        try:
            text = self.submit.read_text()
        except OSError:
            return 0
        match = re.search(r"^\s*queue\s*(\d*)\s*$", text, re.MULTILINE | re.IGNORECASE)
        return int(match.group(1) or 1) if match else 0

    def job(self) -> tuple[int, str]:
        """The cluster's events for the procs really queued; DAGMan's ($RETURN, $SUCCESS)."""
        procs = self.procs()
        assert procs >= 1, "the node's submit file must exist and queue the user's job"
        writer = EventLogWriter(self.node_log)
        for proc in range(procs):
            writer.submit(CLUSTER, proc, T0, "A")
            writer.execute(CLUSTER, proc, T0 + 5, f"h{proc}")
        writer.terminate(CLUSTER, 0, T0 + 60, exit_code=self.first_code)
        if self.first_code == 0:
            for proc in range(1, procs):  # the reaper removes the losers
                writer.remove(CLUSTER, proc, T0 + 61)
            return (0 if procs == 1 else -1002), "True"  # TOLERANCE 99%: a - 1 failures tolerated
        for proc in range(1, procs):
            writer.terminate(CLUSTER, proc, T0 + 62, exit_code=self.first_code)
        return self.first_code, "False"

    def post(self, ret: int, success: str) -> int:
        macros = {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": 100, "$JOBID": f"{CLUSTER}.0",
                  "$CLUSTERID": CLUSTER, "$RETURN": ret, "$SUCCESS": success}
        return self.hook("POST", macros)

    def log(self) -> str:
        path = self.context / "hooks.log"
        text = path.read_text() if path.exists() else ""
        return text + self.stderr


# -- the faults: (before PRE, around PRE, before POST, around POST, what the log must say)

Step = Callable[[Node], None]


@contextmanager
def nothing(node: Node) -> Iterator[None]:
    yield


@contextmanager
def store_locked(node: Node) -> Iterator[None]:
    conn = sqlite3.connect(node.store, timeout=0.1, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        conn.rollback()
        conn.close()


def filesystem(code: int, where: str) -> Callable[[Node], object]:
    @contextmanager
    def fault(node: Node) -> Iterator[None]:
        root = node.context if where == "run" else node.tmp
        if node.real:
            node.env = _faultfs.subprocess_env(node.tmp, root, code)
            try:
                yield
            finally:
                node.env = {}
            return
        undo = _faultfs.install(root, code)
        try:
            yield
        finally:
            undo()
    return fault


def write(relative: str, data: str | bytes) -> Step:
    def step(node: Node) -> None:
        path = node.context / relative if not relative.startswith("/") else Path(relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)
    return step


def edit_state(**changes: object) -> Step:
    def step(node: Node) -> None:
        state = json.loads(node.state.read_text())
        state.update(changes)
        node.state.write_text(json.dumps(state))
    return step


def corrupt_store(node: Node) -> None:
    node.store.write_bytes(b"this is not an sqlite database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(str(node.store) + suffix).unlink(missing_ok=True)


def remove_store(node: Node) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(node.store) + suffix).unlink(missing_ok=True)


def store_is_a_directory(node: Node) -> None:
    remove_store(node)
    node.store.mkdir()


def replace_store(node: Node) -> None:
    """Another store at the same path: its decision ids start again at 1."""
    remove_store(node)
    trained(node.store, 1)
    from condor_rlrep.store.sqlite import SqliteStore

    with SqliteStore(str(node.store)) as other:
        other.decide(phi_prime=0.5, timestamp=T0, now=T0, context={"dag": "other", "node": "Z", "run": "r", "retry": 0})


def node_log_gone(node: Node) -> None:
    node.node_log.unlink(missing_ok=True)


def node_log_directory(node: Node) -> None:
    node.node_log.unlink(missing_ok=True)
    node.node_log.mkdir()


def node_log_garbage(node: Node) -> None:
    node.node_log.write_bytes(b"\x00\xff garbage, not an event log\n" * 50)


def node_log_truncated(node: Node) -> None:
    text = node.node_log.read_text()
    node.node_log.write_text(text[: text.rfind("005 (")] + "005 (007.000.000) 2026-01-01 00:00:00 Job terminated.\n\t(1) Norm")


def node_log_replaced_smaller(node: Node) -> None:
    """Rotated: only a stranger's events, shorter than PRE's offset."""
    node.node_log.write_text("")
    writer = EventLogWriter(node.node_log)
    writer.submit(99, 0, T0, "SOMEONE")


def dag_edited(node: Node) -> None:
    with open(node.dag, "a") as handle:
        handle.write('VARS B other="1"\n')


def dag_removed(node: Node) -> None:
    node.dag.unlink()


FAULTS: dict[str, tuple[Step | None, Callable[[Node], object], Step | None, Callable[[Node], object], str]] = {
    "none": (None, nothing, None, nothing, ""),
    # the store
    "store missing": (remove_store, nothing, None, nothing, "FAIL-OPEN"),
    "store corrupt": (corrupt_store, nothing, None, nothing, "FAIL-OPEN"),
    "store a directory": (store_is_a_directory, nothing, None, nothing, "FAIL-OPEN"),
    "store locked at PRE": (None, store_locked, None, nothing, "locked"),
    "store locked at POST": (None, nothing, None, store_locked, "spooled"),
    "store corrupt at POST": (None, nothing, corrupt_store, nothing, "spooled"),
    "store replaced at POST": (None, nothing, replace_store, nothing, "NOT recorded"),
    # the node log
    "node log missing": (None, nothing, node_log_gone, nothing, "node log"),
    "node log a directory": (None, nothing, node_log_directory, nothing, "node log"),
    "node log garbage": (None, nothing, node_log_garbage, nothing, "FAIL-OPEN"),
    "node log truncated": (None, nothing, node_log_truncated, nothing, "truncated"),
    "node log replaced": (None, nothing, node_log_replaced_smaller, nothing, "FAIL-OPEN"),
    # the run directory: full, read-only (at PRE, at POST), the whole tree full
    "run dir full at PRE": (None, filesystem(errno.ENOSPC, "run"), None, nothing, "No space left"),
    "run dir read-only at PRE": (None, filesystem(errno.EROFS, "run"), None, nothing, "Read-only"),
    "run dir full at POST": (None, nothing, None, filesystem(errno.ENOSPC, "run"), "No space left"),
    "run dir read-only at POST": (None, nothing, None, filesystem(errno.EROFS, "run"), "Read-only"),
    "disk full throughout": (None, filesystem(errno.ENOSPC, "all"), None, filesystem(errno.ENOSPC, "all"),
                             "No space left"),
    # state files
    "settings corrupt": (write("hooks.json", "{ not json"), nothing, None, nothing, "FAIL-OPEN"),
    "settings wrong-typed": (write("hooks.json", "[1, 2]"), nothing, None, nothing, "FAIL-OPEN"),
    "settings corrupt at POST": (None, nothing, write("hooks.json", "{ not json"), nothing, "FAIL-OPEN"),
    "run.json wrong-typed": (write("run.json", '{"start": "soon", "dagids": "100"}'), nothing, None, nothing, ""),
    "vars wrong-typed": (write("nodes/A.vars.json", '["x"]'), nothing, None, nothing, ""),
    "plan cache corrupt": (None, nothing, None, nothing, ""),  # replaced below
    "state missing at POST": (None, nothing, lambda n: n.state.unlink(), nothing, "no PRE state"),
    "state corrupt at POST": (None, nothing, lambda n: n.state.write_text("{ nope"), nothing, "PRE state unreadable"),
    "state a list": (None, nothing, lambda n: n.state.write_text("[]"), nothing, "PRE state unreadable"),
    "state replicas a string": (None, nothing, edit_state(replicas="3"), nothing, "PRE state unreadable"),
    "state replicas a list": (None, nothing, edit_state(replicas=[3]), nothing, "PRE state unreadable"),
    "state offset negative": (None, nothing, edit_state(log_offset=-5), nothing, "PRE state unreadable"),
    "state files not a list": (None, nothing, edit_state(files="/etc/passwd"), nothing, "PRE state unreadable"),
    "state of another attempt": (None, nothing, edit_state(retry=4), nothing, "attempt 4"),
    # the DAG changed between PRE and POST
    "DAG edited": (None, nothing, dag_edited, nothing, ""),
    "DAG removed": (None, nothing, dag_removed, nothing, ""),
}


def _corrupt_plan(node: Node) -> None:
    for meta in node.context.glob("cache/plan-*/nodes.marshal"):
        meta.write_bytes(b"\x00")


FAULTS["plan cache corrupt"] = (_corrupt_plan, nothing, None, nothing, "")


def run_case(node: Node, fault: str) -> int:
    before_pre, around_pre, before_post, around_post, why = FAULTS[fault]
    if before_pre:
        before_pre(node)
    with around_pre(node):  # type: ignore[attr-defined]
        assert node.pre() == 0  # a PRE never fails a node (no user PRE here)
    ret, success = node.job()
    if before_post:
        before_post(node)
    with around_post(node):  # type: ignore[attr-defined]
        code = node.post(ret, success)
    assert code == node.baseline, node.log()
    log = node.log()
    assert " PRE A " in log and " POST A " in log, log  # each hook left its line, in hooks.log or on stderr
    if why:
        assert why in log, log
    return code


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_matrix(tmp_path: Path, capfd: pytest.CaptureFixture[str], fault: str, scenario: str) -> None:
    node = Node(tmp_path, scenario)
    node.capture = capfd
    run_case(node, fault)
    if fault.startswith(("run dir", "disk full")) and "at POST" not in fault and "throughout" not in fault:
        return
    if fault == "store replaced at POST":  # the new store's decision 1 is another node's: left alone
        from condor_rlrep.store.sqlite import SqliteStore

        with SqliteStore(str(node.store)) as store:
            assert store.decision(1).pending and store.decision(1).context["node"] == "Z"
    # bookkeeping survives faults too: no scratch file of ours is left in the run directory
    leftovers = [p.name for p in node.context.rglob("*") if p.name.startswith(".") or ".tmp" in p.name]
    assert not leftovers


@pytest.mark.parametrize("fault", ["none", "store locked at POST", "node log missing", "run dir full at PRE",
                                   "run dir read-only at POST", "disk full throughout", "state replicas a string",
                                   "settings corrupt", "DAG edited"])
def test_matrix_with_the_real_executables(tmp_path: Path, fault: str) -> None:
    node = Node(tmp_path, "replicas-win", real=True)
    run_case(node, fault)


def test_hooks_log_unwritable_goes_to_stderr(tmp_path: Path) -> None:
    node = Node(tmp_path, "replicas-win", real=True)
    with filesystem(errno.EROFS, "run")(node):
        assert node.pre() == 0
    assert "cannot write hook log" in node.stderr and "PRE A" in node.stderr


def test_spooled_outcome_never_closes_another_stores_decision(tmp_path: Path) -> None:
    node = Node(tmp_path, "replicas-win")
    assert node.pre() == 0
    ret, success = node.job()
    with store_locked(node):
        assert node.post(ret, success) == 0
    assert list((node.context / "spool").glob("*.json"))
    replace_store(node)  # ids restart: decision 1 of the new store is another node's
    # B's POST (or the reaper) opens the new store and flushes: the outcome stays spooled
    from condor_rlrep.store.sqlite import SqliteStore
    from condor_rlrep.hooks.spool import flush_spool

    with SqliteStore(str(node.store)) as store:
        flushed, kept = flush_spool(str(node.context), store, str(node.store))
        assert flushed == 0 and kept and "another node" in kept[0]
        assert store.decision(1).pending
    with SqliteStore(str(node.store)) as store:  # a store named differently: not even looked into
        flushed, kept = flush_spool(str(node.context), store, str(tmp_path / "elsewhere.sqlite"))
        assert flushed == 0 and "is for store" in kept[0]


def test_real_tmpfs_full(tmp_path: Path) -> None:
    """A real full filesystem under the run directory (root only: mount)."""
    run = tmp_path / "run"
    run.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(run)],
                                            capture_output=True, check=False).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        node = Node(tmp_path, "replicas-win", real=True)
        filler = node.context / "filler"

        def fill() -> None:
            with open(filler, "ab", buffering=0) as handle:
                try:
                    while True:
                        handle.write(b"\0" * 4096)
                except OSError:
                    pass

        fill()
        assert node.pre() == 0
        filler.unlink()  # HTCondor writes the node's events; then the disk is full again
        ret, success = node.job()
        fill()
        assert node.post(ret, success) == node.baseline
        assert node.procs() == 1 and "No space left" in node.log()
    finally:
        subprocess.run(["umount", "-l", str(run)], check=False)
