"""The Python API: what the commands do, for notebooks and scripts.

Every name here is also importable from the package itself
(``from condor_rlrep import load_workflow``); the package imports this
module only when one of them is first used, so the DAGMan hooks, which
import the package, pay nothing for it. Errors are the command line's:
:class:`~condor_rlrep.errors.RlrepError` and its kinds, with one clear
message naming the file, line or value at fault.

A tour: ``examples/api_tour.py``.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = [
    "load_workflow", "plan", "load_trace", "simulate", "run_status", "run_report", "sweep_results", "open_store",
    "instrument",
]

PathLike = str | os.PathLike[str]


def load_workflow(path: PathLike) -> Any:
    """Read a DAGMan DAG, Pegasus DAX or WfCommons WfFormat file.

    Returns a :class:`condor_rlrep.dag.model.Workflow` (``.nodes``,
    ``.edges``, …); the format is detected from the file's content.

    >>> wf = load_workflow("examples/figure1/figure1.dag")
    >>> sorted(wf.nodes)[:3]
    ['A', 'B', 'C']
    """
    from condor_rlrep.dag.load import load_workflow as load

    return load(path)


def plan(workflow: Any, phi: float = 0.5, *, estimates: PathLike | None = None,
         default_estimate: float | None = None) -> Any:
    """The workflow's criticality plan, as ``condor-rlrep inspect`` prints it.

    ``workflow`` is a path or what :func:`load_workflow` returned;
    estimates come from the workflow (``VARS rlrep_estimate``, DAX/WfFormat
    runtimes), an ``estimates`` CSV/JSON file, else ``default_estimate``
    seconds. Returns a :class:`condor_rlrep.workflowplan.WorkflowPlan`:
    ``critical_path_seconds`` (CR(W)), ``critical_path`` (node names),
    ``deadline`` ((1+φ)·CR(W) from a start at 0), ``planned_phi_prime()``
    (φ′ of every node at its planned start).

    >>> p = plan("examples/figure1/figure1.dag", phi=0.5)
    >>> p.critical_path_seconds, p.deadline
    (7680.0, 11520.0)
    """
    from condor_rlrep.dag.graph import dependency_graph
    from condor_rlrep.estimates import read_estimates, resolve_estimates_with_origins
    from condor_rlrep.workflowplan import plan_workflow

    if isinstance(workflow, (str, os.PathLike)):
        workflow = load_workflow(workflow)
    sidecar = read_estimates(os.fspath(estimates)) if estimates is not None else None
    known, _ = resolve_estimates_with_origins(workflow, sidecar=sidecar, default_estimate=default_estimate)
    return plan_workflow(dependency_graph(workflow, known), phi)


def load_trace(path: PathLike | None = None, *, preset: str | None = None, days: float | None = None,
               seed: int = 2010) -> Any:
    """A cluster trace: a trace folder (``path``) or one generated from a
    preset (``newcastle-2010``, ``newcastle-2010-cal``, ``poisson``).

    Returns a :class:`condor_rlrep.sim.trace.Trace` (``.machine_count``,
    ``.job_count``, ``.length`` in seconds).
    """
    from condor_rlrep.sim.run import load_trace as load

    return load(trace_dir=path, preset=preset, days=days, seed=seed)


def simulate(trace: Any, policy: str = "single", *, workflows: tuple[str, ...] | list[str] = ("figure1",),
             fraction: float = 0.1, phi: float = 0.5, seed: int = 0, days: float | None = None,
             agent: Any = None, **options: Any) -> Any:
    """Simulate workflows on a trace, as ``condor-rlrep simulate`` does.

    ``trace`` is what :func:`load_trace` returned (or a trace folder);
    ``policy`` is ``single``, ``fixed:K``, ``rl:R``, ``oracle:R``, … (the
    ``--policy`` grammar); further keyword arguments are
    :class:`condor_rlrep.sim.config.SimConfig` fields (``criticality`` is
    taken for ``phi_mode``). Returns a :class:`condor_rlrep.sim.result.SimResult`:
    ``.summary()`` is the dictionary ``simulate --json`` prints, ``.agent``
    the agent an ``rl`` policy trained.
    """
    from condor_rlrep.sim.config import SimConfig
    from condor_rlrep.sim.run import simulate as run

    if isinstance(trace, (str, os.PathLike)):
        trace = load_trace(trace)
    if "criticality" in options:
        options["phi_mode"] = options.pop("criticality")
    config = SimConfig(workflows=tuple(workflows), fraction=fraction, policy=policy, phi=phi, seed=seed, days=days,
                       **options)
    return run(trace, config, agent=agent)


def run_status(dag: PathLike) -> Any:
    """Where every node of an instrumented run stands (``condor-rlrep status``).

    Returns a :class:`condor_rlrep.runreport.status.RunStatus`; ``.to_json()``
    is what ``status --json`` prints.
    """
    from condor_rlrep.runreport.load import RunReader
    from condor_rlrep.runreport.status import run_status as judge

    return judge(RunReader(os.fspath(dag), use_checkpoint=False).read())


def run_report(dag: PathLike) -> list[Any]:
    """The report data of an instrumented run (``condor-rlrep report``), one
    :class:`condor_rlrep.runreport.report.RunReport` per run of the DAG (a
    rescue continues its run): ``makespan_s``, ``critical_path_s``,
    ``deadline``, ``p_w``, ``nodes`` (per attempt: replicas, winner, energy,
    σ, reward), ``policy`` (the agent's estimates in the states visited).
    """
    from condor_rlrep.runreport.load import RunReader
    from condor_rlrep.runreport.report import build_reports
    from condor_rlrep.store.location import open_store as opened

    data = RunReader(os.fspath(dag), use_checkpoint=False).read()
    store = None
    if data.files.store:
        try:
            store = opened(data.files.store)
        except Exception:  # noqa: BLE001 - a missing store leaves the report without rewards, as the CLI does
            store = None
    try:
        return build_reports(data, store=store)
    finally:
        if store is not None:
            store.close()


def sweep_results(folder: PathLike) -> Any:
    """The finished runs of a sweep folder (``condor-rlrep sweep … -o
    FOLDER``) as a :class:`condor_rlrep.sweepreport.data.ResultTable`
    (``.records``: one per run, keyed by (workflows, policy, φ))."""
    from condor_rlrep.sweep.store import SweepDir
    from condor_rlrep.sweepreport.data import ResultTable

    return ResultTable(SweepDir(os.fspath(folder)).load_results())


def open_store(spec: PathLike | None = None) -> Any:
    """Open an agent store: a SQLite file or a ``postgresql://`` URL; None
    finds it as the commands do (``$CONDOR_RLREP_STORE``, your config file,
    HTCondor's ``RLREP_STORE``, the XDG default). Use it in a ``with``
    block; ``.load_agent()`` gives the :class:`condor_rlrep.agent.bandit.Agent`
    (``.config``, ``.greedy(state)``, …)."""
    from condor_rlrep.store.location import open_store as opened, resolve_store

    return opened(resolve_store(spec))


def instrument(dag: PathLike, out: PathLike, **options: Any) -> Any:
    """Write the instrumented copy of ``dag`` to ``out`` (``condor-rlrep
    instrument``); ``options`` are :class:`condor_rlrep.instrument.InstrumentOptions`
    fields (``phi``, ``store``, ``policy``, ``max_replicas``, …); without
    ``policy``, ``model:R`` on a new store and the store's ``agent`` once it
    has learnt (``.policy`` and ``.policy_note`` of the result say which and
    why). Returns an :class:`condor_rlrep.instrument.InstrumentResult`."""
    from condor_rlrep.instrument import InstrumentOptions, instrument as write

    return write(os.fspath(dag), os.fspath(out), InstrumentOptions(**options))
