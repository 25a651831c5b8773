"""The command line's one vocabulary: every option that more than one command
takes is defined here once, with its name, type, default and help.

* ``--phi φ`` — the contingency, default :data:`~condor_rlrep.criticality.DEFAULT_PHI`
  (0.5), a finite number ≥ 0 (:class:`~condor_rlrep.cli.params.Phi`);
* ``--criticality balanced|current`` — φ′ or φ″ (old name ``--phi-mode``);
* ``--default-estimate DURATION`` — ``90``, ``10m``, ``1.5h``, ``2d``;
* ``-o/--out PATH`` — what the command writes; its help says whether that is a
  FILE or a DIR (old names ``--output``, ``--out-dir``);
* ``--json`` — one compact JSON object on stdout instead of text;
* ``--max-replicas R`` — at most R replicas per node (old name ``--replicas``).

Old spellings stay accepted as hidden options that warn once on stderr, so
scripts written against an older release keep working.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Callable
from typing import Any

import click

from condor_rlrep.cli.params import Phi, Seconds

__all__ = [
    "HELP", "phi_option", "criticality_option", "default_estimate_option", "out_option",
    "json_option", "max_replicas_option", "deprecated_alias", "emit_json", "warn", "Group",
]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

LOGGER = "condor_rlrep"
HELP = {"help_option_names": ["-h", "--help"]}
"""Context settings of every group: ``-h`` works however a group is invoked
(click caches a command's help option from its first context)."""


class Group(click.Group):
    """A command group whose ``--help`` lists each command's whole first
    sentence: click cuts it at 45 characters, mid-phrase ("Load a JSON
    document written by `agent export` into the...")."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=1_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def warn(message: str) -> None:
    """``condor-rlrep: warning: …`` on stderr, unless ``-q`` was given."""
    if logging.getLogger(LOGGER).isEnabledFor(logging.WARNING):
        click.echo(f"condor-rlrep: warning: {message}", err=True)


def deprecated_alias(old: str, dest: str, new: str, **option: Any) -> Decorator:
    """A hidden option ``old`` that feeds parameter ``dest`` (spelt ``new`` in
    help) and warns that it is deprecated. Apply it under ``@click.command``
    like any option. Giving both spellings is a usage error."""
    hidden_name = "deprecated_" + old.lstrip("-").replace("-", "_")

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(hidden_name)
            given = value not in (None, ())
            if given:
                ctx = click.get_current_context()
                if ctx.get_parameter_source(dest) not in (None, click.core.ParameterSource.DEFAULT):
                    raise click.UsageError(f"give {new} or its old spelling {old}, not both")
                warn(f"{old} is deprecated; use {new}")
                kwargs[dest] = value
            return func(*args, **kwargs)

        return click.option(old, hidden_name, hidden=True, default=None, **option)(wrapper)

    return decorate


# condor_rlrep.criticality is imported where an option is built, not here:
# main.py imports this module, and `condor-rlrep hook …` should stay light.


def phi_option(help: str = "Contingency φ ≥ 0: the workflow should finish within (1+φ)·CR(W).") -> Decorator:
    from condor_rlrep.criticality import DEFAULT_PHI

    return click.option("--phi", type=Phi(minimum=0.0), default=DEFAULT_PHI, show_default=True, help=help)


def criticality_option(default: str | None = "balanced") -> Decorator:
    """``--criticality``; ``default=None`` leaves it to a config file (instrument)."""

    from condor_rlrep.criticality import PHI_MODES

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func = deprecated_alias("--phi-mode", "criticality", "--criticality", type=click.Choice(PHI_MODES))(func)
        return click.option(
            "--criticality", type=click.Choice(PHI_MODES), default=default, show_default=default is not None,
            help="What the agent decides on: balanced φ′ (all remaining tasks) or current-task φ″."
            + ("" if default is not None else "  [default: balanced]"),
        )(func)

    return decorate


def default_estimate_option(what: str = "nodes") -> Decorator:
    return click.option(
        "--default-estimate", type=Seconds(), default=None, metavar="DURATION",
        help=f"Estimate for {what} that have none: seconds, or with a s/m/h/d suffix (90, 10m, 1.5h).",
    )


def max_replicas_option(default: int | None, help: str, old: str | None = None) -> Decorator:
    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        if old:
            func = deprecated_alias(old, "max_replicas", "--max-replicas", type=click.IntRange(1, 100))(func)
        return click.option(
            "--max-replicas", type=click.IntRange(1, 100), default=default, show_default=default is not None,
            metavar="R", help=help,
        )(func)

    return decorate


def out_option(kind: str, help: str, *, required: bool = False, old: tuple[str, ...] = (), dest: str = "out",
               **extra: Any) -> Decorator:
    """``-o/--out``: ``kind`` is ``"file"`` or ``"dir"``; ``old`` are earlier
    spellings kept as hidden aliases (so "required" is checked by hand, once
    an alias had its chance)."""
    if kind not in ("file", "dir"):
        raise ValueError(kind)
    path = click.Path(dir_okay=kind == "dir", file_okay=kind == "file", **extra)
    aliases = ["deprecated_" + spelling.lstrip("-").replace("-", "_") for spelling in old]

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        # an alias given on the command line is processed before -o/--out
        if value is None and not any(ctx.params.get(name) for name in aliases):
            raise click.MissingParameter(ctx=ctx, param=param)
        return value

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for spelling in old:
            func = deprecated_alias(spelling, dest, "-o/--out", type=path)(func)
        return click.option(
            "-o", "--out", dest, type=path, default=None, metavar=kind.upper(),
            help=help + ("  [required]" if required else ""), callback=check if required else None,
        )(func)

    return decorate


def json_option(help: str = "Print one JSON object instead of text.") -> Decorator:
    return click.option("--json", "as_json", is_flag=True, help=help)


def emit_json(document: Any) -> None:
    """One compact JSON object on one line; non-finite numbers become null
    (JSON has no inf/NaN)."""
    try:
        text = json.dumps(document, allow_nan=False, ensure_ascii=False)
    except ValueError:
        text = json.dumps(_finite(document), allow_nan=False, ensure_ascii=False)
    click.echo(text)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value
