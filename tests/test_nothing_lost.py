"""Nothing lost, nothing hung, nothing wrong recorded (issue 24 items 6, 7, 9, 10):
a FIFO in the spool, a spooled outcome with an empty identity, a node log
replaced between PRE and POST, ``instrument`` into a full filesystem."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest

from _hookutil import post_macros, run_script
from test_hooks_faults import T0, Case


def _decisions(store: Path) -> list[tuple]:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT id, reward FROM decisions ORDER BY id").fetchall()


def test_a_fifo_in_the_spool_hangs_no_post(tmp_path: Path) -> None:
    case = Case(tmp_path)
    assert case.pre() == 0
    case.job(3)
    fifo = case.context / "spool" / "17.json"
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    try:
        done = run_script(case.dag, "A", "POST", post_macros(7, 1, 3))  # 120 s timeout
    except subprocess.TimeoutExpired:
        pytest.fail("POST hung on a FIFO in the spool")
    assert done.returncode == 3, done.stderr
    assert "spool/17.json not flushed" in case.log() and "FIFO" in case.log()
    assert [reward for _id, reward in _decisions(case.store)][0] is not None  # its own outcome recorded
    assert fifo.exists()  # left for a human, like any entry it cannot read


def test_a_spooled_outcome_without_the_full_identity_closes_no_decision(tmp_path: Path) -> None:
    from condor_rlrep.hooks.spool import flush_spool
    from condor_rlrep.store.sqlite import SqliteStore

    case = Case(tmp_path)
    assert case.pre() == 0  # decision 1, pending until A's POST
    (decision,) = _decisions(case.store)
    assert decision[1] is None
    spool = case.context / "spool"
    spool.mkdir(exist_ok=True)
    for name, identity in (("a", {}), ("b", {"node": "A"})):
        (spool / f"{decision[0]}{name}.json").write_text(json.dumps({
            "decision_id": decision[0], "store": str(case.store), "identity": identity,
            "outcome": {"reward": -5.0}, "spooled_at": T0}))
    with SqliteStore(case.store) as store:
        done, kept = flush_spool(str(case.context), store, str(case.store))
    assert done == 0 and len(kept) == 2 and all("identity lacks" in why for why in kept), kept
    assert _decisions(case.store) == [decision]  # still pending


def test_a_node_log_replaced_between_pre_and_post_is_not_read_and_fails_open(tmp_path: Path) -> None:
    case = Case(tmp_path)
    # another node's cluster first: PRE's offset in the log is past it
    case.writer.submit(5, 0, T0 - 100, "B")
    case.writer.execute(5, 0, T0 - 90, "h9")
    case.writer.terminate(5, 0, T0 - 80, exit_code=0)
    assert case.pre() == 0
    case.job(0)
    # replaced by a shorter file holding an A cluster of another story (removed, not run)
    replacement = case.node_log.with_name("other.log")
    from condor_rlrep.condor.eventlog_writer import EventLogWriter

    other = EventLogWriter(replacement)
    other.submit(7, 0, T0 + 1000, "A")
    os.replace(replacement, case.node_log)
    assert case.post(0) == 0  # DAGMan's $RETURN stands
    line = case.log().splitlines()[-1]
    assert "FAIL-OPEN" in line and "node log" in line and "PRE" in line, line
    assert [reward for _id, reward in _decisions(case.store)] == [None]  # nothing wrong recorded


def test_a_log_rewritten_in_place_with_another_first_event_is_noticed(tmp_path: Path) -> None:
    case = Case(tmp_path)
    case.writer.submit(5, 0, T0 - 100, "B")
    assert case.pre() == 0
    case.job(0)
    data = case.node_log.read_bytes()
    case.node_log.write_bytes(data.replace(b"000 (005.", b"000 (006.", 1))  # same inode, same size
    assert case.post(0) == 0
    assert "begins with another event" in case.log().splitlines()[-1]


def test_instrument_into_a_full_filesystem_names_the_file_and_leaves_no_context(tmp_path: Path) -> None:
    import _faultfs

    from condor_rlrep.errors import InputError
    from condor_rlrep.instrument import InstrumentOptions, instrument

    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (user / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="60"\n')
    out = tmp_path / "run" / "w.rlrep.dag"
    context = Path(str(out) + ".rlrep")
    out.parent.mkdir()
    # the disk fills once the context folder is made: every write under it fails
    undo = _faultfs.install(out.parent / "w.rlrep.dag.rlrep" / "nodes", errno.ENOSPC)
    try:
        with pytest.raises(InputError) as caught:
            instrument(user / "w.dag", out, InstrumentOptions(store=str(tmp_path / "agent.sqlite")))
    finally:
        undo()
    message = str(caught.value)
    assert "No space left on device" in message and str(context / "nodes") in message, message
    assert "nothing was left behind" in message
    assert not context.exists() and not out.exists()


# -- item 16: the store broker under a crowd and under hostile clients ----------------------------------


def test_the_broker_survives_hostile_and_vanishing_clients_without_a_traceback(tmp_path: Path, capfd) -> None:
    import socket
    import threading

    from condor_rlrep.agent import AgentConfig
    from condor_rlrep.rundir.layout import broker_socket
    from condor_rlrep.store.broker import StoreBroker, connect
    from condor_rlrep.store.location import create_store

    spec = str(tmp_path / "agent.sqlite")
    create_store(spec, AgentConfig(max_replicas=3)).close()
    sock = broker_socket(str(tmp_path))
    assert sock is not None
    with StoreBroker(spec, sock) as broker:
        raw = socket.socket(socket.AF_UNIX)
        raw.connect(sock)
        with raw, raw.makefile("rwb") as conn:
            conn.write(b"[" * 400_000 + b"]" * 400_000 + b"\n")
            conn.flush()
            answer = json.loads(conn.readline())
            assert answer["kind"] == "request" and "bad request" in answer["error"]
        for _ in range(20):  # ask, then leave before the answer
            gone = socket.socket(socket.AF_UNIX)
            gone.connect(sock)
            gone.sendall(b'{"op": "config"}\n' * 50)
            gone.close()
        with connect(sock, spec) as client:
            assert client.config.max_replicas == 3
        assert threading.active_count() >= 1 and broker.requests >= 1
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "BrokenPipe" not in out + err, err


@pytest.mark.postgres
def test_400_real_hooks_at_once_through_the_broker_lose_nothing(tmp_path: Path, pg_url: str,
                                                                 request: pytest.FixtureRequest) -> None:
    """400 real PRE executables started together against one run's broker:
    those the backlog holds are served by it, any refused goes direct; every
    PRE exits 0 and the store holds exactly one decision per node."""
    from _hookutil import pre_macros, script_argv, substitute

    from condor_rlrep.instrument import InstrumentOptions, instrument
    from condor_rlrep.rundir.layout import broker_socket
    from condor_rlrep.store.broker import StoreBroker
    from condor_rlrep.store.location import open_store

    user = tmp_path / "u"
    user.mkdir()
    (user / "a.sub").write_text("executable = /bin/true\nqueue\n")
    count = 400
    (user / "w.dag").write_text("".join(f"JOB N{i} a.sub\n" for i in range(count))
                                + 'VARS ALL_NODES rlrep_estimate="60"\n')
    # The run in a short folder: a Unix socket path holds at most 107 bytes,
    # and a longer run folder (pytest-xdist's temporary paths are) gets no
    # broker at all — the hooks then open the store themselves, by design.
    short = Path(tempfile.mkdtemp(prefix="rl-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(short, ignore_errors=True))
    out = short / "w.rlrep.dag"
    result = instrument(user / "w.dag", out, InstrumentOptions(store=pg_url, policy="agent", max_replicas=3))
    sock = broker_socket(result.context)
    assert sock is not None
    argvs = [script_argv(out, f"N{i}", "PRE") for i in range(count)]
    with StoreBroker(pg_url, sock) as broker:
        procs = [subprocess.Popen(substitute(argv, {"$JOB": f"N{i}", **pre_macros()}), cwd=cwd,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for i, (argv, cwd) in enumerate(argvs)]
        codes = [p.wait(timeout=900) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        served = broker.requests
    assert codes == [0] * count
    log = (Path(result.context) / "hooks.log").read_text()
    assert "FAIL-OPEN" not in log, [line for line in log.splitlines() if "FAIL-OPEN" in line][:3]
    with open_store(pg_url) as store:
        nodes = sorted(d.context["node"] for d in store.decisions())
    assert nodes == sorted(f"N{i}" for i in range(count))  # none lost, none twice
    assert served > 0
