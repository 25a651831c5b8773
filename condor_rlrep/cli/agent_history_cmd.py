"""``condor-rlrep agent stats | prune | retention``: what the store holds
and how long it keeps it — decisions, outcomes, the survival model's run
keys; pruning old history (never what was learnt) and the retention policy
that prunes by default.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from datetime import datetime, timezone

import click

from condor_rlrep.cli.agent_options import store_name, store_option, store_path_of
from condor_rlrep.cli.options import emit_json, json_option
from condor_rlrep.errors import StoreError
from condor_rlrep.store import backends
from condor_rlrep.store.retention import Retention, parse_duration

__all__ = ["stats", "prune", "retention"]


@click.command()
@store_option
@json_option("Print the counts as one JSON object.")
def stats(store_path: str | None, as_json: bool) -> None:
    """Decisions, outcomes, pending decisions and ε now, and what the
    model:R policy's survival model holds (`agent prune` removes old
    decisions and the model's old run keys, never its cells or the estimates)."""
    with backends.open_store(store_path_of(store_path)) as store:
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


def _cutoff(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parse_duration(text)
    except StoreError as err:
        raise click.BadParameter(str(err)) from None


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@click.command()
@store_option
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
    path = store_path_of(store_path)
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
    click.echo(f"removed {removed} from {store_name(path)}; {left.decisions} decision(s) left,"
               f" {left.survival_runs} model run key(s) left; estimates and survival model unchanged")


@click.command()
@store_option
@click.option("--closed", "closed_age", default=None, metavar="AGE|never",
              help="Keep closed decisions this long after their outcome.")
@click.option("--pending", "pending_age", default=None, metavar="AGE|never",
              help="Expire pending decisions this long after they were made.")
@json_option("Print the policy (ages in seconds, null: never) as one JSON object.")
def retention(store_path: str | None, closed_age: str | None, pending_age: str | None, as_json: bool) -> None:
    """Show or set the store's retention policy (applied by `agent prune`)."""
    with backends.open_store(store_path_of(store_path)) as store:
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
