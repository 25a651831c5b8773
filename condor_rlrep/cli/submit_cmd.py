"""``condor-rlrep submit RUN.dag [condor_submit_dag options]``: queue an
instrumented DAG through the bindings and say how to follow it.
``instrument --submit`` ends the same way (:func:`submit_and_say`)."""

from __future__ import annotations

import shlex
from typing import Any

import click

from condor_rlrep.cli.options import emit_json, json_option

__all__ = ["submit", "submit_and_say"]


@click.command("submit", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("dag", metavar="RUN.dag", type=click.Path(exists=True, dir_okay=False))
@click.option("--schedd", "schedd", default=None, metavar="NAME", help="Submit to this schedd  [default: the local one].")
@json_option("Print the DAGMan job as one JSON object.")
@click.argument("submit_dag_args", nargs=-1, type=click.UNPROCESSED, metavar="[CONDOR_SUBMIT_DAG_OPTIONS]...")
def submit(dag: str, schedd: str | None, as_json: bool, submit_dag_args: tuple[str, ...]) -> None:
    """Submit the instrumented RUN.dag (what `instrument -o` wrote) to HTCondor,
    as condor_submit_dag would, through the Python bindings; print the DAGMan
    job id and the command to follow it.

    Options after RUN.dag are condor_submit_dag's, e.g.
    `-maxjobs 10 -maxidle 50 -batch-name mine -append 'accounting_group = g' -force`
    (-no_submit writes RUN.dag.condor.sub only).
    """
    from condor_rlrep.runreport.sources import open_run

    open_run(dag, need_started=False)  # refuses a DAG that is not an instrumented copy, naming it
    args = list(submit_dag_args)
    if "--json" in args:  # our own flag, given after RUN.dag among condor_submit_dag's
        args.remove("--json")
        as_json = True
    submit_and_say(dag, args, schedd, as_json)


def submit_and_say(dag: str, args: list[str], schedd: str | None, as_json: bool,
                   extra: dict[str, Any] | None = None) -> None:
    from condor_rlrep.condor.dagsubmit import parse_submit_dag_args, submit_dag

    request = parse_submit_dag_args(args)
    done = submit_dag(dag, request, schedd)
    follow = f"condor-rlrep status {shlex.quote(dag)} --watch"
    if as_json:
        emit_json({**(extra or {}), "dag": dag, "dagman_cluster": done.cluster, "schedd": done.schedd,
                   "condor_sub": done.condor_sub, "follow": follow if done.cluster is not None else None})
        return
    if done.cluster is None:
        click.echo(f"wrote {done.condor_sub} (-no_submit: nothing queued; condor_submit it when ready)")
        return
    click.echo(f"submitted {dag}: DAGMan job {done.cluster} on schedd {done.schedd}")
    click.echo(f"follow it with: {follow}")
