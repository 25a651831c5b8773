"""Misuse of the agent's parameters, in one place."""

from __future__ import annotations

import pytest

from condor_rlrep.agent import AgentConfig, ConfigError
from condor_rlrep.errors import RlrepError


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"n_bins": 0}, "n_bins"),
        ({"n_bins": 2.5}, "n_bins"),
        ({"max_replicas": 0}, "max_replicas"),
        ({"max_replicas": True}, "max_replicas"),
        ({"p_max": 0.0}, "p_max"),
        ({"p_max": float("nan")}, "p_max"),
        ({"epsilon_high": 1.5}, "epsilon_high"),
        ({"epsilon_low": -0.1}, "epsilon_low"),
        ({"switch_after": -1}, "switch_after"),
        ({"window": 0}, "window"),
        ({"drift_threshold": 0.0}, "drift_threshold"),
        ({"step_size": 0.0}, "step_size"),
        ({"step_size": 1.5}, "step_size"),
        ({"ucb_c": -1.0}, "ucb_c"),
        ({"prior_sd": 0.0}, "prior_sd"),
        ({"noise_sd": float("inf")}, "noise_sd"),
        ({"strategy": "softmax"}, "strategy"),
        ({"schedule": "decaying"}, "schedule"),
        ({"timezone": "Mars/Olympus"}, "time zone"),
        ({"timezone": ""}, "timezone"),
        ({"failure_reward": "x"}, "failure_reward"),
    ],
)
def test_invalid_parameters(params, fragment):
    with pytest.raises(ConfigError, match=fragment) as info:
        AgentConfig(**params)
    assert isinstance(info.value, RlrepError) and isinstance(info.value, ValueError)


def test_defaults_are_the_papers():
    config = AgentConfig()
    # R is the live default (the paper's 1..10 is the simulator's rl:10)
    assert (config.n_bins, config.p_max, config.max_replicas) == (10, 1.0, 3)
    assert (config.epsilon_high, config.epsilon_low, config.failure_reward) == (0.5, 0.05, -5.0)
    assert config.n_states == 288


def test_round_trip_and_unknown_keys():
    config = AgentConfig(strategy="ucb1", step_size=0.1, timezone="Europe/London", p_max=2)
    assert AgentConfig.from_dict(config.to_dict()) == config
    assert config.p_max == 2.0 and isinstance(config.p_max, float)
    with pytest.raises(ConfigError, match="unknown agent parameter"):
        AgentConfig.from_dict({"epsilon": 0.1})


def test_one_max_replicas_default_for_agent_init_train_and_instrument():
    """A bare ``train`` or ``agent init`` used to build R = 10 agents that
    ``instrument`` (R = 3) then capped: one default, in one place."""
    from click.testing import CliRunner

    from condor_rlrep.agent.config import DEFAULT_MAX_REPLICAS
    from condor_rlrep.cli.main import cli
    from condor_rlrep.instrument.options import LIVE_MAX_REPLICAS

    assert DEFAULT_MAX_REPLICAS == LIVE_MAX_REPLICAS == AgentConfig().max_replicas == 3
    for command in (["agent", "init"], ["train"], ["instrument"]):
        text = CliRunner().invoke(cli, [*command, "--help"], terminal_width=200).output
        line = text[text.index("--max-replicas"):].split("\n  -")[0]
        assert f"default: {DEFAULT_MAX_REPLICAS}" in " ".join(line.split()), (command, line)
