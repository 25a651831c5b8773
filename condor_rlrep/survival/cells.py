"""Checks shared by both backends' survival-model tables (schema version 4).

A cell is ``(hour of week 0–167, idle bucket ≥ -1 (-1: unknown), exposure
seconds ≥ 0, evictions ≥ 0)``; the store adds cells of one recorded node
attempt under a key it keeps, so that a POST run twice counts once.

The keys are pruned by retention; the store's *survival horizon* (a value
of its ``settings`` table) says how far: an update for an unknown key whose
runs ended before it is refused as possibly a repeat (see
:mod:`condor_rlrep.store.retention`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from condor_rlrep.errors import StaleExposureError, StoreError

__all__ = ["check_cells", "check_key", "check_time", "stale", "MAX_BUCKET", "HORIZON_SETTING"]

HORIZON_SETTING = "survival_horizon"
"""Key of the survival horizon (POSIX seconds, JSON) in a store's ``settings``;
absent: no key was ever pruned."""

MAX_BUCKET = 63
"""Upper bound of a stored idle bucket (the model has a handful; anything far
beyond is a corrupt row or document)."""


def check_key(key: Any) -> str:
    if not isinstance(key, str) or not key or len(key) > 4096:
        raise StoreError(f"survival record key must be a non-empty string; got {key!r}")
    return key


def check_time(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise StoreError(f"{what} must be a finite number of POSIX seconds; got {value!r}")
    return float(value)


def stale(location: str, key: str, ran_until: float, horizon: float) -> StaleExposureError:
    """The refusal of an unknown key whose runs ended before the horizon."""
    from datetime import datetime, timezone

    def when(t: float) -> str:
        return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")

    return StaleExposureError(
        f"{location}: node attempt {key!r} ran until {when(ran_until)}, before the store's survival horizon"
        f" {when(horizon)} (the keys of runs recorded before it were pruned by retention): it cannot be told"
        " from a repeat of one already counted, so it is not counted")


def check_cells(cells: Iterable[Sequence[Any]], where: str = "survival") -> list[tuple[int, int, float, float]]:
    """``cells`` as rows, each checked (StoreError names the entry at fault);
    cells of the same (hour, bucket) are summed."""
    merged: dict[tuple[int, int], list[float]] = {}
    for i, cell in enumerate(cells):
        at = f"{where}[{i}]"
        if not isinstance(cell, (list, tuple)) or len(cell) != 4:
            raise StoreError(f"{at}: expected [hour, bucket, exposure, evictions]")
        hour, bucket, exposure, evictions = cell
        if not _is_int(hour) or not 0 <= hour < 168:
            raise StoreError(f"{at}.hour: must be an hour of the week 0..167; got {hour!r}")
        if not _is_int(bucket) or not -1 <= bucket <= MAX_BUCKET:
            raise StoreError(f"{at}.bucket: must be -1 (unknown) .. {MAX_BUCKET}; got {bucket!r}")
        for name, value in (("exposure", exposure), ("evictions", evictions)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise StoreError(f"{at}.{name}: must be a finite number >= 0; got {value!r}")
        total = merged.setdefault((hour, bucket), [0.0, 0.0])
        total[0] += float(exposure)
        total[1] += float(evictions)
    return [(h, b, e, n) for (h, b), (e, n) in sorted(merged.items())]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
