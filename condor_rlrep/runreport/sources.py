"""The files of one instrumented DAG run, found and checked before anything is read.

:func:`open_run` names the problem with the input in one line
(:class:`RunInputError`, exit 2 in the CLI) — not an instrumented DAG, a run
that never started, a store that is gone — and never writes: the plan is
the cached one of the DAG's current content, else built in memory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from condor_rlrep.errors import InputError

__all__ = ["RunInputError", "RunFiles", "open_run", "read_run_file", "read_node_states"]


class RunInputError(InputError):
    """The argument is not a usable instrumented DAG run."""


@dataclass
class RunFiles:
    dag: str
    context: str
    settings: Any
    """:class:`condor_rlrep.rundir.layout.HookSettings`."""
    node_log: str
    dagman_out: str
    store: str | None

    def plan(self) -> Any:
        """CR(W) and per node (e_t, L′_t, max_{j∈C_t} L′_j, earliest start):
        the :class:`~condor_rlrep.rundir.plan.PlanCache` PRE used (nothing written)."""
        from condor_rlrep.rundir.plan import peek_plan

        try:
            return peek_plan(self.context, self.settings)
        except OSError as err:
            raise RunInputError(f"cannot read the DAG: {err.strerror or err}", path=self.dag) from err

    def dag_text(self) -> str:
        """The instrumented DAG's text (newlines as a text file reads them)."""
        with open(self.dag, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read()

    def workflow(self, *, scripts: bool = False, text: str | None = None) -> Any:
        """The instrumented DAG parsed (SCRIPT lines skipped unless ``scripts``);
        ``text``: its :meth:`dag_text`, when already read."""
        from condor_rlrep.dag.parser import parse_dag

        lines = (self.dag_text() if text is None else text).splitlines()
        if not scripts:
            lines = [line for line in lines if line.lstrip()[:7].upper() not in ("SCRIPT ", "SCRIPT\t")]
        return parse_dag(lines, path=self.dag,
                         allow_any_node_name_characters=bool(self.settings.allow_any_node_name_characters))

    def replicable(self) -> set[str]:
        from condor_rlrep.rundir.layout import REPLICABLE_FILE

        try:
            with open(os.path.join(self.context, REPLICABLE_FILE), encoding="utf-8") as handle:
                return {line.strip() for line in handle if line.strip()}
        except OSError:
            return set()


def open_run(dag: str | os.PathLike[str], *, need_started: bool = True) -> RunFiles:
    """The run of instrumented DAG ``dag``, or :class:`RunInputError` saying why not."""
    from condor_rlrep.rundir.layout import SETTINGS_FILE, HookSettings, context_dir_for

    path = os.path.abspath(os.fspath(dag))
    if os.path.isdir(path):
        raise RunInputError("is a directory, not an instrumented DAG file", path=path)
    if not os.path.isfile(path):
        raise RunInputError("no such DAG file", path=path)
    context = context_dir_for(path)
    if not os.path.isfile(os.path.join(context, SETTINGS_FILE)):
        hint = ""
        if os.path.isdir(context):
            hint = f" ({context} has no {SETTINGS_FILE})"
        raise RunInputError(
            f"not an instrumented DAG{hint}: give the copy `condor-rlrep instrument IN.dag -o OUT.dag` wrote", path=path
        )
    try:
        settings = HookSettings.load(context)
    except (OSError, ValueError) as err:
        raise RunInputError(f"unusable hook settings: {err}", path=os.path.join(context, SETTINGS_FILE)) from err
    if settings.dag and os.path.abspath(str(settings.dag)) != path:
        raise RunInputError(f"{context}/{SETTINGS_FILE} belongs to {settings.dag}, not to this DAG "
                            "(copied or moved? instrument it again)", path=path)
    node_log = settings.node_log_path()
    dagman_out = path + ".dagman.out"
    store = str(settings.store) if settings.store else None
    try:
        unused = settings.policy_spec().fixed_replicas is not None
    except Exception:  # noqa: BLE001 - a policy the hooks would fail open on: the store may still tell
        unused = False
    if unused:
        store = None  # a fixed policy records nothing: a named store is unused ("named, unused"), maybe never made
    if need_started and not _started(context, node_log, dagman_out):
        raise RunInputError(
            f"the run never started (no {os.path.join(context, 'run.json')}, no node log {node_log}): "
            f"submit it with condor_submit_dag {os.path.basename(path)}", path=path)
    if store is not None:
        from condor_rlrep.store.location import is_url, store_exists

        if not is_url(store) and not store_exists(store):
            raise RunInputError(f"the agent store {store} that {os.path.join(context, SETTINGS_FILE)} names "
                                "is missing (moved or deleted?)", path=path)
    return RunFiles(path, context, settings, node_log, dagman_out, store)


def _started(context: str, node_log: str, dagman_out: str) -> bool:
    from condor_rlrep.rundir.journal import JOURNAL_FILE

    return any(os.path.exists(p) for p in (os.path.join(context, "run.json"), os.path.join(context, JOURNAL_FILE),
                                            node_log, dagman_out))


def read_run_file(context: str) -> dict[str, Any] | None:
    """``run.json`` (s(W), run id, DAGMan ids), or None when absent or unusable."""
    try:
        with open(os.path.join(context, "run.json"), encoding="utf-8") as handle:
            record = json.load(handle)
        float(record["start"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if isinstance(record, dict) else None


def run_from_dagman(sessions: Any) -> dict[str, Any] | None:
    """The run as DAGMan's own sessions tell it, for a copy no hook records a
    run in (a fixed policy's nodes run without PRE): a session continues the
    run when the one before it wrote a rescue DAG, else it starts a new one
    (as :func:`condor_rlrep.rundir.runstate.workflow_start` decides for PRE);
    s(W) is the run's first DAGMan start."""
    run: dict[str, Any] | None = None
    previous = None
    for session in sessions:
        if run is None or previous is None or previous.rescue is None:
            run = {"start": float(session.started_at), "run_id": f"{session.dagid or 'dag'}@{int(session.started_at)}",
                   "dagids": [], "from": "dagman.out"}
        if session.dagid:
            run["dagids"].append(str(session.dagid))
        previous = session
    return run


def read_node_states(context: str, known: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """Every ``state/<node>.json`` (the current attempt of each node PRE ran).

    ``known``: nodes whose latest PRE the journal already holds (PRE writes
    both at once); their files are not read (the fallback is for runs
    without a journal, or a journal line that could not be written)."""
    from condor_rlrep.rundir.layout import node_file_stem

    directory = os.path.join(context, "state")
    try:
        names = os.listdir(directory)
    except OSError:
        return {}
    skip = {node_file_stem(node) + ".json" for node in known} if known else set()
    states: dict[str, dict[str, Any]] = {}
    for name in names:
        if not name.endswith(".json") or name in skip:
            continue
        try:
            with open(os.path.join(directory, name), "rb") as handle:
                state = json.loads(handle.read())
        except (OSError, ValueError):
            continue
        if isinstance(state, dict) and isinstance(state.get("node"), str):
            states[state["node"]] = state
    return states
