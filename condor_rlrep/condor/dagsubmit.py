"""Submitting a DAG through the Python bindings, as ``condor_submit_dag`` would.

``htcondor2.Submit.from_dag`` writes ``DAG.condor.sub`` and returns the
DAGMan job's description; ``Schedd.submit`` queues it. The options are
those of ``condor_submit_dag`` (``-maxjobs 10 -append 'accounting_group =
x' -batch-name b -force …``), parsed here into the bindings' names, so a
user passes what they would have passed to the tool. ``-append`` has no
bindings option: its ``key = value`` lines are set on the description
before it is submitted, as ``condor_submit_dag`` appends them to the
``.condor.sub`` file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from condor_rlrep.errors import InputError, RlrepError

__all__ = ["SubmitDagRequest", "DagSubmission", "SUBMIT_DAG_OPTIONS", "parse_submit_dag_args", "submit_dag",
           "SubmitError"]


class SubmitError(RlrepError):
    """The schedd or the bindings refused the DAG (the message says which and why)."""


# condor_submit_dag option (lower case, no dash) -> (Submit.from_dag key, kind)
SUBMIT_DAG_OPTIONS: dict[str, tuple[str, type]] = {
    "maxjobs": ("MaxJobs", int), "maxidle": ("MaxIdle", int), "maxpre": ("MaxPre", int),
    "maxpost": ("MaxPost", int), "maxhold": ("MaxHold", int), "priority": ("Priority", int),
    "batch-name": ("BatchName", str), "notification": ("Notification", str), "config": ("ConfigFile", str),
    "outfile_dir": ("OutfileDir", str), "debug": ("DebugLevel", int), "autorescue": ("AutoRescue", int),
    "dorescuefrom": ("DoRescueFrom", int), "include_env": ("GetFromEnv", str), "insert_env": ("AddToEnv", str),
    "insert_sub_file": ("AppendFile", str), "load_save": ("SaveFile", str), "dagman": ("DagmanPath", str),
    "force": ("Force", bool), "f": ("Force", bool), "usedagdir": ("UseDagDir", bool),
    "import_env": ("ImportEnv", bool), "allowversionmismatch": ("AllowVersionMismatch", bool),
    "suppress_notification": ("SuppressNotification", bool), "alwaysrunpost": ("PostRun", bool),
    "update_submit": ("UpdateSubmit", bool),
}


@dataclass
class SubmitDagRequest:
    """What to pass to ``Submit.from_dag``, the ``-append`` lines, and
    whether to stop after writing ``.condor.sub`` (``-no_submit``)."""

    options: dict[str, Any] = field(default_factory=dict)
    append: list[str] = field(default_factory=list)
    no_submit: bool = False


@dataclass(frozen=True)
class DagSubmission:
    cluster: int | None
    """The DAGMan job's cluster (None with ``-no_submit``)."""
    condor_sub: str
    """The ``DAG.condor.sub`` file written."""
    schedd: str
    """The schedd's name ("" with ``-no_submit``)."""


def parse_submit_dag_args(args: Sequence[str]) -> SubmitDagRequest:
    """``condor_submit_dag``'s options (one or two dashes, ``-opt value`` or
    ``-opt=value``) into a request; an unknown option or bad value is an
    :class:`InputError` naming it."""
    request = SubmitDagRequest()
    items = list(args)
    index = 0
    while index < len(items):
        word = items[index]
        index += 1
        if not word.startswith("-") or word in ("-", "--"):
            raise InputError(f"condor_submit_dag option expected, got {word!r}")
        name, eq, inline = word.lstrip("-").partition("=")
        key = name.lower()
        if key == "no_submit":
            request.no_submit = True
            continue
        if key not in SUBMIT_DAG_OPTIONS and key != "append":
            known = ", ".join(f"-{k}" for k in sorted([*SUBMIT_DAG_OPTIONS, "append", "no_submit"]))
            raise InputError(f"unknown condor_submit_dag option {word!r} (known: {known})")
        kind = str if key == "append" else SUBMIT_DAG_OPTIONS[key][1]
        if kind is bool:
            if eq:
                raise InputError(f"{word!r}: -{key} takes no value")
            request.options[SUBMIT_DAG_OPTIONS[key][0]] = True
            continue
        if eq:
            value = inline
        elif index < len(items):
            value = items[index]
            index += 1
        else:
            raise InputError(f"-{key} needs a value")
        if key == "append":
            if "=" not in value or not value.partition("=")[0].strip():
                raise InputError(f"-append {value!r}: a submit command 'key = value'")
            request.append.append(value)
            continue
        if kind is int:
            try:
                number = int(value)
            except ValueError:
                raise InputError(f"-{key} {value!r}: not a whole number") from None
            if number < 0:
                raise InputError(f"-{key} {value!r}: must be >= 0")
            request.options[SUBMIT_DAG_OPTIONS[key][0]] = number
        else:
            request.options[SUBMIT_DAG_OPTIONS[key][0]] = value
    return request


def submit_dag(dag: str | os.PathLike[str], request: SubmitDagRequest | None = None,
               schedd_name: str | None = None) -> DagSubmission:
    """Write ``DAG.condor.sub`` and (unless ``-no_submit``) queue the DAGMan
    job on the local schedd or ``schedd_name``; the DAGMan job runs in the
    DAG's folder, as ``condor_submit_dag`` run there."""
    import htcondor2

    request = request or SubmitDagRequest()
    path = os.path.abspath(os.fspath(dag))
    try:
        description = htcondor2.Submit.from_dag(path, dict(request.options))
    except (htcondor2.HTCondorException, ValueError, TypeError, RuntimeError) as err:
        raise SubmitError(f"{path}: the bindings refused the DAG: {err}") from err
    for line in request.append:
        key, _, value = line.partition("=")
        key = key.strip()
        description["My." + key[1:] if key.startswith("+") else key] = value.strip()
    description["initialdir"] = os.path.dirname(path)
    condor_sub = path + ".condor.sub"
    if request.append:
        _append_to_file(condor_sub, request.append)
    if request.no_submit:
        return DagSubmission(None, condor_sub, "")
    try:
        if schedd_name:
            location = htcondor2.Collector().locate(htcondor2.DaemonType.Schedd, schedd_name)
            schedd = htcondor2.Schedd(location)
        else:
            schedd = htcondor2.Schedd()
        result = schedd.submit(description)
    except (htcondor2.HTCondorException, ValueError, RuntimeError) as err:
        where = f"schedd {schedd_name}" if schedd_name else "the local schedd"
        raise SubmitError(f"{path}: {where} did not take the DAG: {err}") from err
    return DagSubmission(int(result.cluster()), condor_sub, schedd_name or _local_schedd_name(htcondor2))


def _append_to_file(condor_sub: str, lines: list[str]) -> None:
    """``-append`` lines into ``DAG.condor.sub`` before its ``queue``, as
    ``condor_submit_dag`` writes them, so the file says what was submitted."""
    try:
        with open(condor_sub, encoding="utf-8") as handle:
            text = handle.read().splitlines()
    except OSError:
        return
    at = max((i for i, line in enumerate(text) if line.strip().lower().startswith("queue")), default=len(text))
    text[at:at] = lines
    from condor_rlrep.atomic import write_atomic

    write_atomic(condor_sub, "\n".join(text) + "\n")


def _local_schedd_name(htcondor2: Any) -> str:
    try:
        return str(htcondor2.param.get("SCHEDD_NAME") or htcondor2.param.get("FULL_HOSTNAME") or "local")
    except Exception:  # noqa: BLE001 - only a label for the message
        return "local"
