"""The per-node replica submit description the PRE hook writes.

The user's description stays textually unchanged except for its ``queue``
statement (``queue a``: one cluster of ``a`` replica procs) and a few added
``My.`` attributes tagging DAG run, node, decision and replica count. The
edit is textual on purpose: a round trip through ``htcondor2.Submit`` bakes
``if``/``include`` into flat keys and loses inline itemdata (docs/dagman.md §3).
``htcondor2.Submit`` is used only to check the result.

Descriptions that queue several procs themselves (``queue 5``, itemdata,
``queue $(n)``) or have no ``queue`` statement are not replicable: they run
unchanged with one "replica" (the user's own cluster).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from condor_rlrep.errors import InputError

__all__ = [
    "SubmitError",
    "QueueStatement",
    "find_queue",
    "is_replicable",
    "replica_description",
    "validate_description",
    "macro_prefix",
    "TAG_ATTRIBUTES",
    "IDLE_HALF_SECONDS",
    "IDLE_TIE_SCALE",
    "idle_preference",
    "idle_rank",
    "USER_RANK_MACRO",
    "IDLE_ATTRIBUTE",
    "check_idle_attribute",
]

TAG_ATTRIBUTES = ("RlrepDagRun", "RlrepNode", "RlrepDecision", "RlrepReplicas")

_QUEUE = re.compile(r"^[ \t]*queue(?![A-Za-z0-9_.])(?![ \t]*=)(.*)$", re.IGNORECASE)
QueueKind = Literal["single", "count", "itemdata", "none"]


class SubmitError(InputError):
    """A submit description that cannot be turned into a replica description."""


class QueueStatement:
    """Where and what the first ``queue`` statement of a description is.

    ``line_index``: index in ``text.splitlines(keepends=True)`` (``None``
    without a queue); ``kind``; ``count`` of procs when a number; the text
    after ``queue``. (A plain class: dataclass creation costs the PRE hook.)
    """

    __slots__ = ("line_index", "kind", "count", "arguments")

    def __init__(self, line_index: int | None, kind: QueueKind, count: int | None, arguments: str):
        self.line_index = line_index
        self.kind = kind
        self.count = count
        self.arguments = arguments

    def __repr__(self) -> str:
        return f"QueueStatement({self.line_index!r}, {self.kind!r}, {self.count!r}, {self.arguments!r})"


def find_queue(text: str) -> QueueStatement:
    """Locate the first ``queue`` statement (DAGMan honours only the first).

    Lines continued from a previous line (``\\`` at its end) are not
    statements of their own.
    """
    continued = False
    for index, line in enumerate(text.splitlines(keepends=True)):
        body = line.rstrip("\r\n")
        was_continued, continued = continued, body.rstrip().endswith("\\")
        if was_continued or body.lstrip().startswith("#"):
            continue
        match = _QUEUE.match(body)
        if match is None:
            continue
        arguments = match.group(1).strip()
        if not arguments:
            return QueueStatement(index, "single", 1, arguments)
        if arguments.isdigit():
            count = int(arguments)
            return QueueStatement(index, "single" if count == 1 else "count", count, arguments)
        return QueueStatement(index, "itemdata", None, arguments)
    return QueueStatement(None, "none", None, "")


def is_replicable(text: str) -> bool:
    """Whether the description queues exactly one proc (so replicas can be added)."""
    return find_queue(text).kind == "single"


def _classad_value(value: str | int) -> str:
    if isinstance(value, int):
        return str(value)
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        # a line break would end the attribute line and start a submit command
        raise SubmitError(f"tag value {value[:60]!r} holds a control character")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


IDLE_HALF_SECONDS = 3600.0
"""KeyboardIdle at which the idle preference is half its top (any positive
value orders machines the same; this one keeps hours and days apart in a double)."""
IDLE_TIE_SCALE = 1e-3
"""The idle preference lies in [0, IDLE_TIE_SCALE): below any gap between two
values of a user's rank of at least that much, so theirs decides first."""


IDLE_ATTRIBUTE = "KeyboardIdle"
"""The machine attribute the idle preference reads by default: seconds since
the owner last touched keyboard or mouse, which the startd publishes. A
pool that publishes its owners' idleness under another name (the replay
pool's ``TraceKeyboardIdle``) is pointed at it with ``instrument
--idle-attribute``."""

_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def check_idle_attribute(name: str) -> str:
    """``name`` when it is a plain ClassAd attribute name, else :class:`SubmitError`."""
    if not isinstance(name, str) or not _ATTRIBUTE_NAME.match(name):
        raise SubmitError(f"idle attribute {str(name)[:60]!r} is not a ClassAd attribute name "
                          "(letters, digits and _, not starting with a digit)")
    return name


def idle_preference(attribute: str = "TARGET.KeyboardIdle") -> str:
    """A ClassAd expression in [0, :data:`IDLE_TIE_SCALE`) that grows with
    how long the machine's owner has been away (``KeyboardIdle``, seconds
    since the last keyboard or mouse use); 0 where the machine does not say
    (undefined, not a number, negative), so it only ever orders, never excludes."""
    k = attribute
    return (f"ifThenElse((isInteger({k}) || isReal({k})) && {k} > 0, "
            f"{IDLE_TIE_SCALE!r} * {k} / ({k} + {IDLE_HALF_SECONDS!r}), 0.0)")


