"""``condor-rlrep inspect``: critical path, CR(W), deadline and φ′/φ″ of a workflow.

Thin shell over :mod:`condor_rlrep.estimates`, :mod:`condor_rlrep.graph` and
:mod:`condor_rlrep.criticality`. Times are seconds relative to s(W) = 0;
planned φ′/φ″ are taken at each node's planned submit time s(W) + earliest
start. Estimates come from :func:`~condor_rlrep.estimates.resolve_estimates`
(sidecar, VARS ``rlrep_estimate``, DAX/WfFormat runtimes, BottleMod models
named by VARS ``rlrep_bottlemod``, default); ``source`` says which.

``--json`` prints one object; a non-finite φ′/φ″ (a node whose remaining
work is 0, e.g. a NOOP chain: it can never make the workflow late) is written
as ``null``. With φ ≥ 0 the planned values are never −∞, so ``null`` always
means +∞ here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from condor_rlrep.atomic import write_atomic

from condor_rlrep.criticality import PHI_MODES, WorkflowPlan, plan_workflow
from condor_rlrep.estimates import parse_seconds, read_estimates, resolve_estimates_with_origins
from condor_rlrep.graph import DependencyGraph, dependency_graph, generate_dot

__all__ = ["inspect"]


class _Seconds(click.ParamType):
    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_seconds(str(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)


@click.command("inspect")
@click.argument("workflow_file", metavar="FILE", type=click.Path(exists=True, dir_okay=False))
@click.option("--phi", type=click.FloatRange(min=0.0), default=0.5, show_default=True,
              help="Contingency φ: the workflow should finish within (1+φ)·CR(W).")
@click.option("--estimates", "estimates_file", type=click.Path(exists=True, dir_okay=False),
              help="Runtime estimates: CSV 'node,seconds' or a JSON object {node: seconds}; "
                   "a value may be bottlemod:MODEL.toml[#task] (relative to the file).")
@click.option("--default-estimate", type=_Seconds(), default=None,
              help="Estimate for nodes without one (seconds, or with a s/m/h/d suffix).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--dot", "dot_file", type=click.Path(dir_okay=False),
              help="Also write a Graphviz DOT file with the critical path in red.")
@click.option("--phi-mode", type=click.Choice(PHI_MODES), default="balanced", show_default=True,
              help="Criticality the agent decides on: balanced φ′ or current-task φ″.")
def inspect(
    workflow_file: str,
    phi: float,
    estimates_file: str | None,
    default_estimate: float | None,
    as_json: bool,
    dot_file: str | None,
    phi_mode: str,
) -> None:
    """Show the critical path, CR(W), the deadline and φ′/φ″ of every node of FILE
    (a DAGMan DAG, Pegasus DAX or WfCommons WfFormat file)."""
    from condor_rlrep.dag.load import load_workflow

    workflow = load_workflow(workflow_file)
    sidecar = read_estimates(estimates_file) if estimates_file else None
    estimates, origins = resolve_estimates_with_origins(workflow, sidecar=sidecar, default_estimate=default_estimate)
    graph = dependency_graph(workflow, estimates)
    plan = plan_workflow(graph, phi)

    if dot_file:
        write_atomic(dot_file, _dot_text(graph, plan, Path(workflow_file).name))
    if as_json:
        click.echo(json.dumps(_report(graph, plan, origins), indent=2, allow_nan=False))
    else:
        click.echo(_table(workflow_file, graph, plan, origins, phi_mode))
    if dot_file:
        click.echo(f"wrote {dot_file}", err=True)


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _report(graph: DependencyGraph, plan: WorkflowPlan, origins: dict[str, str]) -> dict[str, Any]:
    names = graph.names
    phi1 = plan.planned_phi_prime()
    phi2 = plan.planned_phi_double_prime()
    nodes = {}
    for i, name in enumerate(names):
        nodes[name] = {
            "estimate": plan.estimate[name],
            "source": origins.get(name),
            "L": plan.remaining[name],
            "earliest_start": plan.earliest_start[name],
            "phi_prime": _finite_or_none(phi1[name]),
            "phi_double_prime": _finite_or_none(phi2[name]),
            "parents": sorted(names[j] for j in graph.parents(i)),
            "children": sorted(names[j] for j in graph.children(i)),
        }
    return {
        "critical_path": list(plan.critical_path),
        "critical_path_seconds": plan.critical_path_seconds,
        "phi": plan.phi,
        "nodes": nodes,
    }


def _seconds(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _ratio(value: float) -> str:
    return f"{value:.4f}" if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def _duration(value: float) -> str:
    hours, rest = divmod(round(value), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{seconds:02d}s"


def _table(path: str, graph: DependencyGraph, plan: WorkflowPlan, origins: dict[str, str], mode: str) -> str:
    names = graph.names
    on_path = set(plan.critical_path)
    phi1 = plan.planned_phi_prime()
    phi2 = plan.planned_phi_double_prime()
    used = "phi'" if mode == "balanced" else "phi''"
    lines = [
        f"workflow       {path} ({len(names)} nodes, {graph.edge_count} edges)",
        "critical path  " + (" -> ".join(plan.critical_path) or "(empty)"),
        f"CR(W)          {_seconds(plan.critical_path_seconds)} s ({_duration(plan.critical_path_seconds)})",
        f"phi            {plan.phi:g}",
        f"deadline       {_seconds(plan.deadline)} s after s(W) ({_duration(plan.deadline)})",
        f"criticality    {mode} ({used} decides replica counts)",
        "",
    ]
    header = ["", "node", "estimate", "source", "L'", "earliest", "phi'", "phi''"]
    order = sorted(range(len(names)), key=lambda i: (plan.earliest_start[names[i]], i))
    rows = [
        [
            "*" if name in on_path else "",
            str(name),
            _seconds(plan.estimate[name]),
            origins.get(name, ""),
            _seconds(plan.remaining[name]),
            _seconds(plan.earliest_start[name]),
            _ratio(phi1[name]),
            _ratio(phi2[name]),
        ]
        for name in (names[i] for i in order)
    ]
    widths = [max(len(row[k]) for row in [header, *rows]) for k in range(len(header))]
    for row in [header, *rows]:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), *(c.rjust(w) for c, w in zip(row[2:], widths[2:]))]
        lines.append("  ".join(cells).rstrip())
    lines.append("")
    lines.append("* on the critical path; times in seconds from s(W); phi'/phi'' at the planned start")
    return "\n".join(lines)


def _dot_text(graph: DependencyGraph, plan: WorkflowPlan, title: str) -> str:
    phi1 = plan.planned_phi_prime()
    labels = {
        name: f"e={_seconds(plan.estimate[name])}s L'={_seconds(plan.remaining[name])}s\\nphi'={_ratio(phi1[name])}"
        for name in graph.names
    }
    return "\n".join(generate_dot(graph, name=title, labels=labels, highlight=plan.critical_path)) + "\n"
