"""The binary copy beside a trace folder: same trace as the CSV, invalidated
by any change of the files, ignored when foreign, torn or unwritable."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from condor_rlrep.sim import trace_cache
from condor_rlrep.sim.trace_cache import CACHE_NAME
from condor_rlrep.sim.trace_io import read_trace, write_trace
from tests.test_trace_io import assert_same, small_trace


@pytest.fixture(autouse=True)
def cache_small_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_cache, "MIN_BYTES", 0)


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object) -> None:
        raise AssertionError("parsed the CSV although the copy is valid")

    monkeypatch.setattr("condor_rlrep.sim.trace_io._parse_trace", fail)


def test_second_read_comes_from_the_copy_and_equals_the_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = small_trace(job_names=["1.0", "ä.1", "2.0"], job_owner=["alice", "bob", "alice"])
    write_trace(trace, tmp_path / "t")
    first = read_trace(tmp_path / "t")
    assert (tmp_path / "t" / CACHE_NAME).is_file()
    _no_parse(monkeypatch)
    second = read_trace(tmp_path / "t")
    assert_same(trace, second)
    assert_same(first, second)
    for name in ("login_machine", "login_start", "job_submit"):
        assert getattr(first, name).dtype == getattr(second, name).dtype


def test_no_owner_column_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_trace(small_trace(job_owner=None, machine_extra={}), tmp_path / "t")
    read_trace(tmp_path / "t")
    _no_parse(monkeypatch)
    back = read_trace(tmp_path / "t")
    assert back.job_owner is None and back.machine_extra == {}


def test_an_edited_csv_invalidates_the_copy(tmp_path: Path) -> None:
    write_trace(small_trace(), tmp_path / "t")
    assert read_trace(tmp_path / "t").job_duration.tolist() == [1920.0, 30.25, 0.0]
    jobs = tmp_path / "t" / "jobs.csv"
    jobs.write_text(jobs.read_text().replace("1920", "1921"))
    assert read_trace(tmp_path / "t").job_duration.tolist() == [1921.0, 30.25, 0.0]
    # and the copy now holds the edited trace
    assert read_trace(tmp_path / "t").job_duration.tolist() == [1921.0, 30.25, 0.0]


def test_an_edited_toml_is_read_anew(tmp_path: Path) -> None:
    write_trace(small_trace(), tmp_path / "t")
    read_trace(tmp_path / "t")
    toml = tmp_path / "t" / "trace.toml"
    toml.write_text(toml.read_text().replace('source = "hand-made"', 'source = "edited"'))
    assert read_trace(tmp_path / "t").source == "edited"


def test_a_torn_copy_is_ignored_and_replaced(tmp_path: Path) -> None:
    write_trace(small_trace(), tmp_path / "t")
    read_trace(tmp_path / "t")
    cache = tmp_path / "t" / CACHE_NAME
    cache.write_bytes(cache.read_bytes()[:100])
    assert_same(small_trace(), read_trace(tmp_path / "t"))
    assert cache.stat().st_size > 100


def test_a_copy_with_other_data_under_the_same_digest_is_believed_only_from_a_trusted_owner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to give the copy to another user")
    write_trace(small_trace(), tmp_path / "t")
    read_trace(tmp_path / "t")
    cache = tmp_path / "t" / CACHE_NAME
    os.chown(cache, 54321, 54321)
    _no_parse(monkeypatch)
    with pytest.raises(AssertionError, match="parsed the CSV"):
        read_trace(tmp_path / "t")  # a copy owned by someone else is not used


def test_a_symlinked_copy_is_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_trace(small_trace(), tmp_path / "a")
    read_trace(tmp_path / "a")
    write_trace(small_trace(), tmp_path / "b")
    os.symlink(tmp_path / "a" / CACHE_NAME, tmp_path / "b" / CACHE_NAME)
    _no_parse(monkeypatch)
    with pytest.raises(AssertionError, match="parsed the CSV"):
        read_trace(tmp_path / "b")


def test_an_unwritable_folder_gets_no_copy_and_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_trace(small_trace(), tmp_path / "t")

    def refuse(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    real_open = os.open
    monkeypatch.setattr(trace_cache.os, "open",
                        lambda path, flags, *a: refuse() if flags & os.O_CREAT else real_open(path, flags, *a))
    assert_same(small_trace(), read_trace(tmp_path / "t"))
    assert not (tmp_path / "t" / CACHE_NAME).exists()


def test_small_traces_are_not_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_cache, "MIN_BYTES", 1 << 20)
    write_trace(small_trace(), tmp_path / "t")
    read_trace(tmp_path / "t")
    assert not (tmp_path / "t" / CACHE_NAME).exists()


def test_write_trace_replaces_the_copy_with_the_folder(tmp_path: Path) -> None:
    write_trace(small_trace(), tmp_path / "t")
    read_trace(tmp_path / "t")
    write_trace(small_trace(job_duration=np.array([1.0, 2.0, 3.0])), tmp_path / "t")
    assert read_trace(tmp_path / "t").job_duration.tolist() == [1.0, 2.0, 3.0]
