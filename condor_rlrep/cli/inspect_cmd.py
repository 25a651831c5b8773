"""``condor-rlrep inspect``: critical path, CR(W), deadline and φ′/φ″ of a workflow.

Thin shell over :mod:`condor_rlrep.estimates`, :mod:`condor_rlrep.dag.graph`,
:mod:`condor_rlrep.dag.dot` and :mod:`condor_rlrep.criticality`. Times are seconds relative to s(W) = 0;
planned φ′/φ″ are taken at each node's planned submit time s(W) + earliest
start. Estimates come from :func:`~condor_rlrep.estimates.resolve_estimates`
(sidecar, VARS ``rlrep_estimate``, DAX/WfFormat runtimes, BottleMod models
named by VARS ``rlrep_bottlemod``, default); ``source`` says which.

When some nodes have no estimate (most DAGs written by hand), there is no
critical path to compute: the structure is shown instead — per node its
estimate if any, its level (the longest chain of ancestors) and its parents
and children — with the nodes that lack one named, and the exit status is 0.

``--json`` prints one compact object (``--indent N`` to indent it; that
takes Python's pure-Python encoder, several times slower on big DAGs); a
non-finite φ′/φ″ (a node whose remaining work is 0, e.g. a NOOP chain: it
can never make the workflow late) is written as ``null``. With φ ≥ 0 the
planned values are never −∞, so ``null`` always means +∞ here. A
many-to-many ``PARENT``/``CHILD`` line is a join (as DAGMan makes it): its
nodes list the join's name among their parents or children, and ``joins``
maps each join to its parents and children.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

import click

from condor_rlrep.atomic import write_atomic
from condor_rlrep.cli.options import criticality_option, default_estimate_option, json_option, phi_option, warn
from condor_rlrep.workflowplan import WorkflowPlan, plan_workflow
from condor_rlrep.estimates import read_estimates, resolve_estimates_with_origins
from condor_rlrep.dag.dot import generate_dot
from condor_rlrep.dag.graph import (
    DependencyGraph, dependency_graph, dependency_nodes, gc_paused, missing_estimates_error,
)

__all__ = ["inspect"]


@click.command("inspect")
@click.argument("workflow_file", metavar="FILE", type=click.Path(exists=True, dir_okay=False))
@phi_option()
@click.option("--estimates", "estimates_file", type=click.Path(exists=True, dir_okay=False),
              help="Runtime estimates: CSV 'node,seconds' or a JSON object {node: seconds}; "
                   "a value may be bottlemod:MODEL.toml[#task] (relative to the file).")
@default_estimate_option()
@json_option("Print one compact JSON object instead of a table.")
@click.option("--indent", type=click.IntRange(0, 16), default=None,
              help="With --json: indent by N spaces (slower on big workflows).")
@click.option("--dot", "dot_file", type=click.Path(dir_okay=False),
              help="Also write a Graphviz DOT file with the critical path in red.")
@criticality_option()
def inspect(
    workflow_file: str,
    phi: float,
    estimates_file: str | None,
    default_estimate: float | None,
    as_json: bool,
    indent: int | None,
    dot_file: str | None,
    criticality: str,
) -> None:
    """Show the critical path, CR(W), the deadline and φ′/φ″ of every node of FILE
    (a DAGMan DAG, Pegasus DAX or WfCommons WfFormat file); without estimates
    for every node, its structure and which nodes lack one."""
    # numpy (with OpenBLAS, which maps its buffers at import) before the
    # input: the graph needs it anyway, and under an address-space limit the
    # reader then gives up with one line when the rest does not fit, instead
    # of OpenBLAS exiting from C (status 1) at the import after the parse.
    import numpy  # noqa: F401

    from condor_rlrep.dag.load import load_workflow

    workflow = load_workflow(workflow_file)
    sidecar = read_estimates(estimates_file) if estimates_file else None
    estimates, origins = resolve_estimates_with_origins(
        workflow, sidecar=sidecar, default_estimate=default_estimate, allow_missing=True
    )
    nodes = dependency_nodes(workflow)
    missing = [node.name for node in nodes if node.name not in estimates]
    tasks = {node.name: node.transformation for node in nodes if node.transformation}
    if missing:
        # Structure only: with unit weights, earliest starts are levels.
        graph = dependency_graph(workflow, dict.fromkeys((node.name for node in nodes), 1.0))
    else:
        graph = dependency_graph(workflow, estimates)
    # Everything below works on the graph (which keeps the node names): the
    # workflow, most of the memory, goes before the plan and the output grow.
    del workflow, nodes
    plan = plan_workflow(graph, phi)
    if missing:
        note = missing_estimates_error(missing).message
        warn(f"{note}; showing the structure only")

    if dot_file:
        write_atomic(dot_file, _dot_text(graph, plan, Path(workflow_file).name, estimates, bool(missing)))
    _write(workflow_file, graph, plan, estimates, origins, tasks, missing, criticality, as_json, indent)
    sys.stdout.flush()
    if dot_file:
        click.echo(f"wrote {dot_file}", err=True)


def _write(workflow_file: str, graph: DependencyGraph, plan: WorkflowPlan, estimates: dict[str, float],
           origins: dict[str, str], tasks: dict[str, str], missing: list[str], criticality: str,
           as_json: bool, indent: int | None) -> None:
    """The report on stdout.

    A function of its own, kept short: CPython 3.11 unwinding an error out of
    a ``with`` block that starts far into a long function allocates, and
    when memory is gone it retries forever (:mod:`condor_rlrep.memlimit`).
    """
    # 10^5 nodes make a few 10^5 small lists and dicts that all stay alive
    # until printed: the cyclic GC would rescan them (and the workflow) for nothing.
    with gc_paused():
        # not click.echo: on a pipe it would scan tens of MB for ANSI codes
        write = sys.stdout.write
        if as_json and indent is not None:
            report = _report(graph, plan, estimates, origins, tasks, missing)
            write(json.dumps(report, indent=indent, allow_nan=False) + "\n")
        elif as_json:
            for piece in _json_pieces(graph, plan, estimates, origins, tasks, missing):
                write(piece)
            write("\n")
        else:
            for line in _table(workflow_file, graph, plan, estimates, origins, tasks, missing, criticality):
                write(line)
                write("\n")


# Nodes per block of the streamed JSON: big enough that json.dumps (C) does the
# work, small enough that a block's dicts and text are a few MB at most.
_BLOCK = 4096


def _neighbour_blocks(graph: DependencyGraph) -> Iterator[tuple[list[list[str]], list[list[str]]]]:
    """Parents and children of every node (each list sorted by name), a block
    of :data:`_BLOCK` nodes at a time.

    One global sort (numpy) instead of one per node: the per-node work is a
    list slice, and only one block's lists exist at a time.
    """
    import numpy as np

    names = graph.names
    total = len(names)
    rank = np.empty(total, np.int64)
    rank[np.array(sorted(range(total), key=names.__getitem__), dtype=np.int64)] = np.arange(total)
    count = graph.node_count

    def ordered(index: np.ndarray, offset: np.ndarray) -> np.ndarray:
        row = np.repeat(np.arange(total), np.diff(offset))
        return index[np.lexsort((rank[index], row))]

    ups, downs = ordered(graph.parent_index, graph.parent_offset), ordered(graph.child_index, graph.child_offset)
    up_bounds, down_bounds = graph.parent_offset.tolist(), graph.child_offset.tolist()

    def lists(flat_index: np.ndarray, bounds: list[int], first: int, end: int) -> list[list[str]]:
        base = bounds[first]
        flat = list(map(names.__getitem__, flat_index[base : bounds[end]].tolist()))
        return [flat[bounds[i] - base : bounds[i + 1] - base] for i in range(first, end)]

    for first in range(0, count, _BLOCK):
        end = min(first + _BLOCK, count)
        yield lists(ups, up_bounds, first, end), lists(downs, down_bounds, first, end)


def _joins(graph: DependencyGraph) -> dict[str, dict[str, list[str]]]:
    names = graph.names
    return {
        names[j]: {"parents": [names[i] for i in graph.parents(j)], "children": [names[i] for i in graph.children(j)]}
        for j in range(graph.node_count, len(names))
    }


def _node_blocks(
    graph: DependencyGraph,
    plan: WorkflowPlan,
    estimates: dict[str, float],
    origins: dict[str, str],
    tasks: dict[str, str],
    missing: list[str],
) -> Iterator[dict[str, dict[str, Any]]]:
    """The ``nodes`` of the JSON report, in node order, a block at a time."""
    names = graph.node_names
    columns = plan.columns()  # aligned with names: plan_workflow keeps the graph's node order
    levels = columns["earliest_start"]
    first = 0
    for parents, children in _neighbour_blocks(graph):
        block: dict[str, dict[str, Any]] = {}
        end = first + len(parents)
        if missing:
            for i, ups, downs in zip(range(first, end), parents, children):
                name = names[i]
                block[name] = {"estimate": estimates.get(name), "source": origins.get(name), "level": round(levels[i]),
                               "parents": ups, "children": downs}
        else:
            estimate, remaining = columns["estimate"], columns["remaining"]
            phi1, phi2 = columns["phi_prime"], columns["phi_double_prime"]
            for i, ups, downs in zip(range(first, end), parents, children):
                p1, p2 = phi1[i], phi2[i]
                block[names[i]] = {
                    "estimate": estimate[i],
                    "source": origins.get(names[i]),
                    "L": remaining[i],
                    "earliest_start": levels[i],
                    "phi_prime": p1 if p1 - p1 == 0.0 else None,  # finite (inf - inf is nan)
                    "phi_double_prime": p2 if p2 - p2 == 0.0 else None,
                    "parents": ups,
                    "children": downs,
                }
        if tasks:
            for name, entry in block.items():
                if name in tasks:
                    entry["transformation"] = tasks[name]
        first = end
        yield block


def _report_head(plan: WorkflowPlan, missing: list[str]) -> dict[str, Any]:
    complete = not missing
    return {
        "critical_path": list(plan.critical_path) if complete else None,
        "critical_path_seconds": plan.critical_path_seconds if complete else None,
        "phi": plan.phi,
        "deadline": plan.deadline if complete else None,
        "missing_estimates": missing,
    }


def _report(
    graph: DependencyGraph,
    plan: WorkflowPlan,
    estimates: dict[str, float],
    origins: dict[str, str],
    tasks: dict[str, str],
    missing: list[str],
) -> dict[str, Any]:
    """The whole JSON report as one object (for ``--indent``)."""
    nodes: dict[str, dict[str, Any]] = {}
    for block in _node_blocks(graph, plan, estimates, origins, tasks, missing):
        nodes.update(block)
    return {**_report_head(plan, missing), "nodes": nodes, "joins": _joins(graph)}


def _json_pieces(
    graph: DependencyGraph,
    plan: WorkflowPlan,
    estimates: dict[str, float],
    origins: dict[str, str],
    tasks: dict[str, str],
    missing: list[str],
) -> Iterator[str]:
    """``json.dumps(_report(...))``, byte for byte, as pieces: only one block of
    nodes is held at a time, never the whole report nor its text."""
    head = json.dumps(_report_head(plan, missing), allow_nan=False)
    yield head[:-1] + ', "nodes": {'
    separator = ""
    for block in _node_blocks(graph, plan, estimates, origins, tasks, missing):
        if block:
            yield separator
            yield json.dumps(block, allow_nan=False)[1:-1]
            separator = ", "
    yield '}, "joins": ' + json.dumps(_joins(graph), allow_nan=False) + "}"


def _seconds(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _ratio(value: float) -> str:
    return f"{value:.4f}" if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def _duration(value: float) -> str:
    hours, rest = divmod(round(value), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{seconds:02d}s"


def _aligned(header: list[str], rows: Callable[[], Iterable[list[str]]], left: int) -> Iterator[str]:
    """Rows as text columns: the first ``left`` left-aligned, the others right-aligned.

    ``rows`` makes the rows anew on each call: they are made twice, once for
    the column widths and once for the lines, and never held. Every name is
    padded to the longest, so with long names (deeply nested splices) the
    padded table is far larger than the workflow; and held, the cells of a
    2 M-node table alone would take a gigabyte."""
    widths = [len(cell) for cell in header]
    for row in rows():
        widths = [max(width, len(cell)) for width, cell in zip(widths, row)]
    for row in chain([header], rows()):
        cells = [c.ljust(w) for c, w in zip(row[:left], widths)] + [c.rjust(w) for c, w in zip(row[left:], widths[left:])]
        yield "  ".join(cells).rstrip()


def _table(
    path: str,
    graph: DependencyGraph,
    plan: WorkflowPlan,
    estimates: dict[str, float],
    origins: dict[str, str],
    tasks: dict[str, str],
    missing: list[str],
    mode: str,
) -> Iterator[str]:
    """The table's lines (see :func:`_aligned`)."""
    names = graph.node_names
    joins = f", {graph.join_count} joins" if graph.join_count else ""
    lines = [f"workflow       {path} ({len(names)} nodes, {graph.edge_count} edges{joins})"]
    show_task = bool(tasks)
    if missing:
        shown = ", ".join(missing[:10]) + (f", … ({len(missing) - 10} more)" if len(missing) > 10 else "")
        lines += [
            f"estimates      missing for {len(missing)} of {len(names)} nodes: {shown}",
            "               (set VARS node rlrep_estimate=\"SECONDS\", --estimates FILE or --default-estimate);",
            "               no critical path or φ′ without them: the structure follows",
            "",
        ]
        header = ["node", *(["task"] if show_task else []), "estimate", "source", "level", "parents", "children"]
        levels = plan.earliest_start
        order = sorted(range(len(names)), key=lambda i: (levels[names[i]], i))
        def partial_rows() -> Iterator[list[str]]:
            for i in order:
                name = names[i]
                yield [
                    str(name), *([tasks.get(name, "")] if show_task else []),
                    _seconds(estimates[name]) if name in estimates else "-", origins.get(name, "-"),
                    str(round(levels[name])), str(len(graph.parents(i))), str(len(graph.children(i))),
                ]

        return chain(lines, _aligned(header, partial_rows, 2 + show_task),
                     ["", "level: the longest chain of ancestors; a join counts once among parents/children"])
    on_path = set(plan.critical_path)
    phi1 = plan.planned_phi_prime()
    phi2 = plan.planned_phi_double_prime()
    used = "φ′" if mode == "balanced" else "φ″"
    lines += [
        "critical path  " + (" -> ".join(plan.critical_path) or "(empty)"),
        f"CR(W)          {_seconds(plan.critical_path_seconds)} s ({_duration(plan.critical_path_seconds)})",
        f"φ              {plan.phi:g}",
        f"deadline       {_seconds(plan.deadline)} s after s(W) ({_duration(plan.deadline)})",
        f"criticality    {mode} ({used} decides replica counts)",
        "",
    ]
    header = ["", "node", *(["task"] if show_task else []), "estimate", "source", "L′", "earliest", "φ′", "φ″"]
    order = sorted(range(len(names)), key=lambda i: (plan.earliest_start[names[i]], i))
    def planned_rows() -> Iterator[list[str]]:
        for i in order:
            name = names[i]
            yield [
                "*" if name in on_path else "",
                str(name),
                *([tasks.get(name, "")] if show_task else []),
                _seconds(plan.estimate[name]),
                origins.get(name, ""),
                _seconds(plan.remaining[name]),
                _seconds(plan.earliest_start[name]),
                _ratio(phi1[name]),
                _ratio(phi2[name]),
            ]

    return chain(lines, _aligned(header, planned_rows, 2 + show_task),
                 ["", "* on the critical path; times in seconds from s(W); φ′/φ″ at the planned start"])


def _dot_text(graph: DependencyGraph, plan: WorkflowPlan, title: str, estimates: dict[str, float], partial: bool) -> str:
    if partial:
        labels = {name: f"e={_seconds(estimates[name])}s" if name in estimates else "no estimate"
                  for name in graph.node_names}
        return "\n".join(generate_dot(graph, name=title, labels=labels)) + "\n"
    phi1 = plan.planned_phi_prime()
    labels = {
        name: f"e={_seconds(plan.estimate[name])}s L'={_seconds(plan.remaining[name])}s\\nphi'={_ratio(phi1[name])}"
        for name in graph.node_names
    }
    return "\n".join(generate_dot(graph, name=title, labels=labels, highlight=plan.critical_path)) + "\n"
