"""Runtime estimates ``e_t`` for every node of a workflow's dependency graph.

Sources, first one that has a value wins (DESIGN.md §2):

1. the sidecar file (``--estimates FILE``): CSV ``node,seconds`` with an
   optional header row, or a JSON object ``{"node": seconds}``;
2. the node's VARS macro ``rlrep_estimate`` (:data:`~condor_rlrep.dag.model.ESTIMATE_MACRO`);
3. the runtime a DAX/WfFormat file carries (:attr:`Node.runtime`);
4. an extra source: any callable ``node -> seconds | None`` (a BottleMod
   model named by VARS ``rlrep_bottlemod``, the agent store's history …);
5. ``0`` for NOOP nodes, which submit no job and so take no time;
6. the workflow-wide default estimate, if one is configured.

A node left without an estimate is an :class:`EstimateError` naming it.
Estimates are seconds: a plain number, or a number with one of the suffixes
``s``, ``m``, ``h``, ``d`` (``90m`` = 5400). Negative, NaN and infinite
values are errors. Only nodes of the dependency graph get an estimate
(:func:`condor_rlrep.graph.dependency_nodes`: no FINAL, SERVICE or
PROVISIONER node).
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Literal

from condor_rlrep.dag.model import ESTIMATE_MACRO, Node, Workflow
from condor_rlrep.errors import EstimateError, InputError
from condor_rlrep.graph import dependency_nodes, missing_estimates_error

__all__ = [
    "EstimateSource",
    "EstimateOrigin",
    "parse_seconds",
    "parse_estimates",
    "read_estimates",
    "resolve_estimates",
    "resolve_estimates_with_origins",
]

log = logging.getLogger(__name__)

EstimateSource = Callable[[Node], "float | None"]
"""An extra estimate source: returns seconds for a node, or None if it has none."""

EstimateOrigin = Literal["file", "vars", "runtime", "extra", "noop", "default"]

_INF = math.inf
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_SECONDS = re.compile(r"\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|infinity|nan))\s*([smhd]?)\s*", re.I)


def parse_seconds(text: str) -> float:
    """``text`` as a duration in seconds (``"1800"``, ``"30m"``, ``"1.5h"``).

    Raises :class:`ValueError` for anything else, and for negative, NaN or
    infinite durations.
    """
    try:  # the common case: a plain number
        return _check_seconds(float(text))
    except ValueError:
        pass
    match = _SECONDS.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a duration in seconds")
    value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    _check_seconds(value)
    return value


def _check_seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a number of seconds")
    if not 0.0 <= value < math.inf:  # NaN fails this too
        raise ValueError(f"{value!r} is not a finite number of seconds >= 0")
    return float(value)


def read_estimates(path: str | os.PathLike[str]) -> dict[str, float]:
    """Read a sidecar estimates file (see :func:`parse_estimates`)."""
    text = Path(path).read_text(encoding="utf-8")
    return parse_estimates(text.splitlines(), path=str(path))


def parse_estimates(lines: Iterable[str], *, path: str | None = None) -> dict[str, float]:
    """Estimates from the lines of a sidecar file: JSON object or CSV.

    JSON when the first non-blank character is ``{`` (or ``[``, to say
    that a list is not accepted); otherwise CSV rows
    ``node,seconds``. In CSV, blank lines and lines starting with ``#`` are
    skipped, and a first row whose second field is not a number is taken for a
    header. Every bad row or value raises :class:`InputError` with ``path``
    and line; a node given twice is an error.
    """
    lines = list(lines)
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith(("{", "[")):
        return _parse_json(lines, path)
    return _parse_csv(lines, path)


def _parse_json(lines: list[str], path: str | None) -> dict[str, float]:
    try:
        document = json.loads("\n".join(lines))
    except json.JSONDecodeError as err:
        raise InputError(f"invalid JSON: {err.msg}", path=path, line=err.lineno) from err
    if not isinstance(document, dict):
        raise InputError("an estimates JSON file must be one object {node: seconds}", path=path)
    estimates: dict[str, float] = {}
    for name, value in document.items():
        try:
            estimates[name] = _check_seconds(value)
        except ValueError as err:
            raise InputError(f"node {name}: {err}", path=path, line=_json_line(lines, name)) from err
    return estimates


def _json_line(lines: list[str], name: str) -> int | None:
    # JSON has no positions after decoding; the key's first line is close enough.
    needle = json.dumps(name)
    for number, line in enumerate(lines, 1):
        if needle in line:
            return number
    return None


def _parse_csv(lines: list[str], path: str | None) -> dict[str, float]:
    estimates: dict[str, float] = {}
    first_line: dict[str, int] = {}
    seen_row = False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        row = [field.strip() for field in next(csv.reader([stripped]))]
        if len(row) != 2 or not row[0]:
            raise InputError(f"expected 'node,seconds', got {stripped!r}", path=path, line=number)
        name, text = row
        try:
            value = parse_seconds(text)
        except ValueError as err:
            if not seen_row and _SECONDS.fullmatch(text) is None:
                seen_row = True  # a header row such as "node,seconds"
                continue
            raise InputError(f"node {name}: {err}", path=path, line=number) from err
        seen_row = True
        if name in estimates:
            raise InputError(f"node {name} given twice (first on line {first_line[name]})", path=path, line=number)
        estimates[name] = value
        first_line[name] = number
    return estimates


def resolve_estimates(
    workflow: Workflow,
    *,
    sidecar: Mapping[str, float] | None = None,
    extra: EstimateSource | None = None,
    default_estimate: float | None = None,
) -> dict[str, float]:
    """``e_t`` for every dependency-graph node of ``workflow``, in file order.

    Sources in the priority order of the module docstring. Raises
    :class:`EstimateError` naming the nodes left without an estimate (and
    for a bad VARS value, runtime, extra-source value or default).
    """
    return resolve_estimates_with_origins(
        workflow, sidecar=sidecar, extra=extra, default_estimate=default_estimate
    )[0]


def resolve_estimates_with_origins(
    workflow: Workflow,
    *,
    sidecar: Mapping[str, float] | None = None,
    extra: EstimateSource | None = None,
    default_estimate: float | None = None,
) -> tuple[dict[str, float], dict[str, EstimateOrigin]]:
    """Like :func:`resolve_estimates`, also saying which source gave each value."""
    path = workflow.source_path
    if default_estimate is not None:
        try:
            default_estimate = _check_seconds(default_estimate)
        except ValueError as err:
            raise EstimateError(f"default estimate: {err}", path=path) from err
    sidecar = sidecar or {}
    estimates: dict[str, float] = {}
    origins: dict[str, EstimateOrigin] = {}
    missing: list[str] = []
    macro = ESTIMATE_MACRO
    for node in dependency_nodes(workflow):
        name = node.name
        if name in sidecar:
            estimates[name] = _from_sidecar(name, sidecar[name], path)
            origins[name] = "file"
            continue
        for assignment in reversed(node.vars):  # DAGMan: the last VARS wins
            if assignment.key == macro:
                # inline fast path for a plain number: this loop runs for 10^5 nodes
                try:
                    value = float(assignment.value)
                except ValueError:
                    value = -1.0
                if not 0.0 <= value < _INF:
                    value = _vars_value(node, assignment.value, path)
                estimates[name] = value
                origins[name] = "vars"
                break
        else:
            value, origin = _without_vars(node, extra, default_estimate, path)
            if value is None:
                missing.append(name)
            else:
                estimates[name] = value
                origins[name] = origin
    if missing:
        raise missing_estimates_error(missing, path)
    unused = set(sidecar).difference(estimates)
    if unused:
        log.warning(
            "%d name(s) in the estimates file are not nodes of %s: %s",
            len(unused), path or "the workflow", ", ".join(sorted(unused)[:10]),
        )
    return estimates, origins


def _from_sidecar(name: str, value: object, path: str | None) -> float:
    try:
        return _check_seconds(value)
    except ValueError as err:
        raise EstimateError(f"node {name}: estimates file: {err}", path=path) from err


def _vars_value(node: Node, text: str, path: str | None) -> float:
    try:
        return parse_seconds(text)
    except ValueError as err:
        raise EstimateError(
            f"node {node.name}: VARS {ESTIMATE_MACRO}: {err}",
            path=node.source_path or path,
            line=node.source_line,
        ) from err


def _without_vars(
    node: Node, extra: EstimateSource | None, default_estimate: float | None, path: str | None
) -> tuple[float | None, EstimateOrigin]:
    """Sources 3–6 for a node with neither a sidecar value nor VARS."""
    value = _from_runtime(node, path)
    if value is not None:
        return value, "runtime"
    if extra is not None:
        value = _from_extra(node, extra, path)
        if value is not None:
            return value, "extra"
    if node.noop:
        return 0.0, "noop"
    return default_estimate, "default"


def _from_runtime(node: Node, path: str | None) -> float | None:
    if node.runtime is None:
        return None
    try:
        return _check_seconds(node.runtime)
    except ValueError as err:
        raise EstimateError(f"node {node.name}: runtime: {err}", path=node.source_path or path, line=node.source_line) from err


def _from_extra(node: Node, extra: EstimateSource, path: str | None) -> float | None:
    value = extra(node)
    if value is None:
        return None
    try:
        return _check_seconds(value)
    except ValueError as err:
        raise EstimateError(f"node {node.name}: estimate source gave {err}", path=path) from err
