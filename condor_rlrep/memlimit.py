"""Headroom under the process's address-space limit (``RLIMIT_AS``).

``ulimit -v`` and ``prlimit --as`` cap the *virtual* size of the process:
every mapping counts, touched or not, so resident memory
(:func:`resource.getrusage`) says nothing about how close the limit is; the
kernel's own count, ``/proc/self/statm``, does.

Why stop before the limit instead of letting ``malloc`` fail: when the last
megabyte is gone, CPython 3.11 cannot even unwind the :class:`MemoryError`.
Entering a ``with``/``finally`` handler at bytecode offset > 256 allocates
an ``int`` for the offset; when that fails it retries the same handler,
forever, at 100 % CPU (seen in click's ``Command.main`` under ``condor-rlrep
inspect``). A reader of big inputs calls :func:`check_headroom` once per
block instead: the error is raised while :data:`RESERVE` bytes are still
free, so the unwinding, the collector and the caller's one-line message have
room to run.

A command that will need numpy imports it before reading its input: OpenBLAS
maps its buffers at import and, when it cannot, exits from C (status 1, no
Python error to catch); loaded first, its mapping counts in every check.
"""

from __future__ import annotations

import os
import resource

__all__ = ["RESERVE", "check_headroom"]

# Left free when check_headroom gives up. It must hold what the caller
# allocates between two checks (a 1-M-character block of a DAG file grows the
# parsed workflow by ~11 MB) plus the unwinding; a single bigger request
# (a dict or list resize) fails on its own and leaves its size free.
RESERVE = 64 << 20

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _address_space() -> int | None:
    """Bytes of address space the process maps now, or None where unknown."""
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
    except OSError:
        return None
    try:
        return int(os.read(fd, 64).split()[0]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None
    finally:
        os.close(fd)


def check_headroom(reading: str | None = None) -> None:
    """Raise :class:`MemoryError` when the process maps within :data:`RESERVE`
    bytes (at most a quarter of the limit) of its soft ``RLIMIT_AS``; do
    nothing without such a limit.

    ``reading`` names what was being read (a file), for the message.
    A few microseconds: meant for once per block of a big input, not per item.
    """
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return
    used = _address_space()
    # Under a limit of a few tens of MB (which only a small input fits) a
    # quarter of it is the reserve: RESERVE would refuse even a tiny file.
    if used is None or used + min(RESERVE, limit // 4) <= limit:
        return
    where = f"reading {reading}: " if reading else ""
    raise MemoryError(f"{where}{used >> 20} MiB of the {limit >> 20} MiB address-space limit in use")
