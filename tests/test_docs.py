"""The project documents itself: docs/ is its own, and it names what exists.

Nothing shipped may cite design notes that live outside the repository
(they are background, not part of the product; ``docs/`` holds the
project's own account). And every relative link of ``docs/*.md``, every
``#anchor`` into a doc and every repository path a doc names in backticks
must resolve, so that a module moved or renamed without its docs fails here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

SCANNED = ("condor_rlrep", "docs", "README.md", "examples", "hooks", "sim")
FORBIDDEN = (b"../shared", b"DESIGN.md", b"STYLE.md", b"DAGMAN.md", b"SIM-FACTS", "DESIGN §".encode())
"""Citations of notes outside the repository (``DESIGN §n`` is the short form once used)."""

_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def _scanned_files() -> list[Path]:
    files: list[Path] = []
    for name in SCANNED:
        top = ROOT / name
        if top.is_file():
            files.append(top)
            continue
        for directory, subdirs, names in os.walk(top):
            here = Path(directory)
            # the committed run files of sim/results are data, not prose
            subdirs[:] = [d for d in subdirs if d not in _SKIP_DIRS and not d.endswith(".egg-info")
                          and not (d == "runs" and (ROOT / "sim" / "results") in (here, *here.parents))]
            files += [here / n for n in names]
    return files


def test_nothing_cites_notes_outside_the_repository() -> None:
    files = _scanned_files()
    assert any(f.suffix == ".py" for f in files) and any(f.parent == DOCS for f in files)
    hits = []
    for path in files:
        data = path.read_bytes()
        for needle in FORBIDDEN:
            if needle in data:
                line = data[: data.index(needle)].count(b"\n") + 1
                hits.append(f"{path.relative_to(ROOT)}:{line}: {needle.decode()}")
    assert hits == [], "cite docs/<file>.md instead:\n" + "\n".join(hits)


def test_the_scan_skips_only_the_run_files() -> None:
    files = {f.relative_to(ROOT).as_posix() for f in _scanned_files()}
    assert "sim/calibration/README.md" in files and "hooks/rlrep-pre" in files and "README.md" in files
    assert not any("/runs/" in f and f.startswith("sim/results/") for f in files)


def _docs() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            anchors.add(slug(line.lstrip("#")))
    return anchors


_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`\n]+)`")
_REPO_PATH = re.compile(r"(?<![\w./:-])((?:condor_rlrep|tests|sim|examples|hooks|benchmarks|docs)/[\w./-]*)")


def test_slug_follows_github() -> None:
    assert slug(" 5. The replica description") == "5-the-replica-description"
    assert slug(" 11. The survival model of `model:R`") == "11-the-survival-model-of-modelr"


@pytest.mark.parametrize("doc", _docs(), ids=lambda p: p.name)
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in _LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert broken == [], f"{doc.name}: " + "; ".join(broken)


@pytest.mark.parametrize("doc", _docs(), ids=lambda p: p.name)
def test_named_repository_paths_exist(doc: Path) -> None:
    missing = []
    text = doc.read_text(encoding="utf-8")
    named = {m for span in _CODE.findall(text) for m in _REPO_PATH.findall(span)}
    named |= set(re.findall(r"condor_rlrep/[\w/]+\.py", text))  # also outside backticks
    for path in sorted(named):
        if any(c in path for c in "*<>{}"):
            continue
        if not (ROOT / path.rstrip(".")).exists():
            missing.append(path)
    assert missing == [], f"{doc.name} names paths that do not exist: {missing}"


def test_docs_name_the_python_modules_they_describe() -> None:
    named = {p for doc in _docs() for p in re.findall(r"condor_rlrep/[\w/]+\.py", doc.read_text(encoding="utf-8"))}
    assert len(named) > 40  # the check above has something to check
