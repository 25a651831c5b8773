"""The reaper: remove a node's surplus replicas once one of them has won.

DAGMan has no first-wins mode: a node's cluster leaves the queue only when
every proc has ended (docs/dagman.md §2.4), so the node ends only once every
replica has. The reaper follows the DAG's node log and, as soon as a proc of
a replica cluster terminates with exit 0, removes the procs of that cluster
that are still in the queue.

* Only procs that have not ended are named (their ids listed explicitly,
  and ``JobStatus`` neither Completed nor Removed): removing a proc that has
  just exited 0 gives it a second end event, which DAGMan logs as a
  ``BAD EVENT``.
* The constraint names only replica clusters (``RlrepReplicas > 1``, set by
  PRE), so a user's own multi-proc job is never touched.
* ``Schedd.act`` is called without a reason: with one, HTCondor logs the
  removal of a running job as an eviction with code 1009 ("Claim
  deactivated"); without, as ``condor_rm`` does, with code 1023.

The schedd is the one seam tests replace: anything with
``act(action, job_spec, reason=...)`` (:class:`ScheddLike`); the default is
``htcondor2.Schedd()``, created on first use. The log is read with one
``JobEventLog`` whose ``events(stop_after=0)`` returns only newly completed
events; a poll whose log has not grown costs one ``stat``.

It also tracks which *nodes* are finished (a cluster of the node had a proc
exit 0 and every proc left the queue, or DAGMan skipped the node), so that
the SERVICE node can end by itself once every replicable node has: DAGMan
then records a normal exit instead of removing a running job at the end of
the DAG (which it logs as "unexpected job event" and "BAD EVENT").
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from condor_rlrep.condor.eventlog import ABORTED, SUBMIT, TERMINATED, node_name_of

__all__ = ["ScheddLike", "Reaper", "removal_constraint", "PRESKIP"]

PRESKIP = 34

SETTLE = 1.0
"""Seconds the reaper waits after a winner before removing its siblings.
Replicas of one task often end within a second of each other; a sibling
whose process has exited but whose shadow has not yet logged it (and told
the schedd) is still "running", and removing it gives it a second end event
(DAGMan's "BAD EVENT"). 0.1 s was seen to lose that race on a loaded
2-core access point; a second costs a loser one more second of a machine."""


class ScheddLike(Protocol):
    def act(self, action: Any, job_spec: Any, reason: str | None = None) -> Any: ...


def removal_constraint(cluster: int, procs: Iterable[int]) -> str:
    """The still-queued procs ``procs`` of replica cluster ``cluster`` (ClassAd)."""
    listed = " || ".join(f"ProcId == {int(p)}" for p in sorted(set(procs)))
    return (
        f"ClusterId == {int(cluster)} && ({listed}) && RlrepReplicas > 1"
        " && JobStatus =!= 4 && JobStatus =!= 3"
    )


class Reaper:
    """Follows ``log_path`` and removes losers of replica clusters.

    ``schedd``: a :class:`ScheddLike` (default: ``htcondor2.Schedd()``).
    ``on_line``: called with one line per action (the hook log).
    ``clock``: for the reaction times it reports (tests pass a fake).
    """

    def __init__(
        self,
        log_path: str | os.PathLike[str],
        *,
        schedd: ScheddLike | None = None,
        on_line: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
        settle: float = SETTLE,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.log_path = os.fspath(log_path)
        self._schedd = schedd
        self._reader: Any = None
        self._size = -1
        self._on_line = on_line or (lambda line: None)
        self._clock = clock
        self.settle = settle
        self._sleep = sleep
        self.procs: dict[int, set[int]] = {}
        self.nodes: dict[int, str] = {}
        self.finished: dict[int, set[int]] = {}
        self.winners: dict[int, int] = {}
        """Cluster → first proc that exited 0 (every cluster seen, replicated or not)."""
        self.reaped: dict[int, int] = {}
        """Cluster → procs the schedd removed for us (> 0)."""
        self.nothing_left: set[int] = set()
        """Replica clusters whose other procs had all ended before we could act."""
        self.done_nodes: set[str] = set()
        """Nodes with a finished cluster that had a successful proc (or skipped by PRE_SKIP)."""
        self.aborted: dict[int, set[int]] = {}
        self.first_failure: dict[int, tuple[int, int]] = {}
        """Cluster → (proc, exit code) of its first proc that exited non-zero."""
        self.errors = 0
        self._retry: dict[int, int] = {}

    @property
    def schedd(self) -> ScheddLike:
        if self._schedd is None:
            import htcondor2

            self._schedd = htcondor2.Schedd()
        return self._schedd

    def _events(self) -> list[Any]:
        try:
            size = os.stat(self.log_path).st_size
        except OSError:
            return []  # DAGMan has not written the node log yet
        if size == self._size:
            return []
        if self._reader is None:
            import htcondor2

            self._reader = htcondor2.JobEventLog(self.log_path)
        # Size before reading: an event completed after the stat makes the
        # file grow again, so the next poll reads it.
        self._size = size
        return list(self._reader.events(stop_after=0))

    def poll(self) -> list[int]:
        """Read new events and reap; returns the clusters reaped by this call.

        Before removing, the reaper waits ``settle`` seconds and reads the
        log once more: a replica that exits in the same instant as the
        winner writes its terminate event before the schedd marks it
        Completed, and removing it then would give it a second end event.
        """
        fresh = self._consume(self._events())
        fresh.update(self._retry)
        self._retry = {}
        reaped = []
        pending = dict(fresh)
        for _ in range(5):  # a winner of another cluster read while settling settles too
            if not any(len(self.procs.get(c, ())) > 1 for c in pending):
                break
            if self.settle > 0:
                self._sleep(self.settle)
            self._size = -1  # read whatever has been written since, whatever the size says
            pending = self._consume(self._events())
            fresh.update(pending)
        for cluster, winner in fresh.items():
            procs = self.procs.get(cluster, set())
            if len(procs) < 2:
                continue
            left = procs - self.finished.get(cluster, set())
            if not left:
                self.nothing_left.add(cluster)
                continue
            if self._remove(cluster, winner, left):
                reaped.append(cluster)
        return reaped

    def _consume(self, events: list[Any]) -> dict[int, int]:
        """Fold events into what is known; the clusters that got their first winner."""
        fresh: dict[int, int] = {}
        for event in events:
            kind = int(event.type)
            cluster = int(event.cluster)
            if kind == PRESKIP:
                name = node_name_of(event)
                if name is not None:
                    self.done_nodes.add(name)
                continue
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
                if kind == ABORTED:
                    self.aborted.setdefault(cluster, set()).add(proc)
                if kind == TERMINATED and event.get("TerminatedNormally") and event.get("ReturnValue") == 0:
                    if cluster not in self.winners:
                        self.winners[cluster] = proc
                        fresh[cluster] = proc
                elif kind == TERMINATED and event.get("TerminatedNormally"):
                    self.first_failure.setdefault(cluster, (proc, int(event.get("ReturnValue"))))
                self._note_node_end(cluster)
        return fresh

    def observe(self) -> None:
        """Read new events without removing anything (a reader of a finished run)."""
        self._consume(self._events())

    def outcome(self, cluster: int) -> tuple[int | None, tuple[int, int] | None] | None:
        """(winner, first failure) of ``cluster`` once every proc has ended, else None
        (:class:`condor_rlrep.condor.jobstate.Verdicts`)."""
        procs = self.procs.get(cluster)
        if not procs or not procs <= self.finished.get(cluster, set()):
            return None
        return self.winners.get(cluster), self.first_failure.get(cluster)

    def _note_node_end(self, cluster: int) -> None:
        procs = self.procs.get(cluster)
        if cluster in self.winners and procs and procs <= self.finished.get(cluster, set()):
            name = self.nodes.get(cluster)
            if name is not None:
                self.done_nodes.add(name)

    def _remove(self, cluster: int, winner: int, left: set[int]) -> bool:
        node = self.nodes.get(cluster, "?")
        seen = self._clock()
        try:
            result = self.schedd.act(_remove_action(), removal_constraint(cluster, left))
        except Exception as err:  # try again next poll; the node still ends when its replicas do
            self.errors += 1
            self._retry[cluster] = winner
            self._on_line(f"node {node}: removing replicas {sorted(left)} of cluster {cluster} failed: {err}")
            return False
        removed = _count(result)
        took = self._clock() - seen
        if removed:
            self.reaped[cluster] = removed
        else:
            self.nothing_left.add(cluster)
        self._on_line(
            f"node {node}: replica {cluster}.{winner} won; asked to remove {sorted(left)}: "
            f"{removed if removed is not None else '?'} removed (schedd answered in {took:.3f}s)"
        )
        return bool(removed)

    def run(
        self,
        *,
        interval: float = 0.2,
        should_stop: Callable[[], bool] = lambda: False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Poll until ``should_stop()``; one last poll after it says stop."""
        while True:
            try:
                self.poll()
            except Exception as err:
                self.errors += 1
                self._on_line(f"reading {self.log_path} failed: {err}")
            if should_stop():
                return
            sleep(interval)

    def summary(self) -> str:
        replica_clusters = sum(1 for c, procs in self.procs.items() if len(procs) > 1)
        won = sum(1 for c in self.winners if len(self.procs.get(c, ())) > 1)
        return (
            f"{replica_clusters} replica cluster(s) seen, {won} with a winner: {len(self.reaped)} reaped "
            f"({sum(self.reaped.values())} proc(s) removed), {len(self.nothing_left)} with nothing left to "
            f"remove; {self.errors} error(s)"
        )


def _remove_action() -> Any:
    import htcondor2

    return htcondor2.JobAction.Remove


def _count(result: Any) -> int | None:
    try:
        return int(result["TotalSuccess"])
    except Exception:
        return None
