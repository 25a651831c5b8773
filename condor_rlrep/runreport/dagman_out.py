"""What DAGMan's own log (``<dag>.dagman.out``) says about scripts and the run.

The node log has no event for a PRE script and marks a POST only once it
ended (016), so whether a node's PRE or POST is running, whether a PRE
failed, which node DAGMan is retrying and how DAGMan ended, come from
``.dagman.out``. DAGMan appends to it: each DAGMan (the first run, a rescue,
a resubmission) is a *session* that starts with the ``STARTING UP`` banner.

Only the lines below are read; the rest of the file is skipped by one
regular expression over the bytes, and :class:`DagmanOut` keeps its offset
so that ``--watch`` and the status checkpoint read only what was appended.
The line texts are HTCondor 25.x's (``dag.cpp``, ``dagman_main.cpp``) as
seen on a 25.14 pool (docs/dagman.md §4).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["DagmanOut", "Session", "ScriptState"]

_STAMP = rb"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?) "
_LINES = re.compile(
    _STAMP + rb"(?:"
    rb"(?P<start>\*\* condor_dagman \(CONDOR_DAGMAN\) STARTING UP)"
    rb"|Workflow batch-id: <(?P<dagid>\d+)\.\d+>"
    rb"|Running (?P<run>PRE|POST) script of Node (?P<run_node>\S+?)\.\.\."
    rb"|(?P<ok>PRE|POST) Script of [Nn]ode (?P<ok_node>\S+?) completed successfully"
    rb"|(?P<bad>PRE|POST) Script of [Nn]ode (?P<bad_node>\S+) failed with status (?P<bad_code>-?\d+)"
    rb"|Retrying node (?P<retry_node>\S+) \(retry #(?P<retry>\d+) of \d+\)"
    rb"|Writing Rescue DAG to (?P<rescue>\S+?)\.\.\."
    rb"|\*\*\*\* condor_dagman \(condor_DAGMAN\) pid \d+ EXITING WITH STATUS (?P<exit>-?\d+)"
    rb")",
    re.MULTILINE,
)
_STAMP_FIELDS = re.compile(r"(\d\d)/(\d\d)/(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?", re.ASCII)


@dataclass
class ScriptState:
    """A node's scripts in one session: ``running``, ``ok`` or ``failed``."""

    pre: str | None = None
    pre_code: int | None = None
    pre_time: float | None = None
    post: str | None = None
    post_code: int | None = None
    post_time: float | None = None
    retries: int = 0


@dataclass
class Session:
    """One DAGMan run over the DAG file."""

    started_at: float
    dagid: str | None = None
    exit_status: int | None = None
    exited_at: float | None = None
    rescue: str | None = None
    nodes: dict[str, ScriptState] = field(default_factory=dict)

    def node(self, name: str) -> ScriptState:
        state = self.nodes.get(name)
        if state is None:
            state = self.nodes[name] = ScriptState()
        return state


def stamp_time(stamp: bytes) -> float:
    """Epoch seconds of a line's stamp (``_STAMP``: ``MM/DD/YY HH:MM:SS``,
    maybe ``.digits``), local time: ``datetime.strptime(text, "%m/%d/%y
    %H:%M:%S[.%f]").timestamp()``, with the fields read by one regular
    expression instead (a strptime call costs ~50,000 instructions, and a
    big run's output has a new second every few lines). Anything that does
    not make a valid time that way (month 13, 7 fraction digits, …) goes to
    strptime itself, which raises as before."""
    text = stamp.decode("ascii")
    fields = _STAMP_FIELDS.fullmatch(text)
    try:
        if fields is None:
            raise ValueError(text)
        month, day, year, hour, minute, second, fraction = fields.groups()
        yy = int(year)  # strptime's %y: 69-99 are the 1900s, 00-68 the 2000s
        moment = datetime(yy + (2000 if yy <= 68 else 1900), int(month), int(day), int(hour), int(minute),
                          int(second), int(fraction.ljust(6, "0")) if fraction else 0)
    except ValueError:
        moment = datetime.strptime(text, "%m/%d/%y %H:%M:%S.%f" if "." in text else "%m/%d/%y %H:%M:%S")
    return moment.timestamp()


