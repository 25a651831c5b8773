"""``condor-rlrep bottlemod``: analyse BottleMod workflow models."""

from __future__ import annotations

import math

import click

from condor_rlrep.cli.options import HELP, Group, emit_json, json_option


@click.group(cls=Group, context_settings=HELP)
def bottlemod() -> None:
    """BottleMod: task I/O and resource bottlenecks."""


@bottlemod.command()
@click.argument("model", type=click.Path(dir_okay=False))
@json_option()
@click.option("--plot", "plot_out", type=click.Path(dir_okay=False), help="Write a plot (PNG) of progress and bottlenecks instead of printing the table.")
def analyze(model: str, as_json: bool, plot_out: str | None) -> None:
    """Print finish times and bottleneck intervals of the tasks in MODEL (TOML)."""
    from condor_rlrep.bottlemod import analyze as run, load_model

    wf = load_model(model)
    result = run(wf)
    if plot_out:
        from condor_rlrep.bottlemod.plot import plot_analysis

        plot_analysis(result, plot_out, title=wf.name)
    if as_json:
        emit_json({**_as_dict(wf.name, result), **({"plot": plot_out} if plot_out else {})})
        return
    if plot_out:  # the plot is what was asked for: say where it went (the table is the command without --plot)
        click.echo(f"wrote plot {plot_out}")
        return
    span = result.makespan
    click.echo(f"workflow {wf.name or model}: makespan {_fmt(span) if span is not None else 'never (a task never finishes)'}")
    for r in result.tasks.values():
        fin = _fmt(r.finish) if r.finish is not None else "never"
        click.echo(f"  {r.name}: start {_fmt(r.start)}, finish {fin}")
        for b in r.bottlenecks:
            click.echo(f"    [{_fmt(b.start)}, {_fmt(b.end)})  {b.label}")


@bottlemod.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.argument("task")
@click.argument("item")
@click.option("--factor", type=float, default=math.inf, show_default=True,
              help="How much to relieve ITEM: inputs arrive FACTOR times sooner, resources get FACTOR times more.")
@json_option()
def gain(model: str, task: str, item: str, factor: float, as_json: bool) -> None:
    """Makespan saved if ITEM ("data:NAME" or "resource:NAME") of TASK were relieved."""
    from condor_rlrep.bottlemod import gain_if_relieved, load_model

    g = gain_if_relieved(load_model(model), task, item, factor)
    if as_json:
        # JSON has no infinity: the default (relieved entirely) is said as such, not as a null factor
        relief = {"fully_relieved": True} if math.isinf(factor) else {"factor": factor, "fully_relieved": False}
        emit_json({"task": task, "item": item, **relief, "finish_before": _num(g.finish_before),
                   "finish_after": _num(g.finish_after), "makespan_before": _num(g.makespan_before),
                   "makespan_after": _num(g.makespan_after), "gain": _num(g.gain)})
        return
    click.echo(f"{task} {item} x{factor:g}: finish {_fmt(g.finish_before)} -> {_fmt(g.finish_after)}, "
               f"makespan {_fmt(g.makespan_before)} -> {_fmt(g.makespan_after)}, gain {_fmt(g.gain)}")


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return "inf" if math.isinf(v) else f"{v:.6g}"


def _num(v: float | None) -> float | None:
    return None if v is None or math.isinf(v) else v


def _as_dict(name: str, result) -> dict:
    return {
        "name": name,
        "makespan": result.makespan,
        "tasks": {
            n: {
                "start": r.start,
                "finish": r.finish,
                "finished": r.finished,
                "max_progress": r.max_progress,
                "bottlenecks": [
                    {"start": b.start, "end": _num(b.end), "kind": b.kind, "name": b.name} for b in r.bottlenecks
                ],
            }
            for n, r in result.tasks.items()
        },
    }
