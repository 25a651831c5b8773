"""``condor-rlrep agent …``: create, inspect and drive the replica agent's store.

The store is ``--store``, else ``$CONDOR_RLREP_STORE``, else
``$XDG_DATA_HOME/condor-rlrep/agent.sqlite`` (``~/.local/share/…``): a file
path (SQLite) or a ``postgresql://`` URL (a server shared by several access
points). A URL is only ever printed without its password.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import asdict, fields
from datetime import datetime, timezone
from typing import Any

import click

from condor_rlrep.store import backends
from condor_rlrep.agent.config import SCHEDULES, STRATEGIES, AgentConfig
from condor_rlrep.store.location import resolve_store
from condor_rlrep.store.retention import Retention, parse_duration
from condor_rlrep.atomic import atomic_path
from condor_rlrep.cli.options import HELP, emit_json, json_option, out_option
from condor_rlrep.cli.params import FiniteFloat, Seconds
from condor_rlrep.errors import StoreError
from condor_rlrep.outcome import reward as outcome_reward

_STORE_HELP = ("Agent store: a file (SQLite) or a postgresql:// URL"
               " [default: $CONDOR_RLREP_STORE, else $XDG_DATA_HOME/condor-rlrep/agent.sqlite].")


def _store_option(func: Any) -> Any:
    return click.option("--store", "store_path", default=None, metavar="FILE|URL", help=_STORE_HELP)(func)


def _path(store_path: str | None) -> str:
    return resolve_store(store_path)  # the one rule: --store > $CONDOR_RLREP_STORE > XDG default


def _name(spec: str) -> str:
    return backends.describe_store(spec)


_PARAM_HELP = {
    "n_bins": "n: phi' bins between 0 and P (n+2 bins in all).",
    "p_max": "P: upper end of the binned phi' range.",
    "max_replicas": "R: actions are 1..R replicas.",
    "timezone": "IANA zone for the hour of day.",
    "strategy": "Selection policy.",
    "schedule": "Epsilon schedule (epsilon-greedy).",
    "epsilon_high": "eps1.",
    "epsilon_low": "eps2.",
    "switch_after": "l: rewards before eps1 -> eps2.",
    "window": "m: sliding window per (state, action).",
    "drift_threshold": "|window mean - estimate| counted as drift.",
    "recovery": "Rewards a drifting state spends at eps1.",
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


@click.group(context_settings=HELP)
def agent() -> None:
    """Create, inspect and drive the replica agent's store."""


@agent.command()
@_store_option
@_config_options
@click.option("--force", is_flag=True, help="Reset an existing store to these parameters (its history is forgotten).")
@json_option("Print the store and its parameters as one JSON object.")
def init(store_path: str | None, force: bool, as_json: bool, **params: Any) -> None:
    """Create an agent store with the given parameters."""
    config = AgentConfig(**params)
    path = _path(store_path)
    existed = backends.store_exists(path)
    if existed and not force:
        raise StoreError(f"{_name(path)}: already exists (pass --force to reset it to these parameters)")
    if existed:
        with backends.open_store(path) as store:
            store.reset(config)
    else:
        backends.create_store(path, config).close()
    if as_json:
        emit_json({"store": _name(path), "created": not existed, "reset": existed, "config": asdict(config)})
        return
    if existed:
        click.echo(f"reset agent store {_name(path)}")
        return
    click.echo(f"created agent store {_name(path)} ({config.n_states} states x {config.max_replicas} actions, "
               f"{config.strategy}, {config.schedule})")


