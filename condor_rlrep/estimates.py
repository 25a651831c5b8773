"""Runtime estimates ``e_t`` for every node of a workflow's dependency graph.

Sources, first one that has a value wins (docs/model.md §2: explicit per-node
value > BottleMod model > history > default):

1. the sidecar file (``--estimates FILE``): CSV ``node,seconds`` with an
   optional header row, or a JSON object ``{"node": seconds}``; instead of
   seconds an entry may name a BottleMod model, ``bottlemod:model.toml[#task]``
   (path relative to the sidecar file's directory): the user's explicit
   choice for that node, so it ranks with the file (origin ``bottlemod``);
2. the node's VARS macro ``rlrep_estimate`` (:data:`~condor_rlrep.dag.model.ESTIMATE_MACRO`);
3. the runtime a DAX/WfFormat file carries (:attr:`Node.runtime`): a measured
   value given for that very task, so it counts as explicit;
4. a BottleMod model named by VARS ``rlrep_bottlemod="model.toml[#task]"``
   (:data:`~condor_rlrep.dag.model.BOTTLEMOD_MACRO`; a relative path is
   relative to the directory of the DAG file holding the VARS line): the
   predicted finish of ``task``, or the model's makespan without ``#task``
   (:func:`condor_rlrep.bottlemod.estimate.estimate_source`, imported only
   when some node names a model; ``bottlemod=False`` turns this source off,
   not the sidecar's ``bottlemod:`` entries).
   A model that cannot be read or never finishes is a
   :class:`~condor_rlrep.errors.ModelError` naming the node and the file;
5. an extra source: any callable ``node -> seconds | None`` (the agent
   store's history …);
6. ``0`` for NOOP nodes, which submit no job and so take no time;
7. the workflow-wide default estimate, if one is configured.

A node left without an estimate is an :class:`EstimateError` naming it.
Estimates are seconds: a plain number, or a number with one of the suffixes
``s``, ``m``, ``h``, ``d`` (``90m`` = 5400). Negative, NaN and infinite
values are errors. Only nodes of the dependency graph get an estimate
(:func:`condor_rlrep.dag.graph.dependency_nodes`: no FINAL, SERVICE or
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

from condor_rlrep.dag.model import BOTTLEMOD_MACRO, ESTIMATE_MACRO, Node, Workflow
from condor_rlrep.errors import EstimateError, InputError
from condor_rlrep.dag.graph import dependency_nodes, missing_estimates_error
from condor_rlrep.safeload import LoadError, load_json

__all__ = [
    "BottleModRef",
    "EstimateSource",
    "EstimateOrigin",
    "parse_seconds",
    "parse_estimates",
    "read_estimates",
    "resolve_estimates",
    "resolve_estimates_with_origins",
    "bottlemod_models",
    "absolute_bottlemod_spec",
]

log = logging.getLogger(__name__)

EstimateSource = Callable[[Node], "float | None"]
"""An extra estimate source: returns seconds for a node, or None if it has none."""

EstimateOrigin = Literal["file", "vars", "runtime", "bottlemod", "extra", "noop", "default"]


class BottleModRef:
    """A sidecar entry ``bottlemod:PATH[#task]``: take the node's estimate from
    this model (``path`` absolute; ``task`` None: the model's makespan)."""

    __slots__ = ("path", "task", "source", "line")

    def __init__(self, path: str, task: str | None, source: str | None = None, line: int | None = None):
        self.path, self.task, self.source, self.line = path, task, source, line

    @property
    def spec(self) -> str:
        """The ``rlrep_bottlemod`` form, ``path[#task]``."""
        return self.path + (f"#{self.task}" if self.task else "")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BottleModRef):
            return NotImplemented
        return (self.path, self.task) == (other.path, other.task)

    def __hash__(self) -> int:
        return hash((self.path, self.task))

    def __repr__(self) -> str:
        return f"BottleModRef({self.spec!r})"

    @classmethod
    def parse(cls, text: str, base: str | None, source: str | None = None, line: int | None = None) -> BottleModRef:
        """``bottlemod:PATH[#task]`` → a reference; ``PATH`` relative to ``base``."""
        spec = text.strip()[len(BOTTLEMOD_PREFIX):].strip()
        model, sep, task = spec.rpartition("#")  # same split as bottlemod.estimate.split_spec
        if not sep:
            model, task = spec, ""
        if not model:
            raise ValueError(f"{text.strip()!r} names no model file (bottlemod:PATH[#task])")
        if not os.path.isabs(model) and base is not None:
            model = os.path.join(base, model)
        return cls(os.path.abspath(model), task or None, source, line)


def _is_model_entry(value: object) -> bool:
    return isinstance(value, str) and value.strip()[: len(BOTTLEMOD_PREFIX)].lower() == BOTTLEMOD_PREFIX

BOTTLEMOD_PREFIX = "bottlemod:"

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


def read_estimates(path: str | os.PathLike[str]) -> dict[str, float | BottleModRef]:
    """Read a sidecar estimates file (see :func:`parse_estimates`)."""
    text = Path(path).read_text(encoding="utf-8")
    return parse_estimates(text.splitlines(), path=str(path))


def parse_estimates(lines: Iterable[str], *, path: str | None = None) -> dict[str, float | BottleModRef]:
    """Estimates from the lines of a sidecar file: JSON object or CSV.

    JSON when the first non-blank character is ``{`` (or ``[``, to say
    that a list is not accepted); otherwise CSV rows
    ``node,seconds``. In CSV, blank lines and lines starting with ``#`` are
    skipped, and a first row whose second field is not a number is taken for a
    header. Every bad row or value raises :class:`InputError` with ``path``
    and line; a node given twice is an error. A value
    ``bottlemod:PATH[#task]`` becomes a :class:`BottleModRef` (``PATH``
    relative to the directory of ``path``).
    """
    lines = list(lines)
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith(("{", "[")):
        return _parse_json(lines, path)
    return _parse_csv(lines, path)


def _base_dir(path: str | None) -> str | None:
    return os.path.dirname(os.path.abspath(path)) if path else None


def _parse_json(lines: list[str], path: str | None) -> dict[str, float | BottleModRef]:
    try:
        document = load_json("\n".join(lines))
    except LoadError as err:
        raise InputError(err.message, path=path, line=err.line) from None
    if not isinstance(document, dict):
        raise InputError("an estimates JSON file must be one object {node: seconds}", path=path)
    estimates: dict[str, float | BottleModRef] = {}
    for name, value in document.items():
        try:
            if _is_model_entry(value):
                estimates[name] = BottleModRef.parse(value, _base_dir(path), path, _json_line(lines, name))
            else:
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


def _parse_csv(lines: list[str], path: str | None) -> dict[str, float | BottleModRef]:
    estimates: dict[str, float | BottleModRef] = {}
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
            if _is_model_entry(text):
                value: float | BottleModRef = BottleModRef.parse(text, _base_dir(path), path, number)
            else:
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
    sidecar: Mapping[str, float | BottleModRef] | None = None,
    extra: EstimateSource | None = None,
    default_estimate: float | None = None,
    bottlemod: bool = True,
) -> dict[str, float]:
    """``e_t`` for every dependency-graph node of ``workflow``, in file order.

    Sources in the priority order of the module docstring. Raises
    :class:`EstimateError` naming the nodes left without an estimate (and
    for a bad VARS value, runtime, extra-source value or default), and
    :class:`~condor_rlrep.errors.ModelError` for a BottleMod model that
    cannot give one.
    """
    return resolve_estimates_with_origins(
        workflow, sidecar=sidecar, extra=extra, default_estimate=default_estimate, bottlemod=bottlemod
    )[0]


