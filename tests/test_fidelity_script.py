"""sim/calibration/fidelity.py: the paper's reference row and one measured row."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "sim" / "calibration" / "fidelity.py"


def _load():
    if not SCRIPT.is_file():
        pytest.skip("not a source checkout")
    spec = importlib.util.spec_from_file_location("fidelity", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_paper_reference_is_table1_over_its_workflows() -> None:
    fidelity = _load()
    assert fidelity.PAPER["within 0.1"] == pytest.approx(100 * 14_982 / 40_054)
    assert fidelity.PAPER["within 2"] == pytest.approx(100 * 39_650 / 40_054)
    assert fidelity.PAPER["p>=1 %"] == pytest.approx(100 * (1 - 36_318 / 40_054))
    assert (fidelity.PAPER["mean"], fidelity.PAPER["sd"], fidelity.PAPER["max"]) == (0.4467, 0.8217, 17.1113)
    row = dict(fidelity.PAPER)
    assert all(fidelity.passes(row).values())
    row["sd"] += 0.11
    row["within 0.5"] -= 3.1
    assert {k for k, ok in fidelity.passes(row).items() if not ok} == {"sd", "within 0.5"}


def test_prints_a_row_per_seed(capsys: pytest.CaptureFixture[str]) -> None:
    fidelity = _load()
    assert fidelity.main(["--profile", "newcastle-2010-cal", "--seeds", "4", "--days", "4"]) == 0
    out = capsys.readouterr().out
    assert "| paper | 37.4 | 63.6 | 90.7 | 99.0 | 0.447 | 0.822 | 9.3 | 17.1 |" in out
    assert any(line.startswith("| 4 | ") for line in out.splitlines())


def test_bins_are_table1_increments_and_sum_to_all(capsys: pytest.CaptureFixture[str]) -> None:
    fidelity = _load()
    bins = fidelity.PAPER_BINS
    assert len(bins) == 12 and sum(bins) == pytest.approx(100.0)
    assert bins[0] == pytest.approx(100 * 14_982 / 40_054)
    assert bins[6] == pytest.approx(100 * (29_967 - 26_494) / 40_054)  # 0.6 < p ≤ 0.7: the second mode
    assert bins[-1] == pytest.approx(100 * (40_054 - 39_650) / 40_054)
    assert fidelity.main(["--profile", "newcastle-2010-cal", "--seeds", "4", "--days", "4", "--bins"]) == 0
    out = capsys.readouterr().out
    assert "| paper | 37.4 | 11.6 | 8.4 | 4.5 | 1.7 | 2.5 | 8.7 | 7.8 | 4.8 | 3.3 | 8.3 | 1.0 |" in out
    row = next(line for line in out.splitlines() if line.startswith("| 4 | ") and line.count("|") == 14)
    assert sum(float(cell) for cell in row.strip("| ").split(" | ")[1:]) == pytest.approx(100.0, abs=0.1)
