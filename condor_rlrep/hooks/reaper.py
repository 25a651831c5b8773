"""The reaper's SERVICE-node entry logic: follow the DAG's node log, removing
surplus replicas (:class:`condor_rlrep.condor.reaper.Reaper`), until no
replicable node is left to run.

``rlrep-reaper --ctx DIR [--log NODES.LOG] [--interval SECONDS] [--stop-file PATH]``

It ends by itself, exit 0, as soon as every node that runs replicas
(``<ctx>/replicable.txt``, less the nodes a rescue DAG marks DONE) has
finished with a successful replica, or its POST accepted it (a journal
``POST`` record with exit 0 for a cluster of the node in this DAGMan's node
log: replicas that all failed, but the user's POST made the node succeed;
read from the journal, which POST writes before it exits, so that the
reaper is gone before DAGMan has seen that POST end; the reaper may start
after that POST, so the whole journal is read): DAGMan then sees the SERVICE node exit
normally before the DAG ends, and its log stays clean (it logs "unexpected
job event" / "BAD EVENT" when it has to remove a running SERVICE node at the
end). It also stops on SIGTERM (DAGMan removing it: the DAG failed or was
removed), SIGINT, when the stop file (default ``<ctx>/reaper.stop``)
appears, or when DAGMan writes the DAG's ``.metrics`` file (it does so as it
exits).

When the DAG names a ``JOBSTATE_LOG`` it writes the user's file from
DAGMan's internal one on every poll (:mod:`condor_rlrep.rundir.jobstatelog`),
and before ending by itself waits, :data:`JOBSTATE_CATCH_UP` seconds at most,
for DAGMan to log the end of every watched node's last attempt (DAGMan does
so before running the node's POST, so the reaper still ends before DAGMan
can). Removed by DAGMan, it translates up to ``DAGMAN_FINISHED``, which
DAGMan writes just after removing it. What DAGMan writes after a reaper that
ended by itself is left to ``status``/``report``.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Sequence
from typing import Any

from condor_rlrep.hooks.argv import parse_hook_argv
from condor_rlrep.hooks.hooklog import HookLog

__all__ = ["run_reaper", "nodes_to_watch"]

_RESCUE = re.compile(r"\.rescue(\d{3})\Z")


def nodes_to_watch(context: str, dag: str | None) -> set[str] | None:
    """Replicable nodes this DAGMan will run: instrument's list less the DONE
    nodes of the newest rescue DAG (DAGMan runs that one). None: unknown."""
    from condor_rlrep.rundir.layout import REPLICABLE_FILE

    try:
        with open(os.path.join(context, REPLICABLE_FILE), encoding="utf-8") as handle:
            nodes = {line.strip() for line in handle if line.strip()}
    except OSError:
        return None
    if dag:
        directory, base = os.path.split(dag)
        try:
            rescues = sorted(n for n in os.listdir(directory or ".") if n.startswith(base) and _RESCUE.search(n[len(base):]))
        except OSError:
            rescues = []
        if rescues:
            try:
                with open(os.path.join(directory, rescues[-1]), encoding="utf-8", errors="replace") as handle:
                    for line in handle:
                        parts = line.split()
                        if len(parts) >= 2 and parts[0].upper() == "DONE":
                            nodes.discard(parts[1])
            except OSError:
                pass
    return nodes


def run_reaper(argv: Sequence[str], *, schedd: Any = None, sleep: Any = time.sleep) -> int:
    from condor_rlrep.condor.reaper import Reaper
    from condor_rlrep.rundir.layout import HookSettings

    args = parse_hook_argv(argv)
    context = args.options.get("ctx")
    hooklog = HookLog.of_run(context)
    log_path = args.text("log")
    dag = None
    settings = None
    if context is not None:
        try:
            settings = HookSettings.load(context)
            log_path = log_path or settings.node_log_path()
            dag = str(settings.dag)
        except Exception as err:
            hooklog.line("REAPER", None, f"settings unreadable ({err})")
    if log_path is None:
        hooklog.line("REAPER", None, "no node log to follow (--ctx or --log needed); exiting")
        return 0
    stop_file = args.text("stop-file") or (os.path.join(context, "reaper.stop") if context else None)
    try:
        interval = float(args.text("interval") or 0.2)
    except ValueError:
        interval = 0.2
    watch = nodes_to_watch(context, dag) if context else None
    started = time.time()
    why = {"stop": ""}

    def on_signal(signum: int, frame: Any) -> None:
        why["stop"] = f"signal {signum}"

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

    reaper = Reaper(log_path, schedd=schedd, on_line=lambda line: hooklog.line("REAPER", None, line))

    accepted = _AcceptedNodes(context) if context and watch else None
    jobstate = _jobstate_follower(context, settings, hooklog)
    caught_up = {"by": None}

    def should_stop() -> bool:
        if jobstate is not None:
            _follow(jobstate, reaper, hooklog)
        if why["stop"]:
            return True
        if watch is not None and (watch <= reaper.done_nodes
                                  or (accepted is not None and watch - reaper.done_nodes <= accepted.update(reaper.nodes))):
            if jobstate is not None and not _written(jobstate, reaper, watch):
                # DAGMan logs a node's end (JOB_SUCCESS/JOB_FAILURE) at its next
                # node-log scan, before the node's POST: wait for it (bounded) so
                # that the user's JOBSTATE_LOG tells of every node we replicated.
                caught_up["by"] = caught_up["by"] or time.time() + JOBSTATE_CATCH_UP
                if time.time() < caught_up["by"]:
                    return False
            why["stop"] = f"all {len(watch)} replicable node(s) finished"
            return True
        if stop_file and os.path.exists(stop_file):
            why["stop"] = "stop file"
            return True
        if dag is not None:
            try:
                if os.stat(dag + ".metrics").st_mtime >= started:
                    why["stop"] = "DAGMan wrote its metrics (DAG over)"
                    return True
            except OSError:
                pass
        return False

    watching = "every node" if watch is None else f"{len(watch)} replicable node(s)"
    hooklog.line("REAPER", None, f"following {log_path} every {interval:g}s until {watching} finished")
    broker = _start_broker(context, settings, hooklog)
    try:
        reaper.run(interval=interval, should_stop=should_stop, sleep=sleep)
    finally:
        if broker is not None:
            broker.stop()
            hooklog.line("REAPER", None, f"store broker stopped after {broker.requests} request(s),"
                                         f" {broker.errors} failed")
    if settings is not None and context is not None:
        if why["stop"].startswith("signal"):
            _close_removed(context, settings, reaper, hooklog, sleep)
            if jobstate is not None:
                _finish_jobstate(jobstate, reaper, hooklog, sleep)
        elif jobstate is not None:
            _follow(jobstate, reaper, hooklog)
        _flush_spool(context, settings, hooklog)
    hooklog.line("REAPER", None, f"stopped ({why['stop']}); {reaper.summary()}")
    return 0


JOBSTATE_CATCH_UP = 15.0
"""Seconds the reaper waits, once its nodes have finished, for DAGMan to log their ends."""


def _jobstate_follower(context: str | None, settings: Any, hooklog: HookLog) -> Any:
    if context is None or settings is None or not getattr(settings, "jobstate_log", None):
        return None
    from condor_rlrep.rundir.jobstatelog import JobstateFollower

    return JobstateFollower(context, settings)


def _follow(jobstate: Any, reaper: Any, hooklog: HookLog, *, final: bool = False) -> None:
    """Translate DAGMan's new JOBSTATE_LOG lines; a failure is logged and
    changes nothing else (the user's file then lags; ``status`` completes it)."""
    try:
        jobstate.poll(reaper, final=final)
    except Exception as err:
        if not jobstate.failed:
            jobstate.failed = True
            hooklog.line("REAPER", None, f"JOBSTATE_LOG {jobstate.user_path} not written: {err}")


def _written(jobstate: Any, reaper: Any, watch: set[str]) -> bool:
    """Every watched node's latest attempt has its end in the user's JOBSTATE_LOG
    (or writing it fails: then there is nothing to wait for)."""
    if jobstate.failed:
        return True
    latest: dict[str, int] = {}
    for cluster, node in reaper.nodes.items():
        if node in watch:
            latest[node] = max(cluster, latest.get(node, 0))
    return all(jobstate.ended.get(node) == cluster for node, cluster in latest.items())


def _finish_jobstate(jobstate: Any, reaper: Any, hooklog: HookLog, sleep: Any, grace: float = 2.0) -> None:
    """Removed with the DAG: DAGMan writes DAGMAN_FINISHED as it exits, just
    after removing us; translate up to it while the starter lets us."""
    deadline = time.time() + grace
    while True:
        try:
            reaper.observe()
        except Exception:  # noqa: BLE001 - the verdicts already read still serve
            pass
        _follow(jobstate, reaper, hooklog, final=True)
        if jobstate.finished or time.time() >= deadline:
            break
        sleep(0.2)
    hooklog.line("REAPER", None, f"JOBSTATE_LOG {jobstate.user_path} "
                 + ("written up to DAGMAN_FINISHED" if jobstate.finished else "not finished: DAGMan had not ended it"))


class _AcceptedNodes:
    """Nodes whose POST exited 0 for one of their clusters in this DAGMan's
    node log (the journal's POST records; an earlier DAGMan's clusters are
    gone from the log it truncated), the journal read incrementally by
    :class:`~condor_rlrep.rundir.journal.JournalReader`."""

    def __init__(self, context: str):
        from condor_rlrep.rundir.journal import JournalReader

        self._journal = JournalReader(context)
        self.posts: set[tuple[int, str]] = set()
        """(cluster, node) of every POST that exited 0."""

    def update(self, clusters: dict[int, str]) -> set[str]:
        """The accepted nodes among ``clusters`` (cluster → node, this log's)."""
        try:
            self._journal.update()
        except OSError:
            pass  # unreadable now: the next poll tries again
        for record in self._journal.records:
            if (record.get("hook") == "POST" and record.get("exit") == 0
                    and isinstance(record.get("cluster"), int)):
                self.posts.add((record["cluster"], record["node"]))
        self._journal.records.clear()  # read once: only what is appended next is new
        return {node for cluster, node in self.posts if clusters.get(cluster) == node}


def _start_broker(context: str | None, settings: Any, hooklog: HookLog) -> Any:
    """Serve a server store to this run's hooks over one connection
    (:mod:`condor_rlrep.store.broker`); None when the store is a file (SQLite
    needs no broker) or the broker cannot start (the hooks then go direct)."""
    if context is None or settings is None or not settings.store:
        return None
    from condor_rlrep.store.location import is_url

    if not is_url(str(settings.store)):
        return None
    from condor_rlrep.hooks.hookstore import store_timeout
    from condor_rlrep.rundir.layout import broker_socket
    from condor_rlrep.store.broker import StoreBroker
    from condor_rlrep.store.location import describe_store

    path = broker_socket(context)
    if path is None:
        hooklog.line("REAPER", None, "no store broker: the run directory's path is too long for a Unix socket")
        return None
    broker = StoreBroker(str(settings.store), path, busy_timeout=store_timeout(settings))
    try:
        broker.start()
    except Exception as err:
        broker.stop()
        from condor_rlrep.hooks.failopen import describe

        hooklog.line("REAPER", None, f"no store broker ({describe(err)}); the hooks open the store themselves")
        return None
    hooklog.line("REAPER", None, f"store broker for {describe_store(str(settings.store))} on {path}")
    return broker


def _close_removed(context: str, settings: Any, reaper: Any, hooklog: HookLog, sleep: Any, grace: float = 5.0) -> None:
    """DAGMan removes every job when the DAG is removed, and runs no POST:
    close the decisions of clusters that were aborted without a winner, so
    that none stays pending (the rescue's PRE would close it too, but DAGMan
    starts a new node log then, and what ran could no longer be charged)."""
    deadline = time.time() + grace
    while time.time() < deadline:  # give the schedd time to log the aborts
        reaper.poll()
        if all(procs <= reaper.finished.get(c, set()) for c, procs in reaper.procs.items()):
            break
        sleep(0.2)
    latest: dict[str, int] = {}
    for cluster, node in reaper.nodes.items():
        latest[node] = max(cluster, latest.get(node, 0))
    from condor_rlrep.hooks.closing import close_orphaned
    from condor_rlrep.rundir.layout import node_state_path
    from condor_rlrep.rundir.runstate import read_node_state

    for node, cluster in sorted(latest.items()):
        if cluster in reaper.winners or not reaper.aborted.get(cluster):
            continue
        try:
            state = read_node_state(node_state_path(context, node))
            message = close_orphaned(context, settings, node, state)
        except Exception as err:
            message = f"decision of node {node} left pending: {err}"
        if message:
            hooklog.line("REAPER", node, message)


def _flush_spool(context: str, settings: Any, hooklog: HookLog) -> None:
    """Outcomes and model updates a POST could not store (store locked) go in at the DAG's end."""
    from condor_rlrep.hooks.spool import flush_spool, spool_directory

    spool = spool_directory(context)
    if not settings.store or not os.path.isdir(spool) or not os.listdir(spool):
        return
    try:
        from condor_rlrep.store.location import HOOK_CONNECT_TIMEOUT, open_store

        with open_store(settings.store_path(), connect_timeout=HOOK_CONNECT_TIMEOUT) as store:
            flushed, kept = flush_spool(context, store, settings.store_path())
        hooklog.line("REAPER", None, f"{flushed} spooled outcome(s)/model update(s) recorded in the store"
                     + (f"; {'; '.join(kept[:5])}" if kept else ""))
    except Exception as err:
        hooklog.line("REAPER", None, f"spooled outcomes/model updates left in {context}/spool: {err}")
