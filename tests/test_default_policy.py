"""``instrument`` without ``--policy`` (issue 27 part 2): ``model:R`` on a
new store or one whose agent has learnt nothing, the store's agent once it
has learnt (a user who trained one keeps it), and the output says which and
why."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from _hookutil import FIGURE1
from condor_rlrep.agent.config import AgentConfig
from condor_rlrep.cli.main import cli
from condor_rlrep.errors import InputError
from condor_rlrep.instrument import InstrumentOptions, instrument
from condor_rlrep.store.location import create_store, open_store

T0 = 1_780_000_000.0


def run(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], prog_name="condor-rlrep", env=env)


def figure1(tmp_path: Path) -> Path:
    user = tmp_path / "user"
    shutil.copytree(FIGURE1.parent, user)
    return user / "figure1.dag"


def hook_policy(out: Path) -> str:
    return json.loads((Path(str(out) + ".rlrep") / "hooks.json").read_text())["policy"]


def test_a_new_store_gets_model_r(tmp_path: Path) -> None:
    dag = figure1(tmp_path)
    result = instrument(dag, tmp_path / "run" / "f.dag", InstrumentOptions(store=str(tmp_path / "s.sqlite")))
    assert (result.policy, result.policy_note, result.store_created) == ("model:3", "a new store", True)
    assert hook_policy(tmp_path / "run" / "f.dag") == "model:3"
    # R follows --max-replicas, so the default never contradicts it
    two = instrument(dag, tmp_path / "run" / "g.dag", InstrumentOptions(store=str(tmp_path / "t.sqlite"), max_replicas=2))
    assert two.policy == "model:2" and hook_policy(tmp_path / "run" / "g.dag") == "model:2"
    with pytest.raises(InputError, match="--max-replicas must be within 1..100"):
        instrument(dag, tmp_path / "run" / "h.dag", InstrumentOptions(store=str(tmp_path / "u.sqlite"), max_replicas=0))
    with pytest.raises(InputError, match="max_replicas must be a whole number within 1..100, got 2.0"):
        instrument(dag, tmp_path / "run" / "i.dag", InstrumentOptions(store=str(tmp_path / "u.sqlite"), max_replicas=2.0))
    assert not (tmp_path / "u.sqlite").exists() and not (tmp_path / "run" / "h.dag").exists()


def test_a_store_model_r_has_used_stays_model_r(tmp_path: Path) -> None:
    """model:R records runs in the survival model, no bandit decisions: the
    second run of the default does not flip to the agent."""
    dag, store = figure1(tmp_path), tmp_path / "s.sqlite"
    instrument(dag, tmp_path / "run" / "a.dag", InstrumentOptions(store=str(store)))
    with open_store(str(store)) as opened:
        assert opened.record_exposure("run-a/node-A/1", [(10, 2, 1800.0, 1.0)], now=T0)
        assert opened.stats().decisions == 0 and opened.stats().survival_cells == 1
    again = instrument(dag, tmp_path / "run" / "b.dag", InstrumentOptions(store=str(store)))
    assert again.policy == "model:3" and "has learnt nothing" in again.policy_note
    assert "0.5 h of runs, 1 eviction(s)" in again.store_note


def test_a_store_whose_agent_has_learnt_keeps_the_agent(tmp_path: Path) -> None:
    """A decision of the store's bandit (live, or rewards from `train`)
    makes the default the store's own agent, with what it has learnt."""
    dag, store = figure1(tmp_path), tmp_path / "s.sqlite"
    create_store(str(store), AgentConfig(strategy="ucb1")).close()
    with open_store(str(store)) as opened:
        opened.decide(phi_prime=0.5, now=T0)
    result = instrument(dag, tmp_path / "run" / "a.dag", InstrumentOptions(store=str(store)))
    assert result.policy == "agent" and hook_policy(tmp_path / "run" / "a.dag") == "agent"
    assert "the store's ucb1 agent has learnt: 0 reward(s), 1 decision(s)" in result.policy_note
    assert result.store_note.startswith("existing (ucb1, 0 reward(s) learnt, 1 pending")


