"""Per-replica file names, and promoting the winner's files when a node ends.

Replicas of a node are procs of one cluster built from one description: left
alone, every replica writes the same ``output``, ``error`` and returned
``transfer_output_files`` (two replicas' lines interleaved in one file, a
removed loser's partial file left behind). So when a node runs ``a > 1``
replicas, the PRE hook gives each replica its own names — the user's name
(expanded as proc 0 of the cluster would have it) plus ``.rlrep-<proc>`` —
and the POST hook renames the winner's files to the user's names and
deletes the losers'.

Names are expanded here with ``htcondor2.Submit`` from the user's
description and the node's VARS, with the cluster id left as a mark that
becomes ``$(ClusterId)`` in the replica description and the real cluster in
POST; ``$(Process)`` is 0, as for the single job the user wrote. A name this
cannot expand faithfully (other cluster/proc macro forms) keeps the user's
expression and gets the suffix only: replicas still never share a file, but
nothing is promoted.

Not covered, by contract (``instrument`` warns): files a job writes on a
shared filesystem that it does not declare (``transfer_output_files`` with
``should_transfer_files = YES``) are written by every replica at once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "CLUSTER_MARK",
    "SUFFIX",
    "plan_replica_files",
    "replica_path",
    "final_path",
    "promote_winner",
    "runs_in_place",
]

CLUSTER_MARK = "@RLREP_CLUSTER@"
SUFFIX = ".rlrep-"

_CLUSTER = re.compile(r"\$\((?:Cluster|ClusterId)\)", re.IGNORECASE)
_PROCESS = re.compile(r"\$\((?:Process|ProcId)\)", re.IGNORECASE)
_NULL = ("", "/dev/null")


def _truthy_transfer(value: str | None) -> bool:
    return (value or "").strip().upper() in ("YES", "TRUE")


def runs_in_place(text: str, macros: Mapping[str, str] | None = None) -> bool:
    """Whether the job runs in its submit directory (no file transfer), where
    any file it writes that is not declared is shared by all replicas."""
    submit = _submit(text, macros)
    if submit is None:
        return True
    return not _truthy_transfer(submit.expand("should_transfer_files") if "should_transfer_files" in submit else None)


def _submit(text: str, macros: Mapping[str, str] | None) -> Any:
    import htcondor2

    from condor_rlrep.condor.submit import macro_prefix

    try:
        marked = _PROCESS.sub("0", _CLUSTER.sub(CLUSTER_MARK, macro_prefix(macros) + text))
        return htcondor2.Submit(marked)
    except Exception:
        return None


def _absolute(path: str, iwd: str) -> str:
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(iwd, path))


def _quote(path: str) -> str:
    # a submit value is the rest of the line: refuse what would start another line
    if "\n" in path or "\r" in path:
        raise ValueError(f"file name {path!r} holds a line break")
    return path


def plan_replica_files(
    text: str, *, macros: Mapping[str, str] | None, cwd: str
) -> tuple[list[str], list[str], list[str]]:
    """Submit lines that give each replica its own files, the templates of the
    user's final names (absolute, cluster as :data:`CLUSTER_MARK`) that POST
    promotes, and notes for the hook log.

    ``macros``: what DAGMan defines for the node (``JOB``, ``RETRY``, its VARS).
    """
    lines: list[str] = []
    finals: list[str] = []
    notes: list[str] = []
    submit = _submit(text, macros)
    if submit is None:
        return lines, finals, ["description not expandable: replicas keep the user's file names"]
    iwd_raw = submit.expand("initialdir") if "initialdir" in submit else ""
    iwd = _absolute(iwd_raw, cwd) if iwd_raw else cwd
    for key in ("output", "error"):
        raw = submit.get(key)
        if raw is None or raw.strip() in _NULL:
            continue
        expanded = submit.expand(key)
        if expanded.strip() in _NULL:
            continue
        if "$" in expanded or (CLUSTER_MARK not in expanded and _mentions_cluster(raw)):
            lines.append(f"{key} = {_quote(raw)}{SUFFIX}$(ProcId)")
            notes.append(f"{key} name {raw!r} is not expandable here: replicas keep their own names")
            continue
        template = _absolute(expanded, iwd)
        finals.append(template)
        lines.append(f"{key} = {_quote(template.replace(CLUSTER_MARK, '$(ClusterId)'))}{SUFFIX}$(ProcId)")
    if "transfer_output_files" in submit and _truthy_transfer(
        submit.expand("should_transfer_files") if "should_transfer_files" in submit else None
    ):
        remap_line, declared = _remaps(submit, iwd)
        if remap_line:
            lines.append(remap_line)
            finals.extend(declared)
    return lines, finals, notes


def _mentions_cluster(raw: str) -> bool:
    return "cluster" in raw.lower()


def _remaps(submit: Any, iwd: str) -> tuple[str | None, list[str]]:
    """``transfer_output_remaps`` sending each declared output file to a
    per-replica name beside where the user's remap (or the iwd) puts it."""
    files = [f.strip() for f in submit.expand("transfer_output_files").split(",") if f.strip()]
    user: dict[str, str] = {}
    if "transfer_output_remaps" in submit:
        spec = submit.expand("transfer_output_remaps").strip().strip('"')
        for item in spec.split(";"):
            if "=" in item:
                source, target = item.split("=", 1)
                user[source.strip()] = target.strip()
    parts: list[str] = []
    finals: list[str] = []
    for name in files:
        target = user.get(name, os.path.basename(name.rstrip("/")))
        if "$" in target or any(c in target for c in ';="'):
            return None, []  # a remap we cannot restate faithfully: leave the user's
        template = _absolute(target, iwd)
        finals.append(template)
        parts.append(f"{name} = {template.replace(CLUSTER_MARK, '$(ClusterId)')}{SUFFIX}$(ProcId)")
    if not parts:
        return None, []
    return _quote('transfer_output_remaps = "' + "; ".join(parts) + '"'), finals


def final_path(template: str, cluster: int) -> str:
    return template.replace(CLUSTER_MARK, str(int(cluster)))


def replica_path(template: str, cluster: int, proc: int) -> str:
    return f"{final_path(template, cluster)}{SUFFIX}{int(proc)}"


def promote_winner(
    templates: Sequence[str], cluster: int, keep: int | None, procs: Iterable[int]
) -> tuple[int, int, list[str]]:
    """Rename replica ``keep``'s files to the user's names and delete every
    other replica's; returns ``(promoted, removed, problems)``.

    ``keep`` None: no replica's files are kept (nothing to promote).
    """
    promoted = removed = 0
    problems: list[str] = []
    procs = sorted(set(int(p) for p in procs) | ({keep} if keep is not None else set()))
    for template in templates:
        final = final_path(template, cluster)
        for proc in procs:
            path = replica_path(template, cluster, proc)
            try:
                if proc == keep:
                    if os.path.lexists(path):
                        os.replace(path, final)
                        promoted += 1
                elif os.path.lexists(path):
                    os.unlink(path)
                    removed += 1
            except OSError as err:
                problems.append(f"{path}: {err.strerror or err}")
    return promoted, removed, problems
