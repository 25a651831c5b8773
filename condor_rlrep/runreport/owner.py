"""Reading a run that belongs to someone else (an admin's ``report``).

``status`` and ``report`` read only files, and when they run as a user
other than the run's owner (the owner of ``OUT.dag.rlrep/``) they read
only what the owner could read: a run's files name paths its owner chose
(a node's ``error = /etc/shadow``), and root must not copy into a report
what the owner could not see. Every file is opened as what it is: not
through a symlink, not a FIFO (:mod:`condor_rlrep.fileguard`).

:func:`read_tail` is the one reader for such paths: it checks the owner's
access on the opened file itself (``fstat``) and on every folder above it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

__all__ = ["RunOwner", "run_owner", "read_tail", "NotReadable"]


class NotReadable(OSError):
    """The run's owner could not read this file (or it is not a regular file)."""


@dataclass(frozen=True)
class RunOwner:
    uid: int
    gids: frozenset[int]

    @property
    def is_me(self) -> bool:
        return self.uid == os.geteuid()

    def may(self, st: os.stat_result, bits: int) -> bool:
        """Whether the owner has ``bits`` (4 read, 1 search) on a file of status ``st``."""
        if self.uid == 0:
            return True
        if st.st_uid == self.uid:
            return bool((st.st_mode >> 6) & bits == bits)
        if st.st_gid in self.gids:
            return bool((st.st_mode >> 3) & bits == bits)
        return bool(st.st_mode & bits == bits)


def run_owner(context: str) -> RunOwner:
    """The owner of the run whose context folder is ``context`` (with their groups)."""
    st = os.lstat(context)
    gids = {st.st_gid}
    try:
        import pwd

        entry = pwd.getpwuid(st.st_uid)
        gids.update(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except (KeyError, OSError):
        pass
    return RunOwner(st.st_uid, frozenset(gids))


def _folders_searchable(path: str, owner: RunOwner) -> bool:
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        try:
            if not owner.may(os.stat(folder), 1):
                return False
        except OSError:
            return False
        parent = os.path.dirname(folder)
        if parent == folder:
            return True
        folder = parent


def read_tail(path: str, owner: RunOwner | None, limit: int = 64 * 1024) -> tuple[bytes, int]:
    """The last ``limit`` bytes of the regular file ``path`` and its mode;
    :class:`NotReadable` when ``owner`` (None: whoever runs this) could not read it."""
    from condor_rlrep.fileguard import open_read

    try:
        fd = open_read(path)
    except OSError as err:
        raise NotReadable(err.errno, err.strerror, path) from None
    try:
        st = os.fstat(fd)
        if owner is not None and not owner.is_me and (not owner.may(st, 4) or not _folders_searchable(path, owner)):
            raise NotReadable(13, "the run's owner could not read it", path)
        size = st.st_size
        os.lseek(fd, max(0, size - limit), os.SEEK_SET)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit), stat.S_IMODE(st.st_mode)
    finally:
        os.close(fd)