def test_a_named_policy_is_not_the_default(tmp_path: Path) -> None:
    dag = figure1(tmp_path)
    result = instrument(dag, tmp_path / "run" / "a.dag", InstrumentOptions(store=str(tmp_path / "s.sqlite"), policy="agent"))
    assert result.policy == "agent" and result.policy_note == "" and "nothing learnt yet" in result.store_note
    fixed = instrument(dag, tmp_path / "run" / "b.dag", InstrumentOptions(policy="single"))
    assert fixed.policy == "single" and fixed.store is None


def test_train_then_instrument_without_policy_runs_the_trained_agent(tmp_path: Path) -> None:
    """The user's path of the README: `train`, then `instrument` with no
    --policy: the trained agent runs, and the output says why."""
    import numpy as np

    from _simutil import poisson_trace
    from condor_rlrep.sim.trace_io import write_trace

    trace = poisson_trace(np.random.default_rng(8), machines=20, rate=1 / 5000, length=1e5, session=1200, jobs=30,
                          job_length=900, job_window=(0, 5e4))
    write_trace(trace, tmp_path / "t")
    store = tmp_path / "trained.sqlite"
    trained = run("train", "--trace", tmp_path / "t", "--store", store, "--fraction", "0.5")
    assert trained.exit_code == 0, trained.output
    out = run("instrument", figure1(tmp_path), "-o", tmp_path / "run" / "f.dag", "--store", store,
              "--dagman-version", "25.14.0")
    assert out.exit_code == 0, out.output
    assert "policy agent from default (the store's epsilon-greedy agent has learnt: " in out.stdout
    assert hook_policy(tmp_path / "run" / "f.dag") == "agent"


def test_the_cli_says_what_the_default_chose_and_why(tmp_path: Path) -> None:
    dag = figure1(tmp_path)
    out = run("instrument", dag, "-o", tmp_path / "run" / "f.dag", "--store", tmp_path / "s.sqlite",
              "--dagman-version", "25.14.0", "--json")
    assert out.exit_code == 0, out.output
    document = json.loads(out.stdout)
    assert document["settings"]["policy"] == {"value": "model:3", "source": "default"}
    assert (document["policy"], document["policy_note"]) == ("model:3", "a new store")
    # the environment (or a config file) names a policy: that one, no default's note
    env = run("instrument", dag, "-o", tmp_path / "run" / "g.dag", "--store", tmp_path / "s.sqlite",
              "--dagman-version", "25.14.0", env={"CONDOR_RLREP_POLICY": "agent"})
    assert env.exit_code == 0, env.output
    assert "policy agent from $CONDOR_RLREP_POLICY;" in env.stdout
    helped = run("instrument", "--help")
    assert "the store's agent once its bandit has learnt anything" in " ".join(helped.stdout.split())


def test_the_model_note_says_which_tasks_replicate_from_the_first_workflow(tmp_path: Path) -> None:
    """Under the prior rate (1 per 8 h) one replica reaches the 0.95 target
    for a task up to -ln(0.95)·8 h ≈ 24.6 min: shorter tasks run once, so
    "replicates from the first workflow" holds for long tasks only."""
    from condor_rlrep.survival.model import SurvivalModel, choose_replicas

    assert math.isclose(-math.log(0.95) * 8 * 60, 24.62, abs_tol=0.01)
    empty = SurvivalModel()
    assert choose_replicas(empty, 0, 0.5, 24 * 60, [None] * 3, target=0.95, hi=1.0).replicas == 1
    assert choose_replicas(empty, 0, 0.5, 26 * 60, [None] * 3, target=0.95, hi=1.0).replicas == 2
    result = instrument(figure1(tmp_path), tmp_path / "run" / "f.dag", InstrumentOptions(store=str(tmp_path / "s.sqlite")))
    assert "a task estimated to run over 25 min (at φ′ below 1) gets the replicas" in result.store_note
    assert "a shorter one runs once" in result.store_note
    strict = instrument(figure1(tmp_path / "b"), tmp_path / "run" / "g.dag",
                        InstrumentOptions(store=str(tmp_path / "t.sqlite"), policy="model:3,target=0.99,hi=0.5"))
    assert "over 5 min (at φ′ below 0.5)" in strict.store_note  # -ln(0.99)·8 h = 4.8 min
