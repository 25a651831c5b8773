"""Trace folder format: round trips, sorting, atomic writes and every bad-input case."""

from __future__ import annotations

import gzip
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.trace import Trace
from condor_rlrep.sim.trace_io import read_trace, validate_trace, write_trace


def small_trace(**changes: object) -> Trace:
    fields = dict(
        start=datetime(2010, 3, 1, tzinfo=ZoneInfo("Europe/London")),
        length=86400.0,
        source="hand-made",
        machine_names=["pc1", "pc2", "pc3"],
        machine_rooms=["a", "a", "b"],
        active_watts=np.array([100.0, 100.0, 80.5]),
        idle_watts=np.array([60.0, 60.0, 47.0]),
        login_machine=np.array([1, 0, 1], dtype=np.int32),
        login_start=np.array([10.0, 20.0, 3600.5]),
        login_end=np.array([600.0, 20.0, 7200.0]),
        job_names=["1.0", "1.1", "2.0"],
        job_submit=np.array([0.0, 0.0, 500.0]),
        job_duration=np.array([1920.0, 30.25, 0.0]),
        job_owner=["alice", "alice", "bob"],
        machine_extra={"type": ["std", "std", "eff"]},
    )
    fields.update(changes)
    return Trace(**fields)  # type: ignore[arg-type]


