"""``condor-rlrep agent init | reset | export | import | migrate``: a
store as a whole — created with its parameters, emptied, written out as a
JSON document, loaded from one, or copied into another store.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, fields
from typing import Any

import click

from condor_rlrep.agent.config import SCHEDULES, STRATEGIES, AgentConfig
from condor_rlrep.atomic import atomic_path
from condor_rlrep.fileguard import open_exclusive
from condor_rlrep.cli.agent_options import store_name, store_option, store_path_of
from condor_rlrep.cli.options import emit_json, json_option, out_option
from condor_rlrep.errors import StoreError
from condor_rlrep.store import backends
from condor_rlrep.store.location import resolve_store

__all__ = ["init", "reset", "export", "import_", "migrate"]

_PARAM_HELP = {
    "n_bins": "n: φ′ bins between 0 and P (n+2 bins in all).",
    "p_max": "P: upper end of the binned φ′ range.",
    "max_replicas": "R: actions are 1..R replicas.",
    "timezone": "IANA zone for the hour of day.",
    "strategy": "Selection policy.",
    "schedule": "ε schedule (epsilon-greedy).",
    "epsilon_high": "ε₁: exploration before the switch.",
    "epsilon_low": "ε₂: exploration after it.",
    "switch_after": "l: rewards before ε₁ → ε₂.",
    "window": "m: sliding window per (state, action).",
    "drift_threshold": "|window mean - estimate| counted as drift.",
    "recovery": "Rewards a drifting state spends at ε₁.",
    "forget_to": "Count cap of a drifting state's actions (0: start afresh).",
    "step_size": "Constant step size alpha [default: sample mean].",
    "initial_estimate": "Estimate of an untried action.",
    "ucb_c": "UCB1 exploration weight.",
    "prior_mean": "Thompson prior mean.",
    "prior_sd": "Thompson prior s.d.",
    "noise_sd": "Thompson reward noise s.d.",
    "failure_reward": "Reward of a failed task.",
}


def _config_options(func: Any) -> Any:
    """One option per AgentConfig field, defaults from the dataclass."""
    for field in reversed(fields(AgentConfig)):
        name = "--" + field.name.replace("_", "-")
        default = field.default
        if field.name == "strategy":
            kind: Any = click.Choice(STRATEGIES)
        elif field.name == "schedule":
            kind = click.Choice(SCHEDULES)
        elif field.name == "timezone":
            kind = str
        elif field.name == "step_size":
            kind = float
        else:
            kind = type(default)
        doc = _PARAM_HELP.get(field.name, "")
        func = click.option(name, field.name, type=kind, default=default, show_default=True, help=doc)(func)
    return func


@click.command()
@store_option
@_config_options
@click.option("--force", is_flag=True, help="Reset an existing store to these parameters (its history is forgotten).")
@json_option("Print the store and its parameters as one JSON object.")
def init(store_path: str | None, force: bool, as_json: bool, **params: Any) -> None:
    """Create an agent store with the given parameters."""
    config = AgentConfig(**params)
    path = store_path_of(store_path)
    existed = backends.store_exists(path)
    if existed and not force:
        raise StoreError(f"{store_name(path)}: already exists (pass --force to reset it to these parameters)")
    if existed:
        with backends.open_store(path) as store:
            store.reset(config)
    else:
        backends.create_store(path, config).close()
    if as_json:
        emit_json({"store": store_name(path), "created": not existed, "reset": existed, "config": asdict(config)})
        return
    if existed:
        click.echo(f"reset agent store {store_name(path)}")
        return
    click.echo(f"created agent store {store_name(path)} ({config.n_states} states x {config.max_replicas} actions, "
               f"{config.strategy}, {config.schedule})")


@click.command()
@store_option
@click.option("-y", "--yes", is_flag=True, help="Do not ask.")
def reset(store_path: str | None, yes: bool) -> None:
    """Forget every decision and estimate (parameters are kept)."""
    path = store_path_of(store_path)
    if not yes:
        try:
            sure = click.confirm(f"Forget every decision and estimate in {store_name(path)}?", default=False)
        except click.exceptions.Abort:
            # stdin at its end (a script, cron, `< /dev/null`): nobody can answer, say how not to ask
            click.echo()  # end the prompt's line
            raise click.UsageError("no answer on stdin; nothing changed (pass -y to reset without asking)") from None
        if not sure:
            click.echo("nothing changed")
            return
    with backends.open_store(path) as store:
        store.reset()
    click.echo(f"reset agent store {store_name(path)}")


@click.command()
@store_option
@out_option("file", "File to write the JSON document to.  [default: stdout]", old=("--output",))
def export(store_path: str | None, out: str | None) -> None:
    """Write the whole store as a JSON document, a decision at a time."""
    with backends.open_store(store_path_of(store_path)) as store:
        if out is None:
            store.export_to(sys.stdout)
            return
        with atomic_path(out) as tmp, os.fdopen(open_exclusive(tmp, _export_mode(store_path)), "w",
                                                 encoding="utf-8") as handle:
            store.export_to(handle)


def _export_mode(store_path: str | None) -> int:
    """A copy never wider than its store: the store file's mode, 0600 for a server's."""
    from condor_rlrep.atomic import source_mode
    from condor_rlrep.store.location import is_url

    path = store_path_of(store_path)
    return 0o600 if is_url(str(path)) else source_mode(str(path))


@click.command(name="import")
@store_option
@click.argument("document", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--replace", is_flag=True, help="Overwrite a store that already holds data.")
@json_option("Print what was imported as one JSON object.")
def import_(store_path: str | None, document: str, replace: bool, as_json: bool) -> None:
    """Load a JSON document written by `agent export` into the store (created if missing)."""
    path = store_path_of(store_path)
    with click.open_file(document, encoding="utf-8") as handle:
        store, count = backends.import_stream(path, handle, name=document, replace=replace)
    store.close()
    if as_json:
        emit_json({"store": store_name(path), "imported": count})
        return
    click.echo(f"imported {count} decisions, with the estimates, into {store_name(path)}")


@click.command()
@click.option("--from", "source", required=True, metavar="FILE|URL", help="Store to copy from.")
@click.option("--to", "target", required=True, metavar="FILE|URL", help="Store to copy into (created if missing).")
@click.option("--replace", is_flag=True, help="Overwrite a target that already holds data.")
@json_option("Print what was copied as one JSON object.")
def migrate(source: str, target: str, replace: bool, as_json: bool) -> None:
    """Copy a whole store into another, e.g. a SQLite file into PostgreSQL, or back.

    The source is read from one snapshot (hooks may go on using it); the
    target gets all of it in one transaction, or nothing.
    """
    import tempfile

    source, target = resolve_store(source), resolve_store(target)
    if source == target:
        raise click.UsageError("--from and --to name the same store")
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        with backends.open_store(source) as store:
            count = store.export_to(spool)
        spool.seek(0)
        copied, imported = backends.import_stream(target, spool, name=f"export of {store_name(source)}", replace=replace)
        copied.close()
    if as_json:
        emit_json({"from": store_name(source), "to": store_name(target), "decisions": count, "imported": imported})
        return
    click.echo(f"migrated {imported} of {count} decisions, with the estimates, from {store_name(source)} to {store_name(target)}")
