"""BottleMod model files (TOML; JSON with the same structure also works,
chosen by a ``.json`` suffix).

Format (all tables optional unless marked; units are the user's, consistent
within the file — typically seconds, bytes and bytes/s or CPU-seconds)::

    name = "paper-eval"                 # optional

    [links.net]                         # a link shared by several transfers
    capacity = 12780544                 # function of time: rate of the link

    [tasks.dl1]
    max_progress = 1137486559           # required, > 0: progress at the finish
    start = 0                           # optional: time the task may begin
    output = { points = [[0, 0], [1, 1]] }   # optional, O(p); default: identity

    [tasks.dl1.inputs.remote]           # a data input named "remote"
    requirement = { points = [[0, 0], [1137486559, 1137486559]] }  # R(k): progress
    source = 1137486559                 # external input I(t): amount over time
    # from = "other_task"               # ... or the output of another task

    [tasks.dl1.resources.net]           # a resource named "net"
    requirement = 1                     # Q(p): resource per unit of progress
    link = "net"                        # a share of link "net" ...
    weight = 50                         # ... with this weight (default 1)
    # allocation = { steps = [[0, 1], [30, 0.5]] }  # ... or a rate over time

A *function* is written as one of:

* a number: that constant everywhere;
* ``{ points = [[x, y], ...] }``: piecewise-linear through the points; a
  repeated ``x`` is a jump, and the last point listed at that ``x`` is the
  value there (right-continuous); constant before the first and after the
  last point;
* ``{ steps = [[x, v], ...] }``: piecewise constant, ``v`` from ``x`` on;
* ``{ ppoly = { x = [...], c = [[...], ...] } }``: polynomial pieces in the
  layout of ``scipy.interpolate.PPoly`` (``c[m][i]`` multiplies
  ``(x - x[i]) ** (degree - m)``), optional ``left``/``end`` values for
  outside ``[x[0], x[-1]]``.

Requirement and input functions must be non-decreasing; resource
requirements must be piecewise constant (``steps`` or a number); allocations
and link capacities piecewise-linear and non-negative.  Every problem is
reported as :class:`~condor_rlrep.errors.ModelError` with the file, the line
when it can be found, and the dotted name of the item at fault.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from condor_rlrep.bottlemod.functions import PFunc
from condor_rlrep.bottlemod.model import DataInput, Link, Resource, Task, Workflow
from condor_rlrep.errors import ModelError
from condor_rlrep.safeload import LoadError, load_json, load_toml, tamed_copy

__all__ = ["load_model", "parse_model", "model_from_dict", "parse_function", "predict_finish"]


def load_model(path: str | Path) -> Workflow:
    """Read and validate a model file."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as fh:  # (what Path.read_text does, without its layers)
            text = fh.read()
    except OSError as err:
        raise ModelError(f"cannot read model: {err.strerror or err}", path=str(path)) from err
    except UnicodeDecodeError as err:
        line = _raw_line_of(path, err.start)
        raise ModelError(f"not UTF-8 text: byte 0x{err.object[err.start]:02x} at offset {err.start}",
                         path=str(path), line=line) from None
    return parse_model(text, source=str(path), fmt="json" if path.suffix.lower() == ".json" else "toml")