def assert_same(a: Trace, b: Trace) -> None:
    assert a.start == b.start and a.start.utcoffset() == b.start.utcoffset()
    assert a.length == b.length and a.source == b.source
    assert a.machine_names == b.machine_names and a.machine_rooms == b.machine_rooms
    assert a.machine_extra == b.machine_extra
    for name in ("active_watts", "idle_watts", "login_machine", "login_start", "login_end", "job_submit", "job_duration"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.job_names == b.job_names and a.job_owner == b.job_owner


def write_folder(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "t"
    folder.mkdir(exist_ok=True)
    defaults = {
        "trace.toml": 'start = "2010-01-01T00:00:00+00:00"\nlength = 86400\nsource = "x"\n',
        "machines.csv": "machine,room,active_watts,idle_watts\npc1,a,100,60\npc2,a,100,60\n",
        "logins.csv": "machine,start,end\npc1,0,10\npc2,5,20\n",
        "jobs.csv": "job,submit,duration\n1.0,0,60\n",
    }
    defaults.update({k.replace("_", "."): v for k, v in files.items()})
    for name, text in defaults.items():
        if text is not None:
            (folder / name).write_text(text)
    return folder


# ---------------------------------------------------------------- round trips


def test_round_trip_keeps_every_column(tmp_path: Path) -> None:
    trace = small_trace(login_start=np.array([10.0, 20.0, 3600.5]))
    write_trace(trace, tmp_path / "out")
    back = read_trace(tmp_path / "out")
    assert_same(trace, back)
    assert isinstance(back.start.tzinfo, ZoneInfo) and back.start.tzinfo.key == "Europe/London"
    assert back.login_machine.dtype == np.int32


def test_written_text_is_plain_and_compact(tmp_path: Path) -> None:
    write_trace(small_trace(), tmp_path / "out")
    logins = (tmp_path / "out" / "logins.csv").read_text()
    assert logins == "machine,start,end\npc2,10,600\npc1,20,20\npc2,3600.5,7200\n"
    machines = (tmp_path / "out" / "machines.csv").read_text().splitlines()
    assert machines[0] == "machine,room,active_watts,idle_watts,type"
    assert machines[3] == "pc3,b,80.5,47,eff"
    meta = (tmp_path / "out" / "trace.toml").read_text()
    assert 'start = "2010-03-01T00:00:00+00:00"' in meta and 'timezone = "Europe/London"' in meta


def test_compressed_round_trip_and_same_bytes(tmp_path: Path) -> None:
    trace = small_trace()
    write_trace(trace, tmp_path / "a", compress=True)
    write_trace(trace, tmp_path / "b", compress=True)
    assert (tmp_path / "a" / "logins.csv.gz").is_file() and not (tmp_path / "a" / "logins.csv").exists()
    for name in ("logins.csv.gz", "jobs.csv.gz", "machines.csv", "trace.toml"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert_same(trace, read_trace(tmp_path / "a"))


def test_reader_sorts_rows_stably(tmp_path: Path) -> None:
    folder = write_folder(
        tmp_path,
        logins_csv="machine,start,end\npc2,50,60\npc1,5,6\npc2,5,9\n",
        jobs_csv="job,submit,duration,owner\nb,9,1,u2\na,3,2,u1\nc,3,4,u3\n",
    )
    trace = read_trace(folder)
    assert trace.login_start.tolist() == [5, 5, 50]
    assert trace.login_machine.tolist() == [0, 1, 1]
    assert trace.login_end.tolist() == [6, 9, 60]
    assert trace.job_names == ["a", "c", "b"] and trace.job_owner == ["u1", "u3", "u2"]
    assert trace.job_duration.tolist() == [2, 4, 1]


def test_quoted_fields_blank_lines_and_crlf(tmp_path: Path) -> None:
    folder = write_folder(
        tmp_path,
        machines_csv='machine,room,active_watts,idle_watts,note\r\npc1,a,100,60,"big, old"\r\n\r\npc2,a,90,50,x\r\n',
        logins_csv="machine,start,end\n\npc1,0,10\n\npc2,5,20\n\n",
    )
    trace = read_trace(folder)
    assert trace.machine_extra == {"note": ["big, old", "x"]}
    assert trace.active_watts.tolist() == [100, 90]
    assert trace.login_machine.tolist() == [0, 1]


def test_gzip_input_is_read(tmp_path: Path) -> None:
    folder = write_folder(tmp_path, logins_csv=None)
    (folder / "logins.csv.gz").write_bytes(gzip.compress(b"machine,start,end\npc2,1,2\n"))
    assert read_trace(folder).login_machine.tolist() == [1]


def test_timezone_key_and_naive_start(tmp_path: Path) -> None:
    folder = write_folder(tmp_path, trace_toml='start = 2010-07-01T09:00:00\ntimezone = "Europe/London"\nlength = 3600\n')
    trace = read_trace(folder)
    assert trace.start.utcoffset().total_seconds() == 3600  # BST
    hour, weekday = trace.local_clock(np.array([0.0, 3600.0 * 15]))
    assert hour.tolist() == [9.0, 0.0] and weekday.tolist() == [3, 4]  # Thu 1 July 2010


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    machines=st.lists(st.text("abcXYZ019-_.@", min_size=1, max_size=8), min_size=1, max_size=5, unique=True),
)
def test_csv_round_trip_property(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, machines: list[str]) -> None:
    times = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)
    n_logins = data.draw(st.integers(0, 6))
    n_jobs = data.draw(st.integers(0 if n_logins else 1, 6))
    starts = np.sort(np.array(data.draw(st.lists(times, min_size=n_logins, max_size=n_logins)), dtype=np.float64))
    lengths = np.array(data.draw(st.lists(times, min_size=n_logins, max_size=n_logins)), dtype=np.float64)
    submit = np.sort(np.array(data.draw(st.lists(times, min_size=n_jobs, max_size=n_jobs)), dtype=np.float64))
    trace = small_trace(
        machine_names=machines,
        machine_rooms=[data.draw(st.text("rm ab", max_size=4)) for _ in machines],
        active_watts=np.array(data.draw(st.lists(times, min_size=len(machines), max_size=len(machines)))),
        idle_watts=np.zeros(len(machines)),
        login_machine=np.array(data.draw(st.lists(st.integers(0, len(machines) - 1), min_size=n_logins, max_size=n_logins)), dtype=np.int32),
        login_start=starts,
        login_end=starts + lengths,
        job_names=[f"{i}.0" for i in range(n_jobs)],
        job_submit=submit,
        job_duration=np.array(data.draw(st.lists(times, min_size=n_jobs, max_size=n_jobs)), dtype=np.float64),
        job_owner=None,
        machine_extra={},
    )
    out = tmp_path_factory.mktemp("prop") / "t"
    write_trace(trace, out, compress=data.draw(st.booleans()))
    assert_same(trace, read_trace(out))


# ---------------------------------------------------------------- writing safety


def test_write_refuses_to_replace_a_non_trace_folder(tmp_path: Path) -> None:
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "important.txt").write_text("x")
    with pytest.raises(TraceError, match="not a trace folder"):
        write_trace(small_trace(), tmp_path / "keep")
    assert (tmp_path / "keep" / "important.txt").exists()


