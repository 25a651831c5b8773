"""One policy's live replay: the workflows submitted at their arrival times, then waited for.

Each arrival's instrumented DAG is submitted as a real DAGMan job
(``htcondor2.Submit.from_dag`` + ``Schedd.submit``) at ``origin + arrival``
(replay seconds), in the pool the replay started for this policy. The
replay then waits until no DAGMan job is left in the queue, or until the
plan's end (window and drain) plus ``grace`` seconds — whatever is left
then is removed and reported as unfinished. ``submitted.json`` in the
policy's folder lists each DAG's DAGMan cluster and submit time.

``progress(done, total, what)`` is called as arrivals are submitted and as
DAGs finish; ``should_stop()`` is polled every half second and, when true,
ends the wait early (the caller stops the pool).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from condor_rlrep.atomic import write_atomic
from condor_rlrep.replay.plan import ReplayPlan
from condor_rlrep.replay.pool import PoolError

__all__ = ["run_live", "Interrupted", "SUBMITTED"]

SUBMITTED = "submitted.json"
DAGMAN_UNIVERSE = 7


class Interrupted(Exception):
    """``should_stop()`` said so during the run."""


def _bindings(env: dict[str, str]) -> Any:
    # htcondor2 reads its configuration from CONDOR_CONFIG: point it at this pool
    os.environ["CONDOR_CONFIG"] = env["CONDOR_CONFIG"]
    os.environ["PATH"] = env["PATH"]
    import htcondor2

    htcondor2.reload_config()
    return htcondor2


def _dagman_clusters(schedd: Any) -> set[int]:
    ads = schedd.query(constraint=f"JobUniverse == {DAGMAN_UNIVERSE}", projection=["ClusterId"])
    return {int(ad["ClusterId"]) for ad in ads}


def run_live(plan: ReplayPlan, dags: list[Path], env: dict[str, str], origin: float, *,
             grace: float = 120.0, progress: Callable[[int, int, str], None] | None = None,
             should_stop: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Submit ``dags[i]`` at ``origin + plan.arrivals[i]``; wait; the record of what ran."""
    htcondor2 = _bindings(env)
    schedd = htcondor2.Schedd()
    say = progress or (lambda done, total, what: None)
    stop = should_stop or (lambda: False)
    # a pool slower to start than the margin before its origin shifts the first seconds: said in the record
    record: dict[str, Any] = {"origin": origin, "pool_up": time.time() - origin, "dags": []}
    total = len(dags)

    def pause(until: float) -> None:
        while True:
            if stop():
                raise Interrupted()
            left = until - time.time()
            if left <= 0:
                return
            time.sleep(min(0.5, left))

    for index, (dag, arrival) in enumerate(zip(dags, plan.arrivals)):
        pause(origin + arrival)
        cwd = os.getcwd()
        os.chdir(dag.parent)  # DAGMan resolves the DAG's relative paths from its working directory
        try:
            description = htcondor2.Submit.from_dag(dag.name, {"force": True, "batch-name": dag.parent.name})
            cluster = schedd.submit(description).cluster()
        except Exception as err:  # the bindings' own errors: one line naming the DAG, not a traceback
            raise PoolError(f"{dag}: submitting it failed: {err}") from err
        finally:
            os.chdir(cwd)
        record["dags"].append({"dag": str(dag), "cluster": int(cluster), "submitted": time.time() - origin,
                               "arrival": arrival})
        write_atomic(dags[0].parent.parent / SUBMITTED, json.dumps(record, indent=1))
        say(index + 1, total, "submitted")
    end = origin + plan.length + grace
    ours = {entry["cluster"] for entry in record["dags"]}
    left = ours
    while time.time() < end:
        left = ours & _dagman_clusters(schedd)
        say(total - len(left), total, "finished")
        if not left:
            break
        pause(min(end, time.time() + 2.0))
    record["unfinished"] = sorted(left)
    if left:
        schedd.act(htcondor2.JobAction.Remove, f"member(ClusterId, {{{', '.join(map(str, sorted(left)))}}})")
    record["ended"] = time.time() - origin
    write_atomic(dags[0].parent.parent / SUBMITTED, json.dumps(record, indent=1))
    return record
