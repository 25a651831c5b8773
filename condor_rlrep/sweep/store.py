"""A sweep's output folder: the experiment, the shared trace, one result per run.

Layout of ``OUT/``::

    experiment.json        the (possibly --quick) experiment as run
    trace-identity.json    the identity of the trace every run here is of
                           (:mod:`condor_rlrep.sweep.traceid`)
    trace/                 the cluster trace every run shares (a preset's;
                           trace/identity.json stamps what it was generated from)
    runs/<run_id>.json     {"run_id", "params", "result", "trace"} of each finished run

A result file appears atomically (temp file + rename) once its run has
finished, so its presence is the "done" marker a resumed sweep trusts —
after :meth:`SweepDir.check` has made sure it is of this sweep's trace: a run
id digests the run's parameters only, so the same id names the same run on
any trace.

Folders written before identities were recorded (every folder under
``sim/results/`` when this came in) have experiment.json but no
trace-identity.json, and run files without ``"trace"``. Their trace is the
one their experiment.json names — its ``[trace]`` table is what the sweep
that wrote them generated the trace from, and experiment.json has always had
to match the experiment exactly for a sweep to add to the folder — taken as
that preset (or folder) is now, the only way left to tell; if that is gone,
as the table declares it, which is enough to report the folder and never
equal to a trace a sweep could add. Such a folder is read as it is
(``report`` writes nothing into it); the first sweep that adds to it records
that identity and the ids of the run files that carry none, so from then on
those are the only run files accepted without one, and a later change of
the profile is caught like any other.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from condor_rlrep.atomic import write_atomic
from condor_rlrep.errors import InputError
from condor_rlrep.sweep.experiment import Experiment, RunSpec
from condor_rlrep.sweep.traceid import TraceIdentity, declared_identity, describe, generated_source, trace_identity

__all__ = ["SweepDir", "FolderTrace", "IDENTITY_FILE", "TRACE_STAMP"]

IDENTITY_FILE = "trace-identity.json"
TRACE_STAMP = "identity.json"
"""In trace/: the identity of the preset trace generated there."""


def write_json_atomic(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(document, indent=1, sort_keys=True) + "\n")


@dataclass(frozen=True)
class FolderTrace:
    """The trace a sweep folder's runs are of, and where that is said."""

    identity: TraceIdentity
    source: Path
    """trace-identity.json, or (a folder from before identities) experiment.json."""
    untagged: frozenset[str] | None
    """Ids of the run files accepted without a ``"trace"``: None — all of
    them (a folder from before identities, never added to since)."""

    def accepts_untagged(self, run_id: str) -> bool:
        return self.untagged is None or run_id in self.untagged


