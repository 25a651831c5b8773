"""Helpers for the DAX/WfFormat/export tests: shared data location and
independent (regex-based) readers used to check the real readers and writer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "data"

_JOB = re.compile(r"<job\b([^>]*)>(.*?)</job>|<job\b([^>]*)/>", re.S)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_CHILD = re.compile(r'<child\s+ref="([^"]+)"\s*>(.*?)</child>', re.S)
_PARENT = re.compile(r'<parent\s+ref="([^"]+)"')
_USES = re.compile(r"<uses\b([^>]*)/>")


def shared_files(folder: str, pattern: str) -> list[Path]:
    """Files of the shared data folder, or a skip when it is absent."""
    directory = SHARED / folder
    if not directory.is_dir():
        pytest.skip(f"shared data folder {directory} is absent")
    return sorted(directory.glob(pattern))


def regex_dax(text: str) -> tuple[dict[str, dict[str, str]], set[tuple[str, str]], dict[str, float]]:
    """(job attributes by id, edges, total size of the <uses> of each job) counted with regexes."""
    jobs: dict[str, dict[str, str]] = {}
    sizes: dict[str, float] = {}
    for match in _JOB.finditer(text):
        attrs = dict(_ATTR.findall(match.group(1) or match.group(3)))
        jobs[attrs["id"]] = attrs
        body = match.group(2) or ""
        sizes[attrs["id"]] = sum(float(dict(_ATTR.findall(u)).get("size", 0)) for u in _USES.findall(body))
    edges = {(parent, child) for child, body in _CHILD.findall(text) for parent in _PARENT.findall(body)}
    return jobs, edges, sizes


def simple_dag(text: str) -> tuple[dict[str, str], set[tuple[str, str]], dict[str, dict[str, str]]]:
    """(submit file by JOB name, edges, VARS by node) from the plain lines of a DAG file."""
    jobs: dict[str, str] = {}
    edges: set[tuple[str, str]] = set()
    variables: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        keyword = words[0].upper()
        if keyword in ("JOB", "SUBDAG"):
            offset = 2 if keyword == "SUBDAG" else 1
            jobs[words[offset]] = words[offset + 1]
        elif keyword == "PARENT":
            split = [w.upper() for w in words].index("CHILD")
            edges |= {(p, c) for p in words[1:split] for c in words[split + 1 :]}
        elif keyword == "VARS":
            variables.setdefault(words[1], {}).update(re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', line))
    return jobs, edges, variables
