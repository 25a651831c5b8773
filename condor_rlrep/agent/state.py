"""The agent's state: (hour of day of the submission, φ′ bin) — §4.4.

Bins are ``φ′ ≤ 0, (0, P/n], …, (P(n−1)/n, P], P < φ′``: ``n + 2`` of them,
so ``24·(n+2)`` states, numbered ``hour·(n+2) + bin``.
Light on purpose: imported by the hooks' fast path (no numpy).
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_left
from datetime import datetime

from condor_rlrep.agent.config import UTC_NAMES, AgentConfig
from condor_rlrep.errors import RlrepError

__all__ = ["StateSpace", "StateError"]


class StateError(RlrepError, ValueError):
    """An hour or φ′ that names no state (NaN, out of range, wrong type)."""


class StateSpace:
    """Maps (time or hour, φ′) to a state index and back."""

    __slots__ = ("n_bins", "p_max", "timezone", "n_phi_bins", "n_states", "_edges", "_zone", "_utc")

    def __init__(self, n_bins: int = 10, p_max: float = 1.0, timezone: str = "UTC"):
        AgentConfig(n_bins=n_bins, p_max=p_max, timezone=timezone)  # validates
        self.n_bins = n_bins
        self.p_max = float(p_max)
        self.timezone = timezone
        self.n_phi_bins = n_bins + 2
        self.n_states = 24 * self.n_phi_bins
        # edges[k] = P·k/n; bisect_left puts φ′ == edge into the lower bin, as the
        # half-open intervals (a, b] require, without ceil()'s rounding trouble
        self._edges = [self.p_max * k / n_bins for k in range(n_bins + 1)]
        # P·n/n need not round back to P; the last bin is (P(n−1)/n, P] exactly.
        self._edges[-1] = self.p_max
        self._utc = timezone in UTC_NAMES
        if self._utc:
            self._zone = None  # hour_of needs no zone: the hooks need not import zoneinfo
        else:
            from zoneinfo import ZoneInfo

            self._zone = ZoneInfo(timezone)

    @classmethod
    def from_config(cls, config: AgentConfig) -> StateSpace:
        return cls(config.n_bins, config.p_max, config.timezone)

    def phi_bin(self, phi_prime: float) -> int:
        """Bin of φ′ (0 for φ′ ≤ 0, n+1 for φ′ > P; ±inf allowed, NaN not)."""
        try:
            value = float(phi_prime)
        except (TypeError, ValueError) as err:
            raise StateError(f"phi' must be a number; got {phi_prime!r}") from err
        if value != value:
            raise StateError("phi' is NaN: no state for it")
        return bisect_left(self._edges, value)

    def hour_of(self, timestamp: float) -> int:
        """Hour of day of a POSIX time in the configured zone."""
        try:
            ts = float(timestamp)
        except (TypeError, ValueError) as err:
            raise StateError(f"time must be POSIX seconds; got {timestamp!r}") from err
        if not math.isfinite(ts):
            raise StateError(f"time must be finite; got {timestamp!r}")
        if self._utc:
            return int(ts // 3600.0) % 24
        try:
            return datetime.fromtimestamp(ts, self._zone).hour
        except (OverflowError, OSError, ValueError) as err:
            raise StateError(f"time {timestamp!r} is out of range") from err

    def hour_of_week(self, timestamp: float) -> int:
        """Hour of the week (Monday 00:00 = 0 … Sunday 23:00 = 167) of a POSIX
        time in the configured zone (the survival model's clock)."""
        day_hour = self.hour_of(timestamp)
        ts = float(timestamp)
        if self._utc:
            return (int(ts // 3600.0) + 72) % 168  # 1970-01-01 was a Thursday
        return datetime.fromtimestamp(ts, self._zone).weekday() * 24 + day_hour

    def index(self, hour: int, phi_prime: float) -> int:
        """State index of (hour 0–23, φ′)."""
        if isinstance(hour, bool):
            raise StateError(f"hour must be an integer 0-23; got {hour!r}")
        try:
            hour = operator.index(hour)  # int, numpy integers
        except TypeError:
            if isinstance(hour, float) and hour.is_integer():
                hour = int(hour)
            else:
                raise StateError(f"hour must be an integer 0-23; got {hour!r}") from None
        if not 0 <= hour <= 23:
            raise StateError(f"hour must be in 0-23; got {hour}")
        return hour * self.n_phi_bins + self.phi_bin(phi_prime)

    def index_at(self, timestamp: float, phi_prime: float) -> int:
        """State index of a submission at POSIX time ``timestamp`` with ``φ′``."""
        return self.hour_of(timestamp) * self.n_phi_bins + self.phi_bin(phi_prime)

    def decode(self, state: int) -> tuple[int, int]:
        """(hour, bin) of a state index."""
        if isinstance(state, bool) or not isinstance(state, int) or not 0 <= state < self.n_states:
            raise StateError(f"state must be an integer in [0, {self.n_states}); got {state!r}")
        return divmod(state, self.n_phi_bins)

    def bin_labels(self) -> list[str]:
        """Human-readable φ′ interval of each bin."""
        edges = [f"{e:g}" for e in self._edges]
        labels = ["<=0"]
        labels += [f"({edges[k]},{edges[k + 1]}]" for k in range(self.n_bins)]
        labels.append(f">{edges[-1]}")
        return labels