USER_RANK_MACRO = "$(My.Rank:$(rank:0))"
"""The description's own rank where our line stands, as submit expands it:
``My.Rank``/``+Rank`` if set (it beats the ``rank`` command in the job ad),
else ``rank``, else 0 (HTCondor's default)."""


def idle_rank(user_rank: str = USER_RANK_MACRO, attribute: str = IDLE_ATTRIBUTE) -> str:
    """The job ad's ``Rank`` for an idle-placed replica: the user's own rank
    first, the idle preference breaking its ties.

    ``user_rank`` defaults to :data:`USER_RANK_MACRO`, so the line
    ``My.Rank = <this>`` keeps whatever rank the user's description gives.
    Where the user's rank is not a number (undefined against this machine, an error, a string), it counts
    0 as the negotiator counts it, and the idle preference still applies
    (a bare sum would be undefined and lose it). Booleans count 1 and 0.
    ``attribute``: the machine's idleness (:data:`IDLE_ATTRIBUTE`).
    """
    user = f"real({user_rank})"
    return f"ifThenElse(isReal({user}), {user}, 0.0) + {idle_preference('TARGET.' + check_idle_attribute(attribute))}"


def replica_description(
    text: str, *, replicas: int, tags: Mapping[str, str | int], extra_lines: Sequence[str] = (),
    prefer_idle: bool = False, idle_attribute: str = IDLE_ATTRIBUTE,
) -> str:
    """``text`` with ``queue replicas``, ``My.<tag> = value`` lines and
    ``extra_lines`` (per-replica file names) added just before its queue
    statement, where they override the user's own settings. Everything else
    is byte-for-byte kept. ``prefer_idle``: a ``Rank`` (:func:`idle_rank`)
    that keeps the user's rank first and then prefers the machines whose
    owners have been away longest (by the machine attribute ``idle_attribute``).

    Raises :class:`SubmitError` when the description is not replicable and
    ``replicas`` > 1.
    """
    if replicas < 1:
        raise SubmitError(f"replica count must be >= 1, got {replicas}")
    statement = find_queue(text)
    if statement.line_index is None:
        raise SubmitError("submit description has no queue statement")
    if statement.kind != "single" and replicas != 1:
        raise SubmitError(f"submit description queues its own procs ('queue {statement.arguments}')")
    lines = text.splitlines(keepends=True)
    queue_line = lines[statement.line_index]
    newline = "\r\n" if queue_line.endswith("\r\n") else "\n"
    added = [f"My.{key} = {_classad_value(value)}{newline}" for key, value in tags.items()]
    added += [f"{line}{newline}" for line in extra_lines]
    if prefer_idle:
        added.append(f"My.Rank = {idle_rank(attribute=idle_attribute)}{newline}")
    if statement.kind == "single":
        indent = queue_line[: len(queue_line) - len(queue_line.lstrip(" \t"))]
        queue_line = f"{indent}queue {replicas}{newline}"
    lines[statement.line_index : statement.line_index + 1] = [*added, queue_line]
    if statement.line_index > 0 and not lines[statement.line_index - 1].endswith(("\n", "\r")):
        lines[statement.line_index - 1] += newline
    return "".join(lines)


def macro_prefix(macros: Mapping[str, str] | None) -> str:
    """``key = value`` lines defining DAGMan's macros (``JOB``, VARS) before a
    description, as DAGMan does; a line break in a key or value would add a
    submit command of its own, so it is refused."""
    lines = []
    for key, value in (macros or {}).items():
        if any(c in "\r\n" for c in key + value) or not key.strip() or "=" in key:
            raise SubmitError(f"macro {key[:40]!r} = {value[:40]!r} cannot be written as one submit line")
        lines.append(f"{key} = {value}\n")
    return "".join(lines)


def validate_description(
    text: str, *, expected_procs: int | None = None, macros: Mapping[str, str] | None = None
) -> None:
    """Check ``text`` with the real submit parser (``htcondor2.Submit``).

    ``include`` and ``if`` are evaluated relative to the current directory,
    which for a PRE hook is the node's directory, as for DAGMan's submit.
    ``macros`` (e.g. DAGMan's ``JOB`` and ``RETRY``) are defined first, as
    DAGMan prepends them, so ``include : $(JOB).inc`` checks out.
    """
    import htcondor2  # lazy

    prefix = macro_prefix(macros)
    try:
        submit = htcondor2.Submit(prefix + text)
        qargs = submit.getQArgs().strip()
    except Exception as err:
        raise SubmitError(f"htcondor2.Submit rejects the description: {err}") from err
    if expected_procs is not None:
        got = int(qargs) if qargs.isdigit() else (1 if not qargs else None)
        if got != expected_procs:
            raise SubmitError(f"queue statement reads {qargs!r}, expected {expected_procs} procs")
