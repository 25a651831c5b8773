"""Validation of an agent-store JSON document before anything is imported.

The document is what a store's export writes (:mod:`._docstream` streams
it); every entry is checked so that a bad file is refused with the entry at
fault named, and the importing backend commits nothing unless all of it is
good.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from condor_rlrep.agent.config import AgentConfig, ConfigError
from condor_rlrep.store.interface import DOCUMENT_FORMAT as FORMAT
from condor_rlrep.store.retention import Retention
from condor_rlrep.errors import StoreError

__all__ = ["Header", "ParsedDocument", "HEADER_KEYS", "DecisionChecker", "parse_header", "parse_document"]


@dataclass(frozen=True)
class Header:
    """Everything of a document but its decisions, as rows for a store's tables."""

    config: AgentConfig
    rewards_seen: int
    last_decision_id: int
    estimates: list[tuple[int, int, int, float, str]]
    recovery: list[tuple[int, int]]
    retention: Retention
    survival: list[tuple[int, int, float, float]] = ()  # type: ignore[assignment]
    """The model policy's cells (schema 4; absent from older documents)."""
    survival_runs: list[tuple[str, float]] = ()  # type: ignore[assignment]
    survival_horizon: float | None = None
    """Runs that ended before this are not counted (schema 5; absent: none)."""


@dataclass(frozen=True)
class ParsedDocument:
    header: Header
    decisions: list[tuple[Any, ...]]


HEADER_KEYS = ("format", "schema_version", "config", "rewards_seen", "last_decision_id", "estimates")
"""Keys a document must have besides ``decisions`` (``recovery``, ``retention``,
``survival``, ``survival_runs`` and ``survival_horizon`` are optional)."""


def parse_header(doc: Mapping[str, Any], schema_version: int) -> Header:
    """Check every part of an export document except its ``decisions``."""
    if not isinstance(doc, Mapping):
        raise StoreError("agent document must be a JSON object")
    if doc.get("format") != FORMAT:
        raise StoreError(f"not an agent-store document (format {doc.get('format')!r}, expected {FORMAT!r})")
    version = doc.get("schema_version")
    if not _is_int(version) or version < 1:
        raise StoreError(f"schema_version must be a positive integer; got {version!r}")
    if version > schema_version:
        raise StoreError(f"document schema version {version} is newer than this condor-rlrep understands ({schema_version})")
    try:
        config = AgentConfig.from_dict(dict(doc.get("config") or {}))
    except (ConfigError, TypeError) as err:
        raise StoreError(f"config: {err}") from err
    n_states, n_actions = config.n_states, config.max_replicas
    rewards_seen = _nonneg(doc.get("rewards_seen"), "rewards_seen")
    last_id = _nonneg(doc.get("last_decision_id"), "last_decision_id")

    estimates = []
    seen = set()
    for i, cell in enumerate(_list(doc.get("estimates"), "estimates")):
        where = f"estimates[{i}]"
        if not isinstance(cell, list) or len(cell) != 5:
            raise StoreError(f"{where}: expected [state, action, n, q, window]")
        state, action, n, q, window = cell
        _index(state, n_states, f"{where}.state")
        _index(action - 1 if _is_int(action) else action, n_actions, f"{where}.action")
        _nonneg(n, f"{where}.n")
        _finite(q, f"{where}.q")
        window = _list(window, f"{where}.window")
        for value in window:
            _finite(value, f"{where}.window")
        if (state, action) in seen:
            raise StoreError(f"{where}: duplicate (state {state}, action {action})")
        seen.add((state, action))
        estimates.append((state, action, n, float(q), json.dumps([float(v) for v in window])))

    recovery = []
    states = set()
    for i, entry in enumerate(_list(doc.get("recovery", []), "recovery")):
        if not isinstance(entry, list) or len(entry) != 2:
            raise StoreError(f"recovery[{i}]: expected [state, remaining]")
        _index(entry[0], n_states, f"recovery[{i}].state")
        if entry[0] in states:
            raise StoreError(f"recovery[{i}]: duplicate state {entry[0]}")
        states.add(entry[0])
        recovery.append((entry[0], _nonneg(entry[1], f"recovery[{i}].remaining")))
    retention = doc.get("retention")
    retention = Retention() if retention is None else Retention.from_dict(retention)
    from condor_rlrep.survival.cells import check_cells, check_key

    survival = check_cells(_list(doc.get("survival", []), "survival"))
    runs: dict[str, float] = {}
    for i, entry in enumerate(_list(doc.get("survival_runs", []), "survival_runs")):
        if not isinstance(entry, list) or len(entry) != 2:
            raise StoreError(f"survival_runs[{i}]: expected [key, recorded_at]")
        try:
            key = check_key(entry[0])
        except StoreError as err:
            raise StoreError(f"survival_runs[{i}]: {err}") from None
        _finite(entry[1], f"survival_runs[{i}].recorded_at")
        if key in runs:
            raise StoreError(f"survival_runs[{i}]: duplicate key {key!r}")
        runs[key] = float(entry[1])
    horizon = doc.get("survival_horizon")
    if horizon is not None:
        _finite(horizon, "survival_horizon")
        horizon = float(horizon)
    return Header(config, rewards_seen, last_id, estimates, recovery, retention, survival, sorted(runs.items()),
                  horizon)


