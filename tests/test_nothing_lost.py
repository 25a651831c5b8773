"""Nothing lost, nothing hung, nothing wrong recorded (issue 24 items 6, 7, 9, 10):
a FIFO in the spool, a spooled outcome with an empty identity, a node log
replaced between PRE and POST, ``instrument`` into a full filesystem."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
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
