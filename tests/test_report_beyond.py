"""The sweep report's replicas/energy-per-workflow columns, its "beyond the
paper" section and the several-sweeps report, on small hand-made sweeps
whose numbers are worked out by hand below."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from condor_rlrep.cli.main import cli
from condor_rlrep.sweepreport.beyond import check_goals
from condor_rlrep.sweepreport.data import ResultTable, parse_policy
from condor_rlrep.sweepreport.render import render_report

# (policy, P) -> (workflows within P, replica energy kWh, mean replicas per task); 1,000 workflows each
BEYOND = {
    ("single", 0.1): (400, 1000.0, 1.0), ("single", 1.0): (800, 1000.0, 1.0),
    ("fixed:2", 0.1): (500, 2000.0, 2.0), ("fixed:2", 1.0): (790, 2000.0, 2.0),
    ("rl:3", 0.1): (480, 1500.0, 1.6),
    ("oracle:3", 0.1): (600, 1400.0, 1.4), ("oracle:3", 1.0): (820, 1400.0, 1.4),
    ("model:3", 0.1): (590, 1300.0, 1.5), ("model:3", 1.0): (795, 1100.0, 1.1),
    ("idle-single", 0.1): (440, 950.0, 1.0), ("idle-single", 1.0): (780, 950.0, 1.0),
}
PAPER = {key: value for key, value in BEYOND.items() if key[0] in ("single", "fixed:2", "rl:3", "oracle:3")}


def _doc(policy: str, phi: float, within: int, kwh: float, replicas: float) -> dict:
    return {"params": {"policy": policy, "phi": phi, "workflows": ["figure1"], "seed": 1},
            "result": {"workflows": 1000, "within": {f"{phi:g}": within}, "mean_replicas": replicas,
                       "energy_kwh": {"workflow_total": kwh, "workflow_bad": kwh / 4, "workflow_good": kwh * 0.75}}}


def _sweep(folder: Path, runs: dict, *, name: str = "beyond-test", seed: int = 2, salt: int = 0) -> Path:
    (folder / "runs").mkdir(parents=True)
    for index, ((policy, phi), (within, kwh, replicas)) in enumerate(sorted(runs.items())):
        run_id = f"{salt:04x}{index:012x}"
        (folder / "runs" / f"{run_id}.json").write_text(json.dumps({"run_id": run_id, **_doc(policy, phi, within, kwh, replicas)}))
    (folder / "experiment.json").write_text(json.dumps({
        "name": name, "description": "hand-made", "trace": {"preset": "newcastle-2010", "days": 365, "seed": seed},
        "base": {"seed": 1}, "grid": {"phi": sorted({phi for _, phi in runs}), "policy": sorted({p for p, _ in runs})},
        "figures": [], "quick": False}))
    return folder


def test_parse_policy_reads_beyond_specs():
    assert parse_policy("model:3,target=0.9") == ("model", 3)
    assert parse_policy("idle-single") == ("idle-single", 1)
    assert parse_policy("idle-fixed:2") == ("idle-fixed", 2)


def test_goals_are_decided_from_the_runs():
    table = ResultTable([_doc(p, phi, *v) for (p, phi), v in BEYOND.items()])
    model = check_goals(table, "figure1", "model:3")
    # (590 − 400) / 400 = +47.5 % ≥ 45; 1.3 ≤ 1.5 MWh; at P = 1 (795 − 800) / 800 = −0.625 % ≥ −1;
    # energy 1.1–1.3 MWh against fixed:2's 2.0 at both P
    assert model.cells() == ["✓ +47.5 %", "✓ 1.3 ≤ 1.5", "✓ -0.6 … +47.5 % (2 of 2 P)", "✓ 1.1–1.3 vs 2.0 (2 of 2 P)"]
    assert model.all_met is True
    idle = check_goals(table, "figure1", "idle-single")
    # +10 % at 0.1; (780 − 800) / 800 = −2.5 % at P = 1
    assert idle.gain.ok is False and idle.gain.text == "+10.0 %"
    assert idle.floor.ok is False and "below at P = 1 (-2.5 %)" in idle.floor.text
    assert idle.energy_vs_rl.ok is True and idle.energy_vs_fixed.ok is True
    # without rl:3 the energy goal is undecided, not passed
    bare = ResultTable([_doc(p, phi, *v) for (p, phi), v in BEYOND.items() if p != "rl:3"])
    assert check_goals(bare, "figure1", "model:3").energy_vs_rl.ok is None
    assert check_goals(bare, "figure1", "model:3").all_met is None


def test_beyond_section_numbers_match_hand_values(tmp_path):
    folder = _sweep(tmp_path / "s", BEYOND)
    text = render_report(folder, tuning_seeds=[1]).read_text()
    assert "### Beyond the paper — policies that use what a pool knows" in text
    assert "(a **held-out seed**)" in text and "this is a **held-out seed**" in text
    assert "| `model:3` | ✓ +47.5 % | ✓ 1.3 ≤ 1.5 | ✓ -0.6 … +47.5 % (2 of 2 P) | ✓ 1.1–1.3 vs 2.0 (2 of 2 P) |" in text
    assert "| `idle-single` | ✗ +10.0 % |" in text
    at_01 = text.split("#### At P = φ = 0.1")[1].split("####")[0]
    # share 590/1000, energy 1.3 MWh, kWh per workflow within P 1300/590 = 2.2034
    assert "| model:3 | 590 | 59.0 % | +47.5 % | 1.30 | 1.500 | 2.203 |" in at_01
    assert "| single | 400 | 40.0 % | +0.0 % | 1.00 | 1.000 | 2.500 |" in at_01
    assert "| oracle:3 | 600 | 60.0 % | +50.0 % | 1.40 | 1.400 | 2.333 |" in at_01
    at_1 = text.split("#### At P = φ = 1")[1].split("####")[0]
    assert "| model:3 | 795 | 79.5 % | -0.6 % | 1.10 | 1.100 | 1.384 |" in at_1 and "rl:3" not in at_1
    # the bandit table and Table 1 carry the new columns: rl:3 1500/480 = 3.125, single at P = 1 1000/800 = 1.25
    assert "| 0.1 | rl:3 | 480 | +20.0 % | 1.50 | – | 1.60 | 3.125 |" in text
    row = next(line for line in text.splitlines() if line.startswith("| 1 | 1,000 | 800 | 80.0 % |"))
    assert row.endswith("| 1.00 | 1.250 |"), row
    for name in ("figure1-beyond-within.png", "figure1-beyond-frontier.png"):
        assert (folder / "figures" / name).stat().st_size > 10_000
        assert f"](figures/{name})" in text
    doc = json.loads((folder / "report.json").read_text())
    assert doc["tuning_seeds"] == [1] and "kwh_per_workflow_within_p" in doc["definitions"]
    group = doc["groups"][0]
    assert group["role"] == "held-out seed"
    runs = {(r["policy"], r["phi"]): r for r in group["workflows"]["figure1"]["runs"]}
    assert len(runs) == len(BEYOND)
    assert runs[("model:3", 0.1)]["kwh_per_workflow_within_p"] == pytest.approx(1300 / 590)
    assert runs[("fixed:2", 1.0)]["replicas_per_task"] == 2.0
    assert runs[("single", 1.0)]["kwh_per_workflow_within_p"] == pytest.approx(1.25)
    beyond = group["workflows"]["figure1"]["beyond"]
    assert beyond["policies"] == ["idle-single", "model:3"]
    assert {g["policy"]: g["all_met"] for g in beyond["goals"]} == {"idle-single": False, "model:3": True}
    idle = next(g for g in beyond["goals"] if g["policy"] == "idle-single")
    assert idle["gain_at_p"]["gain_percent"] == pytest.approx(10.0)
    assert idle["floor_every_p"]["below_at_p"] == [1.0]
    assert idle["floor_every_p"]["gain_percent_by_p"]["1"] == pytest.approx(-2.5)
    assert idle["energy_vs_rl"]["reference_mwh"] == pytest.approx(1.5)
    assert [r["policy"] for r in beyond["by_p"]["1"]] == ["single", "fixed:2", "oracle:3", "idle-single", "model:3"]


def test_a_contextual_bandit_is_reported_beyond_the_paper_with_its_goals(tmp_path):
    runs = dict(BEYOND)
    runs[("linucb:3,alpha=3", 0.1)] = (585, 1450.0, 1.45)
    runs[("linucb:3,alpha=3", 1.0)] = (805, 1050.0, 1.05)
    assert parse_policy("linucb:3,alpha=3") == ("linucb", 3) and parse_policy("lints:2") == ("lints", 2)
    folder = _sweep(tmp_path / "s", runs)
    text = render_report(folder, tuning_seeds=[1]).read_text()
    # (585 − 400)/400 = +46.25 %; 1.45 ≤ 1.5 MWh; at P = 1 (805 − 800)/800 = +0.6 %; 1.05–1.45 vs 2.0
    assert ("| `linucb:3,alpha=3` | ✓ +46.2 % | ✓ 1.4 ≤ 1.5 | ✓ +0.6 … +46.2 % (2 of 2 P) | "
            "✓ 1.1–1.4 vs 2.0 (2 of 2 P) |") in text
    assert "`linucb:R` and `lints:R` are contextual bandits" in text
    at_01 = text.split("#### At P = φ = 0.1")[1].split("####")[0]
    assert "| linucb:3,alpha=3 | 585 | 58.5 % | +46.2 % | 1.45 | 1.450 | 2.479 |" in at_01
    beyond = json.loads((folder / "report.json").read_text())["groups"][0]["workflows"]["figure1"]["beyond"]
    assert beyond["policies"] == ["idle-single", "linucb:3,alpha=3", "model:3"]
    assert {g["policy"]: g["all_met"] for g in beyond["goals"]}["linucb:3,alpha=3"] is True


def test_a_paper_only_sweep_has_no_beyond_section_but_the_new_columns(tmp_path):
    folder = _sweep(tmp_path / "p", PAPER)
    text = render_report(folder).read_text()
    assert "Beyond the paper" not in text and "beyond" not in " ".join(p.name for p in (folder / "figures").iterdir())
    assert "kWh per workflow within P" in text and "replicas/task" in text
    assert "held-out" not in text and "tuning" not in text
    doc = json.loads((folder / "report.json").read_text())
    assert doc["groups"][0]["workflows"]["figure1"]["beyond"] is None and doc["tuning_seeds"] is None
    # fixed:2's energy per workflow within P: 2000/500 = 4.0 at 0.1, 2000/790 = 2.532 at 1
    assert "| fixed:2 | 4.000 | 2.532 |" in text


def test_several_sweeps_are_one_report_by_trace_seed(tmp_path):
    parent = tmp_path / "beyond"
    _sweep(parent / "seed-2", {k: v for k, v in BEYOND.items() if k[0] != "rl:3"}, name="b2", seed=2, salt=1)
    _sweep(parent / "seed-2-rl", {("rl:3", 0.1): BEYOND[("rl:3", 0.1)]}, name="b2-rl", seed=2, salt=2)
    worse = {k: (w - 30, e, r) if k[0] == "model:3" else (w, e, r) for k, (w, e, r) in BEYOND.items()}
    _sweep(parent / "seed-3", worse, name="b3", seed=3, salt=3)
    result = CliRunner().invoke(cli, ["report", str(parent), "--tuning-seed", "1", "--json"])
    assert result.exit_code == 0, result.output
    files = json.loads(result.output)
    assert files["report"] == str(parent / "report.md") and files["json"] == str(parent / "report.json")
    text = (parent / "report.md").read_text()
    assert "**Tuned on trace seed 1**" in text and "(its runs are not in this report)" in text
    assert "**Held out: trace seeds 2, 3**" in text
    assert "issue" not in text.lower()  # a report speaks to its reader, not of the project's tracker
    goals = text.split("## Beyond the paper — the targets on every trace")[1].split("\n## ")[0]
    # seed 2's rl:3 comes from the -rl folder; seed 3's model:3 has (560 − 400)/400 = +40 % at 0.1
    assert "| 2 | held-out seed | figure1 | `model:3` | ✓ +47.5 % | ✓ 1.3 ≤ 1.5 |" in goals
    assert "| 3 | held-out seed | figure1 | `model:3` | ✗ +40.0 % | ✓ 1.3 ≤ 1.5 |" in goals
    assert "## Trace seed 2 (held-out seed) — workflows: figure1" in text
    assert "From b2, b2-rl:" in text
    assert (parent / "figures" / "seed-3-figure1-beyond-frontier.png").exists()
    assert "](figures/beyond-goals-by-seed.png)" in goals and (parent / "figures" / "beyond-goals-by-seed.png").exists()
    doc = json.loads((parent / "report.json").read_text())
    assert [g["label"] for g in doc["groups"]] == ["trace seed 2", "trace seed 3"]
    assert [s["folder"] for s in doc["sweeps"]] == ["seed-2", "seed-2-rl", "seed-3"]
    # the same folders named one by one need -o; with it, the same report
    runner = CliRunner()
    refused = runner.invoke(cli, ["report", str(parent / "seed-2"), str(parent / "seed-2-rl")])
    assert refused.exit_code == 2 and "-o DIR" in refused.output
    out = tmp_path / "two"
    done = runner.invoke(cli, ["report", str(parent / "seed-2"), str(parent / "seed-2-rl"), "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert "| 2 | – | figure1 | `model:3` | ✓ +47.5 %" in (out / "report.md").read_text()  # no --tuning-seed: no role


def test_the_same_run_with_two_results_is_refused(tmp_path):
    parent = tmp_path / "p"
    _sweep(parent / "a", {("single", 0.1): (400, 1000.0, 1.0)}, seed=2, salt=1)
    _sweep(parent / "b", {("single", 0.1): (401, 1000.0, 1.0)}, seed=2, salt=2)
    result = CliRunner().invoke(cli, ["report", str(parent)])
    assert result.exit_code == 2
    assert "differs from the same run in" in result.output and str(parent / "b") in result.output


def test_a_folder_without_sweeps_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "empty")])
    assert result.exit_code == 2 and "no sub-folder is one" in result.output


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium (chromium, chromium-browser, google-chrome)")
def test_beyond_html_renders_in_headless_chromium(tmp_path):
    folder = _sweep(tmp_path / "s", BEYOND)
    render_report(folder, tuning_seeds=[1])
    browser = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={tmp_path / 'profile'}"]
    page = (folder / "report.html").as_uri()
    dom = subprocess.run([*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True).stdout
    for expected in ("Beyond the paper — policies that use what a pool knows", "<td>✓ +47.5 %</td>",
                     "<td>✗ +10.0 %</td>", "<th>kWh per workflow within P</th>", "<strong>held-out seed</strong>",
                     "<code>model:3</code>"):
        assert expected in dom, expected
    assert dom.count("<img") == 2 and "figures/figure1-beyond-frontier.png" in dom
    shot = tmp_path / "shot.png"
    subprocess.run([*browser, "--window-size=1200,6000", f"--screenshot={shot}", page], capture_output=True,
                   timeout=120, check=True)
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    colours = {tuple(p) for p in (pixels[::5, ::5, :3] * 255).astype(int).reshape(-1, 3)}
    assert len(colours) > 100  # the figures loaded (text alone gives a few greys)
