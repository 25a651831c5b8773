"""One simulation run: :func:`simulate`, a config and a trace in, a result out.

``simulate(trace, SimConfig(...)) -> SimResult`` is the single entry point
the CLI (``condor-rlrep simulate`` / ``train``) and the sweeps build on:
it picks the trace jobs that become workflows, builds the policy
(:mod:`condor_rlrep.sim.policy_registry`), the runner that enacts the workflows
(:mod:`condor_rlrep.sim.runner`) and the engine (:mod:`condor_rlrep.sim.engine`),
runs them and collects the :class:`~condor_rlrep.sim.result.SimResult`.
The config is :mod:`condor_rlrep.sim.config`'s; the result's files,
:mod:`condor_rlrep.sim.outputs`'.

Randomness: ``seed`` feeds one :class:`numpy.random.SeedSequence`, spawned
into independent streams for (1) which trace jobs become workflows and of
which template, (2) the engine (machine choice), (3) the agent's
exploration. Stream (1) does not depend on the policy, so every policy of
a sweep with the same seed sees the same modified trace (as in §5).
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from condor_rlrep.energy import PowerTable
from condor_rlrep.errors import InputError
from condor_rlrep.policyspec import parse_spec
from condor_rlrep.sim.clock import LocalClock
from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.engine import Engine, EngineConfig
from condor_rlrep.sim.policy_registry import build_policy
from condor_rlrep.sim.result import SimResult, collect
from condor_rlrep.sim.runner import WorkflowRunner
from condor_rlrep.sim.trace import Trace
from condor_rlrep.sim.workflows import inject, load_template

__all__ = ["simulate", "load_trace"]

log = logging.getLogger(__name__)


def load_trace(
    *, trace_dir: str | os.PathLike[str] | None = None, preset: str | None = None, days: float | None = None, seed: int = 0
) -> Trace:
    """A trace from a folder (``trace_dir``) or a generator preset."""
    if (trace_dir is None) == (preset is None):
        raise InputError("give exactly one of a trace folder or a preset")
    if trace_dir is not None:
        from condor_rlrep.sim.trace_io import read_trace

        return read_trace(trace_dir)
    from condor_rlrep.sim.generator import generate_trace

    kwargs: dict[str, Any] = {"seed": seed}
    if days is not None:
        kwargs["days"] = days
    return generate_trace(preset, **kwargs)


def simulate(
    trace: Trace,
    config: SimConfig,
    *,
    progress: Callable[[float], None] | None = None,
    agent: Any = None,
) -> SimResult:
    """Run ``config`` on ``trace``. ``agent``: continue with this agent (rl
    policies) instead of a fresh one; the result's ``agent`` is the one used.
    """
    from condor_rlrep.sim.trace_io import validate_trace

    wall0 = time.perf_counter()
    validate_trace(trace)  # raises TraceError (an InputError) naming the fault
    until = trace.length if config.days is None else min(trace.length, config.days * 86400.0)
    if until <= 0:
        raise InputError("the trace is empty (length 0)")
    seq = np.random.SeedSequence(config.seed)
    inject_seq, engine_seq, agent_seq = seq.spawn(3)
    zone = _zone_name(trace)
    specs = list(config.workflows)
    templates = []
    weights = []
    for spec in specs:
        tpl, weight = load_template(
            spec, phi=config.phi, phi_mode=config.phi_mode, default_estimate=config.default_estimate
        )
        templates.append(tpl)
        weights.append(weight)
    # Only jobs submitted within the simulated span can become workflows, so
    # that --days gives the same share w as a whole run.
    in_span = int(np.searchsorted(trace.job_submit, until, side="left"))
    mask = np.zeros(trace.job_count, dtype=bool)
    which = np.full(trace.job_count, -1, dtype=np.int64)
    if templates and in_span:
        m, w = inject(in_span, config.fraction, weights, np.random.default_rng(inject_seq))
        mask[:in_span] = m
        which[:in_span] = w
    spec = parse_spec(config.policy)
    policy = build_policy(
        spec,
        agent_config=config.agent_config(zone) if spec.kind == "rl" else None,
        rng=np.random.default_rng(agent_seq),
        agent=agent,
    )
    power = PowerTable(
        default_watts=float(np.mean(trace.active_watts)),
        hosts={name: float(w) for name, w in zip(trace.machine_names, trace.active_watts)},
    )
    clock = LocalClock(trace.start, max(until, trace.length))
    runner = getattr(policy, "runner_class", WorkflowRunner)(
        templates, which, policy, power, trace.machine_names, clock,
        failure_reward=config.failure_reward, dagman_latency=config.dagman_latency,
        latency_samples=config.dagman_latency_samples, start_samples=config.dagman_start_samples,
        # a fourth stream, spawned only when used: the first three stay those of every earlier run
        latency_rng=(np.random.default_rng(seq.spawn(1)[0])
                     if config.dagman_latency_samples or config.latency_workflows else None),
        latency_workflows=config.latency_workflows, latency_neighbours=config.latency_neighbours,
    )
    engine = Engine(
        trace,
        EngineConfig(
            negotiation_interval=config.negotiation_interval,
            machine_choice=config.machine_choice,  # type: ignore[arg-type]
            reboot_hour=config.reboot_hour,
            until=until,
            owner_idle=config.owner_idle,
            slot_turnaround=config.slot_turnaround,
        ),
        np.random.default_rng(engine_seq),
        replaced=mask,
        listener=runner,
        clock=clock,
    )
    runner.attach(engine)
    wall1 = time.perf_counter()
    # The run allocates millions of small tuples and lists and creates no
    # reference cycles; the cyclic collector would only rescan them over and
    # over (it took a third of the run time).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        stats = engine.run(progress)
        runner.close(until)
        wall2 = time.perf_counter()
        result = collect(trace, config, templates, runner, engine, stats, until)
    finally:
        if was_enabled:
            gc.enable()
    result.extra["setup_seconds"] = wall1 - wall0
    result.extra["run_seconds"] = wall2 - wall1
    result.extra["collect_seconds"] = time.perf_counter() - wall2
    result.agent = getattr(policy, "agent", None)
    result.wall_seconds = time.perf_counter() - wall0
    return result


def _zone_name(trace: Trace) -> str:
    key = getattr(trace.start.tzinfo, "key", None)
    if isinstance(key, str):
        return key
    off = trace.start.utcoffset()
    if off is None or off.total_seconds() == 0:
        return "UTC"
    # A fixed offset: the agent's hour of day is taken from the simulator's
    # clock anyway; the zone only labels the store.
    return "UTC"
