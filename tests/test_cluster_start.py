"""A POST without PRE's offset (fixed:K) reads the node log from its
cluster's first event (:func:`cluster_start`), not from the top: the bytes
are searched, and reading from there rebuilds the same cluster as reading
the whole log."""

from __future__ import annotations

from pathlib import Path

import pytest

from _hookutil import call_script
from condor_rlrep.condor.eventlog import read_events, rebuild_cluster
from condor_rlrep.condor.logseek import cluster_start
from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.instrument import InstrumentOptions, instrument
from test_fixed_without_pre import figure1

REAL = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "eventlogs" / "real-dagman"
LOGS = sorted(REAL.glob("**/*.nodes.log")) if REAL.is_dir() else []


def _log(path: Path, clusters: list[int]) -> None:
    writer = EventLogWriter(str(path))
    for at, cluster in enumerate(clusters):
        for proc in (0, 1):
            writer.submit(cluster, proc, 1000 + at, f"N{cluster}")
        writer.execute(cluster, 0, 1001 + at, "h")
        writer.terminate(cluster, 0, 1009 + at, exit_code=0)
        writer.abort(cluster, 1, 1010 + at)


def test_the_first_submit_of_the_cluster_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "n.log"
    _log(path, [1, 10, 16, 160, 1000, 100000])
    text = path.read_bytes()
    assert cluster_start(str(path), 1) == 0  # the very first event
    for cluster, header in ((10, b"000 (010.000.000)"), (16, b"000 (016.000.000)"), (160, b"000 (160.000.000)"),
                            (1000, b"000 (1000.000.000)"), (100000, b"000 (100000.000.000)")):
        at = cluster_start(str(path), cluster)
        assert at > 0 and text[at - 1:at] == b"\n" and text[at:at + len(header)] == header
        assert text.find(b"(%03d." % cluster) == at + 4  # the first of its events, proc 0's submit
    assert cluster_start(str(path), 17) == 0  # absent: the whole log
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert cluster_start(str(empty), 16) == 0
    assert cluster_start(str(tmp_path / "missing.log"), 16) == 0


@pytest.mark.skipif(not LOGS, reason=f"real DAGMan logs absent: {REAL}")
@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(REAL)))
def test_reading_from_the_cluster_rebuilds_what_the_whole_log_does(path: Path) -> None:
    whole = read_events(str(path))
    clusters = sorted({event.cluster for event in whole if event.cluster > 0})
    assert clusters
    for cluster in clusters:
        offset = cluster_start(str(path), cluster)
        assert repr(rebuild_cluster(read_events(str(path), offset=offset), cluster)) == \
            repr(rebuild_cluster(whole, cluster))


def test_a_fixed_post_late_in_a_long_log_judges_its_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real POST of a fixed:2 node whose cluster follows 400 others'
    reads from its cluster's first event, and judges as from the whole log."""
    from condor_rlrep.condor import eventlog

    offsets: list[int] = []
    real = eventlog.read_events
    monkeypatch.setattr(eventlog, "read_events", lambda path, offset=0: offsets.append(offset) or real(path, offset=offset))
    out = tmp_path / "run" / "f.dag"
    instrument(figure1(tmp_path), out, InstrumentOptions(policy="fixed:2"))
    log = Path(str(out) + ".nodes.log")
    _log(log, list(range(1, 401)))
    writer = EventLogWriter(str(log))
    for proc in (0, 1):
        writer.submit(500, proc, 5000, "A")
        writer.execute(500, proc, 5001, f"h{proc}")
    writer.terminate(500, 1, 5060, exit_code=0)  # the second replica wins
    writer.abort(500, 0, 5061)
    macros = {"$JOB": "A", "$RETRY": "0", "$JOBID": "500.0", "$CLUSTERID": "500", "$RETURN": "-1002",
              "$SUCCESS": "False", "$DAGID": "4242", "$MAX_RETRIES": "0"}
    assert call_script(out, "A", "POST", macros).returncode == 0  # the log's answer, not $RETURN's
    assert offsets == [cluster_start(str(log), 500)] and offsets[0] > 0.9 * log.stat().st_size
    writer.submit(501, 0, 6000, "B")
    writer.submit(501, 1, 6000, "B")
    writer.terminate(501, 0, 6050, exit_code=3)
    writer.terminate(501, 1, 6051, exit_code=4)
    macros.update({"$JOB": "B", "$JOBID": "501.0", "$CLUSTERID": "501", "$RETURN": "3"})
    assert call_script(out, "B", "POST", macros).returncode == 3  # the first failing replica's code
    assert offsets[1] == cluster_start(str(log), 501) > offsets[0]
