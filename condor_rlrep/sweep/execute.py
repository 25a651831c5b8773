"""One simulation of a sweep: build the simulator's config from the run's
parameters, simulate on the sweep's shared trace, and reduce the result to
the JSON document the report reads — once per run of its group (the same
run judged at each φ of a φ-independent policy)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from condor_rlrep.errors import InputError
from condor_rlrep.sweep.experiment import Experiment
from condor_rlrep.sweep.store import SweepDir
from condor_rlrep.sweep.traceid import TraceIdentity, trace_identity

__all__ = ["open_sweep", "prepare_trace", "execute_run", "execute_group", "trace_dir_of"]

# Run parameters passed straight to SimConfig (everything else is an error).
_SIM_KEYS = {
    "workflows", "fraction", "policy", "phi", "phi_mode", "seed", "negotiation_interval", "dagman_latency",
    "slot_turnaround", "machine_choice",
    "reboot_hour", "owner_idle", "days", "failure_reward", "default_estimate", "strategy", "schedule", "epsilon_high",
    "epsilon_low", "switch_after", "n_bins", "p_max",
}

_trace_cache: dict[str, Any] = {}


def trace_dir_of(experiment_trace: dict[str, Any], out: SweepDir) -> Path:
    return Path(experiment_trace["dir"]) if "dir" in experiment_trace else out.trace_dir


def open_sweep(experiment: Experiment, out: SweepDir, *, trace: bool = True) -> tuple[Path, TraceIdentity]:
    """Make ``out`` ready for ``experiment``'s runs: refuse it (nothing
    written) when its trace, generated trace or any run file is of another
    trace (:meth:`SweepDir.check`), else record the experiment and its trace's
    identity and (``trace``) generate the trace. Returns the trace folder and
    the identity every result written there must carry. Every way into a
    sweep folder — local runs, ``--only``, ``--prepare-only``, the condor DAG
    — comes through here."""
    identity = trace_identity(experiment.trace)
    folder = out.check(experiment, identity)
    out.record(experiment, folder)
    trace_dir = prepare_trace(experiment, out, identity) if trace else trace_dir_of(experiment.trace, out)
    return trace_dir, identity


def prepare_trace(experiment: Experiment, out: SweepDir, identity: TraceIdentity | None = None) -> Path:
    """Generate the experiment's trace into the sweep folder once (a ``dir``
    trace is used where it is) and stamp it with its identity; an existing
    one is reused only if it is of ``identity``."""
    if "dir" in experiment.trace:
        return Path(experiment.trace["dir"])
    identity = identity if identity is not None else trace_identity(experiment.trace)
    if (out.trace_dir / "trace.toml").exists():
        out.check_generated_trace(identity)
        out.stamp_trace(identity)
        return out.trace_dir
    from condor_rlrep.sim.generator import generate_trace
    from condor_rlrep.sim.trace_io import write_trace

    trace = generate_trace(experiment.trace["preset"], days=experiment.trace.get("days"), seed=int(experiment.trace.get("seed", 0)))
    write_trace(trace, out.trace_dir)
    out.stamp_trace(identity)
    return out.trace_dir


def _trace(trace_dir: Path):
    key = str(Path(trace_dir).resolve())
    if key not in _trace_cache:
        from condor_rlrep.sim.trace_io import read_trace

        _trace_cache.clear()  # one trace per worker process is enough
        _trace_cache[key] = read_trace(trace_dir)
    return _trace_cache[key]


def _config(params: dict[str, Any]):
    from condor_rlrep.sim.config import SimConfig

    unknown = set(params) - _SIM_KEYS
    if unknown:
        raise InputError(f"unknown run parameter(s) {sorted(unknown)}; known: {sorted(_SIM_KEYS)}")
    kwargs = dict(params)
    kwargs["workflows"] = tuple(kwargs.get("workflows", ("figure1",)))
    return SimConfig(**kwargs)


def execute_run(params: dict[str, Any], trace_dir: Path) -> dict[str, Any]:
    """Simulate one run and return its report document (JSON-ready)."""
    return execute_group([params], trace_dir)[0]


def execute_group(params: list[dict[str, Any]], trace_dir: Path) -> list[dict[str, Any]]:
    """Simulate ``params[0]`` once and return the report document of each
    run in ``params``: the others must differ from it in φ alone, with a
    policy that does not depend on φ (a :class:`~condor_rlrep.sweep.experiment.RunGroup`)."""
    from condor_rlrep.sim.result import result_for_phi
    from condor_rlrep.sim.run import simulate

    configs = [_config(p) for p in params]
    first = configs[0]
    for config in configs[1:]:
        if replace(config, phi=first.phi) != first:
            raise InputError("runs simulated together may differ in phi only")
    result = simulate(_trace(trace_dir), first)
    return [reduce_result(result if c.phi == first.phi else result_for_phi(result, c.phi)) for c in configs]


def _clean(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def reduce_result(result) -> dict[str, Any]:
    summary = result.summary()
    p = result.wf_p[~np.isnan(result.wf_p)]
    # Uncompleted workflows count as p = +inf in the CDF: they never finished.
    p_all = np.where(np.isnan(result.wf_p), np.inf, result.wf_p)
    with np.errstate(invalid="ignore"):  # inf − inf between two unfinished workflows: NaN, reported as null
        quantiles = np.quantile(p_all, np.linspace(0.0, 1.0, 101)).tolist() if len(p_all) else []
    tasks = result.tasks
    completion = result.completion
    return {
        "workflows": summary["workflows"],
        "completed": summary["completed"],
        "within": summary["within"],
        "energy_kwh": {
            "workflow_total": summary["energy_kwh"]["total"],
            "workflow_good": summary["energy_kwh"]["good"],
            "workflow_bad": summary["energy_kwh"]["bad"],
            "background": summary["energy_kwh"]["background"],
            "all": summary["energy_kwh"]["all"],
        },
        "evictions": summary["evictions"],
        "events": summary["events"],
        "tasks": summary["tasks"],
        "task_success": summary["task_success"],
        "mean_replicas": float(tasks["replicas"].mean()) if len(tasks["replicas"]) else None,
        "p_quantiles": [_clean(q) for q in quantiles],
        "p_stats": {
            "mean": _clean(float(p.mean())) if len(p) else None,
            "sd": _clean(float(p.std(ddof=1))) if len(p) > 1 else None,
            "max": _clean(float(p.max())) if len(p) else None,
            "share_p_ge_1": float(np.count_nonzero(p_all >= 1.0) / len(p_all)) if len(p_all) else None,
        },
        "completion_by_hour_length": {
            "length_edges_hours": list(completion.length_edges_hours),
            "probability": [[_clean(v) for v in row] for row in completion.probability.T.tolist()],
            "started": completion.started.T.tolist(),
        },
    }
