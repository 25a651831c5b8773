"""Where in a node log a cluster's events begin, found in the raw bytes.

:mod:`condor_rlrep.condor.eventlog` reads events through the bindings,
which parse every event on the way; a byte search for the cluster's first
submit header costs a scan in C instead.
"""

from __future__ import annotations

import mmap

__all__ = ["cluster_start"]


def cluster_start(path: str, cluster: int) -> int:
    """Byte position of the first event of ``cluster`` in the log (its first
    submit event, whose header is ``000 (CLUSTER.PROC.SUBPROC)``), 0 when
    none is found or the file cannot be mapped. A POST without PRE's offset
    (``fixed:K``) reads from there instead of the whole log: the bytes are
    searched in C, where the bindings parse every event in between (a
    10,000-node DAG's log: ~1.2 CPU-s per POST, and one POST per node)."""
    needle = b"000 (%03d." % cluster
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data[: len(needle)] == needle:
                return 0
            at = data.find(b"\n" + needle)
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return 0
    return at + 1 if at >= 0 else 0
