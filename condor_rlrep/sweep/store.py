"""A sweep's output folder: the experiment, the shared trace, one result per run.

Layout of ``OUT/``::

    experiment.json      the (possibly --quick) experiment as run
    trace/               the cluster trace every run shares
    runs/<run_id>.json   {"run_id", "params", "result"} of each finished run

A result file appears atomically (temp file + rename) once its run has
finished, so its presence is the "done" marker a resumed sweep trusts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from condor_rlrep.atomic import write_atomic
from condor_rlrep.errors import InputError
from condor_rlrep.sweep.experiment import Experiment, RunSpec

__all__ = ["SweepDir"]


def write_json_atomic(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(document, indent=1, sort_keys=True) + "\n")


class SweepDir:
    def __init__(self, root: str | Path):
        self.root = Path(root)

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
        path = self.root / "experiment.json"
        document = experiment.to_json()
        if path.exists():
            existing = json.loads(path.read_text(encoding="utf-8"))
            if existing != document:
                raise InputError(
                    "holds results of a different experiment definition; use another --out folder",
                    path=str(path),
                )
            return
        write_json_atomic(path, document)

    def load_experiment_json(self) -> dict[str, Any]:
        path = self.root / "experiment.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as err:
            raise InputError("not a sweep folder (no experiment.json)", path=str(self.root)) from err
        except json.JSONDecodeError as err:
            raise InputError(f"corrupt experiment.json: {err}", path=str(path)) from err

    def save_result(self, spec: RunSpec, result: dict[str, Any]) -> None:
        write_json_atomic(self.result_path(spec), {"run_id": spec.run_id, "params": dict(spec.params), "result": result})

    def load_results(self) -> list[dict[str, Any]]:
        """Every finished run, sorted by run id (a stable order for reports)."""
        documents = []
        for path in sorted(self.runs_dir.glob("*.json")):
            try:
                documents.append(json.loads(path.read_text(encoding="utf-8")))
            except json.JSONDecodeError as err:
                raise InputError(f"corrupt run result: {err}", path=str(path)) from err
        return documents
