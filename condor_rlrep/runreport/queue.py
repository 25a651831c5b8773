"""The schedd's view of a run's replicas: the only place ``status`` talks to a schedd.

:func:`schedd_queue` asks one ``htcondor2.Schedd`` for ``JobStatus`` of
the procs of the clusters the node log names and that have not ended
there; the answer overlays the node log's (which lags by DAGMan's and the
schedd's log writes). A schedd that cannot be reached is a
:class:`QueueError`: the user asked for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from condor_rlrep.errors import RlrepError
from condor_rlrep.runreport.load import RunData
from condor_rlrep.runreport.status import QueueState

__all__ = ["schedd_queue", "QueueError"]


class QueueError(RlrepError):
    """The schedd could not be asked."""


def _default_schedd(name: str | None) -> Any:
    import htcondor2

    if name is None:
        return htcondor2.Schedd()
    ad = htcondor2.Collector().locate(htcondor2.DaemonType.Schedd, name)
    return htcondor2.Schedd(ad)


def schedd_queue(data: RunData, name: str | None = None, *,
                 connect: Callable[[str | None], Any] = _default_schedd) -> QueueState:
    """(cluster, proc) → JobStatus of the run's replicas still in the queue."""
    clusters = sorted(c for c, entry in data.nodelog.clusters.items() if _open(entry))
    if not clusters:
        return {}
    constraint = " || ".join(f"ClusterId == {c}" for c in clusters)
    try:
        schedd = connect(name)
        ads = schedd.query(constraint=constraint, projection=["ClusterId", "ProcId", "JobStatus"])
    except Exception as err:  # the bindings raise HTCondorException and friends
        where = f"schedd {name}" if name else "the local schedd"
        raise QueueError(f"cannot query {where}: {err}") from err
    queue: dict[tuple[int, int], int] = {}
    for ad in ads:
        try:
            queue[(int(ad["ClusterId"]), int(ad["ProcId"]))] = int(ad["JobStatus"])
        except (KeyError, TypeError, ValueError):
            continue
    return queue


def _open(entry: Any) -> bool:
    return entry.summary().unfinished > 0
