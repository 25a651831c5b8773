"""Helpers for the DAG parser/writer tests."""

from __future__ import annotations

from pathlib import Path

from condor_rlrep.dag import Workflow, parse_dag, write_dag_lines

DAGS = Path(__file__).resolve().parent / "dags"
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def parse_text(text: str, **kw) -> Workflow:
    """Parse DAG text given as one string."""
    return parse_dag(text.splitlines(), **kw)


def loader_from(files: dict[str, str]):
    """An include_loader serving in-memory files (raises FileNotFoundError otherwise)."""

    def load(path: str) -> list[str]:
        try:
            return files[path].splitlines()
        except KeyError:
            raise FileNotFoundError(path) from None

    return load


def roundtrip(wf: Workflow, **kw) -> Workflow:
    """parse(write(wf)) with the same name-character setting on both sides."""
    return parse_dag(list(write_dag_lines(wf, **kw)), **kw)
