"""The workflow copies a policy's replay submits: one folder per arrival.

For arrival i, ``<policy dir>/wf<i>/figure1.dag`` is the Figure-1 workflow
exported with tasks of the plan's compressed length (``sleep``; or
``montage.dag``, the 25-task Montage, :meth:`ReplayPlan.dag_workflow`), and
``run.dag`` its copy instrumented with the policy under test
(:func:`condor_rlrep.instrument.instrument`; a ``model:R`` with its prior
scaled by the compression, :func:`~condor_rlrep.replay.plan.compressed_policy`;
``idle-`` policies and ``model:R`` ranking machines by the trace's idle
time, the pool's ``TraceKeyboardIdle``, not the host's ``KeyboardIdle``),
all of a policy's copies
sharing one agent store, so a learning policy learns across the stream as it
would on a campus pool. Written before the pool starts: the instrument
cost is no part of the replay's timing.
"""

from __future__ import annotations

import re
from pathlib import Path

from condor_rlrep.dag.export import export_dagman
from condor_rlrep.instrument import InstrumentOptions, instrument
from condor_rlrep.policyspec import live_spec
from condor_rlrep.replay.plan import ReplayPlan, compressed_policy
from condor_rlrep.replay.poolconfig import IDLE_ATTRIBUTE

__all__ = ["policy_slug", "workflow_dags", "prepare_workflows", "RUN_DAG"]

RUN_DAG = "run.dag"


def policy_slug(policy: str) -> str:
    """A folder name for a policy (``fixed:2`` → ``fixed-2``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", policy).strip("-") or "policy"


def workflow_dags(plan: ReplayPlan, folder: Path) -> list[Path]:
    return [folder / f"wf{i + 1:04d}" / RUN_DAG for i in range(len(plan.arrivals))]


def prepare_workflows(plan: ReplayPlan, folder: Path, policy: str, *, phi: float,
                      dagman_version: tuple[int, int, int] | None = None, hooks_bin: str | None = None,
                      watts: float | None = None, environ: dict[str, str] | None = None) -> list[Path]:
    """Export and instrument every arrival's workflow for ``policy`` (skipping copies already written)."""
    # a fixed policy learns nothing: no store (instrument creates none for it either)
    store = None if live_spec(policy).fixed_replicas is not None else str(folder / "agent.sqlite")
    dags = workflow_dags(plan, folder)
    for dag in dags:
        if dag.exists():
            continue
        dag.parent.mkdir(parents=True, exist_ok=True)
        plain = export_dagman(plan.dag_workflow(), dag.parent, name=plan.workflow)
        instrument(str(plain), str(dag), InstrumentOptions(
            policy=compressed_policy(policy, plan.compression), phi=phi, store=store, dagman_version=dagman_version, hooks_bin=hooks_bin,
            power_default_watts=watts, environ=environ, idle_attribute=IDLE_ATTRIBUTE,
        ))
    return dags
