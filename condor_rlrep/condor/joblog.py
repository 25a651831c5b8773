"""A replica's own job log, where HTCondor writes what DAGMan's node log
lacks: the machine's ``KeyboardIdle`` at each match (a job-ad-information
event, 028, after each execute event — only in the job's own ``log``, never
in DAGMan's node log, as measured on HTCondor 25.14).

A ``model:R`` node's description asks HTCondor to copy ``KeyboardIdle``
into the job ad and log it (:data:`SUBMIT_LINES`); PRE finds (or adds) the
job's log with :func:`job_log`, and POST reads each run's value back with
:func:`keyboard_idle_from`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from condor_rlrep.condor.eventlog import KEYBOARD_IDLE_ATTR, read_events, rebuild_cluster

__all__ = ["SUBMIT_LINES", "job_log", "keyboard_idle_from"]

SUBMIT_LINES = (
    # appended to the user's lists (a self-reference expands their value)
    "job_machine_attrs = $(job_machine_attrs) KeyboardIdle",
    f"job_ad_information_attrs = $(job_ad_information_attrs) {KEYBOARD_IDLE_ATTR}",
)
"""What a model node's description adds so that the node log tells POST
each run's ``KeyboardIdle`` (see :data:`~condor_rlrep.condor.eventlog.KEYBOARD_IDLE_ATTR`)."""


_LOG_COMMAND = re.compile(r"^[ \t]*(log|initialdir|initial_dir)[ \t]*=", re.IGNORECASE | re.MULTILINE)
_PER_JOB_MACRO = re.compile(r"\$\((?:cluster|clusterid|process|procid|node|item|row|step)\)", re.IGNORECASE)


def job_log(text: str, own_log: str, macros: Mapping[str, str], cwd: str) -> tuple[list[str], str | None, str]:
    """Where the node's 028 events will be: (lines to add to the description,
    the log's absolute path or None when it cannot be known before submit,
    a note for the hook log). A description without a ``log`` gets
    ``own_log`` (its folder is created)."""
    commands = {m.group(1).lower() for m in _LOG_COMMAND.finditer(text)}
    if "log" not in commands:
        path = own_log
        from condor_rlrep.fileguard import make_private_dir

        folder = os.path.dirname(path)
        os.makedirs(os.path.dirname(folder), exist_ok=True)  # the run folder (instrument made it)
        make_private_dir(folder)  # in the run folder: 0700 whatever the umask, never another's
        return [f"log = {path}"], path, "job log added"
    import htcondor2  # only for a description with its own log

    from condor_rlrep.condor.submit import macro_prefix

    submit = htcondor2.Submit(macro_prefix(macros) + text)
    raw = submit.get("log") or ""
    if _PER_JOB_MACRO.search(raw):
        return [], None, "the job's log names its cluster or proc: KeyboardIdle unknown"
    value = submit.expand("log").strip()
    if not value or "$" in value:
        return [], None, "the job's log does not expand before submit: KeyboardIdle unknown"
    if not os.path.isabs(value):
        base = (submit.expand("initialdir") or submit.expand("initial_dir") or "").strip() if commands - {"log"} else ""
        if "$" in base:
            return [], None, "the job's initialdir does not expand before submit: KeyboardIdle unknown"
        value = os.path.join(cwd, base, value)
    return [], os.path.normpath(value), "the user's job log"


def keyboard_idle_from(path: str, offset: int, cluster: int) -> dict[tuple[int, float], float]:
    """Each run's ``KeyboardIdle`` of ``cluster`` from the job log at ``path``
    (its 028 events after PRE's ``offset``)."""
    return rebuild_cluster(read_events(path, offset=offset), cluster).keyboard_idle