class DagmanOut:
    """Sessions of ``path`` (no file: no sessions), read incrementally."""

    def __init__(self, path: str):
        self.path = path
        self.sessions: list[Session] = []
        self._offset = 0
        self._times: dict[bytes, float] = {}

    @property
    def current(self) -> Session | None:
        return self.sessions[-1] if self.sessions else None

    def update(self) -> None:
        try:
            from condor_rlrep.fileguard import open_read

            with os.fdopen(open_read(self.path), "rb") as handle:  # never a FIFO (a hang) nor a symlink
                size = os.fstat(handle.fileno()).st_size
                if size < self._offset:  # replaced or truncated: start over
                    self.sessions.clear()
                    self._offset = 0
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            self.sessions.clear()
            self._offset = 0
            return
        end = data.rfind(b"\n") + 1  # a line being written is read next time
        self._parse(data[:end])
        self._offset += end

    def _time(self, stamp: bytes) -> float:
        at = self._times.get(stamp)
        if at is None:
            at = self._times[stamp] = stamp_time(stamp)
        return at

    def _parse(self, data: bytes) -> None:
        # one alternative of _LINES matches, and its last group names it (no groupdict of 17 per line)
        for match in _LINES.finditer(data):
            at = self._time(match.group(1))
            kind = match.lastgroup
            if kind == "start":
                self.sessions.append(Session(started_at=at))
                continue
            session = self.current
            if session is None:  # a file that does not begin with a banner
                session = Session(started_at=at)
                self.sessions.append(session)
            group = match.group
            if kind == "dagid":
                session.dagid = group("dagid").decode()
            elif kind == "run_node":
                state = session.node(group("run_node").decode("utf-8", "replace"))
                if group("run") == b"PRE":
                    state.pre, state.pre_code, state.pre_time = "running", None, at
                    state.post = state.post_code = state.post_time = None
                else:
                    state.post, state.post_code, state.post_time = "running", None, at
            elif kind == "ok_node":
                state = session.node(group("ok_node").decode("utf-8", "replace"))
                if group("ok") == b"PRE":
                    state.pre, state.pre_code, state.pre_time = "ok", 0, at
                else:
                    state.post, state.post_code, state.post_time = "ok", 0, at
            elif kind == "bad_code":
                state = session.node(group("bad_node").decode("utf-8", "replace"))
                code = int(group("bad_code"))
                if group("bad") == b"PRE":
                    state.pre, state.pre_code, state.pre_time = "failed", code, at
                else:
                    state.post, state.post_code, state.post_time = "failed", code, at
            elif kind == "retry":
                session.node(group("retry_node").decode("utf-8", "replace")).retries = int(group("retry"))
            elif kind == "rescue":
                session.rescue = group("rescue").decode("utf-8", "replace")
            elif kind == "exit":
                session.exit_status = int(group("exit"))
                session.exited_at = at

    def to_state(self) -> dict[str, object]:
        """Plain data for the status checkpoint (:mod:`marshal`)."""
        return {"path": self.path, "offset": self._offset, "sessions": [
            [x.started_at, x.dagid, x.exit_status, x.exited_at, x.rescue,
             [[name, n.pre, n.pre_code, n.pre_time, n.post, n.post_code, n.post_time, n.retries]
              for name, n in x.nodes.items()]]
            for x in self.sessions]}

    @classmethod
    def from_state(cls, state: dict) -> "DagmanOut":  # type: ignore[type-arg]
        """What :meth:`to_state` saved; raises on anything else."""
        out = cls(str(state["path"]))
        out._offset = int(state["offset"])
        for started, dagid, exit_status, exited_at, rescue, nodes in state["sessions"]:
            session = Session(float(started), None if dagid is None else str(dagid),
                              None if exit_status is None else int(exit_status),
                              None if exited_at is None else float(exited_at), None if rescue is None else str(rescue))
            for name, pre, pre_code, pre_time, post, post_code, post_time, retries in nodes:
                session.nodes[str(name)] = ScriptState(pre, pre_code, pre_time, post, post_code, post_time, int(retries))
            out.sessions.append(session)
        return out
