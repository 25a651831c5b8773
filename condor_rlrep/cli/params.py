"""Option types shared by the commands, each a thin shell over one library check.

* :class:`Phi` — the contingency φ, checked by
  :func:`condor_rlrep.criticality.check_phi` (finite, > −1, optionally ≥ a
  minimum): ``nan``, ``inf`` and ``-inf`` are refused, not passed on;
* :class:`FiniteFloat` — any finite number (``nan``/``inf`` refused);
* :class:`Seconds` — a duration, by :func:`condor_rlrep.estimates.parse_seconds`
  (``90``, ``1.5h``, ``30m``, ``2d``; finite, ≥ 0).

A bad value is a click usage error naming the option (exit 2).
"""

from __future__ import annotations

from typing import Any

import click

__all__ = ["Phi", "Seconds", "FiniteFloat"]


class Phi(click.ParamType):
    """The contingency φ (``minimum``: an inclusive lower bound on top of φ > −1)."""

    name = "phi"

    def __init__(self, minimum: float | None = None) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from condor_rlrep.criticality import PhiError, check_phi

        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                self.fail(f"{value!r} is not a number", param, ctx)
        try:
            return check_phi(value, self.minimum)
        except PhiError as err:
            if self.minimum is not None and isinstance(value, float) and value < self.minimum:
                # one lower bound per command: -1 and -0.5 are refused alike
                self.fail(f"the contingency φ must be a finite number >= {self.minimum:g} here, got {value!r}",
                          param, ctx)
            self.fail(err.message, param, ctx)


class Seconds(click.ParamType):
    """A duration in seconds, with an optional s/m/h/d suffix."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from condor_rlrep.estimates import parse_seconds

        try:
            return parse_seconds(value if isinstance(value, str) else repr(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)


class FiniteFloat(click.ParamType):
    """A finite float: click's FLOAT lets ``nan`` and ``inf`` through."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        import math

        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number
