"""``condor-rlrep instrument IN.dag -o OUT.dag``: write the instrumented copy."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import click
from click.core import ParameterSource

from condor_rlrep.agent.config import DEFAULT_MAX_REPLICAS
from condor_rlrep.cli.options import (
    criticality_option, default_estimate_option, emit_json, json_option, max_replicas_option, out_option, phi_option,
    warn,
)
from condor_rlrep.condor.submit import IDLE_ATTRIBUTE
from condor_rlrep.instrument.agentstore import DEFAULT_POLICY_HELP
from condor_rlrep.instrument import (
    InstrumentOptions, instrument as instrument_dag, load_instrument_config, load_power_table, parse_version,
)


@click.command("instrument")
@click.argument("dag", type=click.Path(exists=True, dir_okay=False))
@out_option("file", "The instrumented DAG to write.", required=True, old=("--output",))
@phi_option("Contingency φ ≥ 0: deadline (1+φ)·CR(W) after the DAG's start.")
@click.option("--store", type=click.Path(dir_okay=False), default=None, metavar="FILE|URL",
              help="Agent store [default: $CONDOR_RLREP_STORE, else $XDG_DATA_HOME/condor-rlrep/agent.sqlite].")
@click.option("--estimates", type=click.Path(exists=True, dir_okay=False), default=None, help="Sidecar file of per-node estimates: seconds, or bottlemod:MODEL.toml[#task].")
@default_estimate_option()
@max_replicas_option(None, f"At most R replicas per node.  [default: {DEFAULT_MAX_REPLICAS}; K for fixed:K; R for rl:R and model:R]")
@click.option("--policy", default=None, metavar="POLICY",
              help="agent (the store's strategy), epsilon-greedy | ucb1 | thompson (for a new store), "
                   "rl:R | rl-ucb1:R | rl-thompson:R (as in simulate), single or fixed:K; idle-POLICY (e.g. "
                   "idle-fixed:2, idle-agent) ranks machines by KeyboardIdle; model:R[,target=T,hi=H,prior=E] "
                   "(the survival model kept in the store). The simulator's oracle:R and react:R are refused.  "
                   "[default: " + DEFAULT_POLICY_HELP + "]")
@click.option("--idle-attribute", "idle_attribute", default=IDLE_ATTRIBUTE, show_default=True, metavar="NAME",
              help="Machine attribute the idle- policies and model:R rank machines by (seconds since the owner "
                   "left): the startd's KeyboardIdle, or one your pool publishes instead (a replay pool's "
                   "TraceKeyboardIdle).")
@criticality_option()
@click.option("--dagman-version", default=None, help="HTCondor version of the pool's DAGMan.  [default: read from condor_dagman on PATH, else 25.14.0]")
@click.option("--no-tolerance", is_flag=True, help="Set DAGMAN_NODE_JOB_FAILURE_TOLERANCE (DAGMan >= 24.8.1) in a CONFIG file instead of TOLERANCE lines (DAGMan < 25.14).")
@click.option("--always-pre", is_flag=True, default=False,
              help="Run PRE and POST on every node even under a fixed policy (which needs neither): status/report "
                   "then show each attempt's φ′ and slack, at DAGMan's cost of a script cycle or two per node.")
@click.option("--hooks-bin", type=click.Path(file_okay=False), default=None, help="Directory holding rlrep-pre/post/reaper.")
@click.option("--power-table", "power_table", type=click.Path(exists=True, dir_okay=False), default=None,
              help="TOML/JSON file of execute hosts' watts: default_watts = W and a [hosts] table "
                   "[default: $CONDOR_RLREP_POWER_TABLE, the config's power_table, HTCondor's RLREP_POWER_TABLE].")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="TOML/JSON file with these options (and [power]); options given here and the environment win.  "
                   "[default: $XDG_CONFIG_HOME/condor-rlrep/config.toml, keys store, policy, power_table]")
@click.option("--submit", "submit", is_flag=True,
              help="Submit the copy at once (through the bindings, as condor_submit_dag) and print the DAGMan job id.")
@click.option("--submit-args", "submit_args", default=None, metavar="'OPTIONS'",
              help="condor_submit_dag options for --submit, in one quoted string: '-maxjobs 10 -append \"x = y\"'.")
@click.option("--schedd", "schedd", default=None, metavar="NAME", help="With --submit: this schedd  [default: the local one].")
@json_option("Print what was written as one JSON object.")
@click.pass_context
def instrument(ctx: click.Context, dag: str, out: str, config_file: str | None, no_tolerance: bool,
               dagman_version: str | None, power_table: str | None, submit: bool, submit_args: str,
               schedd: str | None, as_json: bool, **given: Any) -> None:
    """Write an instrumented copy of DAG (the user's files are not touched).

    Estimates: --estimates file, VARS rlrep_estimate, VARS
    rlrep_bottlemod="model.toml[#task]" (a BottleMod model's predicted finish;
    path relative to the DAG file), --default-estimate, in that order.
    """
    from condor_rlrep.condor.config import load_user_config, user_config_path

    request_args = _submit_args(submit, submit_args, schedd)
    config_name = config_file or user_config_path()
    values: dict[str, Any] = load_instrument_config(config_file) if config_file else load_user_config(config_name)
    # flag > environment > config file > HTCondor config > default for the store,
    # policy and power table (condor_rlrep.condor.config); the command line wins
    # over the config file for the rest
    settings = _settings(ctx, given, power_table, values, config_name)
    values.update({key: value for key, value in given.items()
                   if key not in settings and (ctx.get_parameter_source(key) not in (None, ParameterSource.DEFAULT) or
                                               (key not in values and value is not None))})
    values.pop("power_table", None)
    store = settings["store"]
    values["store"] = None if store.source == "default" or store.source.startswith("$") else store.value
    values["policy"] = settings["policy"].value
    if settings["power_table"].source != "default" and settings["power_table"].value is not None:
        values.update(load_power_table(settings["power_table"].value))
    if dagman_version is not None:
        values["dagman_version"] = parse_version(dagman_version)
    if no_tolerance:
        values["tolerance"] = "config"
    result = instrument_dag(dag, out, InstrumentOptions(**values))
    if settings["policy"].source == "default":  # what the default chose (agentstore.default_policy)
        settings["policy"] = replace(settings["policy"], value=result.policy)
    if as_json:
        document = {**asdict(result), "submit": f"condor_submit_dag {result.dag}",
                    "settings": {name: {"value": _shown(setting), "source": setting.source}
                                 for name, setting in settings.items()}}
        for warning in result.warnings:
            warn(warning)
        if submit:
            from condor_rlrep.cli.submit_cmd import submit_and_say

            submit_and_say(str(result.dag), request_args, schedd, True, extra=document)
        else:
            emit_json(document)
        return
    click.echo(f"wrote {result.dag} ({len(result.replicated)} replicable node(s); hook files in {result.context})")
    for node, why in result.passed_through.items():
        click.echo(f"  {node}: left as is ({why})")
    if result.without_pre:
        click.echo(f"  {len(result.without_pre)} node(s) run without PRE"
                   + (f" ({len(result.without_post)} without POST: one replica, DAGMan's own result is the node's)"
                      if result.without_post else "")
                   + ": a fixed policy decides nothing at run time, so their descriptions are written now")
    for node, why in result.pre_kept.items():
        click.echo(f"  {node}: keeps PRE ({why})")
    if result.store is None:
        click.echo(f"  agent store: {result.store_note}")
    else:
        click.echo(f"  agent store: {result.store} {result.store_note}")
    click.echo("  settings (flag > environment > config file > HTCondor config > default): " + "; ".join(
        f"{name.replace('_', ' ')}{'' if name == 'store' else ' ' + _shown(setting)} from {setting.source}"
        + (f" ({result.policy_note})" if name == "policy" and result.policy_note else "")
        for name, setting in settings.items()))
    if result.config:
        click.echo(f"  CONFIG {result.config}")
    if result.dagman_note:
        click.echo(f"  DAGMan {result.dagman_note}")
    for warning in result.warnings:
        warn(warning)
    if submit:
        from condor_rlrep.cli.submit_cmd import submit_and_say

        submit_and_say(str(result.dag), request_args, schedd, False)
    else:
        click.echo(f"submit it with: condor-rlrep submit {result.dag} (or condor_submit_dag {result.dag})")


def _submit_args(submit: bool, text: str | None, schedd: str | None) -> list[str]:
    """--submit-args checked before anything is written."""
    import shlex

    from condor_rlrep.condor.dagsubmit import parse_submit_dag_args

    if not submit:
        if text or schedd:
            raise click.UsageError("--submit-args and --schedd go with --submit")
        return []
    try:
        args = shlex.split(text or "")
    except ValueError as err:
        raise click.BadParameter(f"{text!r}: {err}", param_hint="--submit-args") from None
    parse_submit_dag_args(args)
    return args


def _settings(ctx: click.Context, given: dict[str, Any], power_table: str | None, config: dict[str, Any],
              config_name: str) -> dict[str, Any]:
    from condor_rlrep.condor.config import resolve_setting

    policy_flag = given["policy"] if ctx.get_parameter_source("policy") != ParameterSource.DEFAULT else None
    flags = {"store": given["store"], "policy": policy_flag, "power_table": power_table}
    defaults = {"store": None, "policy": None, "power_table": None}  # policy None: instrument's default
    return {name: resolve_setting(name, flags[name], user_config=config, user_config_name=config_name,
                                  default=defaults[name])
            for name in ("store", "policy", "power_table")}


def _shown(setting: Any) -> str:
    if setting.value is None:
        return {"store": "(the XDG default, or none for a fixed policy)", "power_table": "(built-in watts)"}.get(
            setting.name, "none")
    if setting.name == "store":
        from condor_rlrep.store.location import describe_store

        return describe_store(str(setting.value))
    return str(setting.value)
