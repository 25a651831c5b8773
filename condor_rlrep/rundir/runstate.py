"""Per-run and per-node state the hooks keep on disk (in the DAG's context).

**Workflow start s(W).** The first PRE of a DAG run records the time in
``run.json`` with DAGMan's id (``$DAGID``); later PREs of the same DAGMan (and
every RETRY) read it back. A *new* DAGMan id starts a new run, unless DAGMan
is running a rescue DAG: a ``<dag>.rescueNNN`` file written since the run
started means the previous run failed and this one continues it, so s(W) — and
with it the workflow's deadline — is kept (the ids are appended). A fresh
submission after a success, or after ``condor_submit_dag -force`` (which
renames rescue files away), starts a new run. Without a usable ``$DAGID``
every call continues the recorded run. Updates hold an exclusive ``flock`` on
``run.lock``, so concurrent PREs agree on one start.

**A rescue resumes on schedule.** The time between the failed DAGMan and
the rescue (the user's downtime: hours, a weekend) is no replica's doing, so
a rescue does not keep the first DAGMan's clock: its first PRE moves s(W) so
that the node it starts is on schedule, ``s(W) = now − ES(node)`` (ES: the
node's earliest start in the plan, from the run's start; ``resume_at`` gives
it), and every later PRE of the run reads that start. The run keeps its id;
``run.json`` keeps the first start (``first_start``) and each rescue's move
(``resumed``).

**Node state.** PRE writes ``state/<node>.json`` (decision id, replica count,
submit time, φ′, estimate, attempt) for POST, which does not need the graph:
a DAG edited between PRE and POST cannot change what the decision was.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from condor_rlrep.atomic import write_atomic

__all__ = ["RunInfo", "workflow_start", "write_node_state", "read_node_state", "check_node_state", "PRIVATE"]

PRIVATE = 0o600
"""Mode of the hooks' state files (run, node state, spool): they name the
user's files, decisions and store."""

_RESCUE = re.compile(r"\.rescue\d{3}\Z")


class RunInfo:
    def __init__(self, start: float, run_id: str, dagids: list[str], continued: bool):
        self.start = start
        self.run_id = run_id
        self.dagids = dagids
        self.continued = continued
        """True when this call joined an existing run (same DAGMan or a rescue)."""


def _rescue_written_since(dag_path: str, since: float) -> bool:
    directory = os.path.dirname(dag_path) or "."
    base = os.path.basename(dag_path)
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    for name in names:
        if name.startswith(base) and _RESCUE.match(name[len(base):]):
            try:
                if os.stat(os.path.join(directory, name)).st_mtime >= since:
                    return True
            except OSError:
                continue
    return False


