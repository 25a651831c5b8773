"""Escaping in the reports' documents: whatever text a user names a node, an
experiment or a policy, the Markdown and the HTML show it as text — no tag,
link, image, emphasis or extra table cell comes out of it.

The Markdown is read back by cmark-gfm (GitHub's reader, raw HTML allowed:
the strictest case), the HTML by the standard library's parser."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.document import Code, Document, Strong

cmarkgfm = pytest.importorskip("cmarkgfm", reason="cmark-gfm reads the Markdown back (pip install -e '.[test]')")
from cmarkgfm.cmark import Options  # noqa: E402

HOSTILE = [
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "![i](x.png)",
    "<javascript:alert(1)>", "[x]: javascript:alert(1)", "[x]", "`", "``", "|", "\\", "\\|", "**", "*", "_", "__",
    "~~", "~", "www.example.com", "http://example.com", "a@b.co", "mailto:a@b.co", "&lt;", "&#60;", "&amp;", "&",
    "\n", "\n\n", "- ", "+ ", "1. ", "2) ", ":-", "---", "===", "# ", "#", "> ", ">", "    ", "\t", "  \n", " ", "a",
    "0", "x_y", "<!-- c -->", "<div>", "]", "(", ")", "\r", "é", "≤",
]
TEXT = st.one_of(st.text(), st.lists(st.sampled_from(HOSTILE) | st.text(max_size=3), max_size=12).map("".join))
LINE_ENDS = str.maketrans({"\r": " ", "\n": " "})


class _Reader(HTMLParser):
    """Tags (with their attributes) and the text, character references decoded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def handle_comment(self, data):
        self.comments.append(data)


def _read(page: str) -> _Reader:
    reader = _Reader()
    reader.feed(page)
    reader.close()
    return reader


def _gfm(markdown: str) -> _Reader:
    return _read(cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE))


def _words(text: str) -> list[str]:
    """Text up to white space (Markdown drops a line's leading blanks and folds line breaks)."""
    return text.replace("\x00", "\ufffd").split()


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def _email_link(tag: str, attrs: dict[str, str | None]) -> bool:
    """An e-mail autolink: cmark-gfm finds an address after unescaping the
    text, so no escape prevents it; its href is the address as written
    (mailto:, xmpp:, a made-up scheme such as ``a.mailto:``, or a relative
    one), never a scheme that runs code."""
    href = "".join((attrs.get("href") or "").split()).strip("\x00")
    scheme = _SCHEME.match(href)
    return (tag == "a" and set(attrs) == {"href"} and "@" in href
            and not (scheme and scheme.group(1).lower() in ("javascript", "vbscript", "data")))


def _inert(reader: _Reader, allowed: set[str]) -> None:
    """Only the ``allowed`` elements (and e-mail autolinks), none with an
    attribute, no comment."""
    tags = [(tag, attrs) for tag, attrs in reader.tags if not _email_link(tag, attrs)]
    assert {tag for tag, _ in tags} <= allowed, reader.tags
    assert all(not attrs for _, attrs in tags), reader.tags
    assert not reader.comments


TABLE = {"table", "thead", "tbody", "tr", "th", "td"}


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_markdown_table_cell_is_inert_and_shows_the_text(text: str) -> None:
    doc = Document()
    doc.table(["name", "value"], [[text, "1"]])
    reader = _gfm(doc.markdown())
    _inert(reader, TABLE)
    # two cells, whatever the text: no | of it split the row
    assert [tag for tag, _ in reader.tags].count("td") == 2
    assert _words("".join(reader.text)) == ["name", "value"] + _words(text) + ["1"]


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_markdown_code_in_a_cell_is_one_code_span(text: str) -> None:
    doc = Document()
    doc.table(["policy"], [[Code(text)]])
    reader = _gfm(doc.markdown())
    _inert(reader, TABLE | {"code"})
    assert [tag for tag, _ in reader.tags].count("td") == 1
    assert _words("".join(reader.text)) == ["policy"] + _words(text)


@settings(max_examples=400, deadline=None)
@given(TEXT, TEXT)
def test_markdown_paragraph_and_heading_are_inert(first: str, second: str) -> None:
    doc = Document()
    doc.h(2, first)
    doc.p(first, Code(second), " and ", Strong(second), "\n", second)
    reader = _gfm(doc.markdown())
    # a trailing two-space line break is the one element plain text may make
    _inert(reader, {"h2", "p", "code", "strong", "br"})
    words = _words("".join(reader.text))
    assert words == _words(first) + _words(first + second + " and " + second + "\n" + second)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_markdown_code_block_is_verbatim(text: str) -> None:
    text = text.replace("\r", "")
    doc = Document()
    doc.pre(text)
    reader = _gfm(doc.markdown())
    _inert(reader, {"pre", "code"})
    # the text, its closing line break, and the page's
    assert "".join(reader.text).replace("\ufffd", "\x00") == text + "\n\n"


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT)
def test_markdown_image_alt_and_path_stay_text(alt: str, name: str) -> None:
    doc = Document()
    doc.img(f"figures/{name.translate(LINE_ENDS)}.png", alt)
    reader = _gfm(doc.markdown())
    images = [attrs for tag, attrs in reader.tags if tag == "img"]
    assert [tag for tag, _ in reader.tags] == ["p", "img"]
    assert _words(images[0]["alt"]) == _words(alt)
    assert images[0]["src"].startswith("figures/")


