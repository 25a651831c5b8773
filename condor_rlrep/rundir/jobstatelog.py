"""The user's ``JOBSTATE_LOG``, written from DAGMan's internal one.

``instrument`` points the copy's ``JOBSTATE_LOG`` at ``<ctx>/jobstate.log``
(DAGMan writes it, and reads it back in recovery mode) and keeps the user's
path in ``hooks.json`` (``jobstate_log``). :func:`follow_jobstate` appends
to the user's file what DAGMan appended to the internal one since the last
call, said as the plain run would say it
(:class:`condor_rlrep.condor.jobstate.JobstateTranslator`). The reaper calls
it on every poll that finds the file grown (one ``stat`` otherwise) and once
more on its way out; ``status`` and ``report`` call it too, which completes
what DAGMan wrote after the reaper had gone (``DAGMAN_FINISHED``; the lines
of a user's POST and of nodes ending after the last replicated one).

Where we are is ``<ctx>/jobstate.json`` (the internal file's offset and the
translator's state); one caller at a time (an ``flock`` on
``<ctx>/jobstate.lock``, not waited for: the holder writes what is new).
Only whole lines are read, and the user's file is appended before the state
moves on: a crash between the two may repeat lines, never lose one.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["INTERNAL_JOBSTATE", "follow_jobstate", "JobstateFollower"]

INTERNAL_JOBSTATE = "jobstate.log"
_STATE = "jobstate.json"
_LOCK = "jobstate.lock"
_USER_MODE = 0o644  # as DAGMan leaves its own JOBSTATE_LOG


class JobstateFollower:
    """One run's translation: ``context`` and the settings that name the
    user's file and the nodes we wired. ``poll(verdicts)`` is cheap when
    nothing changed (one ``stat``)."""

    def __init__(self, context: str, settings: Any):
        self.context = context
        self.user_path = str(settings.jobstate_log)
        self.internal = os.path.join(context, INTERNAL_JOBSTATE)
        self._settings = settings
        self._size = -1
        self.finished = False
        self.pending = False
        """A line waits for a verdict the node log does not hold yet."""
        self.ended: dict[str, int] = {}
        """Node → the cluster of its last attempt whose end has been written."""
        self.failed = False
        """Writing failed once (set by the caller that logged why): nothing more to wait for."""
        self._replicable: list[str] | None = None

    def poll(self, verdicts: Any, *, final: bool = False) -> int:
        """Translate what is new; the number of lines written (0 when locked by another caller)."""
        try:
            size = os.stat(self.internal).st_size
        except OSError:
            return 0
        if size == self._size and not self.pending and not final:
            return 0
        import fcntl

        lock = os.open(os.path.join(self.context, _LOCK), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return 0
            written = self._translate(verdicts, final)
            self._size = size
            return written
        finally:
            os.close(lock)

    def _translate(self, verdicts: Any, final: bool) -> int:
        from condor_rlrep.atomic import write_atomic
        from condor_rlrep.condor.jobstate import JobstateTranslator
        from condor_rlrep.fileguard import append_bytes
        from condor_rlrep.safeload import load_json

        state_path = os.path.join(self.context, _STATE)
        try:
            with open(state_path, encoding="utf-8") as handle:
                state = load_json(handle.read())
        except Exception:  # noqa: BLE001 - LoadError, OSError
            state = {}  # none yet (or unreadable): from the start; lines may repeat, none is lost
        if not isinstance(state, dict):
            state = {}
        offset = int(state.get("offset", 0) or 0)
        with open(self.internal, "rb") as handle:
            if offset > os.fstat(handle.fileno()).st_size:
                offset, state = 0, {}  # a new internal file (instrumented again): from its start
            handle.seek(offset)
            data = handle.read()
        whole = data[: data.rfind(b"\n") + 1]  # a line DAGMan is still writing waits
        lines = [raw.decode("utf-8", "replace") for raw in whole.split(b"\n")[:-1]]
        settings = self._settings
        if self._replicable is None:  # instrument wrote it before DAGMan started: read it once
            self._replicable = _replicable(self.context)
        translator = JobstateTranslator(
            self._replicable, settings.user_scripts.get("PRE", ()), settings.user_scripts.get("POST", ()),
            [settings.reaper_node] if settings.reaper_node else (), state.get("translator"))
        out, used = translator.translate(lines, verdicts, final=final)
        self.pending = used < len(lines)
        # the bytes of the whole lines consumed, as read (not re-encoded)
        consumed = len(whole) if used == len(lines) else sum(len(raw) + 1 for raw in whole.split(b"\n")[:used])
        if out:
            append_bytes(self.user_path, ("\n".join(out) + "\n").encode("utf-8"), _USER_MODE)
        self.finished = translator.finished
        self.ended = dict(translator.ended)
        write_atomic(state_path, json.dumps({"offset": offset + consumed, "translator": translator.to_state()}),
                     mode=0o600)
        return len(out)


def _replicable(context: str) -> list[str]:
    from condor_rlrep.rundir.layout import REPLICABLE_FILE

    try:
        with open(os.path.join(context, REPLICABLE_FILE), encoding="utf-8") as handle:
            return [line.strip() for line in handle if line.strip()]
    except OSError:
        return []


def follow_jobstate(context: str, settings: Any, verdicts: Any, *, final: bool = False) -> int:
    """One :meth:`JobstateFollower.poll` (for a caller that runs once)."""
    if not getattr(settings, "jobstate_log", None):
        return 0
    return JobstateFollower(context, settings).poll(verdicts, final=final)
