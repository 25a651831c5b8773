"""``condor-rlrep status RUN.dag``: where every node of an instrumented run stands.

Thin shell over :mod:`condor_rlrep.runreport` (``load`` reads, ``status``
judges, ``tables`` formats). ``--schedd`` adds the schedd's queue state
through :mod:`condor_rlrep.runreport.queue`, the one place that talks to a
schedd.
"""

from __future__ import annotations

import json
import sys
import time

import click

from condor_rlrep.cli.options import json_option

__all__ = ["status"]


@click.command("status")
@click.argument("dag", metavar="RUN.dag")
@json_option("Print one JSON object instead of a table.")
@click.option("--watch", "watch", type=float, default=None, is_flag=False, flag_value=5.0, metavar="[SECONDS]",
              help="Refresh every SECONDS until DAGMan exits or Ctrl-C.  [default: 5]")
@click.option("--schedd", "schedd", default=None, is_flag=False, flag_value="", metavar="[NAME]",
              help="Also ask the schedd (the local one, or NAME) for the queue state of each replica.")
@click.option("--all", "show_all", is_flag=True, help="List every node (by default a big DAG shows 40 rows).")
def status(dag: str, as_json: bool, watch: float | None, schedd: str | None, show_all: bool) -> None:
    """Show each node of the instrumented RUN.dag: state, replicas decided,
    running, removed and evicted, φ′ at submission and slack against the
    workflow deadline, with the run's totals on top. Reads only files (node
    log, .dagman.out, the run's context) unless --schedd."""
    from condor_rlrep.runreport.load import RunReader

    if watch is not None and watch <= 0:
        raise click.BadParameter("must be > 0", param_hint="--watch")
    reader = RunReader(dag, use_checkpoint=watch is None)
    limit = None if show_all or as_json else 40
    try:
        _watch(reader, as_json, watch, schedd, limit)
    except KeyboardInterrupt as err:
        if watch is None:
            raise
        raise KeyboardInterrupt("stopped watching; DAGMan's run goes on") from err


def _watch(reader, as_json: bool, watch: float | None, schedd: str | None, limit: int | None) -> None:
    from condor_rlrep.runreport.status import run_status
    from condor_rlrep.runreport.tables import status_table

    while True:
        data = reader.read()
        queue = None
        if schedd is not None:
            from condor_rlrep.runreport.queue import schedd_queue

            queue = schedd_queue(data, schedd or None)
        result = run_status(data, queue=queue)
        if as_json:
            text = json.dumps(result.to_json(), separators=(",", ":"), allow_nan=False, default=_finite) + "\n"
        else:
            text = status_table(result, limit=limit)
        if watch is not None and not as_json and sys.stdout.isatty():
            click.clear()
        click.echo(text, nl=False)
        if watch is None or result.dagman.startswith("exited"):
            return
        time.sleep(watch)


def _finite(value: object) -> object:
    raise TypeError(f"not JSON: {value!r}")
