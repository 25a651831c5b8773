"""Helpers for the hook tests: run the real hook executables as DAGMan does.

DAGMan substitutes whole-token macros in a SCRIPT line, then ``execve``s the
first token (no shell, no PATH lookup) in the node's directory with no stdin
(docs/dagman.md §2.1–2.2). :func:`run_script` does exactly that with the argv read
back from the instrumented DAG file.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from condor_rlrep.dag.parser import read_dag

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
REPO = Path(__file__).resolve().parents[1]
FIGURE1 = REPO / "examples" / "figure1" / "figure1.dag"

PRE_MACROS = {"$JOB", "$NODE", "$RETRY", "$MAX_RETRIES", "$DAGID", "$DAG_STATUS", "$FAILED_COUNT",
              "$NODE_COUNT", "$QUEUED_COUNT", "$DONE_COUNT", "$FUTILE_COUNT"}
POST_MACROS = PRE_MACROS | {"$JOBID", "$CLUSTERID", "$JOB_COUNT", "$RETURN", "$SUCCESS", "$PRE_SCRIPT_RETURN",
                            "$EXIT_CODES", "$EXIT_CODE_COUNTS", "$EXIT_CODE_LIST", "$JOB_ABORT_COUNT"}


def substitute(argv: list[str], macros: Mapping[str, object]) -> list[str]:
    """Whole-token, case-insensitive macro substitution (``$JOB`` = ``$NODE``)."""
    table = {key.upper(): str(value) for key, value in macros.items()}
    if "$NODE" in table:
        table.setdefault("$JOB", table["$NODE"])
    if "$JOB" in table:
        table.setdefault("$NODE", table["$JOB"])
    return [table.get(token.upper(), token) for token in argv]


def script_argv(dag: str | os.PathLike[str], node: str, kind: str) -> tuple[list[str], str]:
    """The SCRIPT argv of ``node`` as written in ``dag``, and the node's directory."""
    workflow = read_dag(dag)
    n = workflow.nodes[node]
    return n.scripts[kind].argv, n.directory or os.path.dirname(os.fspath(dag))


def run_script(
    dag: str | os.PathLike[str], node: str, kind: str, macros: Mapping[str, object], env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv, cwd = script_argv(dag, node, kind)
    full = substitute(argv, {"$JOB": node, **macros})
    assert os.path.isabs(full[0]), full[0]
    environment = dict(os.environ)
    if env:
        environment.update(env)
    return subprocess.run(full, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=environment, timeout=120, check=False)


def pre_macros(retry: int = 0, dagid: int = 100) -> dict[str, object]:
    return {"$RETRY": retry, "$MAX_RETRIES": 0, "$DAGID": dagid}


def post_macros(cluster: int, procs: int, ret: int, retry: int = 0, dagid: int = 100, success: bool | None = None) -> dict[str, object]:
    return {
        "$RETRY": retry, "$MAX_RETRIES": 0, "$DAGID": dagid, "$JOBID": f"{cluster}.{procs - 1}",
        "$CLUSTERID": cluster, "$RETURN": ret, "$SUCCESS": "True" if (ret == 0 if success is None else success) else "False",
    }


class Done:
    def __init__(self, returncode: int):
        self.returncode = returncode
        self.stderr = ""


def call_script(dag: str | os.PathLike[str], node: str, kind: str, macros: Mapping[str, object]) -> Done:
    """Like :func:`run_script` but in this process (same argv, same cwd): for
    the many fault-injection cases, where a process start per call is too slow."""
    from condor_rlrep.hooks.post import run_post
    from condor_rlrep.hooks.pre import run_pre

    argv, cwd = script_argv(dag, node, kind)
    full = substitute(argv, {"$JOB": node, **macros})
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return Done((run_pre if kind == "PRE" else run_post)(full[1:]))
    finally:
        os.chdir(old)
