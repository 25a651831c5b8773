"""``condor-rlrep instrument IN.dag -o OUT.dag``: write the instrumented copy."""

from __future__ import annotations

from typing import Any

import click

from condor_rlrep.instrument import InstrumentOptions, instrument as instrument_dag, load_instrument_config, parse_version


@click.command("instrument")
@click.argument("dag", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False), help="The instrumented DAG to write.")
@click.option("--phi", type=float, default=None, help="Contingency φ: deadline (1+φ)·CR(W) after the start [1.0].")
@click.option("--store", type=click.Path(dir_okay=False), default=None, help="Agent store [$CONDOR_RLREP_STORE, else the default].")
@click.option("--estimates", type=click.Path(exists=True, dir_okay=False), default=None, help="Sidecar file of per-node estimates: seconds, or bottlemod:MODEL.toml[#task].")
@click.option("--default-estimate", type=float, default=None, help="Estimate (s) for nodes that have none.")
@click.option("--max-replicas", type=click.IntRange(1, 100), default=None, help="At most this many replicas per node [3].")
@click.option("--policy", default=None, help="agent | epsilon-greedy | ucb1 | thompson | single | fixed:K [agent].")
@click.option("--criticality", type=click.Choice(["balanced", "current"]), default=None, help="φ′ (balanced) or φ″ (current) [balanced].")
@click.option("--dagman-version", default=None, help="HTCondor version of the pool's DAGMan [25.14.0].")
@click.option("--no-tolerance", is_flag=True, help="Set DAGMAN_NODE_JOB_FAILURE_TOLERANCE in a CONFIG file instead of TOLERANCE lines (DAGMan < 25.14).")
@click.option("--hooks-bin", type=click.Path(file_okay=False), default=None, help="Directory holding rlrep-pre/post/reaper.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None, help="TOML/JSON file with these options (and [power]).")
def instrument(dag: str, out: str, config_file: str | None, no_tolerance: bool, dagman_version: str | None, **given: Any) -> None:
    """Write an instrumented copy of DAG (the user's files are not touched).

    Estimates: --estimates file, VARS rlrep_estimate, VARS
    rlrep_bottlemod="model.toml[#task]" (a BottleMod model's predicted finish;
    path relative to the DAG file), --default-estimate, in that order.
    """
    values: dict[str, Any] = load_instrument_config(config_file) if config_file else {}
    values.update({key: value for key, value in given.items() if value is not None})
    if dagman_version is not None:
        values["dagman_version"] = parse_version(dagman_version)
    if no_tolerance:
        values["tolerance"] = "config"
    result = instrument_dag(dag, out, InstrumentOptions(**values))
    click.echo(f"wrote {result.dag} ({len(result.replicated)} replicable node(s); hook files in {result.context})")
    for node, why in result.passed_through.items():
        click.echo(f"  {node}: left as is ({why})")
    if result.store is None:
        click.echo(f"  agent store: {result.store_note}")
    else:
        click.echo(f"  agent store: {result.store} {result.store_note}")
    if result.config:
        click.echo(f"  CONFIG {result.config}")
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"submit it with: condor_submit_dag {result.dag}")
