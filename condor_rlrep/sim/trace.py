"""The cluster trace model the simulator runs on.

A trace is columns in numpy arrays (the engine indexes them; nothing per
event is allocated) and job names in one :class:`StringColumn`. Times are seconds from ``start``. Machines are indexed
0..M-1 in the order of ``machines.csv``; logins and jobs refer to them by
index. The on-disk format (a folder of CSV files and ``trace.toml``) is read
and written by :mod:`condor_rlrep.sim.trace_io`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, overload

import numpy as np

__all__ = ["Trace", "StringColumn", "hourly_utc_offsets"]


class StringColumn(Sequence[str]):
    """Many short strings held as one text and the end offset of each: a
    read-only sequence of ``str`` without an object per value (a year's
    half-million job names take a tenth of the memory of a list, and leave
    nothing scattered for the allocator to keep)."""

    __slots__ = ("_text", "_ends")

    def __init__(self, values: Iterable[str] = ()):
        values = values if isinstance(values, list) else list(values)
        self._text = "".join(values)
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        self._ends = np.cumsum(lengths, dtype=np.int64)

    @classmethod
    def from_text(cls, text: str, lengths: np.ndarray) -> StringColumn:
        """Values given as their concatenation and their lengths."""
        out = cls()
        out._text = text
        out._ends = np.cumsum(np.asarray(lengths, dtype=np.int64), dtype=np.int64)
        if (int(out._ends[-1]) if len(out._ends) else 0) != len(text):
            raise ValueError("lengths do not add up to the text")
        return out

    @classmethod
    def concat(cls, columns: Sequence[StringColumn]) -> StringColumn:
        out = cls()
        out._text = "".join(c._text for c in columns)
        offsets = np.cumsum([0] + [len(c._text) for c in columns[:-1]], dtype=np.int64)
        out._ends = np.concatenate([c._ends + off for c, off in zip(columns, offsets)]) if columns else out._ends
        return out

    @property
    def text(self) -> str:
        """All values run together (to search them in one pass)."""
        return self._text

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self._ends)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("StringColumn index out of range")
        start = int(self._ends[i - 1]) if i else 0
        return self._text[start : int(self._ends[i])]

    def __iter__(self) -> Iterator[str]:
        text = self._text
        start = 0
        for end in self._ends.tolist():
            yield text[start:end]
            start = end

    def take(self, order: Sequence[int] | np.ndarray) -> StringColumn:
        """The values in ``order``."""
        values = list(self)
        return StringColumn([values[i] for i in np.asarray(order).tolist()])

    def tolist(self) -> list[str]:
        return list(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StringColumn):
            return self._text == other._text and np.array_equal(self._ends, other._ends)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        head = ", ".join(repr(v) for v in self[:3])
        return f"StringColumn([{head}{', ...' if len(self) > 3 else ''}], {len(self)} values)"


def hourly_utc_offsets(start: datetime, hours: int) -> np.ndarray:
    """UTC offset (seconds) of ``start``'s zone at each whole hour after ``start``.

    Element k is the offset at ``start + k`` hours of absolute time, so time
    zones with summer time give the right wall clock (Europe/London: 0 in
    winter, 3600 in summer).
    """
    tz = start.tzinfo
    base = start.timestamp()
    return np.array(
        [datetime.fromtimestamp(base + 3600.0 * k, tz).utcoffset().total_seconds() for k in range(hours + 1)],
        dtype=np.float64,
    )


@dataclass
class Trace:
    start: datetime
    """Wall-clock start of the trace, time-zone aware (hours of day and the
    nightly reboot are taken in this zone)."""
    length: float
    """Seconds covered by the trace."""
    source: str
    machine_names: list[str]
    machine_rooms: list[str]
    active_watts: np.ndarray  # float64[M]
    idle_watts: np.ndarray  # float64[M]
    login_machine: np.ndarray  # int32[L], sorted by login_start
    login_start: np.ndarray  # float64[L]
    login_end: np.ndarray  # float64[L]
    job_names: Sequence[str]
    """Held as a :class:`StringColumn` (a list given is converted)."""
    job_submit: np.ndarray  # float64[J], sorted
    job_duration: np.ndarray  # float64[J]
    job_owner: list[str] | None = None
    machine_extra: dict[str, list[str]] = field(default_factory=dict)
    """Optional extra columns of machines.csv, kept verbatim."""

    def __post_init__(self) -> None:
        if not isinstance(self.job_names, StringColumn):
            self.job_names = StringColumn(self.job_names)

    @property
    def machine_count(self) -> int:
        return len(self.machine_names)

    @property
    def login_count(self) -> int:
        return int(self.login_start.shape[0])

    @property
    def job_count(self) -> int:
        return int(self.job_submit.shape[0])

    def local_clock(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Wall-clock hour of day (float in [0, 24)) and weekday (0 = Monday)
        of trace ``times`` (seconds from ``start``), in the trace's time zone."""
        times = np.asarray(times, dtype=np.float64)
        hours = int(np.ceil(max(self.length, float(times.max(initial=0.0))) / 3600.0)) + 1
        offsets = hourly_utc_offsets(self.start, hours)
        idx = np.clip((times // 3600.0).astype(np.int64), 0, hours)
        wall = self.start.timestamp() + times + offsets[idx]
        hour = np.mod(wall, 86400.0) / 3600.0
        weekday = (np.floor_divide(wall, 86400.0).astype(np.int64) + 3) % 7  # 1970-01-01 was a Thursday
        return hour, weekday
