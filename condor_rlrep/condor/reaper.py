"""The reaper: remove a node's surplus replicas once one of them has won.

DAGMan has no first-wins mode: a node's cluster leaves the queue only when
every proc has ended (DAGMAN.md §2.4). The reaper follows the DAG's node log
and, when a proc of a cluster with several procs terminates with exit 0,
removes the cluster's other procs through the schedd. The constraint names
only replica clusters (``RlrepReplicas > 1``, set by PRE), so a user's own
multi-proc job is never touched, whatever the log says.

The schedd is the one seam tests replace: anything with
``act(action, job_spec, reason=...)`` (:class:`ScheddLike`). The default is
``htcondor2.Schedd()``, created on first use. The log is polled with
``events(stop_after=0)`` (never blocking) on one ``JobEventLog`` object, which
returns only newly completed events on each call.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, Protocol

from condor_rlrep.condor.eventlog import ABORTED, SUBMIT, TERMINATED, node_name_of

__all__ = ["ScheddLike", "Reaper", "removal_constraint"]



class ScheddLike(Protocol):
    def act(self, action: Any, job_spec: Any, reason: str | None = None) -> Any: ...


def removal_constraint(cluster: int, winner: int) -> str:
    """Every other proc of replica cluster ``cluster`` (ClassAd expression)."""
    return f"ClusterId == {int(cluster)} && ProcId != {int(winner)} && RlrepReplicas > 1"


class Reaper:
    """Follows ``log_path`` and removes losers of replica clusters.

    ``schedd``: a :class:`ScheddLike` (default: ``htcondor2.Schedd()``).
    ``on_line``: called with one line per action (the hook log).
    """

    def __init__(
        self,
        log_path: str | os.PathLike[str],
        *,
        schedd: ScheddLike | None = None,
        on_line: Callable[[str], None] | None = None,
    ):
        self.log_path = os.fspath(log_path)
        self._schedd = schedd
        self._reader: Any = None
        self._on_line = on_line or (lambda line: None)
        self.procs: dict[int, set[int]] = {}
        self.nodes: dict[int, str] = {}
        self.finished: dict[int, set[int]] = {}
        self.reaped: dict[int, int] = {}
        """Cluster → winning proc, for clusters whose losers were removed."""
        self.errors = 0

    @property
    def schedd(self) -> ScheddLike:
        if self._schedd is None:
            import htcondor2

            self._schedd = htcondor2.Schedd()
        return self._schedd

    def _events(self) -> list[Any]:
        if self._reader is None:
            if not os.path.isfile(self.log_path):
                return []  # DAGMan has not written the node log yet
            import htcondor2

            self._reader = htcondor2.JobEventLog(self.log_path)
        return list(self._reader.events(stop_after=0))

    def poll(self) -> list[int]:
        """Read new events and reap; returns the clusters reaped by this call.

        A winner whose siblings have all left the queue within the events
        read so far needs no removal (this also keeps a restarted reaper from
        acting on every old cluster of a long log).
        """
        winners: dict[int, int] = {}
        for event in self._events():
            kind = int(event.type)
            cluster = int(event.cluster)
            if cluster <= 0:
                continue
            proc = int(event.proc)
            if kind == SUBMIT:
                self.procs.setdefault(cluster, set()).add(proc)
                name = node_name_of(event)
                if name is not None:
                    self.nodes.setdefault(cluster, name)
            elif kind in (TERMINATED, ABORTED):
                self.finished.setdefault(cluster, set()).add(proc)
                if kind == TERMINATED and event.get("TerminatedNormally") and event.get("ReturnValue") == 0:
                    winners.setdefault(cluster, proc)
        reaped = []
        for cluster, winner in winners.items():
            procs = self.procs.get(cluster, set())
            if cluster in self.reaped or len(procs) < 2:
                continue
            if procs <= self.finished.get(cluster, set()):
                self.reaped[cluster] = winner  # nothing left to remove
                continue
            if self._remove_losers(cluster, winner):
                reaped.append(cluster)
        return reaped

    def _remove_losers(self, cluster: int, winner: int) -> bool:
        import_action = _remove_action()
        node = self.nodes.get(cluster, "?")
        reason = f"condor-rlrep: replica {cluster}.{winner} of node {node} finished first"
        try:
            result = self.schedd.act(import_action, removal_constraint(cluster, winner), reason=reason)
        except Exception as err:  # keep following the log; a later success may still be reaped
            self.errors += 1
            self._on_line(f"node {node}: removing the other replicas of cluster {cluster} failed: {err}")
            return False
        self.reaped[cluster] = winner
        self._on_line(f"node {node}: replica {cluster}.{winner} won; removed the other replicas ({_count(result)})")
        return True

    def run(
        self,
        *,
        interval: float = 5.0,
        should_stop: Callable[[], bool] = lambda: False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Poll until ``should_stop()``; one last poll after it says stop."""
        while True:
            stopping = should_stop()
            try:
                self.poll()
            except Exception as err:
                self.errors += 1
                self._on_line(f"reading {self.log_path} failed: {err}")
            if stopping:
                return
            sleep(interval)


def _remove_action() -> Any:
    try:
        import htcondor2

        return htcondor2.JobAction.Remove
    except ImportError:  # pragma: no cover - the bindings are a dependency
        return "Remove"


def _count(result: Any) -> str:
    try:
        return f"{int(result['TotalSuccess'])} removed"
    except Exception:
        return "schedd answered"
