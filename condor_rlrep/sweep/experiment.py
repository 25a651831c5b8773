"""Experiment definitions: plain TOML data expanded into a grid of runs.

An experiment file has four tables::

    [experiment]  name, description, figures (which report sections it feeds)
    [trace]       how to obtain the cluster trace: ``preset`` + ``days`` + ``seed``,
                  or ``dir`` (a trace folder, relative to the experiment file)
    [base]        simulation parameters shared by every run
    [grid]        parameter name -> list of values; runs are the cartesian product
    [quick]       optional overrides for ``--quick``: ``[quick.trace]``,
                  ``[quick.base]``, ``[quick.grid]`` replace keys of those tables

Every run is identified by a digest of its canonical parameters, so a result
file names exactly the run that produced it and a resumed sweep can tell
which runs are finished. Runs that differ only in φ and whose policy does
not look at φ (single, fixed:K, oracle:R) form one :class:`RunGroup`: it is
simulated once and judged at each φ (the grid, the result files and the
report are the same as if each had been simulated).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from condor_rlrep.errors import InputError

__all__ = ["Experiment", "RunSpec", "RunGroup", "group_runs", "load_experiment", "builtin_experiments",
           "experiment_path"]

_TABLES = ("experiment", "trace", "base", "grid", "quick")


@dataclass(frozen=True)
class RunSpec:
    """One simulation of a sweep: its parameters and their digest."""

    params: Mapping[str, Any]

    @property
    def run_id(self) -> str:
        canonical = json.dumps(self.params, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def label(self) -> str:
        keys = ("policy", "phi", "workflows")
        return " ".join(f"{k}={self.params[k]}" for k in keys if k in self.params)


@dataclass(frozen=True)
class RunGroup:
    """Runs that one simulation answers: all of them, or (φ-independent
    policies) the same run judged at several φ. ``runs[0]`` is simulated."""

    runs: tuple[RunSpec, ...]

    @property
    def params(self) -> Mapping[str, Any]:
        return self.runs[0].params

    @property
    def run_ids(self) -> list[str]:
        return [spec.run_id for spec in self.runs]


def _group_key(spec: RunSpec) -> str:
    from condor_rlrep.sim.policies import depends_on_phi

    params = dict(spec.params)
    if "phi" in params and not depends_on_phi(str(params.get("policy", "single"))):
        params.pop("phi")
        return "any-phi:" + json.dumps(params, sort_keys=True, separators=(",", ":"))
    return spec.run_id


def group_runs(specs: list[RunSpec]) -> list[RunGroup]:
    """``specs`` gathered into groups of one simulation each, in order of
    first appearance (each group's runs in the order given)."""
    groups: dict[str, list[RunSpec]] = {}
    for spec in specs:
        groups.setdefault(_group_key(spec), []).append(spec)
    return [RunGroup(tuple(runs)) for runs in groups.values()]


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    trace: Mapping[str, Any]
    base: Mapping[str, Any]
    grid: Mapping[str, list[Any]]
    figures: tuple[str, ...] = ()
    source: Path | None = None
    quick: bool = False
    _raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def runs(self) -> list[RunSpec]:
        """The grid's runs in a stable order (the file's key order, then values)."""
        keys = list(self.grid)
        runs = []
        for values in itertools.product(*(self.grid[k] for k in keys)):
            params = dict(self.base)
            params.update(zip(keys, values))
            runs.append(RunSpec(params))
        return runs

    def run_groups(self) -> list[RunGroup]:
        """The grid's runs, one group per simulation (see :class:`RunGroup`)."""
        return group_runs(self.runs())

    def as_quick(self) -> Experiment:
        """The reduced variant described by the file's ``[quick]`` table."""
        overrides = self._raw.get("quick", {})
        return Experiment(
            name=self.name,
            description=self.description,
            trace={**self.trace, **overrides.get("trace", {})},
            base={**self.base, **overrides.get("base", {})},
            grid={**self.grid, **overrides.get("grid", {})},
            figures=self.figures,
            source=self.source,
            quick=True,
            _raw=self._raw,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "trace": dict(self.trace),
            "base": dict(self.base),
            "grid": {k: list(v) for k, v in self.grid.items()},
            "figures": list(self.figures),
            "quick": self.quick,
        }


def _experiments_dir() -> Path:
    return Path(str(resources.files("condor_rlrep") / "data" / "experiments"))


def builtin_experiments() -> list[str]:
    """Names of the experiments shipped with the package."""
    return sorted(p.stem for p in _experiments_dir().glob("*.toml"))


def experiment_path(name_or_path: str | Path) -> Path:
    """A path as given, or the shipped experiment of that name."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.is_file():
        return candidate
    shipped = _experiments_dir() / f"{name_or_path}.toml"
    if shipped.exists():
        return shipped
    known = ", ".join(builtin_experiments()) or "none"
    raise InputError(f"no experiment file or built-in experiment named {str(name_or_path)!r} (built-in: {known})")


def load_experiment(name_or_path: str | Path) -> Experiment:
    path = experiment_path(name_or_path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not valid TOML: {err}", path=str(path)) from err
    except OSError as err:
        raise InputError(f"cannot read experiment: {err.strerror}", path=str(path)) from err
    return _from_dict(raw, path)


def _from_dict(raw: Mapping[str, Any], path: Path) -> Experiment:
    unknown = set(raw) - set(_TABLES)
    if unknown:
        raise InputError(f"unknown table(s) {sorted(unknown)}; expected {list(_TABLES)}", path=str(path))
    meta = raw.get("experiment", {})
    if "name" not in meta:
        raise InputError("[experiment] needs a 'name'", path=str(path))
    grid = raw.get("grid", {})
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise InputError(f"[grid] {key} must be a non-empty list", path=str(path))
    trace = dict(raw.get("trace", {}))
    if "dir" in trace:
        trace["dir"] = str((path.parent / trace["dir"]).resolve())
    elif "preset" not in trace:
        raise InputError("[trace] needs 'preset' or 'dir'", path=str(path))
    return Experiment(
        name=str(meta["name"]),
        description=str(meta.get("description", "")),
        trace=trace,
        base=dict(raw.get("base", {})),
        grid={k: list(v) for k, v in grid.items()},
        figures=tuple(meta.get("figures", ())),
        source=path,
        _raw=raw,
    )
