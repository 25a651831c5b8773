"""Loaders for HTCondor history (-json, -long), SWF and FTA event traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.loaders.assemble import load_trace
from condor_rlrep.sim.loaders.condor import parse_condor_json
from condor_rlrep.sim.loaders.fta import parse_fta
from condor_rlrep.sim.loaders.swf import parse_swf
from condor_rlrep.sim.trace_io import read_trace, write_trace

DATA = Path(__file__).resolve().parent / "data" / "traces"
JAN1 = 1262304000  # 2010-01-01T00:00:00Z


@pytest.mark.parametrize(
    ("fmt", "name"),
    [("condor-json", "condor_history.json"), ("condor-json", "condor_history.jsonl"), ("condor-long", "condor_history.long")],
)
def test_condor_history(fmt: str, name: str) -> None:
    trace = load_trace(fmt, [DATA / name])
    assert trace.start.isoformat() == "2010-01-01T00:00:00+00:00"
    assert trace.job_names == ["101.0", "101.1", "102.0"]
    # 101.0: LastRemoteWallClockTime; 101.1: CompletionDate - JobCurrentStartDate
    # (evicted once, so not its RemoteWallClockTime 2940); 102.0 removed: RemoteWallClockTime.
    assert trace.job_duration.tolist() == [1940, 2000, 500]
    assert trace.job_submit.tolist() == [1262340000 - JAN1, 1262340000 - JAN1, 1262390400 - JAN1]
    assert trace.job_owner == ["alice", "alice", "bob"]
    assert trace.machine_names == ["pc-a-001.ncl.ac.uk", "pc-b-007.ncl.ac.uk"]
    assert trace.login_count == 0
    assert trace.length == 25 * 3600  # last job ends 86400 + 500 s: rounded up to whole hours
    if name != "condor_history.jsonl":
        assert "1 records without" in trace.source  # 103.0 has no QDate


def test_condor_history_with_machines_file() -> None:
    trace = load_trace("condor-long", [DATA / "condor_history.long"], machines=DATA / "machines.csv")
    assert trace.machine_names == ["pc-a-001.ncl.ac.uk", "pc-b-007.ncl.ac.uk", "pc-c-001.ncl.ac.uk"]
    assert trace.active_watts.tolist() == [100, 80, 130] and trace.idle_watts.tolist() == [63.5, 47, 75]
    assert trace.machine_extra == {"type": ["standard", "efficient", "older"]}


def test_swf() -> None:
    trace = load_trace("swf", [DATA / "sample.swf"])
    assert trace.start.isoformat() == "2010-01-01T00:00:00+00:00"
    assert trace.start.tzinfo.key == "Europe/London"  # TimeZoneString
    assert trace.job_names == ["1", "2", "3", "5"]  # job 4 has run time -1
    assert trace.job_submit.tolist() == [0, 60, 3600, 86000]
    assert trace.job_duration.tolist() == [600, 1920, 30, 120]
    assert trace.job_owner == ["u3", "u3", "u7", ""]
    assert trace.machine_names == ["node0001", "node0002", "node0003", "node0004"]  # MaxNodes: 4


def test_fta_down_periods_become_logins() -> None:
    trace = load_trace("fta", [DATA / "event_trace.tab"])
    assert trace.machine_names == ["655", "656", "701"]
    assert trace.machine_extra == {"node_name": ["10.000", "10.100", "10.100"]}
    assert trace.machine_rooms == ["platform-3"] * 3
    names = [trace.machine_names[i] for i in trace.login_machine]
    # Node 701's two overlapping down periods (16000-19600, 19000-21000) merge.
    assert list(zip(names, trace.login_start.tolist(), trace.login_end.tolist())) == [
        ("655", 0, 3600),
        ("701", 16000, 21000),
        ("655", 46800, 48600),
    ]
    assert trace.job_count == 0
    assert trace.length == 86400  # up periods run to the end of the day


def test_fta_csv_with_component_type() -> None:
    trace = load_trace("fta", [DATA / "event_trace.csv"])
    assert trace.machine_extra == {"node_name": ["host-a", "host-b"]}
    assert trace.login_start.tolist() == [0, 6000] and trace.login_end.tolist() == [1000, 7000]


def test_loaded_traces_round_trip(tmp_path: Path) -> None:
    for fmt, name in (("fta", "event_trace.tab"), ("swf", "sample.swf"), ("condor-json", "condor_history.json")):
        trace = load_trace(fmt, [DATA / name])
        write_trace(trace, tmp_path / name)
        back = read_trace(tmp_path / name)
        assert back.job_names == trace.job_names and back.machine_names == trace.machine_names
        np.testing.assert_array_equal(back.login_start, trace.login_start)


def test_several_files_are_combined(tmp_path: Path) -> None:
    second = tmp_path / "more.swf"
    second.write_text("; UnixStartTime: 1262390400\n; MaxNodes: 4\n 9 100 0 50 1 -1 -1 1 60 -1 1 4 1 1 1 -1 -1 -1\n")
    trace = load_trace("swf", [DATA / "sample.swf", second])
    assert trace.job_names[-1] == "9" and trace.job_submit[-1] == 86400 + 100


# ---------------------------------------------------------------- bad input


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("fmt", "name", "text", "line", "what"),
    [
        ("condor-json", "h.json", '[\n{"QDate": 1},\n{"QDate": 2,,}\n]\n', 3, "malformed JSON"),
        ("condor-json", "h.json", '[\n{"QDate": 1, "RemoteWallClockTime": 5}\n\n{"QDate": 2}]', 4, "expected ','"),
        ("condor-json", "h.json", '[\n{"QDate": 1},\n7\n]\n', 3, "not a job ad"),
        ("condor-json", "h.jsonl", '{"QDate": 1}\n{"QDate": \n', 2, "malformed JSON ad"),
        ("condor-json", "h.jsonl", '{"QDate": 1, "RemoteWallClockTime": -3}\n', 1, "negative duration"),
        ("condor-long", "h.long", "QDate = 1\nRemoteWallClockTime = 5\n\nQDate = 2\nthis is not an attribute\n", 5, "Attribute = value"),
        ("condor-long", "h.long", "QDate = 1\n\nQDate = \"unterminated\n", 3, "cannot parse"),
        ("swf", "s.swf", "; UnixStartTime: 0\n1 0 0 10 1\n", 2, "expected 18 SWF fields"),
        ("swf", "s.swf", "1 0 0 ten 1 -1 -1 1 60 -1 1 4 1 1 1 -1 -1 -1\n", 1, "field 'run_time'"),
        ("fta", "e.tab", "0 0 1 3 n 0 100 50 8000\n", 1, "stops (50) before it starts (100)"),
        ("fta", "e.tab", "0 0 1 3 n 0 100 200 8000\n1 0 1 3 n 2 200 300 0\n", 2, "event_type"),
        ("fta", "e.tab", "0 0 1 3 n 0 x 200 8000\n", 1, "not numbers"),
        ("fta", "e.tab", "event_id node_id event_type\n", 1, "header lacks"),
        ("fta", "e.tab", "0 0 1 3\n", 1, "expected 9 columns"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path: Path, fmt: str, name: str, text: str, line: int, what: str) -> None:
    path = _write(tmp_path, name, text)
    with pytest.raises(TraceError) as info:
        load_trace(fmt, [path])
    assert f"{path}:{line}:" in str(info.value) and what in str(info.value), str(info.value)


def test_fta_node_missing_from_machines_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "e.tab", "0 0 1 3 n 0 100 200 8000\n0 0 pc-x 3 n 0 100 200 8000\n")
    machines = _write(tmp_path, "m.csv", "machine,room,active_watts,idle_watts\n1,r,1,1\n")
    with pytest.raises(TraceError, match=rf"{path}:2: node 'pc-x' is not in the machines file"):
        load_trace("fta", [path], machines=machines)


def test_inputs_without_machines_or_records(tmp_path: Path) -> None:
    no_hosts = _write(tmp_path, "h.jsonl", '{"QDate": 1262304000, "RemoteWallClockTime": 5}\n')
    with pytest.raises(TraceError, match="names no machines"):
        load_trace("condor-json", [no_hosts])
    only_up = _write(tmp_path, "e.tab", "0 0 1 3 n 1 100 200 0\n")
    with pytest.raises(TraceError, match="empty trace"):
        load_trace("fta", [only_up])
    with pytest.raises(TraceError, match="no such file"):
        load_trace("swf", [tmp_path / "missing.swf"])
    with pytest.raises(TraceError, match="unknown format"):
        load_trace("csv", [no_hosts])
    with pytest.raises(TraceError, match="unknown time zone"):
        load_trace("swf", [DATA / "sample.swf"], timezone="Nowhere/Land")


def test_parsers_work_on_text() -> None:
    records = parse_swf("; UnixStartTime: 100\n5 10 0 20 1 -1 -1 1 60 -1 1 4 1 1 1 -1 -1 -1\n")
    assert records.job_submit == [110.0] and records.job_duration == [20.0]
    assert parse_condor_json("[]").job_names == []
    assert parse_fta("0\t0\t7\t1\tn\t0\t5\t9\t0\n").login_end == [9.0]

