"""Progress of long work on stderr, with or without a terminal.

On a terminal: click's progress bar. Piped, under ``nohup``, in a batch
job: a log line every ``interval`` seconds (``RLREP_PROGRESS_INTERVAL``,
default 30) with done/total, rate and ETA, and one when the work ends — a
log a user can ``tail`` instead of a bar nobody sees. ``-q`` silences both.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

import click

from condor_rlrep.cli.options import LOGGER

__all__ = ["Progress", "progress_interval", "duration"]

_DEFAULT_INTERVAL = 30.0


def progress_interval() -> float:
    """Seconds between log lines: ``$RLREP_PROGRESS_INTERVAL`` (tests set it
    small), else 30."""
    value = os.environ.get("RLREP_PROGRESS_INTERVAL", "")
    try:
        seconds = float(value)
    except ValueError:
        return _DEFAULT_INTERVAL
    return seconds if math.isfinite(seconds) and seconds >= 0 else _DEFAULT_INTERVAL


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2.5 h`` — the precision an ETA deserves."""
    if not math.isfinite(seconds):
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """``total`` units of work called ``unit`` (``runs``, ``%``); use as a
    context manager and call :meth:`update` as work is done."""

    def __init__(self, label: str, total: float, unit: str, *, stream: TextIO | None = None,
                 interval: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.interval = progress_interval() if interval is None else interval
        self.clock = clock
        self.done = 0.0
        self._start = clock()
        self._last = self._start
        self._base = 0.0  # work already done when we started (a resumed sweep): not part of the rate
        self._bar: Any = None
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        # `condor-rlrep -q`: errors only, so no progress either
        self.quiet = logging.getLogger(LOGGER).getEffectiveLevel() > logging.WARNING

    def __enter__(self) -> Progress:
        if self.tty and not self.quiet:
            self._bar = click.progressbar(length=max(1, int(self.total)), label=self.label, file=self.stream)
            self._bar.__enter__()
        return self

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, value, traceback)
        elif kind is None and self.total:
            self._say(final=True)

    def announce(self, text: str) -> None:
        """Say up front how much work there is (a log line, also on a terminal)."""
        if self.quiet:
            return
        if self._bar is not None:  # a bar drawn already: the line replaces it, the next update redraws it
            self.stream.write("\r\x1b[K")
        click.echo(f"condor-rlrep: {self.label}: {text}", file=self.stream)

    def skip(self, amount: float) -> None:
        """Work found already done: counted, but not in the rate."""
        self.done += amount
        self._base += amount
        if self._bar is not None:
            self._bar.update(int(amount))

    def update(self, amount: float) -> None:
        self.done += amount
        if self._bar is not None:
            self._bar.update(int(amount))
            return
        now = self.clock()
        if now - self._last >= self.interval and self.done < self.total:
            self._last = now
            self._say()

    def _say(self, final: bool = False) -> None:
        if self.quiet:
            return
        elapsed = self.clock() - self._start
        worked = self.done - self._base
        rate = worked / elapsed if elapsed > 0 else math.nan
        share = 100.0 * self.done / self.total if self.total else 100.0
        if self.unit == "%":
            text = f"{share:.0f} % done"
        else:
            text = f"{_amount(self.done)}/{_amount(self.total)} {self.unit} ({share:.0f} %)"
        if final:
            text += f" in {duration(elapsed)}"
        elif worked > 0 and rate > 0:
            per_minute = rate * 60 * (100.0 / self.total if self.unit == "%" else 1.0)
            text += f", {per_minute:.3g} {self.unit}/min, ETA {duration((self.total - self.done) / rate)}"
        else:
            text += f", {duration(elapsed)} so far"
        try:
            click.echo(f"condor-rlrep: {self.label}: {text}", file=self.stream)
        except OSError:
            pass


def _amount(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"
