"""Atomic writes leave either the old file or the new one, never a mix."""

from __future__ import annotations

import os

import pytest

from condor_rlrep.atomic import atomic_path, write_atomic


def test_write_text_bytes_and_lines(tmp_path):
    target = tmp_path / "f.txt"
    write_atomic(target, "one")
    assert target.read_text() == "one"
    write_atomic(target, b"\x00two")
    assert target.read_bytes() == b"\x00two"
    write_atomic(target, (line for line in ["a", "b"]))
    assert target.read_text() == "a\nb\n"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_failure_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "f.txt"
    target.write_text("old")

    def lines():
        yield "new"
        raise RuntimeError("generator broke half way")

    with pytest.raises(RuntimeError):
        write_atomic(target, lines())
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_mode_follows_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        write_atomic(tmp_path / "secret", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "secret").stat().st_mode & 0o777 == 0o600


def test_atomic_path_for_writers_that_want_a_file_name(tmp_path):
    target = tmp_path / "plot.png"
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(b"png")
        assert not target.exists()
    assert target.read_bytes() == b"png"