def test_write_replaces_a_trace_and_leaves_no_temporaries(tmp_path: Path) -> None:
    write_trace(small_trace(), tmp_path / "t")
    write_trace(small_trace(source="second"), tmp_path / "t")
    assert read_trace(tmp_path / "t").source == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


def test_bad_trace_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="comma"):
        write_trace(small_trace(machine_names=["a,b", "pc2", "pc3"]), tmp_path / "t")
    with pytest.raises(TraceError, match="ends before it starts"):
        write_trace(small_trace(login_end=np.array([0.0, 20.0, 7200.0])), tmp_path / "t")
    assert list(tmp_path.iterdir()) == []


def test_validate_catches_shape_and_order_errors() -> None:
    with pytest.raises(TraceError, match="wrong length: idle_watts"):
        validate_trace(small_trace(idle_watts=np.zeros(2)))
    with pytest.raises(TraceError, match="not sorted"):
        validate_trace(small_trace(job_submit=np.array([5.0, 0.0, 6.0])))
    with pytest.raises(TraceError, match="no time zone"):
        validate_trace(small_trace(start=datetime(2010, 1, 1)))
    validate_trace(small_trace(start=datetime(2010, 1, 1, tzinfo=timezone.utc)))


# ---------------------------------------------------------------- bad input: file:line


@pytest.mark.parametrize(
    ("files", "where", "what"),
    [
        ({"logins_csv": "machine,start,end\npc1,0,10\npc2,5\n"}, "logins.csv:3", "expected 3 fields"),
        ({"logins_csv": "machine,start,end\npc1,0,10\n\npc2,5,20,7\n"}, "logins.csv:4", "found 4"),
        ({"logins_csv": "machine,start,end\npc1,0,10\npc2,five,20\n"}, "logins.csv:3", "column 'start': 'five'"),
        ({"logins_csv": "machine,start,end\npc1,0,10\npc2,5,nan\n"}, "logins.csv:3", "column 'end'"),
        ({"logins_csv": "machine,start,end\npc1,0,10\npc2,50,20\n"}, "logins.csv:3", "ends before it starts"),
        ({"logins_csv": "machine,start,end\npc1,0,10\npc9,5,20\n"}, "logins.csv:3", "unknown machine 'pc9'"),
        ({"logins_csv": 'machine,start,end\npc1,0,10\n"pc9",5,20\n'}, "logins.csv:3", "unknown machine 'pc9'"),
        ({"logins_csv": "machine,start,end\npc1,-1,10\n"}, "logins.csv:2", "negative time"),
        ({"jobs_csv": "job,submit,duration\n1.0,0,60\n1.1,0,-5\n"}, "jobs.csv:3", "negative duration"),
        ({"jobs_csv": "job,submit\n1.0,0\n"}, "jobs.csv:1", "lacks column(s) duration"),
        ({"machines_csv": "machine,room,active_watts,idle_watts\npc1,a,100,60\npc1,a,1,1\n"}, "machines.csv:3", "duplicate machine"),
        ({"machines_csv": "machine,room,active_watts,idle_watts\npc1,a,100,-60\n"}, "machines.csv:2", "negative power"),
        ({"machines_csv": "machine,room,active_watts,idle_watts\n"}, "machines.csv", "no machines"),
        ({"machines_csv": ""}, "machines.csv:1", "empty file"),
    ],
)
def test_bad_rows_name_file_line_and_column(tmp_path: Path, files: dict[str, str], where: str, what: str) -> None:
    folder = write_folder(tmp_path, **files)
    with pytest.raises(TraceError) as info:
        read_trace(folder)
    message = str(info.value)
    assert f"{folder}/{where}" in message and what in message, message


def test_empty_trace_and_missing_files(tmp_path: Path) -> None:
    folder = write_folder(tmp_path, logins_csv="machine,start,end\n", jobs_csv="job,submit,duration\n")
    with pytest.raises(TraceError, match="empty trace: no logins and no jobs"):
        read_trace(folder)
    (folder / "jobs.csv").unlink()
    with pytest.raises(TraceError, match=r"missing jobs\.csv"):
        read_trace(folder)
    with pytest.raises(TraceError, match="not a trace folder"):
        read_trace(tmp_path / "nowhere")


