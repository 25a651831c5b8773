"""Opening files in folders another user may have touched.

A run folder (``OUT.dag.rlrep/``) lives on a shared access point: a
world-writable parent, a user's group, an admin running ``report``. A name
in it can have been replaced by a symlink to a file outside the run, or by
a FIFO that blocks whoever opens it. Every open here therefore

* never follows a symlink in the last component (``O_NOFOLLOW``: ``ELOOP``);
* never blocks on a FIFO or device (``O_NONBLOCK`` for the open, then
  refuses anything but a regular file, ``EINVAL`` with the kind named);
* creates files with the mode asked for, whatever the umask (``fchmod``),
  and temporary files only if they did not exist (``O_EXCL``).

Only :mod:`os` and :mod:`stat` are imported: the DAGMan hooks use it on every call.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["open_read", "open_append", "open_exclusive", "read_bytes", "read_text", "append_bytes",
           "make_private_dir", "NOFOLLOW", "check_regular"]

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "not a regular file"


def check_regular(fd: int, path: str) -> os.stat_result:
    """fstat ``fd``; raise ``OSError(EINVAL)`` naming ``path`` unless it is a regular file."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, f"{_kind(st.st_mode)}, not a regular file", path)
    return st


def _guarded(path: str, flags: int, mode: int = 0o600) -> int:
    fd = os.open(path, flags | NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    try:
        check_regular(fd, path)
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_read(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file ``path`` (not through a symlink)."""
    return _guarded(os.fspath(path), os.O_RDONLY)


def open_append(path: str | os.PathLike[str], mode: int = 0o600) -> int:
    """An ``O_APPEND`` descriptor of the regular file ``path``, created with
    exactly ``mode`` if it did not exist (an existing file keeps its mode)."""
    path = os.fspath(path)
    try:
        return _guarded(path, os.O_WRONLY | os.O_APPEND)
    except FileNotFoundError:
        pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | NOFOLLOW | _CLOEXEC, mode)
    except FileExistsError:  # a concurrent writer created it first
        return _guarded(path, os.O_WRONLY | os.O_APPEND)
    os.fchmod(fd, mode)
    return fd


def open_exclusive(path: str | os.PathLike[str], mode: int | None) -> int:
    """A new file at ``path`` with exactly ``mode`` (None: 0666 less the
    umask, as ``open`` makes it); ``FileExistsError`` if the name is taken (by anything)."""
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | _CLOEXEC,
                 0o666 if mode is None else mode)
    if mode is not None:
        os.fchmod(fd, mode)
    return fd


def read_bytes(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The content of the regular file ``path`` (at most ``limit`` bytes)."""
    fd = open_read(path)
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read() if limit is None else handle.read(limit)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], errors: str = "strict") -> str:
    return read_bytes(path).decode("utf-8", errors)


def append_bytes(path: str | os.PathLike[str], data: bytes, mode: int = 0o600) -> None:
    """One ``O_APPEND`` write of ``data`` (a line: concurrent writers never interleave within it)."""
    fd = open_append(path, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def make_private_dir(path: str | os.PathLike[str], mode: int = 0o700) -> None:
    """Make folder ``path`` with exactly ``mode``; an existing one must be a
    real folder (not a symlink) owned by us, else ``PermissionError``, and
    gets ``mode``."""
    path = os.fspath(path)
    try:
        os.mkdir(path, mode)
        os.chmod(path, mode)
        return
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, f"{_kind(st.st_mode)}, not a folder", path)
    if st.st_uid != os.geteuid():
        raise PermissionError(errno.EPERM, f"folder belongs to uid {st.st_uid}, not to us", path)
    if st.st_mode & 0o7777 != mode:
        os.chmod(path, mode)  # ours (made under a looser umask by an older version): tighten it
