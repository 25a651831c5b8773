"""The committed live replays still read the same: every folder under
sim/results/ that keeps its workflow files (``runs.tar.xz``) is rescored
from them by today's code, without a pool, and must give its committed
rows and report byte for byte.

A change to the simulator, the event reader or how rows are computed that
moves these numbers has to rescore the folders and say so in their READMEs
(docs/replay.md §4, ``--rescore``); two of them had silently gone stale
before this test existed.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from condor_rlrep.replay.plan import ReplayPlan
from condor_rlrep.replay.render import write_report
from condor_rlrep.replay.run import ReplaySettings, run_replay
from condor_rlrep.replay.workflows import policy_slug

RESULTS = Path(__file__).resolve().parent.parent / "sim" / "results"
KEPT = sorted(p.parent for p in RESULTS.glob("replay-*/runs.tar.xz"))


def _settings(shown: dict) -> ReplaySettings:
    measured = "measured live"
    return ReplaySettings(
        policies=list(shown["policies"]), phi=shown["phi"], seed=shown["seed"],
        negotiation_interval=shown["negotiation_interval"], release=None, rescore=True,
        dagman_latency=None if shown["dagman_latency"] == measured else shown["dagman_latency"],
        slot_turnaround=None if shown["slot_turnaround"] == measured else shown["slot_turnaround"])


def test_some_replays_are_kept():
    assert len(KEPT) >= 4, KEPT


@pytest.mark.parametrize("folder", KEPT, ids=[p.name for p in KEPT])
def test_rescoring_a_committed_replay_gives_its_committed_files(folder: Path, tmp_path: Path):
    shown = json.loads((folder / "report.json").read_text(encoding="utf-8"))["settings"]
    settings = _settings(shown)
    slugs = [policy_slug(p) for p in settings.policies]
    shutil.copy(folder / "plan.json", tmp_path / "plan.json")
    for slug in slugs:
        (tmp_path / slug).mkdir()
        for name in ("rows.json", "submitted.json"):
            shutil.copy(folder / slug / name, tmp_path / slug / name)
    with tarfile.open(folder / "runs.tar.xz") as tar:
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    plan = ReplayPlan.from_json(json.loads((folder / "plan.json").read_text(encoding="utf-8")))

    rows = run_replay(tmp_path, plan, settings)
    write_report(tmp_path, plan, rows, shown)

    for name in [f"{slug}/rows.json" for slug in slugs] + ["report.json", "report.md"]:
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes(), (
            f"{folder.name}/{name} no longer regenerates: rescore the folder (README: --rescore) "
            "and say what moved in its README")
