"""JSON and TOML from untrusted files, with one kind of failure: :class:`LoadError`.

The standard parsers fail in ways a reader of the error should never see:
``RecursionError`` on deeply nested arrays, ``ValueError`` ("Exceeds the
limit (4300 digits) for integer string conversion") on long integers, and
integers that parse but make every later ``float()`` raise ``OverflowError``.
Here:

* nesting deeper than the interpreter can follow is a :class:`LoadError`
  naming the line where it gets too deep;
* an integer too large for a float (any number of digits) becomes ``±inf``,
  as a float literal that large already does (``1e400``), so that the
  callers' checks ("must be a finite number") name the item at fault;
  integers a float can hold stay ints;
* malformed text is a :class:`LoadError` with the parser's message and line.

Callers turn :class:`LoadError` into their own :class:`~condor_rlrep.errors.InputError`
subclass with the file name.
"""

from __future__ import annotations

import json
import math
import re
from types import ModuleType
from typing import Any

__all__ = ["LoadError", "load_json", "load_toml", "tamed_copy"]

# Beyond this many digits an integer is certainly not a float-sized value worth keeping exact.
_INT_DIGITS = 300
_FLOAT_MAX_INT = int(1.7976931348623157e308)
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_REPORT_DEPTH = 256


class LoadError(ValueError):
    """Text that is not valid JSON/TOML, or too deeply nested; ``line`` is 1-based or None."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


def _json_int(text: str) -> int | float:
    if len(text.lstrip("-")) <= _INT_DIGITS:
        return int(text)
    return float(text)  # a string that long: ±inf (no digit limit for floats)


def load_json(text: str) -> Any:
    """Parse JSON text (see the module docstring)."""
    try:
        return json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as err:
        raise LoadError(f"not valid JSON: {err.msg} (column {err.colno})", err.lineno) from None
    except RecursionError:
        raise LoadError("not usable JSON: arrays/objects nested too deeply", _deep_line(text)) from None


_TOML: ModuleType | None = None


def _toml() -> ModuleType:
    """The TOML parser: tomli's compiled (mypyc) build when installed, else
    the standard library's ``tomllib``.

    ``tomllib`` *is* tomli 2.0 (PEP 680): tomli 2.2–2.3 parse the same TOML
    1.0 with the same results and messages, compiled about 2.5× faster —
    half of loading a small BottleMod model was the pure-Python parser
    (issue 28). tomli 2.4 reads TOML 1.1, which accepts more than
    ``tomllib``; pyproject pins ``<2.4`` and a pure-Python or newer tomli is
    not used. Imported on first use: the hooks never parse TOML here.
    """
    global _TOML
    if _TOML is None:
        try:
            import tomli
            import tomli._parser

            fast = (str(tomli._parser.__file__).endswith((".so", ".pyd"))
                    and tuple(int(p) for p in tomli.__version__.split(".")[:2]) < (2, 4))
        except (ImportError, AttributeError, ValueError):
            fast = False
        if fast:
            _TOML = tomli
        else:
            import tomllib

            _TOML = tomllib
    return _TOML


def load_toml(text: str, keep_huge_ints: bool = False) -> dict[str, Any]:
    """Parse TOML text (see the module docstring).

    ``keep_huge_ints``: leave integers beyond float range as they are, for a
    caller that turns every number it reads into a float itself, ±inf for
    those (and :func:`tamed_copy` for what it hands on unread): the BottleMod
    model files, which so save a walk over the whole document.
    """
    toml = _toml()
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as err:
        match = re.search(r"\(at line (\d+), column \d+\)", str(err))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(err))
        raise LoadError(f"not valid TOML: {message}", int(match.group(1)) if match else None) from None
    except RecursionError:
        raise LoadError("not usable TOML: arrays/tables nested too deeply", _deep_line(text)) from None
    except ValueError as err:  # int() of a literal with more than 4,300 digits
        match = re.search(r"[0-9_]{%d,}" % _INT_DIGITS, text)
        line = text.count("\n", 0, match.start()) + 1 if match else None
        raise LoadError("not usable TOML: an integer with more digits than Python reads (4,300)", line) from None
    return data if keep_huge_ints else _tame_ints(data)


def _tame_ints(data: Any) -> Any:
    """``data`` with integers beyond float range replaced by ±inf (iteratively: any depth).

    ``data`` is a parser's: plain dicts, lists, ints (``type(v) is int``
    leaves out bools), floats, strings and dates.
    """
    stack = [data]
    while stack:
        item = stack.pop()
        big = []
        for key, value in item.items() if type(item) is dict else enumerate(item):
            kind = type(value)
            if kind is int:
                if value > _FLOAT_MAX_INT or value < -_FLOAT_MAX_INT:
                    big.append(key)
            elif kind is dict or kind is list:
                stack.append(value)
        for key in big:
            item[key] = math.inf if item[key] > 0 else -math.inf
    return data


def tamed_copy(data: Any) -> Any:
    """A copy of parsed ``data`` (dicts, lists and scalars, any depth) with
    integers beyond float range as ±inf, as :func:`load_toml` gives them."""
    root = [data]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        value = parent[key]
        kind = type(value)
        if kind is dict:
            value = parent[key] = dict(value)
            stack.extend((value, k) for k in value)
        elif kind is list:
            value = parent[key] = list(value)
            stack.extend((value, i) for i in range(len(value)))
        elif kind is int and (value > _FLOAT_MAX_INT or value < -_FLOAT_MAX_INT):
            parent[key] = math.inf if value > 0 else -math.inf
    return root[0]


def _deep_line(text: str) -> int:
    """Line where bracket nesting (outside strings) first gets deep (error path)."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth >= _REPORT_DEPTH:
                return text.count("\n", 0, match.start()) + 1
        elif token in "]}":
            depth -= 1
    return 1
