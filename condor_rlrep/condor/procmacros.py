"""Every replica sees what the plain job saw: the per-proc submit macros
pinned to their proc-0 values.

A node's replicas are the procs of one cluster (``queue N``), and the submit
language gives each proc its own ``$(Process)``/``$(ProcId)``/``$(Step)``
(0, 1, … for ``queue N``; measured with ``condor_submit -dry-run`` of
HTCondor 25.14), while the user's single job (``queue``) had ``Process``,
``ProcId``, ``Step`` and ``Row`` 0 and ``Item`` empty. Left alone, replica 1
would read ``input.1`` where the job reads ``input.0``, and its result would
be promoted under proc 0's name. So a replicated description has each plain
``$(Name)`` of these replaced by the plain job's value, in its text and in
the node's VARS (DAGMan adds those to the submit, where they expand per
proc too). condor-rlrep's own per-replica lines, added afterwards, keep
``$(ProcId)``: only they differ between replicas.

What cannot be pinned faithfully is refused (:class:`SubmitError`, and
``instrument`` leaves the node unreplicated, saying why): another form of
these macros (``$INT(Process,%03d)``, ``$(Process:7)``, ``$EVAL(...)``), a
definition of one of the names in the description, a job-ad reference to
``ProcId`` (``$$([ProcId])``, an expression naming ``ProcId``: evaluated per
proc at run time), and an ``include`` whose text is not known here. A job
that reads its own ``ProcId`` from its job ad (``$_CONDOR_JOB_AD``) learns
its replica number: that is the one thing that tells replicas apart.
"""

from __future__ import annotations

import re
from condor_rlrep.condor.submit import SubmitError

__all__ = ["PROC_VALUES", "pin_proc_macros", "pin_var"]

PROC_VALUES = {"process": "0", "procid": "0", "step": "0", "row": "0", "item": ""}
"""The plain job's values (a single ``queue``), by lower-case name."""

_NAMES = "Process|ProcId|Step|Row|Item"
_PLAIN = re.compile(rf"\$\(({_NAMES})\)", re.IGNORECASE)
_OTHER = re.compile(rf"\$[A-Za-z_]*\(\s*(?:{_NAMES})\s*[:,)]", re.IGNORECASE)
_DEFINED = re.compile(rf"^\s*(?:{_NAMES})\s*=", re.IGNORECASE)
_PROCID_WORD = re.compile(r"\bProcId\b", re.IGNORECASE)
_INCLUDE = re.compile(r"^\s*include\b[^=]*:", re.IGNORECASE)


def _pinned(text: str) -> str:
    return _PLAIN.sub(lambda match: PROC_VALUES[match.group(1).lower()], text)


def pin_proc_macros(text: str) -> str:
    """The description ``text`` with every ``$(Process)``, ``$(ProcId)``,
    ``$(Step)``, ``$(Row)``, ``$(Item)`` given the plain job's value; raises
    :class:`SubmitError` saying why when that cannot be guaranteed."""
    if not re.search(rf"{_NAMES}|include", text, re.IGNORECASE):
        return text  # the common case: nothing to pin, nothing to check
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        if _DEFINED.match(line):
            raise SubmitError(f"line {number} defines a per-proc macro itself ({line.strip()[:60]!r})")
        if _INCLUDE.match(line):
            raise SubmitError(f"line {number} includes a file whose use of $(Process) cannot be checked "
                              f"({line.strip()[:60]!r})")
        rest = _pinned(line)
        if _OTHER.search(rest):
            raise SubmitError(f"line {number} uses a per-proc macro in a form that cannot be pinned to the "
                              f"plain job's value ({line.strip()[:60]!r})")
        if _PROCID_WORD.search(rest):
            raise SubmitError(f"line {number} refers to the job's ProcId, which differs per replica "
                              f"({line.strip()[:60]!r})")
    return _pinned(text)


def pin_var(key: str, value: str) -> str:
    """A VARS value of the node pinned alike (raises :class:`SubmitError`)."""
    if key.lower() in PROC_VALUES:
        raise SubmitError(f"VARS {key} defines a per-proc macro itself")
    rest = _pinned(value)
    if _OTHER.search(rest) or _PROCID_WORD.search(rest):
        raise SubmitError(f"VARS {key}={value[:60]!r} uses a per-proc macro in a form that cannot be pinned")
    return rest