def workflow_start(context: str, dag_path: str, dagid: str | None, now: float,
                   resume_at: Any = None) -> RunInfo:
    """s(W) of the current run of ``dag_path`` (recording it on the first call).

    ``resume_at()``: the calling node's earliest start in the plan (seconds
    from s(W)), asked only when a rescue joins the run; s(W) then becomes
    ``now`` minus it (0 when it is None or fails)."""
    import fcntl  # lazy: cheap, but only PRE needs it

    run_file = os.path.join(context, "run.json")
    from condor_rlrep.fileguard import NOFOLLOW

    with os.fdopen(os.open(os.path.join(context, "run.lock"), os.O_RDWR | os.O_CREAT | NOFOLLOW, PRIVATE), "r+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        record: dict[str, Any] | None = None
        try:
            record = json.loads(_read(run_file))
            if not isinstance(record, dict) or not _number(record.get("start")) \
                    or not isinstance(record.get("dagids", []), list) or not isinstance(record.get("run_id", ""), str):
                record = None  # wrong-typed: as corrupt
        except FileNotFoundError:
            record = None
        except (ValueError, KeyError, TypeError):
            record = None  # a corrupt run file cannot hold a start worth keeping
        if record is not None:
            dagids = [str(d) for d in record.get("dagids", [])]
            start = float(record["start"])
            if dagid is None or dagid in dagids:
                return RunInfo(start, str(record.get("run_id", "")), dagids, True)
            if _rescue_written_since(dag_path, start):
                dagids.append(dagid)
                record["dagids"] = dagids
                offset = 0.0
                if resume_at is not None:
                    try:
                        offset = float(resume_at() or 0.0)
                    except Exception:  # noqa: BLE001 - no plan: the rescue starts its clock now
                        offset = 0.0
                    if not offset >= 0.0 or offset == float("inf"):
                        offset = 0.0
                resumed = now - offset
                record.setdefault("first_start", start)
                earlier = record.get("resumed")
                record["resumed"] = [*(earlier if isinstance(earlier, list) else []),
                                     {"dagid": dagid, "at": now, "start": resumed}]
                record["start"] = resumed
                write_atomic(run_file, json.dumps(record, sort_keys=True) + "\n", mode=PRIVATE, fixed_tmp=True)
                return RunInfo(resumed, str(record.get("run_id", "")), dagids, True)
        dagids = [dagid] if dagid is not None else []
        run_id = f"{dagid or 'dag'}@{int(now)}"
        write_atomic(run_file, json.dumps({"start": now, "run_id": run_id, "dagids": dagids}, sort_keys=True) + "\n",
                     mode=PRIVATE, fixed_tmp=True)
        return RunInfo(now, run_id, dagids, False)


def _read(path: str) -> bytes:
    """A file of the run folder: never a FIFO (that would hang the hook) nor through a symlink."""
    from condor_rlrep.fileguard import read_bytes

    return read_bytes(path)


def write_node_state(path: str, state: dict[str, Any]) -> None:
    from condor_rlrep.fileguard import make_private_dir

    try:
        make_private_dir(os.path.dirname(path))
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), mode=0o700)
    write_atomic(path, json.dumps(state, sort_keys=True) + "\n", mode=PRIVATE, fixed_tmp=True)


def read_node_state(path: str) -> dict[str, Any]:
    """The node's PRE state; raises OSError/ValueError when missing, corrupt
    or wrong-typed (a state file is checked here, once, so that no hook
    meets a string where it counts replicas)."""
    state = json.loads(_read(path))
    check_node_state(state, path)
    return state


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_STATE_CHECKS: dict[str, Any] = {
    "node": lambda v: isinstance(v, str),
    "mode": lambda v: v in ("replicas", "passthrough", "deciding"),
    "retry": lambda v: v is None or (_integer(v) and v >= 0),
    "dagid": lambda v: v is None or isinstance(v, str),
    "run_id": lambda v: isinstance(v, str),
    "decision_id": lambda v: v is None or (_integer(v) and v > 0),
    "replicas": lambda v: _integer(v) and 1 <= v <= 100,
    "log_offset": lambda v: _integer(v) and v >= 0,
    "workflow_start": _number, "pre_time": _number, "submit_time": _number, "decided_at": _number,
    "phi_prime": _number, "estimate": _number,
    "criticality": lambda v: isinstance(v, str),
    "dag_key": lambda v: v is None or isinstance(v, str),
    "files": lambda v: isinstance(v, list) and all(isinstance(f, str) and os.path.isabs(f) for f in v),
}
_REQUIRED = ("node", "mode", "replicas", "log_offset", "submit_time")
_REPLICAS_REQUIRED = ("phi_prime", "estimate")


def check_node_state(state: Any, path: str = "node state") -> None:
    """ValueError naming the file and key when ``state`` is not what PRE writes."""
    if not isinstance(state, dict):
        raise ValueError(f"{path}: node state is not a JSON object")
    required = _REQUIRED + (_REPLICAS_REQUIRED if state.get("decision_id") is not None else ())
    for key in required:
        if key not in state:
            raise ValueError(f"{path}: node state lacks {key!r}")
    for key, check in _STATE_CHECKS.items():
        if key in state and not check(state[key]):
            raise ValueError(f"{path}: node state {key!r} is {state[key]!r:.60}, not what PRE writes")
