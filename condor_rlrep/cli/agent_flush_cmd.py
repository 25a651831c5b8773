"""``condor-rlrep agent flush RUN.dag``: record what a run's hooks spooled.

POST spools an outcome (or a ``model:R`` update) when the store cannot take
it, and every later POST that reaches the store, and the reaper on its way
out, flushes the spool. When the store was still away at the end of the run
and no rescue follows, nothing else would: ``status`` reports the entries
and this command records them, into the store the run names, under the same
checks (an entry goes only into its own store and decision). Exit 1 when
some entry stays (the store still locked, an entry for another store), 2
when the store cannot be opened.
"""

from __future__ import annotations

import click

from condor_rlrep.cli.options import emit_json, json_option

__all__ = ["flush"]


@click.command()
@click.argument("dag", type=click.Path(dir_okay=False))
@json_option("Print what was flushed and what stays as one JSON object.")
def flush(dag: str, as_json: bool) -> None:
    """Record the outcomes and model updates that the hooks of the
    instrumented DAG's run spooled while its store was away."""
    from condor_rlrep.errors import StoreError
    from condor_rlrep.hooks.hookstore import store_timeout
    from condor_rlrep.hooks.spool import flush_spool, spool_directory
    from condor_rlrep.runreport.sources import RunInputError, open_run
    from condor_rlrep.store.location import describe_store, open_store

    files = open_run(dag, need_started=False)
    settings = files.settings
    if not settings.store:
        raise RunInputError("the run names no agent store: nothing is ever spooled", path=files.dag)
    spec = settings.store_path()
    try:
        with open_store(spec, busy_timeout=store_timeout(settings)) as store:
            flushed, kept = flush_spool(files.context, store, spec)
    except StoreError as err:
        raise StoreError(f"{err}; the entries stay in {spool_directory(files.context)}") from err
    if as_json:
        emit_json({"store": describe_store(spec), "flushed": flushed, "kept": kept})
    else:
        click.echo(f"{flushed} spooled outcome(s)/model update(s) recorded in {describe_store(spec)}")
        for line in kept:
            click.echo(f"kept: {line}", err=True)
    if kept:  # something still waits: say so in the exit status too
        raise click.exceptions.Exit(1)
