"""The attempt journal: one JSON line per PRE decision and per POST verdict.

``<ctx>/journal.jsonl`` is what ``status`` and ``report`` need to tell the
attempts of a node apart across retries, rescues and repeated runs, when the
other records no longer can: DAGMan truncates the node log whenever a new
DAGMan starts (a rescue, a resubmission), PRE overwrites ``state/<n>.json``
on every attempt, a new run overwrites ``run.json``, and the store may have
pruned the decision (``agent prune``/retention). So the hooks append:

* ``PRE``: the decision as PRE wrote it to the node state (run id, s(W),
  DAGMan id, attempt, φ′, estimate, replica count, how it was chosen), or
  the reason PRE failed open;
* ``POST``: the verdict, the node's cluster and every replica invocation
  rebuilt from the node log (host, slot, start, end, how it ended);
* ``CLOSE``: a decision closed for a DAG removed mid-run (no POST ran).

Each record is one ``O_APPEND`` write of one line, so concurrent hooks never
interleave (local filesystems); writing never raises — a hook must not fail
because of its journal. Readers skip lines that do not parse (a line cut by
a full disk) and say how many.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["JOURNAL_FILE", "JOURNAL_VERSION", "append", "append_verdict", "read_journal", "history_record", "JournalReader"]

JOURNAL_FILE = "journal.jsonl"
JOURNAL_VERSION = 1

# Node-state keys that only the hooks themselves need.
_PRIVATE = ("files", "dag_key", "log_offset", "log_id")


def append(context: str | None, hook: str, node: str | None, record: Mapping[str, Any], *, now: float | None = None) -> None:
    """Append one record; errors are swallowed (the journal is bookkeeping)."""
    if not context:
        return
    try:
        import time

        line: dict[str, Any] = {"v": JOURNAL_VERSION, "hook": hook, "node": node,
                                "at": time.time() if now is None else now}
        line.update((k, v) for k, v in record.items() if k not in _PRIVATE)
        data = (json.dumps(line, sort_keys=True, separators=(",", ":"), default=str) + "\n").encode("utf-8", "replace")
        from condor_rlrep.fileguard import append_bytes

        # 0600 like the run's state: it holds decisions and their contexts; never through a planted symlink
        append_bytes(os.path.join(context, JOURNAL_FILE), data, 0o600)
    except Exception:  # noqa: BLE001 - never let bookkeeping fail a hook
        pass


def append_verdict(context: str | None, hook: str, node: str | None, record: Mapping[str, Any],
                   state: Mapping[str, Any] | None, history: Any) -> None:
    """A ``POST`` or ``CLOSE`` record: ``record`` with the decision's ids
    from the node ``state`` and the replicas from ``history`` (either may be
    None); never raises."""
    try:
        line: dict[str, Any] = dict(record)
        if state is not None:
            line.update(run_id=state.get("run_id"), decision_id=state.get("decision_id"),
                        pre_time=state.get("pre_time"))
        if history is not None:
            line.update(history_record(history))
    except Exception:  # noqa: BLE001 - never let bookkeeping fail a hook
        return
    append(context, hook, node, line)


def history_record(history: Any) -> dict[str, Any]:
    """The replica part of a POST/CLOSE record, from a
    :class:`~condor_rlrep.condor.eventlog.ClusterHistory`."""
    slots = getattr(history, "slots", {}) or {}
    return {
        "cluster": history.cluster,
        "submit_time": history.submit_time,
        "procs": sorted(history.procs),
        "evictions": history.evictions,
        "holds": history.holds,
        "aborted": sorted(history.aborted),
        "invocations": [
            [inv.replica, inv.host, slots.get((inv.replica, inv.start)), inv.start, inv.end, inv.ended_by, inv.exit_code]
            for inv in history.invocations
        ],
    }


def read_journal(context: str) -> tuple[list[dict[str, Any]], int]:
    """Every record of ``<ctx>/journal.jsonl`` in file order, and the number
    of lines skipped because they did not parse. No journal: ``([], 0)``."""
    path = os.path.join(context, JOURNAL_FILE)
    from condor_rlrep.fileguard import read_bytes

    try:
        data = read_bytes(path)
    except FileNotFoundError:
        return [], 0
    return _parse(data)


class JournalReader:
    """The journal read incrementally: only complete lines appended since the
    last :meth:`update` (the journal is append-only; a replaced or shorter
    file is read again)."""

    def __init__(self, context: str):
        self.path = os.path.join(context, JOURNAL_FILE)
        self.records: list[dict[str, Any]] = []
        self.skipped = 0
        self._offset = 0
        self._identity: tuple[int, int] | None = None

    def update(self) -> None:
        try:
            from condor_rlrep.fileguard import open_read

            with os.fdopen(open_read(self.path), "rb") as handle:
                st = os.fstat(handle.fileno())
                identity = (st.st_dev, st.st_ino)
                if identity != self._identity or st.st_size < self._offset:
                    self.records, self.skipped, self._offset, self._identity = [], 0, 0, identity
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            self.records, self.skipped, self._offset, self._identity = [], 0, 0, None
            return
        end = data.rfind(b"\n") + 1  # a line being appended is read next time
        records, skipped = _parse(data[:end])
        self.records.extend(records)
        self.skipped += skipped
        self._offset += end

    def to_state(self) -> dict[str, Any]:
        """Plain data for the status checkpoint (:mod:`marshal`)."""
        return {"path": self.path, "records": self.records, "skipped": self.skipped, "offset": self._offset,
                "identity": list(self._identity or ())}

    @classmethod
    def from_state(cls, context: str, state: Mapping[str, Any]) -> "JournalReader":
        """What :meth:`to_state` saved for ``context``'s journal; raises on anything else."""
        reader = cls(context)
        if state["path"] != reader.path or not isinstance(state["records"], list):
            raise ValueError("not this journal's state")
        if not all(isinstance(r, dict) and isinstance(r.get("node"), str) for r in state["records"]):
            raise ValueError("not journal records")
        identity = tuple(int(v) for v in state["identity"])
        reader.records, reader.skipped, reader._offset = state["records"], int(state["skipped"]), int(state["offset"])
        reader._identity = (identity[0], identity[1]) if len(identity) == 2 else None
        return reader


def _shared(record: dict[str, Any]) -> dict[str, Any]:
    """The record with its keys and short text values interned: ``json``
    makes each line's strings anew, and a 10,000-node run's journal repeats
    the same twenty keys and run ids in every one of its 20,000 lines."""
    intern = sys.intern
    return {intern(key): intern(value) if type(value) is str and len(value) <= 64 else value
            for key, value in record.items()}


def _parse(data: bytes) -> tuple[list[dict[str, Any]], int]:
    records: list[dict[str, Any]] = []
    skipped = 0
    loads = json.loads
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            record = loads(raw)
        except (ValueError, RecursionError):  # not a line a hook wrote (or 4,300 digits, deep nesting)
            skipped += 1
            continue
        if isinstance(record, dict) and record.get("v") == JOURNAL_VERSION and isinstance(record.get("node"), str):
            records.append(_shared(record))
        else:
            skipped += 1
    return records, skipped
