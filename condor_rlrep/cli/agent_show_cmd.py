"""``condor-rlrep agent show``: what the agent has learnt — the best
replica count and its estimate per hour of day and φ′ bin (as text, JSON or
a heatmap), or, with ``--model``, the model:R policy's survival model and
the replica count it would choose.
"""

from __future__ import annotations

import time
from typing import Any

import click

from condor_rlrep.agent.policy_map import plot_policy, policy_cells
from condor_rlrep.cli.agent_options import store_option, store_path_of
from condor_rlrep.cli.options import emit_json, json_option
from condor_rlrep.cli.params import FiniteFloat, Seconds
from condor_rlrep.store import backends

__all__ = ["show"]


@click.command()
@store_option
@json_option("Print the policy as one JSON object.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="Write a heatmap PNG of the policy instead of printing the table.")
@click.option("--all", "show_all", is_flag=True, help="With --model: every hour of the week (by default a summary).")
@click.option("--model", "model_spec", default=None, metavar="model:R[,target=T,hi=H,prior=E]",
              help="Show the survival model of the model:R policy instead: its eviction rate per hour of the week.")
@click.option("--phi-prime", type=FiniteFloat(), default=None,
              help="With --model: also say how many replicas a task of this φ′ gets, and why.")
@click.option("--estimate", type=Seconds(), default=None,
              help="With --phi-prime: the task's estimate (seconds, or with a s/m/h/d suffix).")
@click.option("--time", "timestamp", type=FiniteFloat(), default=None,
              help="With --phi-prime: POSIX time of the submission [default: now].")
def show(store_path: str | None, as_json: bool, plot: str | None, show_all: bool, model_spec: str | None,
         phi_prime: float | None, estimate: float | None, timestamp: float | None) -> None:
    """Show the learned policy: best replica count and estimate per hour × φ′ bin
    (with --model: the model:R policy's survival model and its choice)."""
    if model_spec is not None:
        _show_model(store_path, model_spec, phi_prime, estimate, timestamp, as_json, show_all)
        return
    if phi_prime is not None or estimate is not None or timestamp is not None or show_all:
        raise click.UsageError("--phi-prime, --estimate, --time and --all go with --model")
    with backends.open_store(store_path_of(store_path)) as store:
        learned = store.load_agent(rng=0)
    cells = policy_cells(learned)
    labels = learned.space.bin_labels()
    if plot:
        plot_policy(plot, cells, labels, learned.config.max_replicas)
    if as_json:
        emit_json({"bins": labels, "timezone": learned.config.timezone, "hours": cells,
                   **({"plot": plot} if plot else {})})
        return
    if plot:
        click.echo(f"wrote plot {plot}")
        return
    click.echo("best replica count (estimate) per hour (rows) and φ′ bin (columns); '.' = no rewards yet")
    width = 11
    click.echo("hour " + "".join(label.rjust(width) for label in labels))
    for hour, row in enumerate(cells):
        text = "".join(
            (f"{c['replicas']} ({c['estimate']:+.2f})" if c["rewards"] else ".").rjust(width) for c in row
        )
        click.echo(f"{hour:>4} {text}")
    if not any(c["rewards"] for row in cells for c in row):
        click.echo("no rewards yet: the store starts empty, every replica count untried, so the agent's greedy "
                   "choice is 1 replica until rewards arrive and only exploration replicates; `instrument` without "
                   "--policy runs model:R on a store whose agent has learnt nothing (see `agent show --model "
                   "model:3`)")


def _show_model(store_path: str | None, spec_text: str, phi_prime: float | None, estimate: float | None,
                timestamp: float | None, as_json: bool, show_all: bool = False) -> None:
    from condor_rlrep.agent.state import StateSpace
    from condor_rlrep.survival.model import choose_replicas, hourly_rates, parse_model_spec

    try:
        spec = parse_model_spec(spec_text)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--model") from None
    if spec is None:
        raise click.BadParameter(f"{spec_text!r} is not model:R[,target=T,hi=H,prior=E]", param_hint="--model")
    if (phi_prime is None) != (estimate is None):
        raise click.UsageError("--phi-prime and --estimate go together")
    with backends.open_store(store_path_of(store_path)) as store:
        config, cells = store.config, store.survival_cells()
    model = spec.model(cells)
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
    if not cells:
        import math

        prior = f"no runs counted yet: every hour's rate is the prior rate (1 per {1 / model.prior_rate / 3600:g} h of run)"
        if spec.max_replicas == 1 or spec.target <= 0:
            click.echo(f"{prior}; it runs one replica a task")
        else:  # one replica reaches the target alone while exp(-rate·e) >= target
            longest = -math.log(spec.target) / model.prior_rate / 60
            click.echo(f"{prior}, so from the first workflow a task estimated over {longest:.0f} min (at φ′ below "
                       f"{spec.hi:g}) gets more than one replica, a shorter one runs once")
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    if show_all:
        click.echo("day hour  rate/h  runs(h)  evictions")
        for row in rows:
            hour = row["hour_of_week"]
            click.echo(f"{days[hour // 24]} {hour % 24:>4} {row['rate_per_hour']:>7.4f} "
                       f"{row['exposure_s'] / 3600:>8.2f} {row['evictions']:>10.0f}")
    else:
        _model_summary(rows, days)
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


def _model_summary(rows: list[dict[str, Any]], days: tuple[str, ...]) -> None:
    """168 hours in 12 lines: per day, and the riskiest hours (``--all`` for every hour)."""
    click.echo("day  runs(h)  evictions  mean rate/h  riskiest hour")
    for day, name in enumerate(days):
        hours = [row for row in rows if row["hour_of_week"] // 24 == day]
        if not hours:
            continue
        exposure = sum(row["exposure_s"] for row in hours) / 3600
        evictions = sum(row["evictions"] for row in hours)
        worst = max(hours, key=lambda row: row["rate_per_hour"])
        mean_rate = sum(row["rate_per_hour"] for row in hours) / len(hours)
        click.echo(f"{name} {exposure:>8.2f} {evictions:>10.0f} {mean_rate:>12.4f}  "
                   f"{worst['hour_of_week'] % 24:02d}h ({worst['rate_per_hour']:.4f}/h)")
    top = sorted(rows, key=lambda row: row["rate_per_hour"], reverse=True)[:5]
    click.echo("riskiest hours of the week: " + ", ".join(
        f"{days[row['hour_of_week'] // 24]} {row['hour_of_week'] % 24:02d}h {row['rate_per_hour']:.4f}/h" for row in top)
        + f"  (every hour: --all)")
