"""The context's per-node files (``<ctx>/nodes/``), as ``instrument`` writes them.

* ``<n>.orig.sub``: an inline or SUBMIT-DESCRIPTION body written out, for
  PRE to read (a description in its own file is read where it is);
* ``<n>.sub``: the node's submit file, which DAGMan reads: the user's
  description at first (so that a PRE that cannot write it still leaves
  DAGMan the user's job), or for a fixed policy the replica description
  instrument writes once (:func:`static_description`), the node then
  running without PRE;
* ``<n>.vars.json``: the node's VARS (DAGMan gives them to the submit, not
  to scripts, and PRE expands file names with them);
* ``<n>.fixed.json``: for a fixed policy's node without PRE, the state PRE
  would have told POST (its replicas and their files).

No file is more readable than the one it was made from
(:func:`condor_rlrep.atomic.source_mode`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from condor_rlrep.condor.submit import IDLE_ATTRIBUTE
from condor_rlrep.dag.model import Node, Workflow
from condor_rlrep.errors import DagError

__all__ = [
    "original_description",
    "vars_of",
    "write_node_vars",
    "static_description",
    "write_fixed_state",
    "forget_fixed_state",
]


def original_description(workflow: Workflow, node: Node, node_dir: str, body_path: str) -> tuple[str, str | None]:
    """Path PRE reads the user's description from, and a body to write there first."""
    if node.inline_submit is not None:
        return body_path, _queued(node.inline_submit)
    if node.submit in workflow.submit_descriptions:
        return body_path, _queued(workflow.submit_descriptions[str(node.submit)])
    if node.submit is None:
        raise DagError(f"node {node.name} has no submit description", path=workflow.source_path, line=node.source_line)
    return os.path.join(node_dir, node.submit), None


def _queued(body: str) -> str:
    """An inline or SUBMIT-DESCRIPTION body as a submit file: DAGMan queues
    one job of a body without a ``queue`` statement, which a file needs said
    (``queue``), so that it is replicated like any single-job description."""
    from condor_rlrep.condor.submit import find_queue

    body = body.rstrip("\n") + "\n"
    if find_queue(body).kind == "none" and not body.rstrip().endswith("\\"):
        body += "queue\n"
    return body


def vars_of(node: Node) -> dict[str, str]:
    return {a.key: a.value for a in node.vars}


def write_node_vars(context: str, node: Node, mode: int) -> None:
    """The node's VARS for PRE (DAGMan passes them to the submit, not to scripts)."""
    from condor_rlrep.atomic import write_atomic
    from condor_rlrep.rundir.layout import node_vars_path

    path = node_vars_path(context, node.name)
    if node.vars:
        write_atomic(path, json.dumps(vars_of(node), sort_keys=True), mode=mode)
    elif os.path.exists(path):
        os.unlink(path)


def static_description(node: Node, text: str | None, replicas: int, node_dir: str,
                       kept_pre: dict[str, str], prefer_idle: bool, idle_attribute: str = IDLE_ATTRIBUTE) -> Any:
    """The node's description for a fixed policy when it is the same on every
    attempt (:func:`condor_rlrep.hooks.nodesubmit.attempt_independent`), else
    None, with the reason PRE stays in ``kept_pre``."""
    from condor_rlrep.condor.submit import SubmitError
    from condor_rlrep.hooks.nodesubmit import attempt_independent

    if node.scripts.get("PRE") is not None:
        # the user's PRE may write or change the description DAGMan submits
        kept_pre[node.name] = "its own PRE script runs before the description is read"
        return None
    if text is None:
        kept_pre[node.name] = "its submit description is not there yet"
        return None
    try:
        static = attempt_independent(text, node=node.name, replicas=replicas,
                                     macros={"JOB": node.name, **vars_of(node)}, cwd=node_dir,
                                     prefer_idle=prefer_idle, idle_attribute=idle_attribute)
    except SubmitError as err:
        kept_pre[node.name] = f"its description does not check out ({err}); PRE runs it unchanged"
        return None
    if static is None:
        kept_pre[node.name] = "its replicas' file names depend on $(RETRY) or $(DAGManJobId)"
    return static


def forget_fixed_state(context: str, node: str) -> None:
    from condor_rlrep.rundir.layout import node_fixed_state_path

    try:
        os.unlink(node_fixed_state_path(context, node))
    except FileNotFoundError:
        pass


def write_fixed_state(context: str, node: str, replicas: int, files: list[str]) -> None:
    """What PRE would have told POST, for a node that runs without PRE."""
    from condor_rlrep.rundir.layout import node_fixed_state_path
    from condor_rlrep.rundir.runstate import write_node_state

    write_node_state(node_fixed_state_path(context, node), {
        "node": node, "mode": "replicas", "retry": None, "dagid": None, "run_id": "", "decision_id": None,
        "replicas": replicas, "log_offset": 0, "submit_time": 0.0, "files": files, "chosen": "fixed",
        "written_by": "instrument",
    })

