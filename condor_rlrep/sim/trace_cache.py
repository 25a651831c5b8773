"""A binary copy of a parsed trace folder, kept beside it, so that a trace
is parsed from CSV once and read back in a fraction of the time.

Parsing a year's CSV (56 MB, ≈1.8 M rows) costs about 1.6 s of CPU on every
``simulate``; the arrays it yields load from an uncompressed ``.npz`` in a
few hundredths. The copy is ``DIR/.trace-cache.npz`` and holds the SHA-256
of the files it was made from (``trace.toml`` and the three CSV files, names,
sizes and bytes); it is used only when that digest equals the files' digest
now, so any edit of the trace (or its replacement by ``write_trace``, which
replaces the whole folder) makes the parser run again and rewrite the copy.

The copy is a convenience, never a source of truth or of errors: a folder
that cannot be written just gets no copy, a copy that cannot be read (torn,
foreign, of another format) is ignored and replaced. Because the copy stands
in for the CSV files, it is believed only if its owner is the reader or the
owner of those files (nobody else can plant one in a shared folder), it is
never followed through a symlink, and it is read with pickling disabled.
Small traces are not copied (their CSV parses in milliseconds).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from condor_rlrep.atomic import source_mode
from condor_rlrep.sim.trace import StringColumn

__all__ = ["CACHE_NAME", "MIN_BYTES", "trace_digest", "load_cached", "store_cached"]

log = logging.getLogger(__name__)

CACHE_NAME = ".trace-cache.npz"
MIN_BYTES = 1 << 20
"""CSV bytes below which no copy is written (parsing is already cheap)."""
FORMAT = "condor-rlrep trace cache 1"
"""Part of the digest: a change of what the copy holds invalidates old copies."""

_ARRAYS = ("active_watts", "idle_watts", "login_machine", "login_start", "login_end", "job_submit", "job_duration")


def trace_digest(files: list[Path]) -> str:
    """SHA-256 over the format, and each file's name, size and bytes."""
    digest = hashlib.sha256(FORMAT.encode())
    for path in files:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            digest.update(f"\0{path.name}\0{size}\0".encode())
            hashlib.file_digest(handle, lambda: _Into(digest))  # type: ignore[arg-type]
    return digest.hexdigest()


class _Into:
    """Feeds :func:`hashlib.file_digest`'s chunks into a running digest."""

    def __init__(self, target: Any):
        self._target = target

    def update(self, data: bytes) -> None:
        self._target.update(data)

    def hexdigest(self) -> str:  # pragma: no cover - file_digest only calls update
        return ""


def _text(value: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"), dtype=np.uint8)


def _untext(array: np.ndarray) -> Any:
    return json.loads(array.tobytes().decode("utf-8", "surrogatepass"))


def _trusted(fd: int, owner_of_files: int) -> bool:
    info = os.fstat(fd)
    return stat.S_ISREG(info.st_mode) and info.st_uid in (os.getuid(), owner_of_files)


def load_cached(directory: Path, digest: str, files: list[Path]) -> dict[str, Any] | None:
    """The trace fields (all but start, length, source) of the copy in
    ``directory`` if it is of ``digest``; otherwise None."""
    path = directory / CACHE_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            if not _trusted(handle.fileno(), os.stat(files[-1]).st_uid):
                log.debug("ignoring %s: owned by someone else", path)
                return None
            with np.load(handle, allow_pickle=False) as data:
                if _untext(data["digest"]) != digest:
                    return None
                fields: dict[str, Any] = {name: data[name] for name in _ARRAYS}
                names = _untext(data["strings"])
                fields["job_names"] = StringColumn.from_text(
                    data["job_names"].tobytes().decode("utf-8", "surrogatepass"), data["job_name_lengths"])
                owners = names["owners"]
                if owners is None:
                    fields["job_owner"] = None
                else:
                    fields["job_owner"] = [owners[i] for i in data["owner_index"].tolist()]
        fields["machine_names"] = names["machines"]
        fields["machine_rooms"] = names["rooms"]
        fields["machine_extra"] = names["extra"]
        return fields
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
        log.debug("ignoring unreadable trace cache %s: %s", path, err)
        return None


def store_cached(directory: Path, digest: str, trace: Any, files: list[Path]) -> None:
    """Write the copy of ``trace`` (parsed from ``files``) beside them; a
    folder that cannot take it is left as it is."""
    if sum(p.stat().st_size for p in files) < MIN_BYTES:
        return
    names = list(trace.job_names)
    owners = trace.job_owner
    uniques: list[str] | None = None
    index = np.zeros(0, dtype=np.int32)
    if owners is not None:
        seen: dict[str, int] = {}
        index = np.fromiter((seen.setdefault(o, len(seen)) for o in owners), dtype=np.int32, count=len(owners))
        uniques = list(seen)
    text = "".join(names)
    buffer = io.BytesIO()
    np.savez(
        buffer,
        digest=_text(digest),
        strings=_text({"machines": trace.machine_names, "rooms": trace.machine_rooms,
                       "extra": trace.machine_extra, "owners": uniques}),
        job_names=np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8),
        job_name_lengths=np.fromiter(map(len, names), dtype=np.int64, count=len(names)),
        owner_index=index,
        **{name: getattr(trace, name) for name in _ARRAYS},
    )
    # Written beside the target and renamed over it (no reader sees half a
    # copy); the temporary file is created new, never through a symlink.
    target = directory / CACHE_NAME
    tmp = directory / f"{CACHE_NAME}.tmp-{os.getpid()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, source_mode(str(files[-1]), 0o600))
    except OSError as err:
        log.debug("no trace cache in %s: %s", directory, err)
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(buffer.getbuffer())
        os.replace(tmp, target)
    except OSError as err:
        log.debug("no trace cache in %s: %s", directory, err)
        try:
            os.unlink(tmp)
        except OSError:
            pass
