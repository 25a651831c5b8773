"""Writing files so that no reader ever sees half of one.

Every file a user or DAGMan reads (DAGs, submit descriptions, reports, store
exports, plots) is written to a temporary name in the same directory and
renamed over the target, which POSIX makes atomic. This module imports only
:mod:`os` and :mod:`contextlib` because the DAGMan hooks use it on every call.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

__all__ = ["write_atomic", "atomic_path", "source_mode"]

def _temporary_name(target: str, fixed: bool = False) -> str:
    directory, name = os.path.split(target)
    if fixed:
        return os.path.join(directory, f".{name}.tmp")
    # pid-unique rather than tempfile's random names: tempfile is slow to import.
    return os.path.join(directory, f".{name}.tmp-{os.getpid()}")


@contextmanager
def atomic_path(path: str | os.PathLike[str], *, fixed_tmp: bool = False) -> Iterator[str]:
    """Yield a temporary path to write; on success it replaces ``path``,
    on any error it is removed and ``path`` is left as it was.

    ``fixed_tmp``: the temporary name is ``.NAME.tmp`` (no pid), for files
    one process at a time writes (a DAG node's hook files): a writer killed
    mid-write (SIGKILL runs no cleanup) leaves a file the next writer
    truncates and renames, never one that stays behind for ever."""
    target = os.fspath(path)
    tmp = _temporary_name(target, fixed_tmp)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _open_temporary(tmp: str, mode: int | None) -> int:
    """A fresh temporary file with exactly ``mode``: ``O_EXCL|O_NOFOLLOW``, so
    that a name planted in the folder (a symlink to a file elsewhere) is never
    written through; a left-over (a writer killed mid-write, or a plant) is
    removed (the name, never what it points to) and the file made anew."""
    from condor_rlrep.fileguard import open_exclusive

    try:
        return open_exclusive(tmp, mode)
    except FileExistsError:
        os.unlink(tmp)
        return open_exclusive(tmp, mode)


def write_atomic(path: str | os.PathLike[str], data: str | bytes | Iterable[str], *, mode: int | None = None,
                 fixed_tmp: bool = False) -> None:
    """Write text, bytes, or an iterable of lines (each gets a newline) to
    ``path`` atomically. An explicit ``mode`` is the file's mode whatever
    the umask; without one it is 0666 filtered by the umask, as for ``open``.
    A symlink at ``path`` is replaced, never followed."""
    try:
        _write(os.fspath(path), data, mode, fixed_tmp)
    except OSError as err:
        if err.filename is None:  # a failed write(2) names no file: name the one being written
            raise OSError(err.errno, err.strerror, os.fspath(path)) from None
        raise


def _write(path: str, data: str | bytes | Iterable[str], mode: int | None, fixed_tmp: bool) -> None:
    with atomic_path(path, fixed_tmp=fixed_tmp) as tmp:
        fd = _open_temporary(tmp, mode)
        if isinstance(data, bytes):
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
                if isinstance(data, str):
                    handle.write(data)
                else:
                    for line in data:
                        handle.write(line)
                        handle.write("\n")


def source_mode(path: str, default: int = 0o600) -> int:
    """Permission bits for a file made from ``path`` (a node's submit file
    from the user's description, the DAG's copy from the DAG): never wider
    than its own; ``default`` when ``path`` cannot be read."""
    try:
        return os.stat(path).st_mode & 0o666
    except OSError:
        return default
