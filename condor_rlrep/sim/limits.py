"""The ranges the simulator and the trace tools take, checked up front.

A value far outside them does not fail at once: it makes numpy ask for
petabytes (``--negotiation-interval 1e-9`` over a year), a loop run for
ever (a trace ``length = 1e18``) or a list of a billion machines
(``MaxNodes: 1e9``). Each check here raises one :class:`~condor_rlrep.errors.InputError`
naming the value and its limit before any work starts. The limits are far
above any real pool or trace (the paper's: 1,359 machines, one year).
"""

from __future__ import annotations

import math
from typing import Any

from condor_rlrep.errors import InputError

__all__ = [
    "MAX_MACHINES", "MAX_TRACE_SECONDS", "MAX_NEGOTIATION_CYCLES", "MAX_SECONDS_VALUE",
    "check_number", "check_machines", "check_length", "check_days", "check_engine_options",
]

MAX_MACHINES = 1_000_000
"""Machines of one trace (a campus pool has thousands)."""
MAX_TRACE_SECONDS = 100 * 365 * 86400.0
"""A trace's length: a century."""
MAX_NEGOTIATION_CYCLES = 50_000_000
"""Negotiation cycles of one simulation (a year at 1 s: 31.5 M); each is 8 bytes up front."""
MAX_SECONDS_VALUE = MAX_TRACE_SECONDS
"""Any other duration option (owner idle time, an interval)."""


def check_number(value: Any, name: str, *, lo: float | None = None, hi: float | None = None,
                 lo_open: bool = False, path: str | None = None, line: int | None = None) -> float:
    """``value`` as a finite float within [lo, hi] (lo excluded with ``lo_open``), else one InputError."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name}: {value!r} is not a number", path=path, line=line) from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise InputError(f"{name}: {value!r} is not a finite number", path=path, line=line)
    if lo is not None and (number < lo or (lo_open and number == lo)):
        raise InputError(f"{name}: {value!r} is below its limit ({'>' if lo_open else '>='} {lo:g})",
                         path=path, line=line)
    if hi is not None and number > hi:
        raise InputError(f"{name}: {value!r} is above its limit (<= {hi:g})", path=path, line=line)
    return number


def check_machines(value: Any, name: str, *, path: str | None = None, line: int | None = None) -> int:
    """A machine count in [0, :data:`MAX_MACHINES`] (an integer)."""
    number = check_number(value, name, lo=0, hi=MAX_MACHINES, path=path, line=line)
    if number != int(number):
        raise InputError(f"{name}: {value!r} is not a whole number", path=path, line=line)
    return int(number)


def check_length(value: Any, name: str = "length", *, path: str | None = None) -> float:
    """A trace length in seconds, in (0, :data:`MAX_TRACE_SECONDS`]."""
    return check_number(value, name, lo=0, lo_open=True, hi=MAX_TRACE_SECONDS, path=path)


def check_days(value: Any, name: str = "--days") -> float:
    """A number of days whose seconds are a valid trace length."""
    return check_number(value, name, lo=0, lo_open=True, hi=MAX_TRACE_SECONDS / 86400.0)


def check_engine_options(*, negotiation_interval: Any = 0.0, owner_idle: Any = 0.0, days: Any = None,
                         length: float | None = None, dagman_latency: Any = 0.0,
                         slot_turnaround: Any = 0.0) -> None:
    """The simulator's own options (``simulate``/``train``), with the trace
    ``length`` when known: the negotiation cycles it implies are bounded too."""
    interval = check_number(negotiation_interval, "--negotiation-interval", lo=0, hi=MAX_SECONDS_VALUE)
    check_number(owner_idle, "--owner-idle", lo=0, hi=MAX_SECONDS_VALUE)
    check_number(dagman_latency, "--dagman-latency", lo=0, hi=MAX_SECONDS_VALUE)
    check_number(slot_turnaround, "--slot-turnaround", lo=0, hi=MAX_SECONDS_VALUE)
    span = length
    if days is not None:
        span = check_days(days) * 86400.0 if span is None else min(span, check_days(days) * 86400.0)
    if interval > 0 and span is not None and span / interval > MAX_NEGOTIATION_CYCLES:
        raise InputError(f"--negotiation-interval: {negotiation_interval!r} s over {span:g} s makes "
                         f"{span / interval:.3g} negotiation cycles, above the limit ({MAX_NEGOTIATION_CYCLES:,}); "
                         f"use at least {span / MAX_NEGOTIATION_CYCLES:.3g} s")
