"""Streaming the agent-store document: write and read it a decision at a time.

A store's history can hold millions of decisions; building the document as
one object took gigabytes. The writer emits the header, then one decision
per line; the reader accepts any JSON text of the document (key order and
layout free) and hands out decisions in batches, holding only the one being
parsed: :mod:`json` parses every value, this module only walks the
top-level object and the ``decisions`` array between them. (A document
whose ``decisions`` come before the header keys, which our writer never
produces, is still read, by holding those decisions until the header is
complete.)
"""

from __future__ import annotations

import gc
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

from condor_rlrep.store._document import HEADER_KEYS, DecisionChecker, Header, parse_header
from condor_rlrep.errors import StoreError

__all__ = ["write_document", "DocumentReader"]

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_CHUNK = 1 << 16
_MAX_VALUE = 64 << 20
"""A single decision bigger than this is refused rather than read on forever."""


def write_document(
    out: IO[str],
    header: Mapping[str, Any],
    estimates: Iterable[Any],
    recovery: Iterable[Any],
    decisions: Iterable[Mapping[str, Any]],
) -> int:
    """Write a document; returns the number of decisions written."""
    strict = json.JSONEncoder(allow_nan=False).encode

    def dump(value: Any) -> str:
        try:
            return strict(value)
        except ValueError:  # a non-finite number a store of an older version let in: written, never a crash
            return strict(_named_non_finite(value))

    out.write("{")
    out.write(", ".join(f"{dump(key)}: {dump(value)}" for key, value in header.items()))
    count = 0
    for key, items in (("estimates", estimates), ("recovery", recovery), ("decisions", decisions)):
        out.write(f',\n"{key}": [')
        first = True
        for item in items:
            out.write("\n" if first else ",\n")
            out.write(dump(item))
            first = False
            count += key == "decisions"
        out.write("]" if first else "\n]")
    out.write("}\n")
    return count