def resolve_estimates_with_origins(
    workflow: Workflow,
    *,
    sidecar: Mapping[str, float | BottleModRef] | None = None,
    extra: EstimateSource | None = None,
    default_estimate: float | None = None,
    bottlemod: bool = True,
    allow_missing: bool = False,
) -> tuple[dict[str, float], dict[str, EstimateOrigin]]:
    """Like :func:`resolve_estimates`, also saying which source gave each value.

    ``allow_missing``: leave nodes without an estimate out of both dicts
    instead of raising (``inspect`` shows the structure of such workflows).
    """
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
    models = _BottleModSource()  # imports nothing until a node or the sidecar names a model
    vars_models = models if bottlemod else None
    for node in dependency_nodes(workflow):
        name = node.name
        if name in sidecar:
            entry = sidecar[name]
            if isinstance(entry, BottleModRef):
                estimates[name] = models.from_ref(node, entry)
                origins[name] = "bottlemod"
            else:
                estimates[name] = _from_sidecar(name, entry, path)
                origins[name] = "file"
            continue
        # DAGMan: the last VARS wins. An index walk, not reversed(): 10^5
        # iterator objects would wake the cyclic GC, which would then scan the
        # young objects of the whole workflow (most of this loop's former cost).
        assignments = node.vars
        k = len(assignments)
        while k:
            k -= 1
            assignment = assignments[k]
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
            value, origin = _without_vars(node, vars_models, extra, default_estimate, path)
            if value is None:
                missing.append(name)
            else:
                estimates[name] = value
                origins[name] = origin
    if missing and not allow_missing:
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
    node: Node,
    models: _BottleModSource | None,
    extra: EstimateSource | None,
    default_estimate: float | None,
    path: str | None,
) -> tuple[float | None, EstimateOrigin]:
    """Sources 3–7 for a node with neither a sidecar value nor VARS."""
    value = _from_runtime(node, path)
    if value is not None:
        return value, "runtime"
    if models is not None and node.vars:
        value = models(node)
        if value is not None:
            return value, "bottlemod"
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