@agent.command()
@_store_option
@json_option("Print the policy as one JSON object.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None, help="Write a heatmap PNG of the policy.")
@click.option("--model", "model_spec", default=None, metavar="model:R[,target=T,hi=H]",
              help="Show the survival model of the model:R policy instead: its eviction rate per hour of the week.")
@click.option("--phi-prime", type=FiniteFloat(), default=None,
              help="With --model: also say how many replicas a task of this φ′ gets, and why.")
@click.option("--estimate", type=Seconds(), default=None,
              help="With --phi-prime: the task's estimate (seconds, or with a s/m/h/d suffix).")
@click.option("--time", "timestamp", type=FiniteFloat(), default=None,
              help="With --phi-prime: POSIX time of the submission [default: now].")
def show(store_path: str | None, as_json: bool, plot: str | None, model_spec: str | None,
         phi_prime: float | None, estimate: float | None, timestamp: float | None) -> None:
    """Show the learned policy: best replica count and estimate per hour x phi' bin
    (with --model: the model:R policy's survival model and its choice)."""
    if model_spec is not None:
        _show_model(store_path, model_spec, phi_prime, estimate, timestamp, as_json)
        return
    if phi_prime is not None or estimate is not None or timestamp is not None:
        raise click.UsageError("--phi-prime, --estimate and --time go with --model")
    with backends.open_store(_path(store_path)) as store:
        learned = store.load_agent(rng=0)
    best, estimate, seen = learned.policy()
    n_bins = learned.space.n_phi_bins
    labels = learned.space.bin_labels()
    cells = [
        [
            {"replicas": int(best[h * n_bins + b]), "estimate": float(estimate[h * n_bins + b]),
             "rewards": int(seen[h * n_bins + b])}
            for b in range(n_bins)
        ]
        for h in range(24)
    ]
    if plot:
        _plot(plot, cells, labels, learned.config.max_replicas)
    if as_json:
        emit_json({"bins": labels, "timezone": learned.config.timezone, "hours": cells})
        return
    click.echo("best replica count (estimate) per hour (rows) and phi' bin (columns); '.' = no rewards yet")
    width = 11
    click.echo("hour " + "".join(label.rjust(width) for label in labels))
    for hour, row in enumerate(cells):
        text = "".join(
            (f"{c['replicas']} ({c['estimate']:+.2f})" if c["rewards"] else ".").rjust(width) for c in row
        )
        click.echo(f"{hour:>4} {text}")


def _show_model(store_path: str | None, spec_text: str, phi_prime: float | None, estimate: float | None,
                timestamp: float | None, as_json: bool) -> None:
    from condor_rlrep.agent.state import StateSpace
    from condor_rlrep.survival.model import SurvivalModel, choose_replicas, hourly_rates, parse_model_spec

    try:
        spec = parse_model_spec(spec_text)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--model") from None
    if spec is None:
        raise click.BadParameter(f"{spec_text!r} is not model:R[,target=T,hi=H]", param_hint="--model")
    if (phi_prime is None) != (estimate is None):
        raise click.UsageError("--phi-prime and --estimate go together")
    with backends.open_store(_path(store_path)) as store:
        config, cells = store.config, store.survival_cells()
    model = SurvivalModel.from_cells(cells)
    rows = hourly_rates(model)
    document: dict[str, Any] = {"policy": spec.spec, "timezone": config.timezone, "cells": len(cells),
                                "idle_bucket_edges_s": list(model.edges), "hours": rows}
    if phi_prime is not None and estimate is not None:
        when = time.time() if timestamp is None else timestamp
        hour = StateSpace.from_config(config).hour_of_week(when)
        choice = choose_replicas(model, hour, phi_prime, estimate, [None] * spec.max_replicas,
                                 target=spec.target, hi=spec.hi)
        document["choice"] = {"time": when, "hour_of_week": hour, "phi_prime": phi_prime, "estimate": estimate,
                              "replicas": choice.replicas, "reason": choice.reason,
                              "survival": choice.survivals[0] if choice.survivals else None,
                              "p_success": choice.success if choice.survivals else None}
    if as_json:
        emit_json(document)
        return
    week_exposure, week_evictions = model.week_totals()
    click.echo(f"survival model of {spec.spec} ({config.timezone}): {week_evictions:.0f} eviction(s) in "
               f"{week_exposure / 3600:.1f} h of runs; rate = evictions per hour of run, shrunk toward the week's")
    click.echo("day hour  rate/h  runs(h)  evictions")
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    for row in rows:
        hour = row["hour_of_week"]
        click.echo(f"{days[hour // 24]} {hour % 24:>4} {row['rate_per_hour']:>7.4f} {row['exposure_s'] / 3600:>8.2f}"
                   f" {row['evictions']:>10.0f}")
    choice_doc = document.get("choice")
    if choice_doc is not None:
        why = {
            "late": "φ′ < 0: the task is late already, no replica count brings it back",
            "slack": f"φ′ >= hi = {spec.hi:g}: the slack fits a rerun",
            "target": f"the fewest replicas whose chance that one survives reaches {spec.target:g}",
            "capped": f"even {spec.max_replicas} replicas fall short of {spec.target:g}",
        }.get(choice_doc["reason"], choice_doc["reason"])
        line = (f"φ′ = {phi_prime:g}, e = {estimate:g} s at {days[choice_doc['hour_of_week'] // 24]} "
                f"{choice_doc['hour_of_week'] % 24:02d}h: {choice_doc['replicas']} replica(s) — {why}")
        if choice_doc["survival"] is not None:
            line += (f" (one survives with p = {choice_doc['survival']:.3f}; "
                     f"P(some replica survives) = {choice_doc['p_success']:.3f})")
        click.echo(line)


def _plot(path: str, cells: list[list[dict[str, Any]]], labels: list[str], max_replicas: int) -> None:
    """Heatmap of the best replica count: one discrete colour per count
    (1..R), blank where no reward was seen, and each cell's reward count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import BoundaryNorm, ListedColormap

    grid = np.array([[c["replicas"] if c["rewards"] else np.nan for c in row] for row in cells], dtype=float)
    counts = np.array([[c["rewards"] for c in row] for row in cells])
    palette = plt.get_cmap("viridis", max_replicas)
    colours = ListedColormap([palette(i) for i in range(max_replicas)]).with_extremes(bad="white")
    norm = BoundaryNorm(np.arange(0.5, max_replicas + 1.0), max_replicas)
    fig, ax = plt.subplots(figsize=(1.6 + 0.62 * len(labels), 8))
    image = ax.imshow(grid, aspect="auto", cmap=colours, norm=norm, origin="upper")
    for (hour, column), seen in np.ndenumerate(counts):
        if seen:
            shade = colours(norm(grid[hour, column]))
            light = 0.299 * shade[0] + 0.587 * shade[1] + 0.114 * shade[2] > 0.55
            ax.text(column, hour, str(seen), ha="center", va="center", fontsize=6,
                    color="black" if light else "white")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(24))
    ax.set_xlabel("φ′ bin")
    ax.set_ylabel("hour of day")
    ax.set_title("best replica count (number: rewards seen; blank: none yet)", fontsize=9)
    bar = fig.colorbar(image, ax=ax, ticks=range(1, max_replicas + 1))
    bar.set_label("replicas")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


@agent.command()
@_store_option
@json_option("Print the counts as one JSON object.")
def stats(store_path: str | None, as_json: bool) -> None:
    """Decisions, outcomes, pending decisions and epsilon now, and what the
    model:R policy's survival model holds (`agent prune` removes old
    decisions and the model's old run keys, never its cells or the estimates)."""
    with backends.open_store(_path(store_path)) as store:
        result = asdict(store.stats())
    if as_json:
        emit_json(result)
        return
    model = {"survival_cells", "survival_runs", "survival_horizon"}
    for key, value in result.items():
        if key not in model:
            click.echo(f"{key.replace('_', ' ')}: {value}")
    click.echo(f"survival cells: {result['survival_cells']} (the model policy's exposure and evictions per hour"
               " of week and idle bucket; never pruned)")
    click.echo(f"survival runs: {result['survival_runs']} (keys of the node attempts counted, so that a"
               " repeated POST counts once; pruned with closed decisions, never before the pending expiry)")
    horizon = result["survival_horizon"]
    click.echo("survival horizon: none (no run key pruned yet)" if horizon is None else
               f"survival horizon: {_when(horizon)} (runs that ended before it are no longer counted:"
               " their keys may be pruned)")


@agent.command()
@_store_option
@out_option("file", "File to write the JSON document to.  [default: stdout]", old=("--output",))
def export(store_path: str | None, out: str | None) -> None:
    """Write the whole store as a JSON document, a decision at a time."""
    with backends.open_store(_path(store_path)) as store:
        if out is None:
            store.export_to(sys.stdout)
            return
        with atomic_path(out) as tmp:
            with open(tmp, "w", encoding="utf-8") as handle:
                store.export_to(handle)


@agent.command(name="import")
@_store_option
@click.argument("document", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--replace", is_flag=True, help="Overwrite a store that already holds data.")
@json_option("Print what was imported as one JSON object.")
def import_(store_path: str | None, document: str, replace: bool, as_json: bool) -> None:
    """Load a JSON document written by `agent export` into the store (created if missing)."""
    path = _path(store_path)
    with click.open_file(document, encoding="utf-8") as handle:
        store, count = backends.import_stream(path, handle, name=document, replace=replace)
    store.close()
    if as_json:
        emit_json({"store": _name(path), "imported": count})
        return
    click.echo(f"imported {count} decisions, with the estimates, into {_name(path)}")


@agent.command()
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
        copied, imported = backends.import_stream(target, spool, name=f"export of {_name(source)}", replace=replace)
        copied.close()
    if as_json:
        emit_json({"from": _name(source), "to": _name(target), "decisions": count, "imported": imported})
        return
    click.echo(f"migrated {imported} of {count} decisions, with the estimates, from {_name(source)} to {_name(target)}")


def _cutoff(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parse_duration(text)
    except StoreError as err:
        raise click.BadParameter(str(err)) from None


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@agent.command()
@_store_option
@click.option("--older-than", "closed_age", default=None, metavar="AGE",
              help="Remove closed decisions whose outcome is older than AGE (90d, 12h, 30m, seconds), and the"
                   " model:R policy's run keys recorded before AGE, or before the pending expiry if that is longer.")
@click.option("--pending-older-than", "pending_age", default=None, metavar="AGE",
              help="Expire pending decisions made more than AGE ago (their PRE died or their node never ran).")
@json_option("Print what was removed as one JSON object.")
def prune(store_path: str | None, closed_age: str | None, pending_age: str | None, as_json: bool) -> None:
    """Forget old history; what was learnt is kept.

    Removes old closed decisions, expires old pending ones, and removes the
    model:R policy's old run keys (`survival_runs`: which node attempts its
    survival model has counted, so that a repeated POST counts once). The
    agent's estimates and the survival model itself are never pruned. A
    model update whose runs ended before the pruned keys' window is no
    longer counted (the store cannot tell it from a repeat); see `agent stats`.

    Without options, applies the store's retention policy (`agent retention`).
    """
    closed, pending = _cutoff(closed_age), _cutoff(pending_age)
    path = _path(store_path)
    now = time.time()
    with backends.open_store(path) as store:
        policy = Retention(closed, pending) if closed is not None or pending is not None else store.retention
        if not policy.active:
            raise click.UsageError("nothing to prune: give --older-than / --pending-older-than,"
                                   " or set a policy with `condor-rlrep agent retention`")
        closed_before, pending_before = policy.cutoffs(now)
        runs_before = policy.runs_cutoff(now)
        result = store.prune(closed_before=closed_before, pending_before=pending_before, runs_before=runs_before)
        left = store.stats()
    if as_json:
        emit_json({**asdict(result), "closed_before": closed_before, "pending_before": pending_before,
                   "runs_before": runs_before, "decisions_left": left.decisions,
                   "survival_runs_left": left.survival_runs})
        return
    parts = []
    if closed_before is not None:
        parts.append(f"{result.closed} closed decision(s) closed before {_when(closed_before)}")
    if pending_before is not None:
        parts.append(f"{result.pending} pending decision(s) made before {_when(pending_before)}")
    if runs_before is not None:
        parts.append(f"{result.runs} model run key(s) recorded before {_when(runs_before)}")
    removed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    click.echo(f"removed {removed} from {_name(path)}; {left.decisions} decision(s) left,"
               f" {left.survival_runs} model run key(s) left; estimates and survival model unchanged")


@agent.command()
@_store_option
@click.option("--closed", "closed_age", default=None, metavar="AGE|never",
              help="Keep closed decisions this long after their outcome.")
@click.option("--pending", "pending_age", default=None, metavar="AGE|never",
              help="Expire pending decisions this long after they were made.")
@json_option("Print the policy (ages in seconds, null: never) as one JSON object.")
def retention(store_path: str | None, closed_age: str | None, pending_age: str | None, as_json: bool) -> None:
    """Show or set the store's retention policy (applied by `agent prune`)."""
    with backends.open_store(_path(store_path)) as store:
        policy = store.retention
        if closed_age is not None or pending_age is not None:
            def age(text: str | None, old: float | None) -> float | None:
                if text is None:
                    return old
                return None if text.strip().lower() == "never" else _cutoff(text)

            policy = Retention(age(closed_age, policy.closed), age(pending_age, policy.pending))
            store.set_retention(policy)
    if as_json:
        emit_json({"closed": policy.closed, "pending": policy.pending})
        return
    click.echo(policy.describe())


@agent.command()
@_store_option
@click.option("-y", "--yes", is_flag=True, help="Do not ask.")
def reset(store_path: str | None, yes: bool) -> None:
    """Forget every decision and estimate (parameters are kept)."""
    path = _path(store_path)
    if not yes and not click.confirm(f"Forget every decision and estimate in {_name(path)}?", default=False):
        click.echo("nothing changed")
        return
    with backends.open_store(path) as store:
        store.reset()
    click.echo(f"reset agent store {_name(path)}")


@agent.command()
@_store_option
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
    with backends.open_store(_path(store_path)) as store:
        decision = store.decide(phi_prime=phi_prime, hour=hour, timestamp=timestamp, context=context_doc, rng=seed)
    if as_json:
        emit_json(decision.to_json())
    else:
        click.echo(
            f"decision {decision.decision_id}: {decision.replicas} replica(s) for hour {decision.hour},"
            f" phi' bin {decision.phi_bin}{' (explored)' if decision.explored else ''}"
        )


@agent.command()
@_store_option
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
    with backends.open_store(_path(store_path)) as store:
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


__all__ = ["agent"]
