"""Parsing the CSV files of a trace folder into named columns.

The files are plain CSV with a header line (format: :mod:`condor_rlrep.sim.trace_io`).
Parsing is vectorised: a fast path splits unquoted, regular text with
``str.split`` and converts whole columns with numpy; any irregular file
(quotes, blank lines, wrong field counts) goes through :mod:`csv`, which
also locates the exact line at fault. A fault raises a :class:`TraceError`
naming the file and line.

Two shapes: :func:`parse_table` gives a small file (machines) as lists of
strings; :class:`Columns` reads a large one (a year's logins or jobs)
chunk by chunk straight into typed columns, so that peak memory is the
text plus one chunk's fields, not a string object per field of the file.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import math
import sys
from pathlib import Path

import numpy as np

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.trace import StringColumn

__all__ = ["Table", "Columns", "parse_table", "read_text"]


class Table:
    """Columns of one CSV file as lists of strings, plus each row's line number."""

    def __init__(self, path: str, header: list[str], columns: dict[str, list[str]], lines: np.ndarray | None):
        self.path = path
        self.header = header
        self.columns = columns
        self._lines = lines  # None: row i is on line i + 2

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def line(self, row: int) -> int:
        return int(self._lines[row]) if self._lines is not None else row + 2

    def floats(self, name: str) -> np.ndarray:
        return _float_column(self.columns[name], name, self.path, self.line)


def _float_column(values: list[str], name: str, path: str, line_of, row0: int = 0) -> np.ndarray:
    """``values`` as float64, or a TraceError at the first that is not a
    finite number (``line_of(row0 + row)`` gives its line)."""
    try:
        out = np.array(values, dtype=np.float64)
    except ValueError:
        out = None
    if out is not None:
        bad = np.flatnonzero(~np.isfinite(out))
        if bad.size == 0:
            return out
        row = int(bad[0])
    else:
        row = next(i for i, v in enumerate(values) if not _is_float(v))
    raise TraceError(f"column {name!r}: {values[row]!r} is not a finite number", path=path, line=line_of(row0 + row))