@pytest.mark.parametrize(
    ("toml", "what"),
    [
        ('length = 5\n', "missing key 'start'"),
        ('start = "2010-01-01T00:00:00"\nlength = 5\n', "no time zone"),
        ('start = "yesterday"\nlength = 5\n', "not an ISO date-time"),
        ('start = "2010-01-01T00:00:00Z"\nlength = -5\n', "positive number"),
        ('start = "2010-01-01T00:00:00"\ntimezone = "Mars/Olympus"\nlength = 5\n', "unknown time zone"),
        ('start = = 1\n', "cannot parse"),
    ],
)
def test_bad_trace_toml(tmp_path: Path, toml: str, what: str) -> None:
    folder = write_folder(tmp_path, trace_toml=toml)
    with pytest.raises(TraceError, match=what) as info:
        read_trace(folder)
    assert "trace.toml" in str(info.value)


def test_local_clock_follows_summer_time() -> None:
    # Europe/London switched to BST at 01:00 UTC on 28 March 2010.
    trace = small_trace(start=datetime(2010, 3, 27, 12, tzinfo=timezone.utc).astimezone(ZoneInfo("Europe/London")))
    hour, weekday = trace.local_clock(np.array([0.0, 12 * 3600.0, 14 * 3600.0 + 90.0]))
    assert hour.tolist() == [12.0, 0.0, 3.025]
    assert weekday.tolist() == [5, 6, 6]  # Saturday, then Sunday


# ---------------------------------------------------------------- large files, read in chunks


def _big_folder(tmp_path: Path, rows: int) -> Path:
    logins = "".join(f"pc{1 + i % 2},{i},{i + 5}\n" for i in range(rows))
    jobs = "".join(f"{i}.0,{i},60,user{i % 3}\n" for i in range(rows))
    return write_folder(tmp_path, logins_csv="machine,start,end\n" + logins, jobs_csv="job,submit,duration,owner\n" + jobs)


def test_chunked_reading_gives_the_same_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import condor_rlrep.sim.trace_csv as trace_csv

    folder = _big_folder(tmp_path, 500)
    whole = read_trace(folder)
    monkeypatch.setattr(trace_csv, "_CHUNK_CHARS", 37)  # a few lines per chunk
    chunked = read_trace(folder)
    assert_same(whole, chunked)
    assert len(chunked.job_names) == 500 and chunked.job_names[499] == "499.0"
    assert chunked.job_owner is not None and chunked.job_owner[4] is chunked.job_owner[1]  # owners shared


@pytest.mark.parametrize(("row", "column", "value", "what"), [
    (400, 1, "x", "column 'start': 'x'"), (401, 0, "pc7", "unknown machine 'pc7'"), (402, 2, "-1", "ends before"),
])
def test_a_bad_row_in_a_later_chunk_names_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   row: int, column: int, value: str, what: str) -> None:
    import condor_rlrep.sim.trace_csv as trace_csv

    folder = _big_folder(tmp_path, 500)
    lines = (folder / "logins.csv").read_text().splitlines()
    fields = lines[row + 1].split(",")
    fields[column] = value
    lines[row + 1] = ",".join(fields)
    (folder / "logins.csv").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(trace_csv, "_CHUNK_CHARS", 50)
    with pytest.raises(TraceError) as info:
        read_trace(folder)
    assert f"logins.csv:{row + 2}" in str(info.value) and what in str(info.value), str(info.value)


def test_string_column_behaves_as_a_read_only_list() -> None:
    from condor_rlrep.sim.trace import StringColumn

    values = ["1.0", "", "grüße", "12.345", "x"]
    column = StringColumn(values)
    assert len(column) == 5 and list(column) == values and column.tolist() == values
    assert column[2] == "grüße" and column[-1] == "x" and column[1] == "" and column[1:3] == ["", "grüße"]
    with pytest.raises(IndexError):
        column[5]
    assert column == values and column == StringColumn(values) and column != values[:-1] and column != ["a"] * 5
    assert column.take([4, 0]) == ["x", "1.0"]
    assert StringColumn.concat([StringColumn(values[:2]), StringColumn(values[2:])]) == values
    assert StringColumn.from_text("ab" + "cde", np.array([2, 3])) == ["ab", "cde"]
    with pytest.raises(ValueError):
        StringColumn.from_text("abc", np.array([1, 1]))
    assert StringColumn() == [] and len(StringColumn.concat([])) == 0
    assert isinstance(small_trace().job_names, StringColumn)  # a list given to Trace is made compact
