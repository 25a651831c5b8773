"""The run's context folder ``OUT.dag.rlrep/``, made safe before anything is written in it.

DAGMan submits ``nodes/N.sub`` as the user and runs the hooks as the user:
whoever can change a file of the context can run jobs as the user, and
whoever can plant a symlink in it can make a hook write where they chose.
So the context is either created here, fresh, 0700 (whatever the umask),
or, when it exists (an earlier ``instrument`` of the same DAG), every part
of it is checked first: a real folder or file, never another user's (a
symlink counts by its own owner), and then narrowed to 0700 folders and
files no one else can write. A context that fails the check is refused
with the part named; nothing is written.

:func:`undo` removes a context this ``instrument`` created when writing it
failed (a full disk), so that a refused run leaves nothing half made.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from condor_rlrep.errors import InputError

__all__ = ["SUBFOLDERS", "prepare_context", "undo", "writing"]

SUBFOLDERS = ("nodes", "state", "cache", "spool")


def prepare_context(context: str) -> bool:
    """Make ``context`` ours and private (its sub-folders: :func:`writing`); True when it
    was created now. Raises :class:`InputError` naming a part that another
    user owns or that is not what it should be."""
    uid = os.geteuid()
    try:
        os.makedirs(os.path.dirname(context) or ".", exist_ok=True)  # the folder -o names, as the user chose
        os.mkdir(context, 0o700)
        created = True
    except FileExistsError:
        created = False
    except OSError as err:
        raise InputError(f"cannot create the context folder: {err.strerror or err}", path=context) from None
    if created:
        os.chmod(context, 0o700)
    else:
        _check_tree(context, uid)
    return created


def _subfolders(context: str) -> None:
    for sub in SUBFOLDERS:
        path = os.path.join(context, sub)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        os.chmod(path, 0o700)


def _check_tree(context: str, uid: int) -> None:
    st = os.lstat(context)
    if not stat.S_ISDIR(st.st_mode):
        raise InputError("the context folder exists and is not a folder (a symlink or file someone put there?): "
                         "remove it or choose another -o", path=context)
    problems: list[str] = []

    def check(path: str, st: os.stat_result) -> None:
        if st.st_uid != uid:
            problems.append(f"{path} belongs to uid {st.st_uid}, not to you (uid {uid})")
        elif not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)
                  or stat.S_ISSOCK(st.st_mode)):  # a socket: a killed reaper's store broker
            problems.append(f"{path} is not a file, folder or socket (a FIFO or device someone put there)")

    check(context, st)
    if not problems:
        # iteratively, never following a symlink (os.walk lists a symlink to a folder without entering it)
        for root, dirs, files in os.walk(context):
            for name in dirs + files:
                path = os.path.join(root, name)
                try:
                    check(path, os.lstat(path))
                except FileNotFoundError:
                    continue
                if len(problems) >= 3:
                    break
    if problems:
        raise InputError("the context folder was not made by you alone, so DAGMan could run another user's "
                         f"files as you: {'; '.join(problems)}; remove it (as its owner) or choose another -o",
                         path=context)
    # ours throughout: take what others could do (an older version honoured a loose umask)
    for root, dirs, files in os.walk(context):
        os.chmod(root, 0o700)
        for name in files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_mode & 0o022:
                os.chmod(path, st.st_mode & 0o755)


def undo(context: str, created: bool, written: list[str]) -> None:
    """After a failed write: remove the context if it was ``created`` now,
    and the files in ``written`` (made by this call); never raises."""
    import shutil

    if created:
        shutil.rmtree(context, ignore_errors=True)
    for path in written:
        try:
            os.unlink(path)
        except OSError:
            pass


@contextmanager
def writing(context: str, dst: str) -> Iterator[None]:
    """Prepare ``context`` (:func:`prepare_context`), then run the block that
    writes it and the copy ``dst``; when the block fails, remove what it
    made (the context if created now, ``dst`` if it did not exist before)
    and report a failed write as one :class:`InputError` naming the file."""
    dst_existed = os.path.lexists(dst)
    created = prepare_context(context)
    try:
        _subfolders(context)
        yield
    except BaseException as err:
        undo(context, created, [] if dst_existed else [dst])
        if isinstance(err, OSError) and not isinstance(err, InputError):
            where = err.filename or context
            left = ("nothing was left behind" if created else
                    f"the context {context} is incomplete: run instrument again when the cause is fixed")
            raise InputError(f"cannot write: {err.strerror or err}; {left}", path=str(where)) from None
        raise
