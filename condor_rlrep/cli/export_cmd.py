"""``condor-rlrep export``: write a DAX/WfFormat/DAG workflow as a runnable DAGMan DAG."""

from __future__ import annotations

from pathlib import Path

import click

from condor_rlrep.cli.options import emit_json, json_option, out_option
from condor_rlrep.dag.export import export_dagman
from condor_rlrep.dag.load import load_workflow


@click.command("export")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@out_option("dir", "Directory to write the DAG and its submit files into.", required=True, old=("--out-dir",),
            path_type=Path)
@click.option(
    "--time-scale",
    type=click.FloatRange(min=0.0),
    default=1.0,
    show_default=True,
    help="Stand-in tasks sleep runtime × this factor (their estimates are scaled alike).",
)
@click.option(
    "--executable",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Run this program for every task, as EXE SECONDS NODE [PROGRAM [ARG...]].",
)
@click.option("--name", help="Base name of the DAG file.  [default: the input file's stem]")
@click.option("--request-cpus", type=click.IntRange(min=1), default=1, show_default=True, help="CPUs per task when unknown.")
@json_option()
def export(file: Path, out: Path, time_scale: float, executable: Path | None, name: str | None, request_cpus: int,
           as_json: bool) -> None:
    """Write FILE (Pegasus DAX, WfCommons WfFormat JSON or DAGMan DAG) into the directory
    -o/--out as a DAG with one submit file per task and VARS rlrep_estimate for
    every known runtime."""
    workflow = load_workflow(file)
    dag = export_dagman(
        workflow, out, name=name, executable=executable, time_scale=time_scale, request_cpus=request_cpus
    )
    from condor_rlrep.dag.parser import read_dag
    from condor_rlrep.dag.model import ESTIMATE_MACRO

    # what the written DAG holds: a DAG's own VARS rlrep_estimate lines count too
    with_estimate = sum(node.var(ESTIMATE_MACRO) is not None for node in read_dag(dag).nodes.values())
    if as_json:
        emit_json({"dag": str(dag), "nodes": len(workflow.nodes), "edges": len(workflow.edges),
                   "joins": len(workflow.joins), "with_estimates": with_estimate,
                   "submit": f"cd {dag.parent} && condor_submit_dag {dag.name}"})
        return
    joins = f" and {len(workflow.joins)} many-to-many joins" if workflow.joins else ""
    click.echo(f"{dag}: {len(workflow.nodes)} nodes, {len(workflow.edges)} edges{joins}, {with_estimate} with estimates")
    click.echo(f"run it with: cd {dag.parent} && condor_submit_dag {dag.name}")
