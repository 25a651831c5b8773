"""Which sweep folders a report covers, and how their runs are grouped.

A report is of one sweep folder, of several, or of a parent folder whose
sub-folders are sweeps. Sweeps of the same trace and shared parameters
(e.g. ``seed-2`` with its grid and ``seed-2-rl`` with the rl:3 reference
run) are one group: their runs are merged, and a run that two folders both
hold must be the same result in each. Every run file must be of its
folder's trace, and sweeps reported under one trace label (``trace seed 2``)
must be of one trace (:mod:`condor_rlrep.sweep.traceid`): a label names a
seed, and two presets or two versions of a profile share seeds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from condor_rlrep.errors import InputError
from condor_rlrep.policyspec import parse_spec
from condor_rlrep.sweepreport.data import ResultTable
from condor_rlrep.sweep.store import SweepDir
from condor_rlrep.sweep.traceid import TraceIdentity, describe

__all__ = ["Sweep", "TraceGroup", "find_sweeps", "group_by_trace"]


@dataclass(frozen=True)
class Sweep:
    root: Path
    experiment: dict[str, Any]
    documents: list[dict[str, Any]]
    identity: TraceIdentity | None = None
    """The trace every run of it is of (None: not known, a hand-made Sweep)."""

    @classmethod
    def load(cls, root: str | Path) -> Sweep:
        """The sweep in ``root``; an :class:`InputError` naming the run file
        that is of another trace or names a policy :mod:`condor_rlrep.policyspec`
        does not know."""
        folder = SweepDir(root)
        experiment = folder.load_experiment_json()
        trace = folder.folder_trace()
        assert trace is not None  # experiment.json exists
        documents = []
        for path, document in folder.verified_results(trace):
            try:
                parse_spec(str(document["params"]["policy"]))
            except (KeyError, TypeError):
                raise InputError("corrupt run result: no params.policy", path=str(path)) from None
            except InputError as err:
                raise InputError(err.message, path=str(path)) from None
            documents.append(document)
        return cls(folder.root, experiment, documents, trace.identity)


@dataclass
class TraceGroup:
    trace: dict[str, Any]
    base: dict[str, Any]
    sweeps: list[Sweep] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seed(self) -> int | None:
        seed = self.trace.get("seed")
        return int(seed) if seed is not None and "preset" in self.trace else None

    @property
    def label(self) -> str:
        if self.seed is not None:
            return f"trace seed {self.seed}"
        return "trace " + str(self.trace.get("dir", "?"))

    def table(self) -> ResultTable:
        return ResultTable(self.documents)

    def role(self, tuning_seeds: Iterable[int] | None) -> str | None:
        """"tuning seed" / "held-out seed", or None when the report was not told."""
        if tuning_seeds is None or self.seed is None:
            return None
        return "tuning seed" if self.seed in set(tuning_seeds) else "held-out seed"


def find_sweeps(paths: Iterable[str | Path]) -> list[Sweep]:
    """Each path is a sweep folder (it has experiment.json) or a folder of them."""
    sweeps: list[Sweep] = []
    for path in map(Path, paths):
        if (path / "experiment.json").exists():
            sweeps.append(Sweep.load(path))
            continue
        children = sorted(p for p in path.iterdir() if (p / "experiment.json").exists()) if path.is_dir() else []
        if not children:
            raise InputError("not a sweep folder (no experiment.json) and no sub-folder is one", path=str(path))
        sweeps.extend(Sweep.load(child) for child in children)
    seen: set[Path] = set()
    unique = []
    for sweep in sweeps:
        if sweep.root.resolve() not in seen:
            seen.add(sweep.root.resolve())
            unique.append(sweep)
    return unique


def group_by_trace(sweeps: Iterable[Sweep]) -> list[TraceGroup]:
    """Sweeps of the same trace and shared parameters, their runs merged;
    ordered by trace seed."""
    groups: dict[str, TraceGroup] = {}
    where: dict[tuple[str, str], tuple[Path, Any]] = {}
    labelled: dict[str, Sweep] = {}
    for sweep in sweeps:
        trace, base = sweep.experiment["trace"], sweep.experiment.get("base", {})
        key = json.dumps([trace, base], sort_keys=True)
        group = groups.setdefault(key, TraceGroup(trace, base))
        first = labelled.setdefault(group.label, sweep)
        if first.identity != sweep.identity:
            raise InputError(
                f"this sweep is of {describe(sweep.identity)}, but {first.root}, reported under the same label "
                f"{group.label!r}, is of {describe(first.identity)}; report them separately",
                path=str(sweep.root))
        group.sweeps.append(sweep)
        for doc in sweep.documents:
            params = doc["params"]
            run_key = (key, json.dumps(params, sort_keys=True))
            if run_key in where:
                first, result = where[run_key]
                if result != doc["result"]:
                    raise InputError(
                        f"run {params.get('policy')} at phi = {params.get('phi')} differs from the same run in {first}",
                        path=str(sweep.root))
                continue
            where[run_key] = (sweep.root, doc["result"])
            group.documents.append(doc)
    return sorted(groups.values(), key=lambda g: (g.seed is None, g.seed or 0, g.label))