def _raw_line_of(path: Path, offset: int) -> int | None:
    """The 1-based line of byte ``offset`` of ``path`` (None when it cannot be read again)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(offset).count(b"\n") + 1
    except OSError:
        return None


def parse_model(text: str, source: str | None = None, fmt: str = "toml") -> Workflow:
    """Parse and validate the text of a model file (``fmt``: "toml" or "json",
    the same structure either way)."""
    if fmt == "json":
        try:
            data = load_json(text)
        except LoadError as err:
            raise ModelError(err.message, path=source, line=err.line) from None
        if not isinstance(data, dict):
            raise ModelError("a JSON model must be an object", path=source)
        wf = model_from_dict(data, source=source)
        wf.validate()
        return wf
    try:
        # Integers beyond float range stay ints here: every number read below
        # goes through _as_float (±inf, "must be finite"), and a 'ppoly' table
        # is tamed when it needs it, so no second walk over the document.
        data = load_toml(text, keep_huge_ints=True)
    except LoadError as err:
        raise ModelError(err.message, path=source, line=err.line) from None
    try:
        wf = model_from_dict(data, source=source)
        wf.validate()
    except ModelError as err:
        if err.line is None and source is not None:
            item = err.message.split(":", 1)[0]
            raise ModelError(err.message, path=source, line=_locate(text, item)) from None
        raise
    return wf


def model_from_dict(data: Mapping[str, Any], source: str | None = None) -> Workflow:
    """Build a :class:`Workflow` from parsed TOML (or JSON) data."""

    def fail(item: str, msg: str) -> None:
        raise ModelError(f"{item}: {msg}", path=source)

    _check_keys(data, {"name", "links", "tasks"}, "", fail)
    links = [Link(lname, parse_function(spec["capacity"], f"{item}.capacity", source))
             for lname, item, spec in _entries(data, "links", "", {"capacity"}, "capacity", fail)]
    tasks = []
    for tname, w, spec in _entries(data, "tasks", "", {"max_progress", "start", "output", "inputs", "resources"},
                                   "max_progress", fail):
        pmax = _number(spec["max_progress"], f"{w}.max_progress", fail)
        start = _number(spec.get("start", 0.0), f"{w}.start", fail)
        output = _optional_function(spec, "output", w, source)
        inputs = []
        for iname, wi, ispec in _entries(spec, "inputs", w, {"requirement", "source", "from"}, "requirement", fail):
            src = _optional_function(ispec, "source", wi, source)
            frm = _name_of(ispec, "from", wi, "task", fail)
            inputs.append(DataInput(iname, parse_function(ispec["requirement"], f"{wi}.requirement", source),
                                    source=src, from_task=frm))
        resources = []
        for rname, wr, rspec in _entries(spec, "resources", w, {"requirement", "allocation", "link", "weight"},
                                         "requirement", fail):
            alloc = _optional_function(rspec, "allocation", wr, source)
            link = _name_of(rspec, "link", wr, "link", fail)
            resources.append(Resource(rname, parse_function(rspec["requirement"], f"{wr}.requirement", source),
                                      allocation=alloc, link=link,
                                      weight=_number(rspec.get("weight", 1.0), f"{wr}.weight", fail)))
        tasks.append(Task(tname, pmax, tuple(inputs), tuple(resources), output, start))
    name = data.get("name", "")
    if not isinstance(name, str):
        fail("name", "must be a string")
    return Workflow(tuple(tasks), tuple(links), name, source)


def parse_function(spec: Any, item: str, source: str | None = None) -> PFunc:
    """One function from its file notation (see the module docstring)."""

    kind = type(spec)
    if kind is float or kind is int:  # the common case first (a bool is not of type int)
        value = spec if kind is float else _as_float(spec)
        if not math.isfinite(value):
            raise ModelError(f"{item}: must be finite", path=source)
        return PFunc.constant(value)

    def fail(msg: str) -> None:
        raise ModelError(f"{item}: {msg}", path=source)

    if isinstance(spec, bool):
        fail("expected a number or a table with 'points', 'steps' or 'ppoly'")
    if isinstance(spec, (int, float)):
        if not math.isfinite(_as_float(spec)):
            fail("must be finite")
        return PFunc.constant(float(spec))
    if not isinstance(spec, Mapping):
        fail("expected a number or a table with 'points', 'steps' or 'ppoly'")
    kinds = [k for k in ("points", "steps", "ppoly") if k in spec]
    if len(kinds) != 1:
        fail("needs exactly one of 'points', 'steps' or 'ppoly'")
    kind = kinds[0]
    extra = set(spec) - {kind, "left", "end"} if kind == "ppoly" else set(spec) - {kind}
    if extra:
        fail(f"unknown key {sorted(extra)[0]!r}")
    try:
        if kind == "ppoly":
            body = spec[kind]
            if not isinstance(body, Mapping) or "x" not in body or "c" not in body:
                fail("'ppoly' needs 'x' and 'c'")
            try:
                return PFunc(body["x"], body["c"], spec.get("left"), spec.get("end"))
            except OverflowError:  # an integer beyond float range: ±inf, as load_toml makes it
                return PFunc(*tamed_copy([body["x"], body["c"], spec.get("left"), spec.get("end")]))
        xs, ys = _number_pairs(spec[kind])
        if not xs:
            fail(f"'{kind}' must be a non-empty list of [x, y] number pairs")
        return PFunc.from_points(xs, ys) if kind == "points" else PFunc.from_steps(xs, ys)
    except (ValueError, TypeError) as err:
        fail(str(err))
    raise AssertionError("unreachable")


def predict_finish(model_path: str | Path, task: str | None = None) -> float:
    """Predicted finish time (model time units, seconds by convention) of
    ``task``, or the workflow's makespan when ``task`` is ``None``.

    Raises :class:`ModelError` when the model is invalid or the task (or some
    task, for the makespan) never finishes.
    """
    from condor_rlrep.bottlemod.analysis import analyze

    wf = load_model(model_path)
    result = analyze(wf)
    if task is None:
        unfinished = [n for n, r in result.tasks.items() if r.finish is None]
        if unfinished:
            raise ModelError(f"task {unfinished[0]!r} never finishes", path=str(model_path))
        return float(result.makespan)  # type: ignore[arg-type]
    if task not in result.tasks:
        raise ModelError(f"no task named {task!r}", path=str(model_path))
    fin = result.tasks[task].finish
    if fin is None:
        raise ModelError(f"task {task!r} never finishes", path=str(model_path))
    return float(fin)


# ------------------------------------------------------------------ helpers
def _entries(parent: Mapping[str, Any], key: str, where: str, allowed: set[str], required: str,
             fail) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """The named tables under ``parent[key]`` as (name, item, table), each
    checked in turn: a table, no key but ``allowed``, ``required`` present."""
    prefix = f"{where}.{key}" if where else key
    for name, spec in _table(parent.get(key, {}), prefix, fail).items():
        item = f"{prefix}.{name}"
        if type(spec) is not dict:
            spec = _table(spec, item, fail)
        if not allowed.issuperset(spec):
            _check_keys(spec, allowed, item, fail)
        if required not in spec:
            fail(item, f"missing '{required}'")
        yield name, item, spec


def _optional_function(spec: Mapping[str, Any], key: str, item: str, source: str | None) -> PFunc | None:
    return parse_function(spec[key], f"{item}.{key}", source) if key in spec else None


def _name_of(spec: Mapping[str, Any], key: str, item: str, what: str, fail) -> str | None:
    """``spec[key]``, the name of a task or link, if given."""
    name = spec.get(key)
    if name is not None and not isinstance(name, str):
        fail(f"{item}.{key}", f"must be a {what} name")
    return name


def _table(v: Any, item: str, fail) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        fail(item, "must be a table")
    return v


def _number(v: Any, item: str, fail) -> float:
    kind = type(v)
    if kind is float or kind is int:  # (the common case first)
        value = v if kind is float else _as_float(v)
        if math.isfinite(value):
            return value
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(_as_float(v)):
        fail(item, "must be a finite number")
    return float(v)


def _number_pairs(pairs: Any) -> tuple[list[float], list[float]]:
    """``pairs``, a list of [x, y] number pairs (bools are not numbers), as
    float lists (:func:`_as_float`); two empty lists when it is not one."""
    xs: list[float] = []
    ys: list[float] = []
    if not isinstance(pairs, list):
        return xs, ys
    for p in pairs:
        if not isinstance(p, list) or len(p) != 2:
            return [], []
        x, y = p
        for v in p:
            kind = type(v)
            if kind is not float and kind is not int and (not isinstance(v, (int, float)) or isinstance(v, bool)):
                return [], []
        xs.append(x if type(x) is float else _as_float(x))
        ys.append(y if type(y) is float else _as_float(y))
    return xs, ys


def _as_float(v: int | float) -> float:
    """``float(v)``, or ±inf for an integer beyond float range (a dict built in code)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _check_keys(spec: Mapping[str, Any], allowed: set[str], item: str, fail) -> None:
    if not allowed.issuperset(spec):
        extra = sorted(set(spec) - allowed)
        fail(f"{item}.{extra[0]}" if item else extra[0], "unknown key")


def _locate(text: str, item: str) -> int | None:
    """Line of ``item`` (a dotted name) in the TOML text, best effort."""
    parts = item.split(".")
    lines = text.splitlines()
    header = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*(#.*)?$")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        for no, line in enumerate(lines, 1):
            m = header.match(line)
            if m and m.group(1).replace(" ", "").replace('"', "") == prefix:
                if cut == len(parts):
                    return no
                key = parts[cut]
                for no2 in range(no, len(lines)):
                    if header.match(lines[no2]):
                        break
                    if re.match(rf"^\s*{re.escape(key)}\s*=", lines[no2]):
                        return no2 + 1
                return no
    return None
