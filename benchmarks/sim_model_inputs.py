"""What the simulator benchmarks' reference models share with ours: the
inputs of one run, prepared exactly as :func:`condor_rlrep.sim.run.simulate`
prepares them, and the outputs they are compared on.

The reference models (``sim_heapq_model.py``, ``sim_simpy_model.py``)
re-implement the cluster and the workflow layer — machines, logins that
evict, the nightly reboot, the queue, replicas with first-finish-wins, the
ε-greedy agent with its reward — from scratch. They take from the package
only the model's *inputs*: the trace columns, which trace jobs become
workflows (:func:`~condor_rlrep.sim.workflows.inject`), the planned workflow
templates (task order, run times, estimates and the φ′ function of the
criticality module, which the live hooks also call) and the local clock.
Randomness comes from the same seed spawn as ours, so a faithful model
makes the same choices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from condor_rlrep.agent.config import AgentConfig
from condor_rlrep.policyspec import parse_spec
from condor_rlrep.sim.clock import LocalClock
from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.metrics import P_GRID, p_of_workflow, within_counts
from condor_rlrep.sim.trace import Trace
from condor_rlrep.sim.workflows import WorkflowTemplate, inject, load_template

__all__ = ["ModelInput", "ModelOutput", "model_input"]


@dataclass
class ModelInput:
    trace: Trace
    until: float
    replaced: np.ndarray  # bool[J]
    which: np.ndarray  # template per trace job, -1 where kept
    templates: list[WorkflowTemplate]
    clock: LocalClock
    reboots: np.ndarray
    """Simulation times of the nightly reboots before ``until``."""
    replicas: int
    """single: 1, fixed:K: K, rl:R: at most R."""
    learn: bool
    """rl (ε-greedy, initially-high schedule) or a fixed count."""
    agent: AgentConfig
    engine_seed: np.random.SeedSequence
    agent_seed: np.random.SeedSequence
    failure_reward: float


@dataclass
class ModelOutput:
    """What every model reports; :meth:`same_as` compares two."""

    events: int
    """Model events: logins, logouts, job and workflow arrivals, reboots,
    job completions (not superseded ones)."""
    stale_pops: int
    """Completions popped after their run had been evicted or removed."""
    replica_submissions: int
    tasks: int
    workflows: int
    completed: int
    within: dict[float, int]
    good_j: float
    bad_j: float
    background_j: float
    evictions: int
    extra: dict[str, Any] = field(default_factory=dict)

    def key(self) -> tuple[Any, ...]:
        return (self.events, self.replica_submissions, self.tasks, self.workflows, self.completed,
                tuple(self.within.items()), self.good_j, self.bad_j, self.background_j, self.evictions)


def model_input(trace: Trace, config: SimConfig) -> ModelInput:
    """The inputs of ``simulate(trace, config)`` for a reference model (policies
    single, fixed:K and rl:R with the default engine settings)."""
    if config.negotiation_interval or config.owner_idle or config.machine_choice != "random":
        raise ValueError("the reference models cover the default engine settings only")
    until = trace.length if config.days is None else min(trace.length, config.days * 86400.0)
    inject_seq, engine_seq, agent_seq = np.random.SeedSequence(config.seed).spawn(3)
    templates, weights = [], []
    for spec in config.workflows:
        tpl, weight = load_template(spec, phi=config.phi, phi_mode=config.phi_mode)
        templates.append(tpl)
        weights.append(weight)
    in_span = int(np.searchsorted(trace.job_submit, until, side="left"))
    mask = np.zeros(trace.job_count, dtype=bool)
    which = np.full(trace.job_count, -1, dtype=np.int64)
    if templates and in_span:
        m, w = inject(in_span, config.fraction, weights, np.random.default_rng(inject_seq))
        mask[:in_span] = m
        which[:in_span] = w
    spec = parse_spec(config.policy)
    # the reference models re-implement single, fixed:K and the ε-greedy rl:R only
    if spec.kind not in ("single", "fixed", "rl") or spec.idle or spec.strategy is not None:
        raise ValueError(f"the reference models know single, fixed:K and rl:R, not {config.policy!r}")
    kind, count = spec.kind, spec.count
    clock = LocalClock(trace.start, max(until, trace.length))
    reboots = clock.daily(config.reboot_hour, until) if config.reboot_hour is not None else np.zeros(0)
    agent = AgentConfig(max_replicas=int(count or 1))
    if config.epsilon_high is not None or config.epsilon_low is not None:
        raise ValueError("the reference models use the default ε")
    return ModelInput(
        trace=trace, until=float(until), replaced=mask, which=which, templates=templates, clock=clock,
        reboots=reboots, replicas=int(count or 1), learn=kind == "rl", agent=agent,
        engine_seed=engine_seq, agent_seed=agent_seq, failure_reward=config.failure_reward,
    )


def finish_output(inp: ModelInput, wf_template: list[int], wf_start: list[float], wf_finish: list[float],
                  **counts: Any) -> ModelOutput:
    """Reduce per-workflow times the way ours does (eq. 1, within-P counts)."""
    tpl = np.asarray(wf_template, dtype=np.int64)
    cr = np.asarray([t.critical_path_seconds for t in inp.templates] or [0.0])
    start = np.asarray(wf_start, dtype=np.float64)
    finish = np.asarray(wf_finish, dtype=np.float64)
    p = p_of_workflow(start, finish, cr[tpl] if len(tpl) else np.zeros(0))
    return ModelOutput(
        workflows=len(start), completed=int(np.count_nonzero(~np.isnan(finish))), within=within_counts(p, P_GRID),
        **counts,
    )


def task_deadline(submit: float, phi_prime: float, estimate: float) -> float:
    """``s_t + max(0, 1+φ′)·e_t`` (as condor_rlrep.outcome.task_deadline)."""
    if estimate == 0.0:
        return submit
    return submit + max(0.0, 1.0 + phi_prime) * estimate


def phi_edges(config: AgentConfig) -> list[float]:
    """Upper edges of the φ′ bins (as condor_rlrep.agent.state.StateSpace)."""
    n = config.n_bins
    edges = [config.p_max * k / n for k in range(n + 1)]
    edges[-1] = config.p_max
    return edges


INF = math.inf
