"""The hooks' command line, exactly as DAGMan passes it (no shell).

``rlrep-pre --ctx DIR --node A --submit ORIG --out NODE.sub --job $JOB
--retry $RETRY --max-retries $MAX_RETRIES --dagid $DAGID [-- user PRE argv]``

Options are ``--name value`` pairs up to a lone ``--``; everything after it is
the user's own script argv, run as the chained script. Parsing never fails:
a missing option, a missing value or a macro DAGMan did not substitute (an
older DAGMan passes an unknown ``$DAGID`` through literally) is noted in
:attr:`HookArgs.problems` and the hook falls back as documented.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["HookArgs", "parse_hook_argv"]

_MACRO = re.compile(r"^\$[A-Za-z_]+$")


class HookArgs:
    """Parsed hook argv: ``options`` (name without dashes → value),
    ``user_argv`` (the chained script, empty if none), ``problems``."""

    def __init__(self, options: dict[str, str], user_argv: list[str], problems: list[str]):
        self.options = options
        self.user_argv = user_argv
        self.problems = problems

    def text(self, name: str) -> str | None:
        """The value of ``--name``, or None when absent or an unsubstituted macro."""
        value = self.options.get(name)
        if value is None:
            return None
        if _MACRO.match(value):
            self.problems.append(f"--{name} got {value!r}: DAGMan did not substitute that macro")
            return None
        return value

    def integer(self, name: str) -> int | None:
        value = self.text(name)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            self.problems.append(f"--{name} {value!r} is not an integer")
            return None

    def require(self, name: str) -> str:
        value = self.text(name)
        if value is None:
            raise ValueError(f"hook argument --{name} is missing")
        return value


def parse_hook_argv(argv: Sequence[str]) -> HookArgs:
    options: dict[str, str] = {}
    problems: list[str] = []
    user: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            user = list(argv[index + 1 :])
            break
        if token.startswith("--") and len(token) > 2:
            name = token[2:]
            if "=" in name:
                name, value = name.split("=", 1)
                options[name] = value
                index += 1
                continue
            if index + 1 < len(argv) and argv[index + 1] != "--" and not argv[index + 1].startswith("--"):
                options[name] = argv[index + 1]
                index += 2
                continue
            # A macro expanding to an empty string leaves no token at all.
            problems.append(f"--{name} has no value")
            index += 1
            continue
        problems.append(f"unexpected argument {token!r}")
        index += 1
    return HookArgs(options, user, problems)
