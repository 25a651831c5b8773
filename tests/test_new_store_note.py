"""What a new store starts from is said where it is made (``instrument``) and
where it is read (``agent show``), issue 27 part 2."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from condor_rlrep.cli.main import cli

FIG1 = Path(__file__).resolve().parents[1] / "examples" / "figure1" / "figure1.dag"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], prog_name="condor-rlrep")


def test_instrument_says_what_a_new_agent_store_starts_from(tmp_path):
    out = run("instrument", FIG1, "-o", tmp_path / "a.dag", "--store", tmp_path / "a.sqlite", "--policy", "agent",
              "--dagman-version", "25.14.0")
    assert out.exit_code == 0, out.output
    assert "created now" in out.stdout and "nothing learnt yet" in out.stdout
    assert "runs 1 replica except when it explores (10% of decisions" in out.stdout
    model = run("instrument", FIG1, "-o", tmp_path / "m.dag", "--store", tmp_path / "m.sqlite", "--policy", "model:3",
                "--dagman-version", "25.14.0")
    assert model.exit_code == 0, model.output
    assert "no runs yet" in model.stdout and "prior eviction rate of 1 per 8 h" in model.stdout
    again = run("instrument", FIG1, "-o", tmp_path / "b.dag", "--store", tmp_path / "a.sqlite", "--policy", "agent",
                "--dagman-version", "25.14.0")
    assert "existing" in again.stdout and "created now" not in again.stdout


def test_agent_show_says_an_empty_store_has_learnt_nothing(tmp_path):
    store = tmp_path / "s.sqlite"
    assert run("agent", "init", "--store", store).exit_code == 0
    shown = run("agent", "show", "--store", store)
    assert shown.exit_code == 0 and "no rewards yet" in shown.stdout
    assert "`instrument` without --policy runs model:R on a store whose agent has learnt nothing" in shown.stdout
    model = run("agent", "show", "--store", store, "--model", "model:3")
    assert model.exit_code == 0 and "no runs counted yet" in model.stdout
    # not "replicates from the first workflow" for every task: -ln(0.95)·8 h = 24.6 min
    assert "a task estimated over 25 min (at φ′ below 1) gets more than one replica, a shorter one runs once" in model.stdout
    one = run("agent", "show", "--store", store, "--model", "model:1")
    assert one.exit_code == 0 and "it runs one replica a task" in one.stdout
