"""DAGMan's ``JOBSTATE_LOG`` of an instrumented run, said as the plain run would say it.

DAGMan writes one line per node event, ``TIME NODE EVENT ARG - - SEQ``
(``ARG`` the job's ``cluster.proc``, or the exit code on ``JOB_SUCCESS``/
``JOB_FAILURE``; ``SEQ`` the node submission's number in this DAGMan) and
``TIME INTERNAL *** … ***`` lines of its own (``DAGMAN_STARTED``,
``RECOVERY_*``, ``DAGMAN_FINISHED``). Under condor-rlrep a replicated node's
attempt is one cluster of several procs, so DAGMan writes a ``SUBMIT`` and
``EXECUTE`` per replica, the removed losers' ``JOB_EVICTED``/``JOB_ABORTED``
and ``JOB_FAILURE -1002`` although the node succeeded; our hooks appear as
``PRE_SCRIPT_*``/``POST_SCRIPT_*`` lines and the reaper as a node.

:class:`JobstateTranslator` turns DAGMan's lines into the plain run's, line
by line, from the node log's verdict of each replicated attempt:

* a replicated attempt (a cluster with a proc other than 0) keeps its first
  ``SUBMIT`` (proc 0, as the plain job's) and its first ``EXECUTE`` (the
  replica that started first); its other per-proc lines are dropped, and at
  DAGMan's ``JOB_SUCCESS``/``JOB_FAILURE`` line it says ``JOB_TERMINATED``
  of the kept replica (the winner; else the first that failed) and
  ``JOB_SUCCESS 0`` (a replica exited 0) or ``JOB_FAILURE`` with the kept
  replica's exit code — what the node's POST hook decides and a single job
  would have logged. Each line keeps the real id of the proc it tells of;
* an attempt of one proc (1 replica) is DAGMan's own lines;
* ``PRE_SCRIPT_*``/``POST_SCRIPT_*`` lines of a node we wired stay only if
  the user has a script of that kind there (ours runs it and exits with its
  code); the reaper's lines go, and every later ``SEQ`` of this DAGMan
  moves down by one per reaper submission, as if it had never been;
* every other line (nodes left alone, ``INTERNAL``) is DAGMan's.

A line whose verdict the node log does not hold yet stops translation
there (the caller tries again after reading more of the node log), so the
output keeps DAGMan's order. Its state is plain JSON (:meth:`to_state`):
the reaper translates live and ``status`` may finish the tail.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

__all__ = ["JobstateTranslator", "Verdicts", "Outcome"]

_JOB_END = ("JOB_SUCCESS", "JOB_FAILURE")
_PER_PROC_KEPT_ONCE = ("SUBMIT", "EXECUTE")

Outcome = tuple[int | None, tuple[int, int] | None]
"""(winner proc or None, (proc, exit code) of the first replica that failed or None)."""


class Verdicts(Protocol):
    def outcome(self, cluster: int) -> Outcome | None:
        """What the node log says of ``cluster`` once every proc has ended; None before."""
        ...


class JobstateTranslator:
    """See the module docstring. ``replicable``: nodes wired with our hooks;
    ``user_pre``/``user_post``: those of them with a script of the user's;
    ``hidden``: nodes of ours (the reaper)."""

    def __init__(self, replicable: Iterable[str], user_pre: Iterable[str] = (), user_post: Iterable[str] = (),
                 hidden: Iterable[str] = (), state: Mapping[str, Any] | None = None):
        self.replicable = set(replicable)
        self.user_pre = set(user_pre)
        self.user_post = set(user_post)
        self.hidden = set(hidden)
        state = dict(state or {})
        self.hidden_seqs: list[int] = [int(s) for s in state.get("hidden_seqs", [])]
        """SEQ numbers of hidden nodes in this DAGMan."""
        self.replicated: set[int] = {int(c) for c in state.get("replicated", [])}
        self.kept: dict[str, list[str]] = {k: list(v) for k, v in dict(state.get("kept", {})).items()}
        """Cluster (as text) → the once-kept events already written (SUBMIT, EXECUTE) and
        ``proc-id@time`` of each replica's JOB_TERMINATED (the kept one's is written at the attempt's end)."""
        self.attempt: dict[str, int] = {str(k): int(v) for k, v in dict(state.get("attempt", {})).items()}
        """Node → the cluster of its latest SUBMIT (the attempt a JOB_SUCCESS/JOB_FAILURE line closes)."""
        self.ended: dict[str, int] = {str(k): int(v) for k, v in dict(state.get("ended", {})).items()}
        """Node → its last attempt's cluster whose end has been written."""
        self.finished = bool(state.get("finished", False))
        """DAGMan's DAGMAN_FINISHED line has been written."""

    def to_state(self) -> dict[str, Any]:
        return {"hidden_seqs": self.hidden_seqs, "replicated": sorted(self.replicated), "kept": self.kept,
                "attempt": self.attempt, "ended": self.ended, "finished": self.finished}

    def translate(self, lines: list[str], verdicts: Verdicts | None, *, final: bool = False) -> tuple[list[str], int]:
        """Translate ``lines`` (without line ends) in order; returns the output
        lines and how many input lines were consumed (fewer than given when a
        replicated attempt's verdict is not known yet; with ``final`` DAGMan's
        own lines are written for it instead)."""
        out: list[str] = []
        for done, line in enumerate(lines):
            words = line.split()
            if len(words) >= 3 and words[1] == "INTERNAL":
                if "DAGMAN_STARTED" in words:
                    self.hidden_seqs = []  # a new DAGMan numbers its submissions from 1 again
                    self.finished = False
                if "DAGMAN_FINISHED" in words:
                    self.finished = True
                out.append(line)
                continue
            if len(words) < 4:
                out.append(line)  # not a node line we know: DAGMan's as it is
                continue
            node, event, arg = words[1], words[2], words[3]
            if node in self.hidden:
                if event == "SUBMIT" and words[-1].isdigit():
                    self.hidden_seqs.append(int(words[-1]))
                continue
            translated = self._node_line(words, node, event, arg, verdicts, final)
            if translated is None:
                return out, done
            out.extend(self._renumbered(w) for w in translated)
        return out, len(lines)

    def _node_line(self, words: list[str], node: str, event: str, arg: str, verdicts: Verdicts | None,
                   final: bool) -> list[list[str]] | None:
        if node not in self.replicable:
            return [words]
        if event.startswith("PRE_SCRIPT_"):
            return [words] if node in self.user_pre else []
        if event.startswith("POST_SCRIPT_"):
            return [words] if node in self.user_post else []
        if event in _JOB_END:
            return self._end(words, node, verdicts, final)
        cluster, proc = _job_id(arg)
        if cluster is None:
            return [words]
        if proc:
            self.replicated.add(cluster)
        if event == "SUBMIT":
            self.attempt[node] = cluster
        if event in _PER_PROC_KEPT_ONCE:
            seen = self.kept.setdefault(str(cluster), [])
            if event in seen and cluster in self.replicated:
                return []  # another replica's (one proc's second EXECUTE, after an eviction, is its own)
            if event not in seen:
                seen.append(event)
            return [words]
        if cluster in self.replicated:
            if event == "JOB_TERMINATED":
                self.kept.setdefault(str(cluster), []).append(f"{arg}@{words[0]}")  # when each replica ended
            return []  # a replica's own end, eviction, hold…: the attempt's end says the node's
        return [words]

    def _end(self, words: list[str], node: str, verdicts: Verdicts | None, final: bool) -> list[list[str]] | None:
        cluster = self.attempt.get(node)
        if cluster is None or cluster not in self.replicated:
            if cluster is not None:
                self.ended[node] = cluster
                self.kept.pop(str(cluster), None)
            return [words]
        outcome = verdicts.outcome(cluster) if verdicts is not None else None
        if outcome is None and not final:
            return None
        self.ended[node] = cluster
        seen = self.kept.pop(str(cluster), [])
        if outcome is None:
            return [words]  # the node log no longer says: DAGMan's own line
        winner, failure = outcome
        kept, verdict = (winner, ("JOB_SUCCESS", "0")) if winner is not None else (
            (failure[0], ("JOB_FAILURE", str(failure[1]))) if failure is not None else (None, None))
        if kept is None or verdict is None:
            return [words]
        job = f"{cluster}.{kept}"
        when = next((item.split("@", 1)[1] for item in seen if item.startswith(job + "@")), words[0])
        return [[when, *_with(words, "JOB_TERMINATED", job)[1:]], _with(words, *verdict)]

    def _renumbered(self, words: list[str]) -> str:
        if self.hidden_seqs and words[-1].isdigit():
            seq = int(words[-1])
            shift = sum(1 for s in self.hidden_seqs if s < seq)
            if shift:
                words = [*words[:-1], str(seq - shift)]
        return " ".join(words)


def _job_id(arg: str) -> tuple[int | None, int]:
    cluster, _, proc = arg.partition(".")
    if cluster.isdigit() and proc.isdigit():
        return int(cluster), int(proc)
    return None, 0


def _with(words: list[str], event: str, arg: str) -> list[str]:
    return [words[0], words[1], event, arg, *words[4:]]