def _is_float(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8-sig")
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as err:
        raise TraceError(f"cannot read: {err}", path=str(path)) from err
    return text.replace("\r\n", "\n")


def _header(text: str, path: str, required: tuple[str, ...]) -> tuple[list[str], int, int]:
    """The checked header of CSV ``text`` and where the body lies in it
    (``text[start:end]``, trailing newlines dropped)."""
    newline = text.find("\n")
    head = text if newline < 0 else text[:newline]
    header = [h.strip() for h in next(csv.reader([head]), [])]
    if not any(header):
        raise TraceError("empty file (no header line)", path=path, line=1)
    missing = [c for c in required if c not in header]
    if missing:
        raise TraceError(f"header lacks column(s) {', '.join(missing)}; expected {','.join(required)}", path=path, line=1)
    if len(set(header)) != len(header):
        raise TraceError("duplicate column names in the header", path=path, line=1)
    start = len(text) if newline < 0 else newline + 1
    end = len(text)
    while end > start and text[end - 1] == "\n":
        end -= 1
    return header, start, end


def _regular(body: str, width: int) -> bool:
    """Every line of ``body`` has ``width − 1`` commas (the fast path's condition)."""
    raw = np.frombuffer(body.encode("utf-8"), dtype=np.uint8)
    newlines = np.flatnonzero(raw == 10)
    commas = np.flatnonzero(raw == 44)
    per_line = np.diff(np.searchsorted(commas, np.concatenate(([-1], newlines, [raw.size]))))
    return bool(np.all(per_line == width - 1))


def parse_table(text: str, path: str, required: tuple[str, ...]) -> Table:
    """Split CSV ``text`` into named string columns, checking the header and row widths."""
    header, start, end = _header(text, path, required)
    body = text[start:end]
    width = len(header)
    if not body:
        return Table(path, header, {h: [] for h in header}, None)
    if '"' not in body and _regular(body, width):
        fields = body.replace("\n", ",").split(",")
        columns = {h: fields[i::width] for i, h in enumerate(header)}
        return Table(path, header, columns, None)
    return _parse_slow(body, path, header)


_CHUNK_CHARS = 1 << 22
"""Characters of a large CSV parsed at a time (a few MB: a chunk's field
strings are turned into numpy columns before the next is split)."""


class Columns:
    """A large CSV read chunk by chunk into typed columns: ``floats`` become
    float64 arrays, ``lookup`` columns int32 indices into a name → index
    map, ``interned`` columns lists of shared strings, ``compact`` columns
    :class:`~condor_rlrep.sim.trace.StringColumn`, the rest lists of
    strings. Peak memory is the text plus one chunk's fields, not a string
    object per field of the whole file."""

    def __init__(self, text: str, path: str, required: tuple[str, ...], *, floats: tuple[str, ...] = (),
                 lookup: dict[str, dict[str, int]] | None = None, interned: tuple[str, ...] = (),
                 compact: tuple[str, ...] = ()):
        self.path = path
        header, start, end = _header(text, path, required)
        self.header = header
        lookup = lookup or {}
        parts: dict[str, list] = {h: [] for h in header}
        self._lines: np.ndarray | None = None
        self.rows = 0
        chunks = self._chunk_texts(text, start, end)
        if end > start and ('"' in text or not all(_regular(chunk, len(header)) for chunk in chunks())):
            table = _parse_slow(text[start:end], path, header)  # irregular: csv, exact lines
            self._lines = table._lines
            self.rows = len(table)
            self._convert(table.columns, 0, parts, floats, lookup, interned, compact)
        else:
            for chunk in chunks():
                fields = chunk.replace("\n", ",").split(",")
                del chunk
                columns = {h: fields[i :: len(header)] for i, h in enumerate(header)}
                del fields
                rows = len(columns[header[0]])
                self._convert(columns, self.rows, parts, floats, lookup, interned, compact)
                self.rows += rows
        self.columns: dict[str, np.ndarray | list[str]] = {}
        for h in header:
            if h in floats:
                self.columns[h] = np.concatenate(parts[h]) if parts[h] else np.zeros(0)
            elif h in lookup:
                self.columns[h] = np.concatenate(parts[h]) if parts[h] else np.zeros(0, dtype=np.int32)
            elif h in compact:
                self.columns[h] = StringColumn.concat(parts[h])  # type: ignore[assignment]
            else:
                self.columns[h] = [v for part in parts[h] for v in part] if len(parts[h]) != 1 else parts[h][0]

    def __len__(self) -> int:
        return self.rows

    def line(self, row: int) -> int:
        return int(self._lines[row]) if self._lines is not None else row + 2

    @staticmethod
    def _chunk_texts(text: str, start: int, end: int):
        """A function giving ``text[start:end]`` again and again, in slices
        of whole lines of about ``_CHUNK_CHARS``."""

        def chunks():
            at = start
            while at < end:
                stop = text.find("\n", min(at + _CHUNK_CHARS, end), end)
                if stop < 0:
                    stop = end
                yield text[at:stop]
                at = stop + 1

        return chunks

    def _convert(self, columns: dict[str, list[str]], row0: int, parts: dict[str, list], floats: tuple[str, ...],
                 lookup: dict[str, dict[str, int]], interned: tuple[str, ...], compact: tuple[str, ...]) -> None:
        for h, values in columns.items():
            if h in floats:
                parts[h].append(_float_column(values, h, self.path, self.line, row0))
            elif h in lookup:
                index = np.fromiter(map(lookup[h].get, values, itertools.repeat(-1)), dtype=np.int32, count=len(values))
                parts[h].append(index)
                unknown = np.flatnonzero(index < 0)
                if unknown.size:
                    row = int(unknown[0])
                    self._unknown = (h, values[row], row0 + row)
            elif h in interned:
                parts[h].append(list(map(sys.intern, values)))
            elif h in compact:
                parts[h].append(StringColumn(values))
            else:
                parts[h].append(values)

    def unknown(self) -> tuple[str, str, int] | None:
        """The first (column, value, row) a lookup did not know, if any."""
        return getattr(self, "_unknown", None)


def _parse_slow(body: str, path: str, header: list[str]) -> Table:
    width = len(header)
    rows: list[list[str]] = []
    lines: list[int] = []
    reader = csv.reader(io.StringIO(body))
    line_no = 1  # the header
    try:
        for row in reader:
            first = line_no + 1
            line_no = reader.line_num + 1
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != width:
                raise TraceError(
                    f"expected {width} fields ({','.join(header)}), found {len(row)}", path=path, line=first
                )
            rows.append(row)
            lines.append(first)
    except csv.Error as err:
        raise TraceError(f"malformed CSV: {err}", path=path, line=line_no + 1) from err
    columns = {h: [r[i] for r in rows] for i, h in enumerate(header)}
    return Table(path, header, columns, np.array(lines, dtype=np.int64))
