"""Committed simulation results still regenerate: a sample of run files
under sim/results/ (the recommended ``model:3``, which ranks machines by
idle time, and the paper's ``rl:3``) is run again by ``sweep --only`` into
an empty copy of its folder and must give the same parameters and result,
byte for byte once serialised. Each is a simulated year (≈ 30–45 s).

Committed folders made before trace identities carry no ``trace`` stamp in
their run files; the regenerated file has one, so only that key is left out
of the comparison.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from condor_rlrep.cli.main import cli

RESULTS = Path(__file__).resolve().parent.parent / "sim" / "results"

SAMPLE = [
    ("beyond/seed-2010", "906176347bba7a52"),  # model:3, phi 0.1
    ("paper-figure1", "619f4a1c3be9b783"),  # rl:3, phi 0.1
]


def _comparable(path: Path) -> str:
    document = json.loads(path.read_text(encoding="utf-8"))
    document.pop("trace", None)
    return json.dumps(document, sort_keys=True)


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "run_id"), SAMPLE, ids=[f"{f}:{r}" for f, r in SAMPLE])
def test_a_committed_run_regenerates(folder: str, run_id: str, tmp_path: Path):
    source = RESULTS / folder
    committed = source / "runs" / f"{run_id}.json"
    for name in ("experiment.json", "trace-identity.json"):
        if (source / name).exists():
            shutil.copy(source / name, tmp_path / name)
    name = json.loads((source / "experiment.json").read_text(encoding="utf-8"))["name"]

    result = CliRunner().invoke(cli, ["sweep", name, "-o", str(tmp_path), "--only", run_id, "--no-report"])

    assert result.exit_code == 0, result.output
    again = tmp_path / "runs" / f"{run_id}.json"
    assert json.loads(again.read_text(encoding="utf-8"))["params"] == json.loads(
        committed.read_text(encoding="utf-8"))["params"]
    assert _comparable(again) == _comparable(committed), (
        f"{folder}/runs/{run_id}.json no longer regenerates: a change moved committed results")