class SweepDir:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    @property
    def experiment_path(self) -> Path:
        return self.root / "experiment.json"

    @property
    def identity_path(self) -> Path:
        return self.root / IDENTITY_FILE

    @property
    def trace_dir(self) -> Path:
        return self.root / "trace"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    def result_path(self, spec: RunSpec) -> Path:
        return self.runs_dir / f"{spec.run_id}.json"

    def is_done(self, spec: RunSpec) -> bool:
        return self.result_path(spec).exists()

    def save_experiment(self, experiment: Experiment) -> None:
        """Write experiment.json, or refuse a folder that holds another experiment."""
        document = experiment.to_json()
        if self._experiment_differs(document):
            raise InputError("holds results of a different experiment definition; use another --out folder",
                             path=str(self.experiment_path))
        if not self.experiment_path.exists():
            write_json_atomic(self.experiment_path, document)

    def _experiment_differs(self, document: Mapping[str, Any]) -> bool:
        if not self.experiment_path.exists():
            return False
        return self.load_experiment_json() != document

    # ---------------------------------------------------------- trace identity

    def folder_trace(self) -> FolderTrace | None:
        """The trace this folder's runs are of (see the module docstring for
        folders from before identities); None for a folder no sweep has
        written to yet."""
        if self.identity_path.exists():
            document = _read_json(self.identity_path, "trace identity")
            if not isinstance(document, dict) or not isinstance(document.get("trace"), dict):
                raise InputError("corrupt trace identity: no \"trace\" object", path=str(self.identity_path))
            untagged = document.get("runs_without_identity", [])
            return FolderTrace(document["trace"], self.identity_path, frozenset(map(str, untagged)))
        if self.experiment_path.exists():
            trace = self.load_experiment_json().get("trace")
            if not isinstance(trace, dict):
                raise InputError("corrupt experiment.json: no [trace] table", path=str(self.experiment_path))
            try:
                identity = trace_identity(trace)
            except InputError:  # its trace is gone: the report can still read what the folder says
                identity = declared_identity(trace)
            return FolderTrace(identity, self.experiment_path, None)
        return None

    def check(self, experiment: Experiment, identity: TraceIdentity) -> FolderTrace:
        """Refuse, with an :class:`InputError` naming the file at fault and
        both traces, a folder whose trace, generated trace or any run file is
        not of ``identity`` (the experiment's trace), or that holds another
        experiment. Writes nothing: call it before the first write."""
        current = self.folder_trace()
        if current is not None and current.identity != identity:
            raise InputError(
                f"sweep folder {self.root} holds runs of {describe(current.identity)}, but this experiment's trace "
                f"is {describe(identity)}; nothing was changed: use another --out folder", path=str(current.source))
        if self._experiment_differs(experiment.to_json()):
            raise InputError("holds results of a different experiment definition; use another --out folder",
                             path=str(self.experiment_path))
        if "preset" in identity:
            self.check_generated_trace(identity)
        folder = current or FolderTrace(identity, self.identity_path, frozenset())
        for _ in self.verified_results(folder):
            pass
        return folder

    def record(self, experiment: Experiment, folder: FolderTrace) -> None:
        """Write experiment.json and trace-identity.json where missing (after
        :meth:`check`). A folder from before identities gets its identity
        now, with the ids of the run files that have none (module docstring)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.save_experiment(experiment)
        if self.identity_path.exists():
            return
        document: dict[str, Any] = {"trace": folder.identity}
        untagged = sorted(path.stem for path, doc in self._results() if "trace" not in doc)
        if untagged:
            document["runs_without_identity"] = untagged
        write_json_atomic(self.identity_path, document)

    def check_generated_trace(self, identity: TraceIdentity) -> None:
        """Refuse a generated trace in trace/ that is not of ``identity``."""
        if not (self.trace_dir / "trace.toml").exists():
            return
        stamp = self.trace_dir / TRACE_STAMP
        if stamp.exists():
            stamped = _read_json(stamp, "trace identity")
            if stamped != identity:
                raise InputError(
                    f"the trace in {self.trace_dir} was generated as {describe(stamped)}, but this experiment's trace "
                    f"is {describe(identity)}; nothing was changed: use another --out folder", path=str(stamp))
            return
        # A trace generated before the stamp: its source line names profile, seed and days.
        toml = self.trace_dir / "trace.toml"
        try:
            source = tomllib.loads(toml.read_text(encoding="utf-8")).get("source")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            raise InputError(f"cannot read the trace's metadata: {err}", path=str(toml)) from err
        expected = generated_source(identity)
        if source != expected:
            raise InputError(
                f"the trace in {self.trace_dir} says {source!r}, but this experiment's trace is {describe(identity)} "
                f"({expected!r}); nothing was changed: use another --out folder", path=str(toml))

    def stamp_trace(self, identity: TraceIdentity) -> None:
        """Record what the preset trace in trace/ was generated from (after
        :meth:`check` accepted it, or after generating it)."""
        stamp = self.trace_dir / TRACE_STAMP
        if not stamp.exists():
            write_json_atomic(stamp, identity)

    def load_experiment_json(self) -> dict[str, Any]:
        path = self.root / "experiment.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as err:
            raise InputError("not a sweep folder (no experiment.json)", path=str(self.root)) from err
        except json.JSONDecodeError as err:
            raise InputError(f"corrupt experiment.json: {err}", path=str(path)) from err

    def save_result(self, spec: RunSpec, result: dict[str, Any], identity: TraceIdentity) -> None:
        write_json_atomic(self.result_path(spec),
                          {"run_id": spec.run_id, "params": dict(spec.params), "result": result, "trace": identity})

    def load_results(self) -> list[dict[str, Any]]:
        """Every finished run, sorted by run id (a stable order for reports),
        each checked to be of the folder's trace (:meth:`verified_results`)."""
        folder = self.folder_trace()
        if folder is None:
            raise InputError("not a sweep folder (no experiment.json)", path=str(self.root))
        return [document for _, document in self.verified_results(folder)]

    def verified_results(self, folder: FolderTrace) -> Iterator[tuple[Path, dict[str, Any]]]:
        """``(path, document)`` of every run file, by run id; an
        :class:`InputError` naming the first that is not of ``folder``'s trace."""
        for path, document in self._results():
            recorded = document.get("trace")
            if recorded is None:
                if not folder.accepts_untagged(path.stem):
                    raise InputError(
                        f"run {path.stem} records no trace (it predates trace identities, so it was copied in "
                        f"from an older sweep folder) and cannot be shown to be of {describe(folder.identity)}, the "
                        f"trace of sweep folder {self.root}; nothing was changed: move it out of {self.runs_dir}",
                        path=str(path))
            elif recorded != folder.identity:
                raise InputError(
                    f"run {path.stem} is of {describe(recorded)}, but sweep folder {self.root} is of "
                    f"{describe(folder.identity)} (copied from another sweep?); nothing was changed: move it out of "
                    f"{self.runs_dir}", path=str(path))
            yield path, document

    def _results(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        for path in sorted(self.runs_dir.glob("*.json")):
            document = _read_json(path, "run result")
            if not isinstance(document, dict):
                raise InputError("corrupt run result: not a JSON object", path=str(path))
            yield path, document


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise InputError(f"corrupt {what}: {err}", path=str(path)) from err
    except OSError as err:
        raise InputError(f"cannot read {what}: {err.strerror}", path=str(path)) from err