@settings(max_examples=400, deadline=None)
@given(TEXT, TEXT)
def test_html_shows_the_text_and_nothing_else(text: str, other: str) -> None:
    doc = Document()
    doc.h(1, text)
    doc.p(text, Code(other), Strong(text))
    doc.table([text], [[Code(other)], [(Strong(other), text)]])
    doc.pre(text)
    doc.img(other, text, caption=True)
    doc.img(other, text)
    reader = _read(doc.html(text, style="p{}", lang="en"))
    structure = ["html", "head", "meta", "title", "style", "body", "h1", "p", "code", "strong", "table", "tr", "th",
                 "tr", "td", "code", "tr", "td", "strong", "pre", "figure", "img", "figcaption", "p", "img"]
    assert [tag for tag, _ in reader.tags] == structure
    attributes = {tag: attrs for tag, attrs in reader.tags if attrs}
    assert attributes == {"html": {"lang": "en"}, "meta": {"charset": "utf-8"}, "img": {"src": other, "alt": text}}
    expected = [text, "p{}", text, text, other, text, text, other, other, text, text, text]
    assert "".join(reader.text).replace("\n", "") == "".join(expected).replace("\n", "")


def test_markdown_is_unchanged_where_nothing_needs_escaping() -> None:
    doc = Document()
    doc.h(1, "condor-rlrep sweep report: paper-figure1")
    doc.p(Strong("Units."), " energy MWh (ours): p(W) ≤ P, fixed:2 > single, epsilon_high = 0.5.")
    doc.table(["P = φ", "policy"], [["0.1", Code("rl:3")]])
    doc.img("figures/figure1-fig2a.png", "Figure 2a — CDF of p(W) (single replica)")
    assert doc.markdown() == (
        "# condor-rlrep sweep report: paper-figure1\n\n"
        "**Units.** energy MWh (ours): p(W) ≤ P, fixed:2 > single, epsilon_high = 0.5.\n\n"
        "| P = φ | policy |\n|---|---|\n| 0.1 | `rl:3` |\n\n"
        "![Figure 2a — CDF of p(W) (single replica)](figures/figure1-fig2a.png)\n"
    )


def test_markdown_escapes_what_a_name_could_inject() -> None:
    doc = Document()
    doc.table(["node"], [["<script>x</script>"], ["[x](javascript:alert(1))"], ["a|b"], [Code("a`b|c")]])
    doc.p("workflows = ['figure1']")
    assert doc.markdown().splitlines()[2:] == [
        "| \\<script>x\\</script> |", "| \\[x\\](javascript:alert(1)) |", "| a\\|b |", "| ``a`b\\|c`` |", "",
        "workflows = \\['figure1'\\]",
    ]


def test_a_sweep_named_by_an_attacker_renders_inert(tmp_path) -> None:
    """End to end: an experiment's name, description and parameters reach
    the sweep report's headings, paragraphs and code spans as text."""
    import json

    from condor_rlrep.sweepreport.render import render_report

    name = "x<script>alert(1)</script>[a](javascript:alert(1))`**"
    description = "<img src=x onerror=alert(1)>\n- [b]: javascript:alert(2)\n| c | d |\n|---|---|"
    (tmp_path / "runs").mkdir()
    run = {"run_id": "0" * 16, "params": {"policy": "single", "phi": 0.1, "workflows": ["figure1"]},
           "result": {"workflows": 10, "within": {"0.1": 5},
                      "energy_kwh": {"workflow_total": 1.0, "workflow_bad": 0.1, "workflow_good": 0.9}}}
    (tmp_path / "runs" / f"{'0' * 16}.json").write_text(json.dumps(run))
    (tmp_path / "experiment.json").write_text(json.dumps({
        "name": name, "description": description, "trace": {"preset": "<b>p</b>", "days": 1, "seed": 1},
        "base": {"note": "[x](javascript:alert(3))"}, "grid": {"phi": [0.1], "policy": ["single"]}, "figures": [],
        "quick": True}))
    markdown = render_report(tmp_path).read_text()
    reader = _gfm(markdown)
    _inert(reader, {"h1", "h2", "h3", "p", "code", "strong", "table", "thead", "tbody", "tr", "th", "td"})
    assert name in "".join(reader.text)
    page = _read((tmp_path / "report.html").read_text())
    assert {tag for tag, _ in page.tags} <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p",
                                             "code", "strong", "table", "tr", "th", "td"}
    assert "".join(page.text).count(name) >= 3  # title, heading, the quick variant's command