class DecisionChecker:
    """Checks a document's decisions one by one against its header: each
    valid, ids unique and none above ``last_decision_id`` (a bitmap of the
    ids seen, so that a million decisions cost 125 kB, not a set)."""

    def __init__(self, header: Header):
        config = header.config
        self._shape = (config.n_states, config.max_replicas, config.n_phi_bins)
        self._last = header.last_decision_id
        self._seen = bytearray(self._last // 8 + 1) if self._last <= 1 << 33 else None
        self._seen_set: set[int] = set()
        self.count = 0

    def row(self, d: Any, where: str) -> tuple[Any, ...]:
        row = _decision_row(d, where, *self._shape)
        decision_id = row[0]
        if decision_id > self._last:
            raise StoreError(f"{where}: decision id {decision_id} is above last_decision_id {self._last}")
        if self._seen is not None:
            byte, bit = divmod(decision_id, 8)
            if self._seen[byte] >> bit & 1:
                raise StoreError(f"{where}: duplicate decision id {decision_id}")
            self._seen[byte] |= 1 << bit
        else:
            if decision_id in self._seen_set:
                raise StoreError(f"{where}: duplicate decision id {decision_id}")
            self._seen_set.add(decision_id)
        self.count += 1
        return row


def parse_document(doc: Mapping[str, Any], schema_version: int) -> ParsedDocument:
    """Check a whole in-memory export document and turn it into rows."""
    header = parse_header(doc, schema_version)
    checker = DecisionChecker(header)
    decisions = [checker.row(d, f"decisions[{i}]") for i, d in enumerate(_list(doc.get("decisions"), "decisions"))]
    return ParsedDocument(header, decisions)


def _decision_row(d: Any, where: str, n_states: int, n_actions: int, n_bins: int) -> tuple[Any, ...]:
    if not isinstance(d, Mapping):
        raise StoreError(f"{where}: expected an object")
    keys = ("decision_id", "made_at", "state", "hour", "phi_bin", "replicas", "phi_prime", "estimate", "explored",
            "epsilon", "context", "closed_at", "reward", "outcome")
    missing = [k for k in keys if k not in d]
    if missing:
        raise StoreError(f"{where}: missing {', '.join(missing)}")
    if not _is_int(d["decision_id"]) or d["decision_id"] < 1:
        raise StoreError(f"{where}.decision_id: must be a positive integer")
    _finite(d["made_at"], f"{where}.made_at")
    _index(d["state"], n_states, f"{where}.state")
    _index(d["hour"], 24, f"{where}.hour")
    _index(d["phi_bin"], n_bins, f"{where}.phi_bin")
    if d["hour"] * n_bins + d["phi_bin"] != d["state"]:
        raise StoreError(f"{where}: state does not match hour and phi_bin")
    _index(d["replicas"] - 1 if _is_int(d["replicas"]) else None, n_actions, f"{where}.replicas")
    phi = d["phi_prime"]
    if phi in ("inf", "-inf"):
        phi = float(phi)
    elif phi is not None:
        _finite(phi, f"{where}.phi_prime")
    _finite(d["estimate"], f"{where}.estimate")
    if not isinstance(d["explored"], bool):
        raise StoreError(f"{where}.explored: must be true or false")
    _finite(d["epsilon"], f"{where}.epsilon")
    if not isinstance(d["context"], Mapping):
        raise StoreError(f"{where}.context: must be an object")
    closed = d["closed_at"] is not None
    if closed != (d["reward"] is not None):
        raise StoreError(f"{where}: closed_at and reward must be both set or both null")
    if closed:
        _finite(d["closed_at"], f"{where}.closed_at")
        _finite(d["reward"], f"{where}.reward")
    if d["outcome"] is not None and not isinstance(d["outcome"], Mapping):
        raise StoreError(f"{where}.outcome: must be an object or null")
    dump = lambda v: json.dumps(v, sort_keys=True, separators=(",", ":"), allow_nan=False)  # noqa: E731
    return (
        d["decision_id"], d["made_at"], d["state"], d["hour"], d["phi_bin"], d["replicas"], phi, d["estimate"],
        int(d["explored"]), d["epsilon"], dump(d["context"]), d["closed_at"], d["reward"],
        None if d["outcome"] is None else dump(d["outcome"]),
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _nonneg(value: Any, where: str) -> int:
    if not _is_int(value) or value < 0:
        raise StoreError(f"{where}: must be a non-negative integer; got {value!r}")
    return value


def _index(value: Any, size: int, where: str) -> None:
    if not _is_int(value) or not 0 <= value < size:
        raise StoreError(f"{where}: out of range")


def _finite(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise StoreError(f"{where}: must be a finite number; got {value!r}")


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise StoreError(f"{where}: must be a list")
    return value
