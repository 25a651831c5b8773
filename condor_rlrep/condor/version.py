"""Which DAGMan will run the DAG: its HTCondor version, found without a pool.

Every HTCondor binary carries the stamp ``$CondorVersion: 25.14.0 <date> … $``
(it is what ``-version`` prints). ``condor_dagman`` is looked up on ``PATH``
and the stamp read from its file first — running it needs a configuration
and, as root, ``CONDOR_IDS`` — then from ``condor_dagman -version`` and
``condor_version``. Features that decide how a DAG is instrumented:
``TOLERANCE`` (25.14.0), ``DAGMAN_NODE_JOB_FAILURE_TOLERANCE`` (24.8.1),
``$DAGID`` (23.9.6) (docs/dagman.md §1–2).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping

__all__ = ["detect_dagman_version", "version_text"]

_STAMP = re.compile(rb"\$CondorVersion: (\d+)\.(\d+)\.(\d+)[ $]")
_STAMP_TEXT = re.compile(r"\$CondorVersion: (\d+)\.(\d+)\.(\d+)[ $]")
_MAX_BINARY = 64 << 20


def version_text(version: tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


def detect_dagman_version(environ: Mapping[str, str] | None = None) -> tuple[tuple[int, int, int], str] | None:
    """``(version, how it was found)`` of the ``condor_dagman`` on ``PATH``,
    else of ``condor_version``; None when there is neither."""
    env = dict(os.environ if environ is None else environ)
    search = env.get("PATH", os.defpath)
    dagman = shutil.which("condor_dagman", path=search)
    if dagman is not None:
        found = _stamp_in_file(dagman)
        if found is not None:
            return found, f"the version stamp in {dagman}"
    for argv in (([dagman, "-version"] if dagman else None), ([shutil.which("condor_version", path=search)])):
        if not argv or argv[0] is None:
            continue
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env, check=False,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            continue
        match = _STAMP_TEXT.search(done.stdout + done.stderr)
        if match:
            return (int(match[1]), int(match[2]), int(match[3])), " ".join(argv)
    return None


def _stamp_in_file(path: str) -> tuple[int, int, int] | None:
    try:
        if os.path.getsize(path) > _MAX_BINARY:
            return None
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    match = _STAMP.search(data)
    if match is None:
        return None
    return int(match[1]), int(match[2]), int(match[3])