class _BottleModSource:
    """Source 4: imports :mod:`condor_rlrep.bottlemod` on the first node that
    names a model (most workflows name none, and the hooks must stay lean)."""

    __slots__ = ("_source",)

    def __init__(self) -> None:
        self._source: EstimateSource | None = None

    def __call__(self, node: Node) -> float | None:
        spec = node.var(BOTTLEMOD_MACRO)
        if spec is None or not spec.strip():
            return None
        return self._predict(node)

    def from_ref(self, node: Node, ref: BottleModRef) -> float:
        """The estimate a sidecar ``bottlemod:`` entry names for ``node``."""
        import copy

        from condor_rlrep.dag.model import VarAssignment

        # the same source as for VARS, on a stand-in naming the sidecar as the place at fault
        stand_in = copy.copy(node)
        stand_in.vars = [VarAssignment(BOTTLEMOD_MACRO, ref.spec)]
        stand_in.source_path, stand_in.source_line = ref.source, ref.line
        value = self._predict(stand_in)
        if value is None:  # cannot happen: the stand-in names a model
            raise EstimateError(f"node {node.name}: no estimate from {ref.spec}", path=ref.source, line=ref.line)
        return value

    def _predict(self, node: Node) -> float | None:
        if self._source is None:
            from condor_rlrep.bottlemod.estimate import estimate_source

            self._source = estimate_source()
        value = self._source(node)
        if value is None:
            return None
        try:
            return _check_seconds(value)
        except ValueError as err:
            raise EstimateError(
                f"node {node.name}: {BOTTLEMOD_MACRO}: the model predicts {err}",
                path=node.source_path, line=node.source_line,
            ) from err


def bottlemod_models(workflow: Workflow, sidecar: Mapping[str, object] | None = None) -> list[str]:
    """Absolute paths of the BottleMod model files the dependency nodes of
    ``workflow`` name (VARS ``rlrep_bottlemod``, ``bottlemod:`` entries of
    ``sidecar``), sorted, without repeats: the inputs of their estimates
    besides the DAG and the sidecar (the hooks' plan cache watches them)."""
    paths = {value.path for value in (sidecar or {}).values() if isinstance(value, BottleModRef)}
    for node in dependency_nodes(workflow):
        spec = absolute_bottlemod_spec(node)
        if spec is not None:
            paths.add(spec[0])
    return sorted(paths)


def absolute_bottlemod_spec(node: Node) -> tuple[str, str | None] | None:
    """``(absolute model path, task or None)`` of the model ``node`` names, else None.

    A relative path is taken relative to the real directory of the DAG file
    that holds the node (as :func:`condor_rlrep.bottlemod.estimate.estimate_source`
    does), else the working directory.
    """
    spec = node.var(BOTTLEMOD_MACRO) if node.vars else None
    if spec is None or not spec.strip():
        return None
    model, sep, task = spec.strip().rpartition("#")  # same split as bottlemod.estimate.split_spec
    if not sep:
        model, task = spec.strip(), ""
    if not os.path.isabs(model) and node.source_path:
        model = os.path.join(os.path.dirname(os.path.realpath(node.source_path)), model)
    return os.path.abspath(model), (task or None)
