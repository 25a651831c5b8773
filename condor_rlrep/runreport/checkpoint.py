"""The ``status`` checkpoint: written and read by one user only, and authenticated.

A checkpoint lives in the user's cache (``$XDG_CACHE_HOME/condor-rlrep/status/``,
folder 0700, files 0600). It is :mod:`marshal` data, which runs no code when
loaded but is not safe against crafted bytes, so it is believed only when

* the folder and the file are real (no symlink), regular, owned by the user
  who reads them and writable by no one else, and
* its payload carries an HMAC-SHA-256 under a key of that user
  (``key``, 32 random bytes, 0600, made on first use): a plain digest
  would let anyone who can write the file forge one; this key can be read
  only by the user.

Anything else — a checkpoint of an older format, another Python's marshal,
a corrupt, cut, foreign or forged file — is ignored (:class:`ValueError`)
and the run read afresh: a checkpoint is a head start only.
"""

from __future__ import annotations

import hashlib
import hmac
import marshal
import os
import stat
from typing import Any

__all__ = ["checkpoint_dir", "encode", "decode", "read_checkpoint", "write_checkpoint"]

_MAGIC = b"condor-rlrep status checkpoint 2\n"
_KEY = "key"


def checkpoint_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "condor-rlrep", "status")


def _private(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _check_dir(directory: str) -> None:
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode) or not _private(st):
        raise ValueError(f"{directory} is not a private folder of this user")


def _read_private(path: str) -> bytes:
    from condor_rlrep.fileguard import open_read

    fd = open_read(path)
    try:
        if not _private(os.fstat(fd)):
            raise ValueError(f"{path} is not a private file of this user")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def _key(directory: str, create: bool) -> bytes:
    path = os.path.join(directory, _KEY)
    try:
        key = _read_private(path)
    except FileNotFoundError:
        if not create:
            raise ValueError("no checkpoint key") from None
        from condor_rlrep.fileguard import open_exclusive

        key = os.urandom(32)
        try:
            fd = open_exclusive(path, 0o600)
        except FileExistsError:  # a concurrent status made it first
            return _key(directory, False)
        try:
            os.write(fd, key)
        finally:
            os.close(fd)
        return key
    if len(key) != 32:
        raise ValueError("checkpoint key of the wrong size")
    return key


def encode(state: dict[str, Any], key: bytes) -> bytes:
    payload = marshal.dumps(state)
    return _MAGIC + hmac.new(key, payload, hashlib.sha256).hexdigest().encode() + b"\n" + payload


def decode(data: bytes, key: bytes) -> dict[str, Any]:
    """The state :func:`encode` wrote under ``key``; ValueError for anything else."""
    if not data.startswith(_MAGIC):
        raise ValueError("not a status checkpoint")
    digest, newline, payload = data[len(_MAGIC):].partition(b"\n")
    if not newline or not hmac.compare_digest(hmac.new(key, payload, hashlib.sha256).hexdigest().encode(), digest):
        raise ValueError("status checkpoint not written by this user (or corrupt)")
    state = marshal.loads(payload)  # authenticated: bytes this user's own status wrote
    if not isinstance(state, dict):
        raise ValueError("not a status checkpoint")
    return state


def read_checkpoint(name: str) -> dict[str, Any]:
    """The checkpoint ``name`` of this user; OSError or ValueError when there is none to believe."""
    directory = checkpoint_dir()
    _check_dir(directory)
    return decode(_read_private(os.path.join(directory, name)), _key(directory, False))


def write_checkpoint(name: str, state: dict[str, Any]) -> None:
    """Write checkpoint ``name`` (0600, in a 0700 folder); raises on failure."""
    from condor_rlrep.atomic import write_atomic

    directory = checkpoint_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    _check_dir(directory)
    write_atomic(os.path.join(directory, name), encode(state, _key(directory, True)), mode=0o600)
