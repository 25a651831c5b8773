"""Read one instrumented run: every source, joined into attempts.

:class:`RunReader` opens the run (:func:`~.sources.open_run` checks the
input), keeps the node log (with each cluster's rebuilt history),
``.dagman.out`` and journal readers between :meth:`RunReader.read` calls
(``--watch`` reads only what was appended), and can resume them — and the
DAG's graph, while the DAG file is unchanged — from a per-user checkpoint
(``$XDG_CACHE_HOME/condor-rlrep/status/``) so that a second ``status`` of a
100 MB node log does not parse it again. The checkpoint is written only
after a successful read, is keyed by the files' absolute paths, and is
dropped when the node log was replaced or truncated (a new DAGMan).

The checkpoint is plain data in :mod:`marshal` form (no pickle: loading it
runs no code), believed only when it is the reading user's own private file
and carries an HMAC under that user's key (:mod:`.checkpoint`). Anything
else — an older format, another Python's marshal, a corrupt, cut or forged
file, one written for other files — is ignored and the run read afresh:
a checkpoint is a head start only. It holds finished
clusters as summaries only (:class:`~.clusters.ClusterSummary`), so a
resumed reader is for ``status``; ``report`` reads everything once.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from condor_rlrep.runreport.attempts import Attempt, assemble, mark_fixed
from condor_rlrep.runreport.dagman_out import DagmanOut, Session
from condor_rlrep.runreport.nodelog import LogTail, NodeLog
from condor_rlrep.runreport.sources import (
    RunFiles, RunInputError, open_run, read_node_states, read_run_file, run_from_dagman,
)
from condor_rlrep.rundir.layout import REAPER_NODE

__all__ = ["RunReader", "RunData", "NodeInfo", "CHECKPOINT_VERSION"]

CHECKPOINT_VERSION = 5


@dataclass(frozen=True)
class NodeInfo:
    name: str
    kind: str
    """``JOB``, ``NOOP``, ``FINAL``, ``SERVICE``, ``PROVISIONER``, ``SUBDAG``."""
    instrumented: bool
    parents: tuple[str, ...]
    children: tuple[str, ...]
    has_post: bool = True
    """The copy runs a POST script for it (ours or the user's): its 016 event or
    journal record is its verdict; without one, the job's own end is."""


@dataclass
class RunData:
    """Everything known about the run at ``now``."""

    files: RunFiles
    now: float
    plan: Any
    nodes: dict[str, NodeInfo]
    run_record: dict[str, Any] | None
    sessions: list[Session]
    attempts: dict[str, list[Attempt]]
    nodelog: NodeLog
    tail: LogTail | None
    journal_records: int
    journal_skipped: int
    warnings: list[str] = field(default_factory=list)

    @property
    def session(self) -> Session | None:
        return self.sessions[-1] if self.sessions else None

    @property
    def current_run(self) -> str | None:
        return str(self.run_record["run_id"]) if self.run_record and self.run_record.get("run_id") else None

    @property
    def current_dagid(self) -> str | None:
        if self.session is not None and self.session.dagid:
            return self.session.dagid
        dagids = (self.run_record or {}).get("dagids") or []
        return str(dagids[-1]) if dagids else None

    @property
    def dagman_running(self) -> bool:
        return self.session is not None and self.session.exit_status is None

    def run_ids(self) -> list[str]:
        """Runs of this DAG, oldest first (journal order, then run.json's)."""
        seen: dict[str, float] = {}
        for items in self.attempts.values():
            for attempt in items:
                if attempt.run_id and attempt.run_id not in seen:
                    seen[attempt.run_id] = attempt.workflow_start or attempt.pre_time or 0.0
        if self.current_run and self.current_run not in seen:
            seen[self.current_run] = float(self.run_record["start"]) if self.run_record else 0.0
        return sorted(seen, key=lambda r: seen[r])

    def run_start(self, run_id: str | None) -> float | None:
        """s(W) of a run."""
        if run_id is not None and self.run_record and self.run_record.get("run_id") == run_id:
            return float(self.run_record["start"])
        for items in self.attempts.values():
            for attempt in items:
                if attempt.run_id == run_id and attempt.workflow_start is not None:
                    return attempt.workflow_start
        return None


class _LazyVerdicts:
    """The node log's verdicts, read only if a replicated attempt's end needs one."""

    def __init__(self, node_log: str):
        self.node_log = node_log
        self._reaper: Any = None

    def outcome(self, cluster: int) -> Any:
        if self._reaper is None:
            from condor_rlrep.condor.reaper import Reaper

            self._reaper = Reaper(self.node_log)
            self._reaper.observe()
        return self._reaper.outcome(cluster)


def _complete_jobstate(files: RunFiles, *, finished: bool, warnings: list[str]) -> None:
    """Write into the user's JOBSTATE_LOG what DAGMan logged after the reaper
    had gone (DAGMAN_FINISHED, …): ``status``/``report`` finish what the
    reaper translates live (:mod:`condor_rlrep.rundir.jobstatelog`)."""
    if not getattr(files.settings, "jobstate_log", None):
        return
    try:
        if os.stat(files.context).st_uid != os.geteuid():
            return  # another user's run: read, never written
    except OSError:
        return
    from condor_rlrep.rundir.jobstatelog import follow_jobstate

    try:
        follow_jobstate(files.context, files.settings, _LazyVerdicts(files.node_log), final=finished)
    except Exception as err:  # noqa: BLE001 - the report does not depend on it
        warnings.append(f"JOBSTATE_LOG {files.settings.jobstate_log} not brought up to date: {err}")


class RunReader:
    """The run of instrumented DAG ``dag`` (see the module doc)."""

    def __init__(self, dag: str | os.PathLike[str], *, use_checkpoint: bool = False, need_started: bool = True,
                 scripts: bool = False):
        from condor_rlrep.rundir.journal import JournalReader

        self.files = open_run(dag, need_started=need_started)
        self.use_checkpoint = use_checkpoint
        self._plan = self.files.plan()
        self.nodelog = NodeLog(self.files.node_log)
        self.dagout = DagmanOut(self.files.dagman_out)
        self.journal = JournalReader(self.files.context)
        self._dag_key = _stat_key(self.files.dag, os.path.join(self.files.context, "replicable.txt"))
        self._nodes: dict[str, NodeInfo] | None = None
        self._resumed = False
        if use_checkpoint:
            with _no_gc():
                self._resume()
        if self._nodes is None:  # the DAG's graph: from the checkpoint when the file is unchanged
            try:
                text = self.files.dag_text()
                workflow = self.files.workflow(scripts=scripts, text=text)
            except OSError as err:
                raise RunInputError(f"cannot read the DAG: {err.strerror or err}", path=self.files.dag) from err
            self._nodes = _node_infos(workflow, self.files.replicable(), _post_nodes(text))

    def read(self, *, now: float | None = None, require_complete: bool | None = None) -> RunData:
        """Read what is new and join it. ``require_complete``: a node log whose
        last event is incomplete is an error (default: when DAGMan is not running)."""
        with _no_gc():
            return self._read(time.time() if now is None else now, require_complete)

    def _read(self, at: float, require_complete: bool | None) -> RunData:
        from condor_rlrep.condor.eventlog import EventLogError

        marks = (self.dagout._offset, self.nodelog.events_read, self.nodelog.resets, self.journal._offset)
        self.dagout.update()
        try:
            self.nodelog.update()
        except EventLogError as err:
            raise RunInputError(str(err.message), path=err.path) from err
        tail = self.nodelog.tail() if self.nodelog.exists() else None
        session = self.dagout.current
        running = session is not None and session.exit_status is None
        if tail is not None and tail.unreadable:
            raise RunInputError(f"corrupt node log: the reader stops at byte {tail.offset} of {tail.size} "
                                "(an event it cannot parse)", path=self.files.node_log)
        complete_needed = (not running) if require_complete is None else require_complete
        warnings: list[str] = []
        _complete_jobstate(self.files, finished=session is not None and not running, warnings=warnings)
        if tail is not None and tail.partial:
            if complete_needed:
                raise RunInputError(f"truncated node log: the last event (from byte {tail.offset} of {tail.size}) "
                                    "is incomplete and DAGMan is not running", path=self.files.node_log)
            warnings.append(f"the node log's last event is still being written (byte {tail.offset} on)")
        self.journal.update()
        journal, skipped = self.journal.records, self.journal.skipped
        if skipped:
            warnings.append(f"{skipped} journal line(s) unreadable and skipped")
        run_record = read_run_file(self.files.context)
        fixed = dict(getattr(self.files.settings, "fixed_without_pre", None) or {})
        if run_record is None and fixed:
            run_record = run_from_dagman(self.dagout.sessions)
        current_dagid = session.dagid if session is not None and session.dagid else None
        if current_dagid is None and run_record and run_record.get("dagids"):
            current_dagid = str(run_record["dagids"][-1])
        clusters = self.nodelog.clusters_of()
        clusters.pop(REAPER_NODE, None)
        if self.use_checkpoint:  # ``status``: summaries only (5,000 histories are ~30 MB)
            for entries in clusters.values():
                for entry in entries:
                    entry.keep_history = False
        if run_record is None and fixed:
            # no hook records a run and DAGMan's output is gone: the node log's first submission starts it
            submits = [entry.summary().submit_time for entries in clusters.values() for entry in entries]
            first = min((t for t in submits if t is not None), default=None)
            if first is not None:
                run_record = {"start": first, "run_id": f"dag@{int(first)}", "dagids": [], "from": "node log"}
        known = {r["node"] for r in journal if r.get("hook") == "PRE"}
        attempts = assemble(journal, read_node_states(self.files.context, known), clusters, current_dagid=current_dagid,
                            current_run=str(run_record["run_id"]) if run_record and run_record.get("run_id") else None)
        # nodes that run no POST at all (a fixed policy's, a FINAL node left alone): the job's end is their verdict
        without_post = set(getattr(self.files.settings, "without_post", None) or ())
        without_post |= {name for name, info in (self._nodes or {}).items() if not info.has_post}
        if fixed or without_post:
            mark_fixed(attempts, fixed, without_post)
        changed = marks != (self.dagout._offset, self.nodelog.events_read, self.nodelog.resets, self.journal._offset)
        if self.use_checkpoint and (changed or not self._resumed):
            self._save()
        return RunData(self.files, at, self._plan, self._nodes or {}, run_record, list(self.dagout.sessions), attempts,
                       self.nodelog, tail, len(journal), skipped, warnings)

    # -- checkpoint --------------------------------------------------------------

    def _checkpoint_name(self) -> str:
        key = hashlib.sha256(f"{self.files.node_log}\0{self.files.dagman_out}".encode()).hexdigest()[:24]
        return f"{key}.ckpt"

    def _resume(self) -> None:
        from condor_rlrep.runreport.checkpoint import read_checkpoint

        try:
            saved = read_checkpoint(self._checkpoint_name())
        except (OSError, ValueError, EOFError, TypeError):
            return
        try:
            if (saved["version"] != CHECKPOINT_VERSION or saved["python"] != list(sys.version_info[:2])
                    or saved["dag"] != self.files.dag):
                return
            nodelog = NodeLog.from_state(saved["nodelog"])
            dagout = DagmanOut.from_state(saved["dagout"])
            journal = type(self.journal).from_state(self.files.context, saved["journal"])
            if nodelog.path != self.files.node_log or dagout.path != self.files.dagman_out:
                return
            nodes = None
            if saved["dag_key"] == self._dag_key:
                nodes = {str(name): NodeInfo(str(name), str(kind), bool(ours), tuple(map(str, parents)),
                                             tuple(map(str, children)), bool(post))
                         for name, kind, ours, parents, children, post in saved["nodes"]}
        except Exception:  # noqa: BLE001 - not a checkpoint of ours for this run: read afresh
            return
        self.nodelog, self.dagout, self.journal = nodelog, dagout, journal
        if nodes is not None:
            self._nodes = nodes
            self._resumed = True

    def _save(self) -> None:
        from condor_rlrep.runreport.checkpoint import write_checkpoint

        try:
            state = {
                "version": CHECKPOINT_VERSION, "python": list(sys.version_info[:2]), "dag": self.files.dag,
                "nodelog": self.nodelog.to_state(), "dagout": self.dagout.to_state(),
                "journal": self.journal.to_state(), "dag_key": self._dag_key,
                "nodes": [[i.name, i.kind, i.instrumented, list(i.parents), list(i.children), i.has_post]
                          for i in (self._nodes or {}).values()],
            }
            write_checkpoint(self._checkpoint_name(), state)
        except Exception:  # noqa: BLE001 - never fail a status for its cache
            pass


@contextlib.contextmanager
def _no_gc() -> Any:
    """The cyclic collector paused: reading a big run builds a million
    long-lived objects, and each generation-0 collection would walk them
    again (a third of a warm status). Cycles made meanwhile are collected later."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _stat_key(*paths: str) -> list[tuple[int, int, int, int] | None]:
    key: list[tuple[int, int, int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            key.append(None)
            continue
        key.append((st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev))
    return key


def _post_nodes(text: str) -> set[str] | None:
    """Nodes the DAG file's ``text`` gives a POST script (``SCRIPT [DEFER s t]
    [DEBUG f t] POST node …``); None: every node (``ALL_NODES``).

    Its lines as a text file iterates them (split at newline characters
    only). Only the first seven words can matter (POST is among words 1–5,
    the node follows it), so no more are split or upper-cased."""
    nodes: set[str] = set()
    for line in text.split("\n"):
        head = line.split(None, 1)
        if not head or head[0].upper() != "SCRIPT":
            continue
        words = line.split(None, 7)
        if len(words) < 3:
            continue
        upper = [w.upper() for w in words[1:7]]  # upper[i] is words[i + 1]'s
        if "POST" not in upper[:5]:
            continue
        at = upper.index("POST") + 2
        if at < len(words):
            if upper[at - 1] == "ALL_NODES":
                return None
            nodes.add(words[at])
    return nodes


def _node_infos(workflow: Any, replicable: set[str], post: set[str] | None = None) -> dict[str, NodeInfo]:
    parents: dict[str, list[str]] = {}
    children: dict[str, list[str]] = {}
    # the parser's edges are a set: in file order, or status would list nodes in a per-process order
    get = {name: i for i, name in enumerate(workflow.nodes)}.get
    # decorated with the set's order, which also breaks ties as a stable sort on the two indices would
    keyed = [(get(edge[0], -1), get(edge[1], -1), n, edge[0], edge[1]) for n, edge in enumerate(workflow.edges)]
    keyed.sort()
    for _p, _c, _n, parent, child in keyed:
        parents.setdefault(child, []).append(parent)
        children.setdefault(parent, []).append(child)
    infos = {}
    for node in workflow.nodes.values():
        kind = "NOOP" if node.noop else str(node.kind)
        instrumented = node.name in replicable or (not replicable and "PRE" in node.scripts and kind == "JOB")
        infos[node.name] = NodeInfo(node.name, kind, instrumented, tuple(parents.get(node.name, ())),
                                    tuple(children.get(node.name, ())), post is None or node.name in post)
    return infos
