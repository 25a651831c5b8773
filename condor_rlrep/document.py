"""A report as a document: headings, paragraphs, tables, figures and code
blocks, rendered once to Markdown and once to HTML.

Both reports (a sweep's, :mod:`condor_rlrep.sweepreport`; a run's,
:mod:`condor_rlrep.runreport`) write a ``report.md`` and a ``report.html``
that say the same thing; this module owns the two renderings, so that the
reports own only their content.

Text is data, never markup. A piece of inline text is a ``str`` (shown as
it is), a :class:`Code` (a code span) or a :class:`Strong` (bold); a
paragraph, a heading or a table cell is one piece or a sequence of them.
The names a report shows come from users (node names from a DAG file,
experiment names and descriptions, policy specs, stderr paths), so every
character a Markdown or HTML reader would take as syntax is escaped in
both outputs: no text can open a tag (``<script>``, ``<img onerror=…>``),
a link or an image (``[x](javascript:…)``, ``<javascript:…>``), an
autolink, a table cell (``|``), emphasis, or a block (a heading, list or
quote at a line's start). The Markdown escapes are backslashes, which
CommonMark/GFM readers drop, so a reader sees the text as it was given.

Only what is needed is escaped, so that the committed reports' Markdown
stays as it was where it was already safe: ``(``, ``)`` and ``>`` need no
escape once ``[``, ``]`` and ``<`` have one (a link needs a ``]`` right
before its ``(``, a tag or autolink starts with ``<``), and an ``_``
between two letters or digits is never emphasis.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Union

__all__ = ["Code", "Strong", "Inline", "Text", "Document"]


@dataclass(frozen=True)
class Code:
    """A code span: a policy spec, a file name, a command."""

    text: str


@dataclass(frozen=True)
class Strong:
    """Bold text."""

    text: str


Inline = Union[str, Code, Strong]
Text = Union[Inline, Sequence[Inline]]


class Document:
    """Blocks in order: ``("h", level, text)``, ``("p", text)``,
    ``("table", header, rows)``, ``("img", path, alt, caption)``,
    ``("pre", text)``; :meth:`markdown` and :meth:`html` render them."""

    def __init__(self) -> None:
        self.blocks: list[tuple] = []

    def h(self, level: int, *text: Inline) -> None:
        self.blocks.append(("h", level, text))

    def p(self, *text: Inline) -> None:
        self.blocks.append(("p", text))

    def table(self, header: Sequence[Text], rows: Sequence[Sequence[Text]]) -> None:
        self.blocks.append(("table", list(header), [list(row) for row in rows]))

    def img(self, path: str, alt: str, *, caption: bool = False) -> None:
        """A figure at ``path`` (relative to the report); ``caption``: the
        HTML also shows ``alt`` under it."""
        self.blocks.append(("img", path, alt, caption))

    def pre(self, text: str) -> None:
        """Preformatted text, shown verbatim (a file's lines)."""
        self.blocks.append(("pre", text))

    def markdown(self) -> str:
        lines: list[str] = []
        for block in self.blocks:
            kind = block[0]
            if kind == "h":
                lines += ["#" * block[1] + " " + _md(block[2], where="line"), ""]
            elif kind == "p":
                lines += [_md(block[1], where="block"), ""]
            elif kind == "table":
                header, rows = block[1], block[2]
                lines.append("| " + " | ".join(_md(c, where="cell") for c in header) + " |")
                lines.append("|" + "|".join("---" for _ in header) + "|")
                lines += ["| " + " | ".join(_md(c, where="cell") for c in row) + " |" for row in rows]
                lines.append("")
            elif kind == "pre":
                fence = "`" * max(3, _longest_run(block[1], "`") + 1)
                lines += [fence, block[1], fence, ""]
            else:
                lines += [f"![{_md(block[2], where='line')}]({_md_destination(block[1])})", ""]
        return "\n".join(lines)

    def html(self, title: str, *, style: str, lang: str | None = None) -> str:
        """The whole page; ``style``: its CSS, ``lang``: its language, if said."""
        parts = [
            "<!DOCTYPE html>",
            ("<html>" if lang is None else f"<html lang='{_attr(lang)}'>")
            + f"<head><meta charset='utf-8'><title>{html.escape(title)}</title>",
            f"<style>{style}</style>",
            "</head><body>",
        ]
        for block in self.blocks:
            kind = block[0]
            if kind == "h":
                parts.append(f"<h{block[1]}>{_html(block[2])}</h{block[1]}>")
            elif kind == "p":
                parts.append(f"<p>{_html(block[1])}</p>")
            elif kind == "table":
                parts.append("<table><tr>" + "".join(f"<th>{_html(c)}</th>" for c in block[1]) + "</tr>")
                for row in block[2]:
                    parts.append("<tr>" + "".join(f"<td>{_html(c)}</td>" for c in row) + "</tr>")
                parts.append("</table>")
            elif kind == "pre":
                parts.append(f"<pre>{html.escape(block[1])}</pre>")
            else:
                path, alt, caption = block[1], block[2], block[3]
                image = f"<img src='{_attr(path)}' alt='{_attr(alt)}'>"
                parts.append(f"<figure>{image}<figcaption>{html.escape(alt)}</figcaption></figure>" if caption
                             else f"<p>{image}</p>")
        parts.append("</body></html>")
        return "\n".join(parts) + "\n"


def _pieces(text: Text) -> Sequence[Inline]:
    return (text,) if isinstance(text, (str, Code, Strong)) else text


# --- HTML -------------------------------------------------------------------

def _attr(value: str) -> str:
    """An attribute value between single quotes (``html.escape`` escapes both quotes)."""
    return html.escape(value)


def _html(text: Text) -> str:
    out = []
    for piece in _pieces(text):
        if isinstance(piece, Code):
            out.append(f"<code>{html.escape(piece.text)}</code>")
        elif isinstance(piece, Strong):
            out.append(f"<strong>{html.escape(piece.text)}</strong>")
        else:
            out.append(html.escape(piece))
    return "".join(out)


# --- Markdown ---------------------------------------------------------------

# Always escaped: the backslash itself, code spans, emphasis and
# strikethrough, link and image brackets, tags and autolinks, entities
# (``&lt;`` would show as ``<``), table cells, a heading's closing ``#``s,
# and footnote marks (``![^]…`` is a link, not an image, to cmark-gfm).
_ALWAYS = frozenset("\\`*~[]<&|#^")
# At a line's start these open a block: a quote, a list, a setext heading,
# a table's delimiter row (":-" under a line is a one-column table).
_LINE_START = re.compile(r"[ \t]*(?:([>+=:-])|(\d{1,9})([.)]))")
# GFM's extended autolinks: "www." and "scheme://" (an escaped "." or ":" is
# no longer one). An e-mail address stays one whatever its escapes (GitHub's
# reader finds them in the text after unescaping it): its link is mailto:
# the address itself, which runs nothing.
_WWW = re.compile(r"(?i)(www)\.")
_SCHEME = re.compile(r":(?=//)")


def _md(text: Text, *, where: str) -> str:
    """Inline text as Markdown. ``where``: "cell" (a table cell) or "line"
    (a heading, an image's alt text): one line; "block" (a paragraph):
    its line breaks kept, each line kept from opening a block."""
    out = [""]
    for piece in _pieces(text):
        if isinstance(piece, Code):
            out.append(_md_code(piece.text, cell=where == "cell"))
        elif isinstance(piece, Strong):
            out.append(_md_strong(piece.text))
        elif where == "block":
            # a paragraph's line starts are where a block could open
            written = "".join(out)
            starts = not written or written.endswith("\n")
            out.append("\n".join(_md_literal(line, line_start=starts or n > 0)
                                 for n, line in enumerate(_lines(piece))))
        else:
            out.append(_md_literal(_one_line(piece), line_start=False))
    return "".join(out)


def _md_strong(text: str) -> str:
    """``**…**`` around the text; white space at its ends stays outside
    (``** x**`` is no emphasis), and no text, no stars (``****`` is a rule)."""
    text = _one_line(text)
    start, end = 0, len(text)
    while start < end and _blank(text[start]):
        start += 1
    while end > start and _blank(text[end - 1]):
        end -= 1
    if start == end:
        return text
    return text[:start] + "**" + _md_literal(text[start:end], line_start=False) + "**" + text[end:]


def _blank(char: str) -> bool:
    """CommonMark's white space (what decides whether ``**`` opens or closes)."""
    return char in "\t\n\f\r" or unicodedata.category(char) == "Zs"


def _lines(text: str) -> list[str]:
    """Markdown's lines: ``\r`` ends one too."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _one_line(text: str) -> str:
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def _md_literal(text: str, *, line_start: bool) -> str:
    """Text shown as it is. ``line_start``: it starts a paragraph's line, where it must not open a block."""
    out = []
    for i, ch in enumerate(text):
        if ch in _ALWAYS or (ch == "_" and not _intraword(text, i)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    escaped = _SCHEME.sub(r"\\:", _WWW.sub(r"\1\\.", "".join(out)))
    if line_start:
        match = _LINE_START.match(escaped)
        if match and match.group(1):
            escaped = escaped[:match.start(1)] + "\\" + escaped[match.start(1):]
        elif match:
            escaped = escaped[:match.start(3)] + "\\" + escaped[match.start(3):]
        # four leading spaces would make a code block; leading white space is dropped by Markdown anyway
        escaped = escaped.lstrip(" \t")
    return escaped


def _intraword(text: str, i: int) -> bool:
    return 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


def _md_code(text: str, *, cell: bool) -> str:
    """A code span fenced by one backtick more than the longest run inside
    (CommonMark's rule), padded with a space where the text starts or ends
    with a backtick or a space; in a table cell a ``|`` still ends the cell,
    so it is escaped (GFM drops that backslash inside code too)."""
    text = _one_line(text)
    if not text:
        return ""
    if cell:
        text = text.replace("|", "\\|")
    fence = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _longest_run(text: str, char: str) -> int:
    return max((len(run) for run in re.findall(f"{re.escape(char)}+", text)), default=0)


def _md_destination(path: str) -> str:
    """A link destination: its parentheses, angle brackets and backslashes escaped, in ``<…>`` if it has a space."""
    escaped = re.sub(r"([\\()<>])", r"\\\1", _one_line(path))
    return f"<{escaped}>" if re.search(r"\s", escaped) else escaped
