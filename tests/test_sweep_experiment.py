"""Experiment definitions expand into stable grids of runs."""

from __future__ import annotations

import pytest

from condor_rlrep.errors import InputError
from condor_rlrep.sweep.experiment import RunSpec, builtin_experiments, load_experiment


def test_builtin_paper_experiments_present():
    assert {"paper-figure1", "paper-montage"} <= set(builtin_experiments())


def test_paper_grid_matches_the_paper_setup():
    exp = load_experiment("paper-figure1")
    assert exp.grid["phi"] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0]
    fixed = [p for p in exp.grid["policy"] if p.startswith("fixed:")]
    rl = [p for p in exp.grid["policy"] if p.startswith("rl:")]
    assert [int(p[6:]) for p in fixed] == list(range(2, 11))
    assert [int(p[3:]) for p in rl] == list(range(2, 11))
    assert exp.base["fraction"] == 0.10
    assert (exp.base["epsilon_high"], exp.base["epsilon_low"]) == (0.5, 0.05)
    assert len(exp.runs()) == 11 * len(exp.grid["policy"])


def test_quick_variant_overrides_only_what_it_names():
    exp = load_experiment("paper-figure1")
    quick = exp.as_quick()
    assert quick.quick and quick.trace["days"] == 28
    assert quick.trace["preset"] == exp.trace["preset"]
    assert quick.base == exp.base
    assert len(quick.runs()) < len(exp.runs())


def test_run_ids_are_stable_and_distinct():
    runs = load_experiment("paper-figure1").runs()
    assert len({r.run_id for r in runs}) == len(runs)
    assert RunSpec({"b": 1, "a": 2}).run_id == RunSpec({"a": 2, "b": 1}).run_id
    assert RunSpec({"a": 1}).run_id != RunSpec({"a": 1.5}).run_id


def test_bad_experiment_files(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[experiment]\nname = 'x'\n[trace]\npreset='p'\n[grid]\nphi = []\n")
    with pytest.raises(InputError, match=r"bad\.toml.*phi must be a non-empty list"):
        load_experiment(bad)
    bad.write_text("[experiment\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_experiment(bad)
    bad.write_text("[experiment]\nname='x'\n[trace]\npreset='p'\n[gird]\n")
    with pytest.raises(InputError, match="unknown table"):
        load_experiment(bad)
    with pytest.raises(InputError, match="no experiment file or built-in experiment named 'nope'"):
        load_experiment("nope")


def test_a_folder_named_like_an_experiment_does_not_shadow_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "paper-figure1").mkdir()  # e.g. a previous --out folder
    assert load_experiment("paper-figure1").name == "paper-figure1"
