"""``condor-rlrep simulate`` and ``condor-rlrep train``: thin shells over
:func:`condor_rlrep.sim.run.simulate`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from condor_rlrep.agent.config import DEFAULT_MAX_REPLICAS
from condor_rlrep.cli.options import (
    criticality_option, default_estimate_option, emit_json, json_option, max_replicas_option, out_option, phi_option,
)

__all__ = ["simulate", "train"]


def _reboot_hour(ctx: click.Context, param: click.Parameter, value: str) -> float | None:
    if value.lower() in ("none", "off", "no"):
        return None
    try:
        hour = float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an hour (0-23.99) or 'none'") from None
    if not 0 <= hour < 24:
        raise click.BadParameter(f"{value!r} is not in [0, 24)")
    return hour


def _common(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--trace", "trace_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Trace folder (machines.csv, logins.csv, jobs.csv, trace.toml)."),
        click.option("--preset", type=click.Choice(["newcastle-2010", "newcastle-2010-cal", "poisson"]), default=None,
                     help="Generate the trace from a shipped preset instead."),
        click.option("--trace-seed", type=int, default=2010, show_default=True,
                     help="Seed of the generated trace (--preset)."),
        click.option("--workflow", "workflows", multiple=True, metavar="SPEC",
                     help="figure1, montage or a DAG/DAX/WfFormat file, as NAME[@SCALE][:WEIGHT] "
                          "(repeatable; default figure1)."),
        click.option("--fraction", type=float, default=0.10, show_default=True,
                     help="Share w of trace jobs replaced by workflows."),
        phi_option("Contingency φ ≥ 0 of every workflow: deadline (1+φ)·CR(W) after its start."),
        criticality_option(),
        click.option("--seed", type=int, default=0, show_default=True, help="Simulation seed."),
        click.option("--days", type=float, default=None, help="Simulate only the first N days."),
        click.option("--negotiation-interval", type=float, default=0.0, show_default=True,
                     help="Seconds between negotiation cycles (0: match at once)."),
        click.option("--dagman-latency", type=float, default=0.0, show_default=True, metavar="SECONDS",
                     help="DAGMan's per-level turn: seconds between a task becoming ready (workflow "
                          "arrival, last parent done) and its decision and submission (0: at once)."),
        click.option("--slot-turnaround", type=float, default=0.0, show_default=True, metavar="SECONDS",
                     help="Seconds a machine freed by removing a job (a losing replica) waits before "
                          "it is matched again (0: at once)."),
        click.option("--machine-choice", type=click.Choice(["random", "efficient", "slot-order"]), default="random",
                     show_default=True, help="Which free machine a job gets: random, random among the "
                                             "lowest-watt, or the lowest-numbered (HTCondor's default "
                                             "negotiator order)."),
        click.option("--reboot-hour", default="3", show_default=True, callback=_reboot_hour,
                     help="Local hour of the nightly reboot, or 'none'."),
        click.option("--owner-idle", type=float, default=0.0, show_default=True,
                     help="Seconds after the last logout before a machine takes jobs again."),
        click.option("--strategy", type=click.Choice(["epsilon-greedy", "ucb1", "thompson"]), default=None,
                     help="Agent strategy of rl:R policies.  [default: epsilon-greedy, or the rl-STRATEGY:R of --policy]"),
        click.option("--epsilon-high", type=float, default=None, help="ε₁, exploration before the switch.  [default: 0.5]"),
        click.option("--epsilon-low", type=float, default=None, help="ε₂, exploration after it.  [default: 0.05]"),
        default_estimate_option("workflow nodes"),
        out_option("dir", "Directory to write workflows.csv, tasks.csv, completion.csv and summary.json into.",
                   path_type=Path),
        json_option("Print the summary as one JSON object."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _run(opts: dict[str, Any], policy: str, agent: Any = None, label: str = "simulate") -> Any:
    from condor_rlrep.sim.config import SimConfig
    from condor_rlrep.sim.outputs import write_outputs
    from condor_rlrep.sim.run import load_trace, simulate as run_simulation

    if (opts["trace_dir"] is None) == (opts["preset"] is None):
        raise click.UsageError("give exactly one of --trace DIR or --preset NAME")
    from condor_rlrep.sim.limits import check_engine_options

    limits = {k: opts[k] for k in ("negotiation_interval", "owner_idle", "days", "dagman_latency",
                                "slot_turnaround")}
    check_engine_options(**limits)  # before any work: one error naming the value and its limit
    config = SimConfig(
        workflows=tuple(opts["workflows"]) or ("figure1",),
        fraction=opts["fraction"],
        policy=policy,
        phi=opts["phi"],
        phi_mode=opts["criticality"],
        seed=opts["seed"],
        negotiation_interval=opts["negotiation_interval"],
        dagman_latency=opts["dagman_latency"],
        slot_turnaround=opts["slot_turnaround"],
        machine_choice=opts["machine_choice"],
        reboot_hour=opts["reboot_hour"],
        owner_idle=opts["owner_idle"],
        days=opts["days"],
        default_estimate=opts["default_estimate"],
        strategy=opts["strategy"],
        epsilon_high=opts["epsilon_high"],
        epsilon_low=opts["epsilon_low"],
    )
    trace = load_trace(trace_dir=opts["trace_dir"], preset=opts["preset"], days=opts["days"], seed=opts["trace_seed"])
    check_engine_options(**limits, length=float(trace.length))
    from condor_rlrep.cli.progress import Progress

    days = (min(opts["days"] * 86400.0, trace.length) if opts["days"] else trace.length) / 86400.0
    with Progress(label, 100.0, "%") as progress:
        progress.announce(f"{config.policy} on {days:.3g} days of trace, {trace.machine_count} machines")
        done = [0.0]

        def on_progress(fraction: float) -> None:
            step = 100.0 * fraction - done[0]
            if step >= 0.1:
                progress.update(step)
                done[0] += step

        try:
            result = run_simulation(trace, config, progress=on_progress, agent=agent)
        except KeyboardInterrupt:
            kept = "the store was not changed" if label == "train" else "nothing was written"
            raise KeyboardInterrupt(f"{label} stopped at {done[0]:.0f} % of the trace; {kept}") from None
        if done[0] < 100.0:
            progress.update(100.0 - done[0])
    if opts["out"] is not None:
        write_outputs(result, opts["out"])
    return result


def _print(result: Any, as_json: bool) -> None:
    summary = result.summary()
    if as_json:
        emit_json(summary)
        return
    e = summary["energy_kwh"]
    click.echo(
        f"{summary['policy']} φ={summary['phi']:g}: {summary['completed']}/{summary['workflows']} workflows completed, "
        f"{summary['tasks']} tasks, {summary['replicas']} replicas"
    )
    total = summary["workflows"]
    click.echo("workflows within P: " + ", ".join(
        f"{p}: {n}" + (f" ({100.0 * n / total:.1f} %)" if total else "") for p, n in summary["within"].items()))
    click.echo(
        f"energy kWh: good {e['good']:.1f}, bad {e['bad']:.1f}, workflows {e['total']:.1f}, "
        f"background {e['background']:.1f}; evictions {summary['evictions']['total']}"
    )
    click.echo(f"{summary['events']} events in {summary['wall_seconds']:.1f} s")


@click.command()
@click.option("--policy", default="single", show_default=True,
              help="single, fixed:K, rl:R, rl-ucb1:R, rl-thompson:R, oracle:R; beyond the paper: idle-<policy>, model:R[,target=T,hi=H,prior=E], react:R, model-react:R, "
                   "linucb:R[,alpha=A,lam=L,forget=G], lints:R[,…].")
@_common
def simulate(policy: str, as_json: bool, **opts: Any) -> None:
    """Simulate workflows on a multi-use cluster trace."""
    opts["as_json"] = as_json
    _print(_run(opts, policy), as_json)


@click.command()
@click.option("--store", required=True, metavar="FILE|URL",
              help="Agent store to write the trained agent to: a SQLite file or a postgresql:// URL.")
@max_replicas_option(DEFAULT_MAX_REPLICAS, "The agent's actions are 1..R replicas (ignored with --resume: the store's R).", old="--replicas")
@click.option("--resume", is_flag=True,
              help="Start from the agent already in --store and update it: its strategy and R; its ε₁ and ε₂ "
                   "unless --epsilon-high/--epsilon-low are given (then those, saved with it).")
@click.option("--replace", "replace_store", is_flag=True, help="Overwrite an existing store.")
@_common
def train(store: str, max_replicas: int, resume: bool, replace_store: bool, as_json: bool, **opts: Any) -> None:
    """Train the agent in simulation (rl:R) and save it to a store the hooks use
    (then: `condor-rlrep instrument DAG --store S`)."""
    from condor_rlrep.store import backends
    from condor_rlrep.store.location import resolve_store

    store = resolve_store(store)
    agent = None
    prefix = "rl" if opts["strategy"] in (None, "epsilon-greedy") else f"rl-{opts['strategy']}"
    name = backends.describe_store(store)
    if resume:
        agent = _resumed(store, opts)
        max_replicas = agent.config.max_replicas
        prefix = "rl" if agent.config.strategy == "epsilon-greedy" else f"rl-{agent.config.strategy}"
    elif backends.store_exists(store) and not replace_store:
        raise click.UsageError(f"{name} exists: pass --replace to overwrite it or --resume to continue it")
    result = _run(opts, f"{prefix}:{max_replicas}", agent=agent, label="train")
    backends.save_agent(store, result.agent, replace=True)
    _print(result, as_json)
    if not as_json:
        click.echo(f"agent saved to {name}")


def _resumed(store: str, opts: dict[str, Any]) -> Any:
    """The store's agent to continue: --epsilon-high/--epsilon-low given
    replace its stored ε₁/ε₂ (the user asked for them: before they were
    silently dropped); a different --strategy is refused (the store's
    estimates were learnt under its own); its random draws follow --seed,
    so a resumed run is repeatable."""
    from dataclasses import replace

    import numpy as np

    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.store import backends

    agent = backends.load_agent(store)
    if opts["strategy"] not in (None, agent.config.strategy):
        raise click.UsageError(f"--resume continues the store's {agent.config.strategy} agent; --strategy "
                               f"{opts['strategy']} needs a new store (--replace)")
    changes = {key: opts[key] for key in ("epsilon_high", "epsilon_low") if opts[key] is not None}
    try:
        config = replace(agent.config, **changes)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--epsilon-high/--epsilon-low") from None
    return Agent.from_state(config, agent.to_state(), rng=np.random.default_rng([opts["seed"], 2]))
