"""How long a store keeps its history: retention of closed decisions and
expiry of pending ones.

The learned estimates are the fold of every reward ever recorded and are
never pruned; only the decision log goes. A *closed* decision older than
``closed`` seconds (by the time its outcome was recorded) is history a long-
lived pool need not keep. A *pending* decision older than ``pending``
seconds (by the time it was made) is one whose PRE died after deciding, or
whose node never ran: it will never be closed, so it expires. ``None``
keeps them forever (the default for both: what to forget is the pool
admin's call). A late outcome for a pruned or expired decision is refused
like any unknown id.

The ``model:R`` policy's survival model (table ``survival``) is a fold of
every run recorded, like the estimates, and is never pruned. What goes is
its idempotency memory: ``survival_runs`` keeps the key of every node
attempt already counted, so that a POST run twice counts once. Those keys
are pruned with closed decisions, but never sooner than the pending expiry
(:meth:`Retention.runs_cutoff`): a POST may legitimately arrive as late as
a pending decision may wait for its outcome, and its key must still be
there to make a repeat a no-op.

A *very* late repeat (DAGMan's recovery mode rerunning a POST weeks later,
a spooled update flushed by a rescue DAG long after) would find its key
gone and, if the store took it, count the same runs twice. It does not:
a prune first raises the store's *survival horizon* to its cutoff, and
:meth:`record_exposure` refuses (:class:`~condor_rlrep.errors.StaleExposureError`)
an unknown key whose runs ended before the horizon. That is exact, not a
heuristic: a pruned key was recorded before the cutoff, after its runs had
ended (POST runs once the node's jobs left the queue, on the clock that
wrote their events), so any repeat of it ran until before the horizon. The
price is that a first update that old is not counted either (the hook logs
it); the window above makes that as rare as a decision that expires.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from condor_rlrep.errors import StoreError

__all__ = ["Retention", "PruneResult", "parse_duration", "format_duration"]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([smhdw]?)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Retention:
    closed: float | None = None
    """Seconds a closed decision is kept after its outcome; None: forever."""
    pending: float | None = None
    """Seconds a pending decision may wait for its outcome; None: forever."""

    def __post_init__(self) -> None:
        for name in ("closed", "pending"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise StoreError(f"retention {name} must be a non-negative number of seconds or null; got {value!r}")
            object.__setattr__(self, name, float(value))

    @property
    def active(self) -> bool:
        return self.closed is not None or self.pending is not None

    def cutoffs(self, now: float) -> tuple[float | None, float | None]:
        """(closed before, made before) for a prune at ``now``."""
        return (None if self.closed is None else now - self.closed, None if self.pending is None else now - self.pending)

    def runs_window(self) -> float | None:
        """Seconds the model's run keys are kept after recording: the
        closed-decision window, never shorter than the pending expiry (see
        the module's notes); None (forever) while closed decisions are kept
        forever."""
        if self.closed is None:
            return None
        return max(self.closed, self.pending or 0.0)

    def runs_cutoff(self, now: float) -> float | None:
        """Run keys recorded before this are pruned at ``now`` (None: none are)."""
        window = self.runs_window()
        return None if window is None else now - window

    def to_dict(self) -> dict[str, float | None]:
        return {"closed": self.closed, "pending": self.pending}

    @classmethod
    def from_dict(cls, data: Any) -> Retention:
        if not isinstance(data, dict) or set(data) - {"closed", "pending"}:
            raise StoreError(f"retention must be an object with 'closed' and 'pending' (seconds or null); got {data!r}")
        return cls(closed=data.get("closed"), pending=data.get("pending"))

    def describe(self) -> str:
        closed = "kept forever" if self.closed is None else f"pruned {format_duration(self.closed)} after closing"
        pending = "kept forever" if self.pending is None else f"expire {format_duration(self.pending)} after deciding"
        window = self.runs_window()
        runs = "kept forever" if window is None else f"pruned {format_duration(window)} after recording"
        return (f"closed decisions {closed}; pending decisions {pending}; the model policy's run keys {runs}"
                " (its survival model is never pruned)")


@dataclass(frozen=True)
class PruneResult:
    closed: int
    """Closed decisions removed."""
    pending: int
    """Pending decisions expired (removed)."""
    runs: int = 0
    """Keys of node attempts the model policy counted, removed (``survival_runs``;
    the survival model itself is kept)."""


def parse_duration(text: str) -> float:
    """``"90d"``, ``"12h"``, ``"30m"``, ``"45s"``, ``"2w"`` or plain seconds."""
    match = _DURATION.fullmatch(str(text))
    if match is None:
        raise StoreError(f"not a duration: {text!r} (use e.g. 90d, 12h, 30m, 45s or seconds)")
    return float(match.group(1)) * _UNITS[(match.group(2) or "s").lower()]


def format_duration(seconds: float) -> str:
    for unit in ("w", "d", "h", "m"):
        size = _UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"
