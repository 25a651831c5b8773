"""A sweep folder holds the runs of one trace: a run id digests the run's
parameters only, so the trace's identity, recorded in the folder and in every
run file, is what keeps results of another trace out. Every way in — local
runs, --only, --prepare-only, the condor DAG, the report — refuses a folder,
generated trace or run file of another trace, in one line naming the file
and both traces, and changes nothing; the committed folders, whose run files
predate identities, are still read (and reported) as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from condor_rlrep.cli.main import cli
from condor_rlrep.errors import InputError
from condor_rlrep.sweep.experiment import load_experiment
from condor_rlrep.sweep.store import SweepDir
from condor_rlrep.sweep.traceid import trace_identity

RESULTS = Path(__file__).resolve().parent.parent / "sim" / "results"

TINY = """
[experiment]
name = "tiny-id"

[trace]
{trace}

[base]
workflows = ["figure1"]
fraction = 0.2
seed = 3

[grid]
phi = [0.2]
policy = [{policies}]
"""
PRESET = 'preset = "{preset}"\ndays = {days}\nseed = {seed}'


def _experiment(tmp_path: Path, name: str, *, preset="newcastle-2010", days=2, seed=7, trace=None,
                policies='"single", "fixed:2"') -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(TINY.format(trace=trace or PRESET.format(preset=preset, days=days, seed=seed), policies=policies))
    return path


def _sweep(*args: str):
    return CliRunner().invoke(cli, ["sweep", *map(str, args), "--no-report"])


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _refused(result, *fragments: str) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("condor-rlrep: error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """A finished two-run sweep (one simulation), copied afresh by ``folder``."""
    base = tmp_path_factory.mktemp("swept")
    done = _sweep(_experiment(base, "tiny"), "--out", base / "out")
    assert done.exit_code == 0, done.output
    return base


@pytest.fixture()
def folder(swept, tmp_path) -> Path:
    shutil.copytree(swept / "out", tmp_path / "out")
    return tmp_path / "out"


def test_the_trace_is_recorded_in_the_folder_the_trace_and_every_run(folder, tmp_path):
    identity = trace_identity(load_experiment(_experiment(tmp_path, "tiny")).trace)
    assert identity["preset"] == "newcastle-2010" and identity["seed"] == 7 and identity["days"] == 2
    assert json.loads((folder / "trace-identity.json").read_text()) == {"trace": identity}
    assert json.loads((folder / "trace" / "identity.json").read_text()) == identity
    runs = [json.loads(p.read_text()) for p in (folder / "runs").glob("*.json")]
    assert len(runs) == 2 and all(run["trace"] == identity for run in runs)
    # the profile's default days spelt out or not: one trace
    assert trace_identity({"preset": "newcastle-2010", "seed": 7}) == trace_identity(
        {"preset": "newcastle-2010", "seed": 7, "days": 365})


@pytest.mark.parametrize("change, theirs", [
    ({"seed": 8}, "seed 8, 2 days"),
    ({"days": 3}, "seed 7, 3 days"),
    ({"preset": "newcastle-2010-cal"}, "preset newcastle-2010-cal"),
])
def test_a_sweep_of_another_trace_into_the_folder_is_refused_and_nothing_is_touched(folder, tmp_path, change, theirs):
    before = _snapshot(folder)
    result = _sweep(_experiment(tmp_path, "other", **change), "--out", folder)
    line = _refused(result, f"{folder / 'trace-identity.json'}: sweep folder {folder} holds runs of preset newcastle-2010",
                    "seed 7, 2 days, but this experiment's trace is", theirs)
    assert "profile sha256" in line
    assert _snapshot(folder) == before


def test_a_generated_trace_of_another_seed_is_refused(swept, folder, tmp_path):
    other = tmp_path / "seed8"
    assert _sweep(_experiment(tmp_path, "seed8", seed=8), "--out", other).exit_code == 0
    shutil.rmtree(other / "trace")
    shutil.copytree(folder / "trace", other / "trace")  # seed 7's trace into seed 8's folder
    before = _snapshot(other)
    _refused(_sweep(_experiment(tmp_path, "seed8", seed=8), "--out", other),
             f"{other / 'trace' / 'identity.json'}: the trace in {other / 'trace'} was generated as "
             "preset newcastle-2010", "seed 7, 2 days, but this experiment's trace is", "seed 8, 2 days")
    assert _snapshot(other) == before
    # a trace from before the stamp is judged by the source line of its trace.toml
    (other / "trace" / "identity.json").unlink()
    before = _snapshot(other)
    _refused(_sweep(_experiment(tmp_path, "seed8", seed=8), "--out", other),
             f"{other / 'trace' / 'trace.toml'}: ", "profile newcastle-2010, seed 7, 2 days", "seed 8, 2 days")
    assert _snapshot(other) == before


def test_a_changed_trace_folder_is_refused(tmp_path):
    trace = tmp_path / "trace"
    assert CliRunner().invoke(cli, ["trace", "generate", "--preset", "newcastle-2010", "--days", "2", "--seed", "7",
                                    "-o", str(trace)]).exit_code == 0
    experiment = _experiment(tmp_path, "dir", trace='dir = "trace"', policies='"single"')
    out = tmp_path / "out"
    done = _sweep(experiment, "--out", out)
    assert done.exit_code == 0 and "1 ran" in done.output, done.output  # a dir trace is simulated where it is
    jobs = trace / "jobs.csv"
    lines = jobs.read_text().splitlines()
    lines[1] = lines[1].replace(",", ",1", 1)  # one job submitted later
    jobs.write_text("\n".join(lines) + "\n")
    before = _snapshot(out)
    _refused(_sweep(experiment, "--out", out), f"{out / 'trace-identity.json'}: ",
             "holds runs of trace folder with files sha256", "but this experiment's trace is trace folder")
    assert _snapshot(out) == before


def _foreign_run(tmp_path: Path, folder: Path) -> Path:
    """The same run (same parameters, same id) on the poisson preset's trace, copied over ``folder``'s own."""
    elsewhere = tmp_path / "poisson"
    assert _sweep(_experiment(tmp_path, "poisson", preset="poisson"), "--out", elsewhere).exit_code == 0
    name = sorted(p.name for p in (elsewhere / "runs").glob("*.json"))[0]
    assert (folder / "runs" / name).exists()
    shutil.copy(elsewhere / "runs" / name, folder / "runs" / name)
    return folder / "runs" / name


def test_a_run_file_copied_from_another_preset_is_refused_by_sweep_and_report(folder, tmp_path):
    copied = _foreign_run(tmp_path, folder)
    before = _snapshot(folder)
    _refused(_sweep(_experiment(tmp_path, "tiny"), "--out", folder),
             f"{copied}: run {copied.stem} is of preset poisson", f"but sweep folder {folder} is of preset newcastle-2010")
    _refused(CliRunner().invoke(cli, ["report", str(folder)]), f"{copied}: run {copied.stem} is of preset poisson")
    assert _snapshot(folder) == before
    # without its identity it is no better: this folder's runs all carry one
    document = json.loads(copied.read_text())
    del document["trace"]
    copied.write_text(json.dumps(document))
    before = _snapshot(folder)
    _refused(_sweep(_experiment(tmp_path, "tiny"), "--out", folder), f"{copied}: run {copied.stem} records no trace")
    _refused(CliRunner().invoke(cli, ["report", str(folder)]), f"{copied}: run {copied.stem} records no trace")
    assert _snapshot(folder) == before


def test_only_prepare_only_and_the_condor_backend_check_too(folder, tmp_path):
    from condor_rlrep.sweep.condor import write_condor_sweep

    experiment = _experiment(tmp_path, "tiny")
    runs = sorted(p.stem for p in (folder / "runs").glob("*.json"))
    copied = _foreign_run(tmp_path, folder)
    other = next(run for run in runs if run != copied.stem)  # --only names a run that is fine itself
    before = _snapshot(folder)
    for args in (["--only", other], ["--prepare-only"], ["--backend", "condor"]):
        _refused(_sweep(experiment, "--out", folder, *args), f"{copied}: run {copied.stem} is of preset poisson")
    with pytest.raises(InputError, match="is of preset poisson"):
        write_condor_sweep(load_experiment(experiment), SweepDir(folder), experiment_file=experiment)
    assert _snapshot(folder) == before and not (folder / "condor").exists()
    # and a DAG for a folder of another trace is never written
    with pytest.raises(InputError, match="holds runs of preset newcastle-2010"):
        write_condor_sweep(load_experiment(_experiment(tmp_path, "s8", seed=8)), SweepDir(folder),
                           experiment_file=experiment)
    assert _snapshot(folder) == before and not (folder / "condor").exists()


def _make_legacy(folder: Path) -> None:
    """``folder`` as a sweep wrote it before identities: no trace-identity.json,
    no stamp in trace/, run files without "trace"."""
    (folder / "trace-identity.json").unlink()
    (folder / "trace" / "identity.json").unlink()
    for path in (folder / "runs").glob("*.json"):
        document = json.loads(path.read_text())
        del document["trace"]
        path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def test_a_folder_from_before_identities_is_read_as_its_experiment_says_and_adopted_when_resumed(folder, tmp_path):
    _make_legacy(folder)
    ids = sorted(p.stem for p in (folder / "runs").glob("*.json"))
    before = _snapshot(folder)
    assert len(SweepDir(folder).load_results()) == 2  # the report reads it and writes no identity into it
    assert _snapshot(folder) == before
    # a sweep of another trace names the experiment.json that says which trace the folder is of
    _refused(_sweep(_experiment(tmp_path, "s8", seed=8), "--out", folder),
             f"{folder / 'experiment.json'}: sweep folder {folder} holds runs of preset newcastle-2010", "seed 8")
    assert _snapshot(folder) == before
    resumed = _sweep(_experiment(tmp_path, "tiny"), "--out", folder)
    assert resumed.exit_code == 0 and "0 ran (0 simulations), 2 already finished" in resumed.output, resumed.output
    identity = trace_identity(load_experiment(_experiment(tmp_path, "tiny")).trace)
    assert json.loads((folder / "trace-identity.json").read_text()) == {"trace": identity, "runs_without_identity": ids}
    assert json.loads((folder / "trace" / "identity.json").read_text()) == identity  # its source line matched
    for name, (data, _) in before.items():
        if name.startswith("runs/"):
            assert (folder / name).read_bytes() == data
    # from now on only those two may lack an identity
    stray = json.loads((folder / "runs" / f"{ids[0]}.json").read_text())
    stray["params"]["policy"] = "fixed:3"
    (folder / "runs" / "00000000000000aa.json").write_text(json.dumps(stray))
    _refused(_sweep(_experiment(tmp_path, "tiny"), "--out", folder), "00000000000000aa.json: run 00000000000000aa records no trace")


def _hand_made(folder: Path, preset: str, seed: int, policy: str = "single") -> Path:
    (folder / "runs").mkdir(parents=True)
    result = {"workflows": 1000, "within": {"0.1": 400}, "mean_replicas": 1.0,
              "energy_kwh": {"workflow_total": 1000.0, "workflow_bad": 0.0, "workflow_good": 1000.0}}
    (folder / "runs" / "0000000000000001.json").write_text(json.dumps({
        "run_id": "0000000000000001", "params": {"policy": policy, "phi": 0.1, "workflows": ["figure1"]},
        "result": result}))
    (folder / "experiment.json").write_text(json.dumps({
        "name": folder.name, "description": "", "trace": {"preset": preset, "days": 365, "seed": seed},
        "base": {}, "grid": {"phi": [0.1], "policy": [policy]}, "figures": [], "quick": False}))
    return folder


def test_the_report_does_not_put_two_traces_under_one_label(tmp_path):
    parent = tmp_path / "both"
    _hand_made(parent / "a", "newcastle-2010", 2)
    _hand_made(parent / "b", "newcastle-2010-cal", 2)  # "trace seed 2" too
    _refused(CliRunner().invoke(cli, ["report", str(parent)]), f"{parent / 'b'}: this sweep is of preset newcastle-2010-cal",
             f"but {parent / 'a'}, reported under the same label 'trace seed 2', is of preset newcastle-2010",
             "report them separately")
    assert not (parent / "report.md").exists()


def test_the_report_refuses_a_policy_the_grammar_does_not_know(tmp_path):
    folder = _hand_made(tmp_path / "s", "newcastle-2010", 2, policy="single:2")
    _refused(CliRunner().invoke(cli, ["report", str(folder)]),
             f"{folder / 'runs' / '0000000000000001.json'}: unknown policy 'single:2'")


def _committed() -> list[Path]:
    return sorted(p.parent for p in [*RESULTS.glob("*/experiment.json"), *RESULTS.glob("*/*/experiment.json")])


@pytest.mark.skipif(not RESULTS.is_dir(), reason="no sim/results in this checkout")
def test_every_committed_folder_is_accepted_as_it_is():
    from condor_rlrep.sweepreport.sources import Sweep, find_sweeps, group_by_trace

    folders = _committed()
    # folders from before identities are read through experiment.json; those
    # swept since carry the identity, which must still be the trace's
    legacy = [f for f in folders if not (f / "trace-identity.json").exists()]
    assert legacy  # the old layout is still read (folders re-swept since carry the stamp)
    for folder in folders:
        stamp = folder / "trace-identity.json"
        if stamp.exists():
            recorded = json.loads(stamp.read_text())["trace"]
            assert recorded == trace_identity(json.loads((folder / "experiment.json").read_text())["trace"]), folder
        sweep = Sweep.load(folder)
        assert len(sweep.documents) == len(list((folder / "runs").glob("*.json"))) > 0
        assert sweep.identity == trace_identity(sweep.experiment["trace"])
    assert [g.label for g in group_by_trace(find_sweeps([RESULTS / "beyond"]))] == [
        "trace seed 2", "trace seed 3", "trace seed 2010"]


@pytest.mark.skipif(not RESULTS.is_dir(), reason="no sim/results in this checkout")
def test_a_committed_report_renders_byte_for_byte_as_committed(tmp_path):
    from condor_rlrep.sweepreport.render import render_report

    copy = tmp_path / "paper-figure1"
    shutil.copytree(RESULTS / "paper-figure1", copy)
    render_report(copy)
    for name in ("report.md", "report.json", "report.html"):
        assert (copy / name).read_bytes() == (RESULTS / "paper-figure1" / name).read_bytes(), name
    assert not (copy / "trace-identity.json").exists()