def _named_non_finite(value: Any) -> Any:
    """``value`` with every non-finite float written as the string "inf",
    "-inf" or "nan" (JSON has none): import then names the entry at fault."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        return {key: _named_non_finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_named_non_finite(item) for item in value]
    return value


class DocumentReader:
    """Read a document from a text stream: :meth:`header`, then
    :meth:`decision_rows`, then :meth:`finish` (whose header is the one to
    write). Errors are :class:`StoreError` naming ``name``, the line and the
    entry at fault."""

    def __init__(self, stream: IO[str], name: str, schema_version: int):
        self._stream = stream
        self._name = name
        self._schema_version = schema_version
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._line = 1  # line number of _buf[0]
        self._decoder = json.JSONDecoder()
        self._header: Header | None = None
        self._held: list[tuple[int, Any]] | None = None
        self._in_decisions = False
        self._fields: dict[str, Any] = {}
        self.decisions = 0

    # -- the three steps ---------------------------------------------------------

    def header(self) -> Header:
        """Read up to the ``decisions`` (or the end) and check all before them."""
        fields = self._fields
        self._expect("{")
        key = self._next_key(first=True)
        while key is not None:
            if key == "decisions":
                if self._peek() != "[":
                    self._fail("decisions: must be a list", self._pos)
                self._pos += 1
                if all(k in fields for k in HEADER_KEYS):
                    self._in_decisions = True
                    self._header = self._check_header(fields)
                    return self._header
                self._held = list(self._array_items())  # unusual order: hold them until the header is read
            elif key in fields:
                self._fail(f"key {key!r} appears twice", self._pos)
            else:
                fields[key] = self._value(key)
            key = self._next_key(first=False)
        if self._held is None:
            self._fail("decisions: must be a list", self._pos)
        self._header = self._check_header(fields)
        return self._header

    def decision_rows(self, batch: int = 1000) -> Iterator[list[tuple[Any, ...]]]:
        """Checked decision rows (in :data:`~._values.DECISION_COLUMNS` order), ``batch`` at a time."""
        assert self._header is not None, "header() first"
        checker = DecisionChecker(self._header)
        rows: list[tuple[Any, ...]] = []
        items = self._array_items() if self._in_decisions else iter(self._held or ())
        for index, (line, item) in enumerate(items):
            try:
                rows.append(checker.row(item, f"decisions[{index}]"))
            except StoreError as err:
                raise StoreError(f"{self._name}:{line}: {err}") from None
            if len(rows) >= batch:
                yield rows
                rows = []
        if rows:
            yield rows
        self.decisions = checker.count

    def finish(self) -> Header:
        """Read the rest of the document; returns the final header (keys such
        as ``recovery`` may legally follow the decisions)."""
        assert self._header is not None, "header() first"
        if self._in_decisions:
            trailing = False
            key = self._next_key(first=False)
            while key is not None:
                if key in self._fields or key == "decisions":
                    self._fail(f"key {key!r} appears twice", self._pos)
                self._fields[key] = self._value(key)
                trailing = True
                key = self._next_key(first=False)
            if trailing:
                self._header = self._check_header(self._fields)
        self._skip()
        if self._pos < len(self._buf):
            self._fail("unexpected text after the document", self._pos)
        return self._header

    # -- walking the text -----------------------------------------------------------

    def _check_header(self, fields: dict[str, Any]) -> Header:
        try:
            return parse_header(fields, self._schema_version)
        except StoreError as err:
            raise StoreError(f"{self._name}: {err}") from None

    def _array_items(self) -> Iterator[tuple[int, Any]]:
        """The items of an array whose ``[`` was just read, with their lines."""
        if self._peek() == "]":
            self._pos += 1
            return
        while True:
            self._skip()
            line = self._line_at(self._pos)
            yield line, self._value("decision")
            char = self._peek()
            self._pos += 1
            if char == "]":
                return
            if char != ",":
                self._fail("expected ',' or ']' in the decisions", self._pos - 1)

    def _next_key(self, *, first: bool) -> str | None:
        char = self._peek()
        if char == "}":
            self._pos += 1
            return None
        if not first:
            if char != ",":
                self._fail("expected ',' or '}' between the document's keys", self._pos)
            self._pos += 1
        key = self._value("key")
        if not isinstance(key, str):
            self._fail("expected a key (a string)", self._pos)
        self._expect(":")
        return key

    def _value(self, what: str) -> Any:
        self._skip()
        # a value longer than the buffer is parsed again after each read: read geometrically
        # more each time, so that a value of n bytes costs O(n), not O(n²)
        want = _CHUNK
        while True:
            start = self._pos
            collecting = gc.isenabled()
            gc.disable()  # a million cells are a million containers: each collection would walk them all again
            try:
                value, end = self._decoder.raw_decode(self._buf, start)
            except json.JSONDecodeError as err:
                if self._eof or len(self._buf) - start > _MAX_VALUE:
                    self._fail(f"not valid JSON ({err.msg}) in {what}", err.pos)
                self._fill(want)
                want *= 2
                continue
            except RecursionError:
                self._fail(f"not usable JSON: arrays/objects nested too deeply in {what}", start)
            except ValueError:  # int() of more than 4,300 digits (a parse_int hook would slow every int)
                self._fail(f"not usable JSON: an integer with more digits than Python reads (4,300) in {what}", start)
            finally:
                if collecting:
                    gc.enable()
            if end == len(self._buf) and not self._eof:  # a number might go on in the next chunk
                self._fill(want)
                want *= 2
                continue
            self._pos = end
            return value

    def _expect(self, char: str) -> None:
        if self._peek() != char:
            self._fail(f"expected {char!r}", self._pos)
        self._pos += 1

    def _peek(self) -> str:
        self._skip()
        return self._buf[self._pos] if self._pos < len(self._buf) else ""

    def _skip(self) -> None:
        while True:
            self._pos = _WHITESPACE.match(self._buf, self._pos).end()
            if self._pos < len(self._buf) or self._eof:
                return
            self._fill()

    def _fill(self, size: int = _CHUNK) -> None:
        if self._pos > _CHUNK:  # drop what has been read, counting its lines
            self._line += self._buf.count("\n", 0, self._pos)
            self._buf = self._buf[self._pos:]
            self._pos = 0
        try:
            chunk = self._stream.read(size)
        except UnicodeDecodeError as err:
            raise StoreError(f"{self._name}: not UTF-8 text (byte {err.start} of a read chunk cannot be decoded)") from None
        if not chunk:
            self._eof = True
        self._buf += chunk

    def _line_at(self, pos: int) -> int:
        return self._line + self._buf.count("\n", 0, pos)

    def _fail(self, message: str, pos: int) -> None:
        raise StoreError(f"{self._name}:{self._line_at(min(pos, len(self._buf)))}: {message}")
