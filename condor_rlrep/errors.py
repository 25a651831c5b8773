"""One exception hierarchy for the whole library.

Library code raises these; the CLI and the hooks turn them into messages and
exit codes at one place each.
"""

from __future__ import annotations

__all__ = [
    "RlrepError",
    "InputError",
    "DagError",
    "DagSyntaxError",
    "CycleError",
    "EstimateError",
    "StoreError",
    "StaleExposureError",
    "TraceError",
    "ModelError",
]


class RlrepError(Exception):
    """Root of every error condor-rlrep raises on purpose."""


class InputError(RlrepError):
    """Bad user input, located in a file (and line, when one applies).

    ``str(err)`` reads ``file:line: message`` so that the CLI can print it as is.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.path is not None:
            where = str(self.path)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        return where + self.message


class DagError(InputError):
    """A workflow file that cannot be turned into a valid workflow."""


class DagSyntaxError(DagError):
    """A line of a DAG (or DAX/WfFormat) file that does not parse."""


class CycleError(DagError):
    """The workflow's dependencies contain a cycle; ``cycle`` names it."""

    def __init__(self, message: str, *, cycle: list[str], path: str | None = None, line: int | None = None):
        self.cycle = list(cycle)
        super().__init__(message, path=path, line=line)


class EstimateError(InputError):
    """A node has no runtime estimate (and no default was given), or a bad one."""


class StoreError(RlrepError):
    """The agent store is missing, corrupt, foreign, too new, or misused."""


class StaleExposureError(StoreError):
    """A model update whose runs ended before the store's survival horizon:
    the keys of node attempts recorded that long ago have been pruned, so
    the store cannot tell this update from a repeat of one it already
    counted, and does not count it (see :mod:`condor_rlrep.store.retention`)."""


class TraceError(InputError):
    """A cluster trace file that is malformed or inconsistent."""


class ModelError(InputError):
    """A BottleMod model (file or in-memory) that is invalid."""
