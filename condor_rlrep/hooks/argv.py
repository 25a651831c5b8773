"""The hooks' command line, exactly as DAGMan passes it (no shell).

Three sections, so that no value can be taken for anything else::

    rlrep-pre --ctx=DIR --node=A --submit=ORIG --macros=job,retry,max-retries,dagid
              -- $JOB $RETRY $MAX_RETRIES $DAGID [-- user PRE argv]

1. *Options*, written by ``instrument``: only ``--name=value`` tokens, up to
   the first lone ``--``. A value is everything after the first ``=``, so a
   node named ``--out=/x`` is the value of ``--node`` and nothing else.
2. *Macros*, substituted by DAGMan (a macro is replaced only when it is a
   whole token, docs/dagman.md §2.1, hence not ``--retry=$RETRY``): exactly as
   many positional tokens as ``--macros`` names, in that order. Their values
   are never parsed as options, whatever they hold (a node named ``--``).
3. The user's own script argv after a second ``--`` (``--user-args=K``
   tokens), run as the chained script.

Parsing never fails: a missing option, a macro count that does not match, or
a macro DAGMan did not substitute (an older DAGMan passes an unknown
``$DAGID`` through literally) is noted in :attr:`HookArgs.problems` and the
hook falls back as documented.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["HookArgs", "parse_hook_argv", "OPTION_NAMES", "hook_argv"]

_MACRO = re.compile(r"^\$[A-Za-z_]+$")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")

OPTION_NAMES = frozenset({
    "ctx", "node", "submit", "macros", "user-args", "user-return-at", "user-success-at",
    "interval", "log", "stop-file",
    # macro names, for running a hook by hand (``condor-rlrep hook post --return=3``);
    # a positional macro of the same name wins
    "job", "retry", "max-retries", "dagid", "jobid", "return", "cluster", "success",
})


class HookArgs:
    """Parsed hook argv: ``options`` (name without dashes → value; macros
    included), ``user_argv`` (the chained script, empty if none), ``problems``."""

    def __init__(self, options: dict[str, str], user_argv: list[str], problems: list[str],
                 macros: frozenset[str] = frozenset()):
        self.options = options
        self.user_argv = user_argv
        self.problems = problems
        self.macros = macros
        """Names whose value DAGMan substituted (the positional section)."""

    def text(self, name: str) -> str | None:
        """The value of ``name``, or None when absent or a macro DAGMan did
        not substitute (an option instrument wrote is taken as written: a
        node may be named ``$RETURN``)."""
        value = self.options.get(name)
        if value is None:
            return None
        if name in self.macros and _MACRO.match(value):
            self.problems.append(f"{name} got {value!r}: DAGMan did not substitute that macro")
            return None
        return value

    def integer(self, name: str) -> int | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            self.problems.append(f"{name} {value!r} is not an integer")
            return None

    def digits(self, name: str) -> str | None:
        """A value that must be a decimal id (``$DAGID``): None otherwise."""
        value = self.text(name)
        if value is None:
            return None
        if not (value.isascii() and value.isdigit() and len(value) <= 18):
            self.problems.append(f"{name} {value[:40]!r} is not a decimal id: ignored")
            return None
        return value

    def require(self, name: str) -> str:
        value = self.text(name)
        if value is None:
            raise ValueError(f"hook argument --{name} is missing")
        return value


def hook_argv(options: Sequence[tuple[str, str]], macros: Sequence[tuple[str, str]],
              user_argv: Sequence[str] = ()) -> list[str]:
    """The argv ``instrument`` writes: ``options`` as ``--name=value``, the
    macro tokens (``(name, "$MACRO")``) after ``--``, the user's argv after
    a second ``--``."""
    argv = [f"--{name}={value}" for name, value in options]
    if macros:
        argv.append("--macros=" + ",".join(name for name, _ in macros))
    if user_argv:
        argv.append(f"--user-args={len(user_argv)}")
    argv.append("--")
    argv += [token for _, token in macros]
    if user_argv:
        argv += ["--", *user_argv]
    return argv


def parse_hook_argv(argv: Sequence[str]) -> HookArgs:
    options: dict[str, str] = {}
    problems: list[str] = []
    tokens = list(argv)
    try:
        sentinel = tokens.index("--")
    except ValueError:
        sentinel = len(tokens)
    for token in tokens[:sentinel]:
        name, eq, value = token[2:].partition("=") if token.startswith("--") else ("", "", "")
        if not eq or not _NAME.match(name) or name not in OPTION_NAMES:
            problems.append(f"unexpected argument {token[:80]!r} (options are --name=value)")
            continue
        options[name] = value
    rest = tokens[sentinel + 1:]
    names = [n for n in options.get("macros", "").split(",") if n]
    user: list[str] = []
    user_count = _count(options.get("user-args"), problems)
    if len(rest) == len(names) + (1 + user_count if user_count else 0) and (
        not user_count or rest[len(names)] == "--"
    ):
        values, user = rest[: len(names)], rest[len(names) + 1:] if user_count else []
    elif not names and not options.get("user-args") and rest[:1] != ["--"]:
        values, user = [], rest  # by hand: everything after the lone -- is the user's script
    else:
        problems.append(f"{len(rest)} token(s) after -- where {len(names)} macro(s)"
                        + (f" and {user_count} user argument(s)" if user_count else "") + " were written: macros ignored")
        values = []
        if user_count and len(rest) > user_count and rest[-user_count - 1] == "--":
            user = rest[-user_count:]
    substituted = set()
    for name, value in zip(names, values):
        if name not in OPTION_NAMES:
            problems.append(f"unknown macro name {name!r}")
            continue
        options[name] = value
        substituted.add(name)
    return HookArgs(options, user, problems, frozenset(substituted))


def _count(text: str | None, problems: list[str]) -> int:
    if text is None:
        return 0
    if text.isdigit():
        return int(text)
    problems.append(f"--user-args={text!r} is not a count")
    return 0
