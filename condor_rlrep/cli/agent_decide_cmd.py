"""``condor-rlrep agent decide | record``: the agent driven by hand — a
replica count chosen for a task and logged as a pending decision, then
closed with its outcome or reward, as the PRE and POST hooks do.
"""

from __future__ import annotations

import json
import math

import click

from condor_rlrep.cli.agent_options import store_option, store_path_of
from condor_rlrep.cli.options import emit_json, json_option
from condor_rlrep.cli.params import FiniteFloat
from condor_rlrep.outcome import reward as outcome_reward
from condor_rlrep.store import backends

__all__ = ["decide", "record"]


@click.command()
@store_option
@click.option("--hour", type=click.IntRange(0, 23), default=None, help="Hour of day of the submission.")
@click.option("--time", "timestamp", type=FiniteFloat(), default=None, help="POSIX time of the submission [default: now].")
@click.option("--phi-prime", type=FiniteFloat(), required=True, help="Criticality φ′ (or φ″) of the task.")
@click.option("--context", default=None, help="JSON object stored with the decision.")
@click.option("--seed", type=int, default=None, help="Seed for a reproducible choice.")
@json_option("Print the decision as one JSON object.")
def decide(
    store_path: str | None,
    hour: int | None,
    timestamp: float | None,
    phi_prime: float,
    context: str | None,
    seed: int | None,
    as_json: bool,
) -> None:
    """Choose a replica count for a task and log the pending decision."""
    context_doc = None
    if context is not None:
        try:
            context_doc = json.loads(context)
        except json.JSONDecodeError as err:
            raise click.BadParameter(f"not valid JSON: {err.msg}", param_hint="--context") from err
    with backends.open_store(store_path_of(store_path)) as store:
        decision = store.decide(phi_prime=phi_prime, hour=hour, timestamp=timestamp, context=context_doc, rng=seed)
    if as_json:
        emit_json(decision.to_json())
    else:
        click.echo(
            f"decision {decision.decision_id}: {decision.replicas} replica(s) for hour {decision.hour},"
            f" φ′ bin {decision.phi_bin}{' (explored)' if decision.explored else ''}"
        )


@click.command()
@store_option
@click.argument("decision_id", type=click.IntRange(min=1))
@click.option("--success", "success", flag_value=True, default=None, help="The task met its deadline.")
@click.option("--failure", "success", flag_value=False, help="The task missed its deadline.")
@click.option("--sigma", type=click.FloatRange(0.0, 1.0), default=None, help="Wasted-energy share sigma in [0, 1] (with --success).")
@click.option("--reward", "reward_value", type=FiniteFloat(), default=None, help="Record this reward as is.")
@json_option("Print the recorded reward as one JSON object.")
def record(
    store_path: str | None,
    decision_id: int,
    success: bool | None,
    sigma: float | None,
    reward_value: float | None,
    as_json: bool,
) -> None:
    """Close a decision with its outcome: --success --sigma S | --failure | --reward R."""
    if (success is not None) == (reward_value is not None):
        raise click.UsageError("give exactly one of --success --sigma S, --failure or --reward R")
    if success is True and sigma is None:
        raise click.UsageError("--success needs --sigma S")
    if sigma is not None and success is not True:
        raise click.UsageError("--sigma goes with --success")
    with backends.open_store(store_path_of(store_path)) as store:
        if reward_value is not None:
            value, outcome = reward_value, None
        else:
            failure_reward = store.config.failure_reward
            value = outcome_reward(bool(success), 0.0 if sigma is None else sigma, failure_reward=failure_reward)
            outcome = {"success": bool(success), "sigma": sigma}
        if not math.isfinite(value):
            raise click.BadParameter("must be finite", param_hint="--reward")
        fresh = store.record(decision_id, value, outcome)
    if as_json:
        emit_json({"decision_id": decision_id, "reward": value, "recorded": fresh})
    elif fresh:
        click.echo(f"decision {decision_id}: recorded reward {value:+g}")
    else:
        click.echo(f"decision {decision_id}: already recorded with this outcome; nothing changed")
