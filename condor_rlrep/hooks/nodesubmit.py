"""A node's replica submit description: the one implementation PRE uses on
every attempt and ``instrument`` uses once for a fixed policy.

With a fixed policy (``fixed:K``, ``single``) nothing is decided at run time,
so ``instrument`` writes each node's description itself and the DAG runs
without a PRE hook (DAGMan then submits the node one cycle sooner). The
description depends on the attempt only through the macros DAGMan defines
per attempt (``RETRY``, ``DAGManJobId``) when per-replica file names are
expanded from them; :func:`attempt_independent` tells the two apart, and
instrument keeps PRE for a node whose names do depend on them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["NodeDescription", "node_description", "attempt_independent", "STATIC_ATTEMPTS"]


@dataclass
class NodeDescription:
    body: str
    """The submit description DAGMan submits for the node."""
    files: list[str] = field(default_factory=list)
    """The user's final file names (templates) POST promotes the winner's files to."""
    notes: list[str] = field(default_factory=list)
    """For the hook log: names that could not be expanded faithfully."""


def node_description(
    text: str, *, node: str, replicas: int, decision_id: int | None, run_id: str | None,
    macros: Mapping[str, str], cwd: str, prefer_idle: bool = False, extra_lines: Sequence[str] = (),
    idle_attribute: str = "KeyboardIdle",
) -> NodeDescription:
    """The user's description ``text`` run as ``replicas`` procs, tagged with
    ``My.Rlrep*`` attributes (``RlrepDagRun`` only when the run is known,
    i.e. when PRE writes it), each replica with its own output/error and
    declared output files. ``macros``: what DAGMan defines when it submits
    the node (``JOB``, ``RETRY``, ``DAGManJobId``, its VARS); ``cwd``: the
    node's directory (relative names are relative to it). ``prefer_idle``:
    rank machines whose owner has been away longest (idle- policies), by the
    machine attribute ``idle_attribute``;
    ``extra_lines``: more submit commands (the model policy's log requests).
    Several replicas see the plain job's ``$(Process)`` and the other
    per-proc macros (:mod:`condor_rlrep.condor.procmacros`).

    One replica is the user's description plus the tag lines, which DAGMan's
    submit judges exactly as it would the user's alone: no parser is needed
    (importing ``htcondor2`` is half of a PRE's CPU). Several are checked
    with the real submit parser, before and after.
    """
    from condor_rlrep.condor.submit import replica_description

    tags: dict[str, str | int] = {}
    if run_id is not None:
        tags["RlrepDagRun"] = run_id
    tags.update(RlrepNode=node, RlrepDecision="" if decision_id is None else str(decision_id), RlrepReplicas=replicas)
    if replicas == 1:
        return NodeDescription(replica_description(text, replicas=1, tags=tags, extra_lines=list(extra_lines),
                                                   prefer_idle=prefer_idle, idle_attribute=idle_attribute))
    from condor_rlrep.condor.procmacros import pin_proc_macros
    from condor_rlrep.condor.replica_files import plan_replica_files
    from condor_rlrep.condor.submit import validate_description

    validate_description(text, expected_procs=1, macros=macros)
    text = pin_proc_macros(text)  # every replica sees the plain job's $(Process) (raises where it cannot)
    extra, files, notes = plan_replica_files(text, macros=macros, cwd=cwd)
    body = replica_description(text, replicas=replicas, tags=tags, extra_lines=[*extra, *extra_lines],
                               prefer_idle=prefer_idle, idle_attribute=idle_attribute)
    validate_description(body, expected_procs=replicas, macros=macros)
    return NodeDescription(body, files, notes)


STATIC_ATTEMPTS = ({"RETRY": "0", "DAGManJobId": "1"}, {"RETRY": "7", "DAGManJobId": "98765"})
"""Two attempts as DAGMan would define them: a description that comes out the
same for both does not depend on the attempt."""


def attempt_independent(
    text: str, *, node: str, replicas: int, macros: Mapping[str, str], cwd: str, prefer_idle: bool = False,
    idle_attribute: str = "KeyboardIdle",
) -> NodeDescription | None:
    """The node's description when it is the same for every attempt (what
    ``instrument`` can write once), else None (PRE must write it each time).
    ``macros``: ``JOB`` and the node's VARS."""
    first, second = (
        node_description(text, node=node, replicas=replicas, decision_id=None, run_id=None,
                         macros={**macros, **attempt}, cwd=cwd, prefer_idle=prefer_idle,
                         idle_attribute=idle_attribute)
        for attempt in STATIC_ATTEMPTS
    )
    return first if first == second else None
