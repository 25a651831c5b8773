"""Lexical layer of the DAGMan DAG-file language (HTCondor 25.x ``DagLexer``).

Three jobs: read a file into physical lines as DAGMan does (only ``\\n`` ends
a line; a NUL byte is refused: a DAG file is text), turn physical lines into
logical command lines (comments, blank lines, ``\\`` continuations) while
still letting the parser pull raw lines for inline submit descriptions, and
split a command line into tokens exactly as DAGMan's lexer does (quotes,
backslash escapes inside quotes, ``key = value`` pairs glued into one token).

Most lines of a big DAG are plain (``JOB a a.sub``, ``PARENT a CHILD b``):
they are split with :meth:`str.split`; the character-level lexer only runs on
lines containing a quote or ``=``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

from ..errors import DagSyntaxError
from ..memlimit import check_headroom
from .syntax import syntax_error

__all__ = [
    "Token", "Lexer", "LexError", "LineSource", "tokens", "split_tokens", "is_plain", "normalize_keyword",
    "read_lines", "checked_lines", "FileLines", "tracked_blocks", "inline_body",
]

_DELIMS = " \t"


def read_lines(path: str) -> list[str]:
    """The physical lines of the file at ``path``, all at once."""
    # DAGMan reads lines with std::getline: only "\n" ends a line (not the
    # other separators str.splitlines() knows); "\r" is trimmed later.
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        text = f.read()
    if "\x00" in text:
        _raise_nul(text.split("\n"), path)
    return text.split("\n")


# Characters read at a time by FileLines: a block's lines are a few MB.
_BLOCK_CHARS = 1 << 20


class FileLines:
    """The physical lines of the file at ``path`` (the parser's default loader),
    read a block at a time: the parser never holds a whole big file's lines
    (at 10^5 nodes they would be a fifth of its memory).

    Iterating gives the lines as :func:`read_lines` returns them;
    :meth:`blocks` gives them as consecutive lists. The file is opened and
    checked for NUL bytes at once (so a missing file or a NUL byte is the
    error, as with :func:`read_lines`); it is read again on each iteration.
    """

    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as f:
            line = 1
            while block := f.read(_BLOCK_CHARS):
                at = block.find(b"\x00")
                if at >= 0:
                    raise DagSyntaxError("line contains a NUL byte (a DAG file is text)", path=path,
                                         line=line + block.count(b"\n", 0, at))
                line += block.count(b"\n")

    def blocks(self) -> Iterator[list[str]]:
        with open(self.path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            tail = ""
            while block := f.read(_BLOCK_CHARS):
                # The parsed workflow grows ~10 bytes per character read: give
                # up here, with memory to spare, not deep in the parser with none.
                check_headroom(self.path)
                lines = (tail + block).split("\n")
                tail = lines.pop()  # the line the next block continues
                yield lines
            yield [tail]

    def __iter__(self) -> Iterator[str]:
        return chain.from_iterable(self.blocks())


def _raise_nul(lines: list[str], path: str | None) -> None:
    lineno = next(n for n, line in enumerate(lines, 1) if "\x00" in line)
    raise DagSyntaxError("line contains a NUL byte (a DAG file is text)", path=path, line=lineno)


def checked_lines(lines: list[str], path: str | None) -> list[str]:
    """``lines`` from a caller or a custom loader, refused if one holds a NUL byte."""
    if "\x00" in "".join(lines):
        _raise_nul(lines, path)
    return lines


def normalize_keyword(word: str) -> str:
    """DAGMan keywords are case-insensitive and treat ``-`` and ``_`` alike."""
    return word.upper().replace("-", "_")


def is_plain(line: str) -> bool:
    """True when ``str.split`` tokenizes *line* exactly like DAGMan's lexer."""
    return line.isascii() and '"' not in line and "'" not in line and "=" not in line and "\r" not in line


@dataclass(frozen=True, slots=True)
class Token:
    """One lexed token: ``raw`` keeps the quote characters (DAGMan's default),
    ``text`` has them removed (used for file and directory arguments)."""

    raw: str
    text: str


class LexError(ValueError):
    """A line that DAGMan's lexer rejects (unbalanced quote, ``key=`` without value)."""


class Lexer:
    """Incremental tokenizer of one command line (mirror of ``DagLexer``)."""

    __slots__ = ("_s", "_pos")

    def __init__(self, line: str):
        self._s = line
        self._pos = 0

    def next(self) -> Token | None:
        """The next token, or None at the end of the line."""
        s, n = self._s, len(self._s)
        pos = self._pos
        raw: list[str] = []
        text: list[str] = []
        escaped = in_quotes = is_pair = pair_complete = False
        quote = ""
        while pos < n:
            ch = s[pos]
            if escaped:
                raw.append(ch)
                text.append(ch)
                escaped = False
            elif in_quotes:
                if ch == "\\":
                    escaped = True
                elif ch == quote:
                    raw.append(ch)
                    in_quotes = False
                else:
                    raw.append(ch)
                    text.append(ch)
            elif ch in _DELIMS:
                # A blank run followed by '=' continues a key = value pair.
                next_is_equals = False
                while pos + 1 < n:
                    if s[pos + 1] in _DELIMS:
                        pos += 1
                    else:
                        next_is_equals = s[pos + 1] == "="
                        break
                if raw and ((not is_pair and not next_is_equals) or pair_complete):
                    break
            elif not is_pair and ch == "=":
                is_pair = True
                raw.append(ch)
                text.append(ch)
            else:
                if ch == '"' or ch == "'":
                    quote = ch
                    in_quotes = True
                    raw.append(ch)
                else:
                    raw.append(ch)
                    text.append(ch)
                if is_pair:
                    pair_complete = True
            pos += 1
        self._pos = pos
        if in_quotes:
            raise LexError("invalid quoting: no ending quote found")
        if is_pair and not pair_complete:
            raise LexError("invalid key=value pair: no value found")
        if not raw:
            return None
        return Token("".join(raw), "".join(text))

    def remain(self) -> str:
        """The untokenized rest of the line (SCRIPT command, ENV, SET_JOB_ATTR)."""
        rest = self._s[self._pos :].strip()
        self._pos = len(self._s)
        return rest

    def all(self) -> list[Token]:
        out = []
        while (tok := self.next()) is not None:
            out.append(tok)
        return out


def split_tokens(line: str) -> tuple[list[str], list[str]]:
    """(tokens as DAGMan keeps them, tokens with quotes removed); one shared list for plain lines."""
    if is_plain(line):
        parts = line.split()
        return parts, parts
    toks = Lexer(line).all()
    return [t.raw for t in toks], [t.text for t in toks]


def tokens(line: str) -> list[Token]:
    """All tokens of *line*."""
    if is_plain(line):
        return [Token(t, t) for t in line.split()]
    return Lexer(line).all()


def _skip(line: str) -> bool:
    return not line or line[0] == "#" or line.startswith("//")


class LineSource:
    """Physical lines of one DAG file, read as logical command lines.

    All readers share one ``enumerate`` iterator (:attr:`physical`), so the
    parser's hot loop can iterate it directly and still hand over to
    :meth:`continued` (``\\`` continuations) and :meth:`raw` (inline
    description bodies: trimmed, blank and comment lines dropped, no
    continuation processing). Line numbers are 1-based.
    """

    __slots__ = ("physical", "lineno")

    def __init__(self, lines: Iterable[str]):
        self.physical = enumerate(lines, 1)
        self.lineno = 0  # last physical line consumed by raw()/continued()

    def __iter__(self) -> Iterator[tuple[int, str]]:
        """Logical lines as ``(lineno, text)`` (lineno of the first physical line)."""
        for lineno, line in self.physical:
            line = line.strip()
            if not line or line[0] == "#" or (line[0] == "/" and line.startswith("//")):
                continue
            if line[-1] == "\\":
                line = self.continued(line)
            yield lineno, line

    def continued(self, line: str) -> str:
        """Join ``line`` (ending in a backslash) with the following non-comment lines."""
        parts = [line[:-1]]
        for self.lineno, nxt in self.physical:
            nxt = nxt.strip()
            if _skip(nxt):
                continue
            if nxt[-1] == "\\":
                parts.append(nxt[:-1])
                continue
            parts.append(nxt)
            break
        return " ".join(parts).strip()

    def raw(self) -> tuple[int, str] | None:
        """The next trimmed, non-blank, non-comment physical line, or None at the end."""
        for self.lineno, line in self.physical:
            line = line.strip()
            if not _skip(line):
                return self.lineno, line
        return None


def tracked_blocks(blocks: Iterator[list[str]], current: list[Any]) -> Iterator[list[str]]:
    """``blocks``, noting in ``current`` the block being read and the number of lines before it."""
    before = 0
    for block in blocks:
        current[0] = block
        current[1] = before
        yield block
        before += len(block)


def inline_body(kw: str, name: str, opener: str, src: LineSource, path: str | None, lineno: int) -> tuple[str, str]:
    """Read an inline description after ``{`` / ``@=TAG``: (body, rest of the closing line)."""
    if opener.startswith("{"):
        end = "}"
    else:
        end = "@" + opener[2:] if len(opener) > 2 else ""
        if not end:
            raise syntax_error(kw, f"'{name}': no inline description closing token specified (@=TOKEN)", path, lineno)
    body: list[str] = []
    endsp = end + " "
    while (item := src.raw()) is not None:
        line = item[1]
        if line == end or line.startswith(endsp) or line.startswith(end + "\t"):
            return "\n".join(body), line[len(end) :]
        body.append(line)
    raise DagSyntaxError(
        f"{kw} '{name}': unterminated inline submit description (missing closing '{end}' line)",
        path=path, line=lineno,
    )
