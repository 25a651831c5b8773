"""condor-rlrep: learned task replication for HTCondor DAGMan workflows.

The Python API (documented in :mod:`condor_rlrep.api`, toured in
``examples/api_tour.py``)::

    import condor_rlrep as rl

    wf = rl.load_workflow("my.dag")               # DAG, DAX or WfFormat
    p = rl.plan(wf, phi=0.5)                      # CR(W), critical path, deadline, φ′
    trace = rl.load_trace(preset="newcastle-2010", days=7)
    result = rl.simulate(trace, "rl:3", phi=0.5)  # result.summary(), result.agent
    rl.run_status("run/my.rlrep.dag")             # where a live run stands
    rl.run_report("run/my.rlrep.dag")             # what its replicas did
    rl.sweep_results("results/quick")             # a sweep's finished runs
    with rl.open_store() as store:                # the agent the hooks use
        agent = store.load_agent()

The package configures no logging (a library must not) and, unlike most
libraries, does not even import :mod:`logging` here: the DAGMan hooks start
thousands of times per workflow and pay for every module they import, so
the names above are imported on first use (:pep:`562`).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = [
    "__version__", "load_workflow", "plan", "load_trace", "simulate", "run_status", "run_report", "sweep_results",
    "open_store", "instrument", "RlrepError", "InputError",
]

_ERRORS = ("RlrepError", "InputError")


def __getattr__(name: str) -> Any:
    if name in _ERRORS:
        from condor_rlrep import errors

        return getattr(errors, name)
    if name in __all__:
        from condor_rlrep import api

        return getattr(api, name)
    raise AttributeError(f"module 'condor_rlrep' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
