"""Knowing the node log POST reads is the one PRE saw.

PRE notes where the node's cluster will start in DAGMan's node log (its
size) and which file that is: device, inode and the log's first line (its
first event's header, written whole by DAGMan). A log replaced between PRE
and POST — a shorter file, a new inode, other first event — makes PRE's
offset meaningless, and reading it would give a wrong outcome silently;
:func:`check_mark` raises instead, so that POST fails open with the reason
in the hook log (the node's exit code stands; nothing wrong is recorded).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["log_mark", "check_mark", "LogReplaced"]

_HEAD = 512


class LogReplaced(OSError):
    """The node log is not the file PRE saw."""


def _first_line(path: str) -> str | None:
    from condor_rlrep.fileguard import open_read

    fd = open_read(path)
    try:
        data = os.read(fd, _HEAD)
    finally:
        os.close(fd)
    end = data.find(b"\n")
    return None if end < 0 else data[:end].decode("utf-8", "replace")


def log_mark(path: str) -> tuple[int, list[Any] | None]:
    """PRE's offset in the node log and the log's identity (None when it does not exist yet)."""
    try:
        st = os.stat(path)
        head = _first_line(path) if st.st_size else None
    except OSError:
        return 0, None
    return st.st_size, [st.st_dev, st.st_ino, head]


def check_mark(path: str, offset: int, mark: Any) -> None:
    """:class:`LogReplaced` when ``path`` is not the log PRE marked at ``offset``."""
    if not offset:
        return
    try:
        st = os.stat(path)
    except OSError:
        return  # a missing log: the reader says so
    if st.st_size < offset:
        raise LogReplaced(f"node log {path} is shorter ({st.st_size} bytes) than when PRE ran ({offset}): "
                          "replaced or truncated since; the outcome is not read from it")
    if not (isinstance(mark, list) and len(mark) == 3):
        return  # a state of an older version: size is all there is
    if [st.st_dev, st.st_ino] != mark[:2]:
        raise LogReplaced(f"node log {path} is another file (inode) than when PRE ran: replaced since; "
                          "the outcome is not read from it")
    if mark[2] is not None and _first_line(path) != mark[2]:
        raise LogReplaced(f"node log {path} begins with another event than when PRE ran: rewritten since; "
                          "the outcome is not read from it")
