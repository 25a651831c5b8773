"""What one simulation run produced: :class:`SimResult`, built from the run.

The result holds everything the paper's Table 1 and Figures 2–6 need: p(W)
per workflow, the per-decision log (state, action, reward, energy), energy
and eviction totals, and the Figure 2b completion table. :func:`collect`
builds it from the engine and runner after a run;
:func:`result_for_phi` re-judges it at another contingency φ for the
policies whose run does not look at φ (a sweep simulates those once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from condor_rlrep.outcome import task_deadline
from condor_rlrep.sim.config import SimConfig
from condor_rlrep.sim.metrics import J_PER_KWH, CompletionTable, completion_table, p_of_workflow, within_counts
from condor_rlrep.sim.policies import depends_on_phi
from condor_rlrep.sim.workflows import load_template

__all__ = ["SimResult", "collect", "result_for_phi"]


@dataclass
class SimResult:
    """What one run produced. Arrays are numpy; times are seconds from the
    trace start; energies in joules unless the name says kWh."""

    config: SimConfig
    trace_source: str
    machines: int
    simulated_seconds: float
    template_names: list[str]
    # Per workflow instance
    wf_template: np.ndarray
    wf_trace_job: np.ndarray
    wf_start: np.ndarray
    wf_finish: np.ndarray  # NaN: not completed by the end
    wf_critical_path: np.ndarray
    wf_deadline: np.ndarray
    wf_p: np.ndarray  # eq. 1; NaN: not completed
    wf_good_j: np.ndarray
    wf_bad_j: np.ndarray
    wf_replicas: np.ndarray
    wf_evictions: np.ndarray
    # Per decision (task submission)
    tasks: dict[str, np.ndarray]
    task_names: list[list[str]]
    """task_names[template][node index]."""
    within: dict[float, int]
    energy_kwh: dict[str, float]
    evictions: dict[str, int]
    completion: CompletionTable
    events: int
    wall_seconds: float
    agent: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def workflows(self) -> int:
        return int(len(self.wf_start))

    @property
    def completed(self) -> int:
        return int(np.count_nonzero(~np.isnan(self.wf_finish)))

    def summary(self) -> dict[str, Any]:
        """The JSON summary of ``simulate --json``."""
        p = self.wf_p[~np.isnan(self.wf_p)]
        return {
            "policy": self.config.policy,
            "phi": self.config.phi,
            "workflows": self.workflows,
            "completed": self.completed,
            "within": {f"{k:g}": v for k, v in self.within.items()},
            "p_mean": float(p.mean()) if len(p) else None,
            "p_sd": float(p.std(ddof=1)) if len(p) > 1 else None,
            "p_max": float(p.max()) if len(p) else None,
            "tasks": int(len(self.tasks["submit"])),
            "task_success": int(np.count_nonzero(self.tasks["success"])),
            "replicas": int(self.tasks["replicas"].sum()) if len(self.tasks["replicas"]) else 0,
            "energy_kwh": dict(self.energy_kwh),
            "evictions": dict(self.evictions),
            "events": self.events,
            "events_per_second": self.events / self.wall_seconds if self.wall_seconds > 0 else None,
            "simulated_days": self.simulated_seconds / 86400.0,
            "machines": self.machines,
            "trace": self.trace_source,
            "seed": self.config.seed,
            "wall_seconds": self.wall_seconds,
        }


def collect(trace, config, templates, runner, engine, stats, until) -> SimResult:
    """The result of a finished run, from the engine's job columns and the
    runner's decision log (released as they are read); ``wall_seconds`` and
    ``agent`` are the caller's to fill in."""
    n = engine.njobs
    # The Figure 2b table first, then the engine's job columns can go.
    jsubmit = np.frombuffer(engine.jsubmit, dtype=np.float64, count=n)
    table = completion_table(engine.clock.hours(jsubmit), np.frombuffer(engine.jdur, dtype=np.float64, count=n),
                             engine.jfirst)
    del jsubmit
    tasks = runner.take_columns()
    n_wf = len(runner.wf_start)
    wf_template = np.asarray(runner.wf_template, dtype=np.int64)
    cr_of = np.asarray([t.critical_path_seconds for t in templates] or [0.0])
    dl_of = np.asarray([t.deadline_offset for t in templates] or [0.0])
    wf_start = np.asarray(runner.wf_start, dtype=np.float64)
    wf_finish = np.asarray(runner.wf_finish, dtype=np.float64)
    wf_cr = cr_of[wf_template] if n_wf else np.zeros(0)
    wf_p = p_of_workflow(wf_start, wf_finish, wf_cr)

    def per_wf(values: np.ndarray) -> np.ndarray:
        return np.bincount(tasks["workflow"], weights=values, minlength=n_wf) if n_wf else np.zeros(0)

    good_j = float(tasks["good_j"].sum())
    bad_j = float(tasks["bad_j"].sum())
    energy = {
        "good": good_j / J_PER_KWH,
        "bad": bad_j / J_PER_KWH,
        "total": (good_j + bad_j) / J_PER_KWH,
        "background": stats.background_energy_j / J_PER_KWH,
        "all": (good_j + bad_j + stats.background_energy_j) / J_PER_KWH,
    }
    evictions = {
        "workflow": stats.evictions_workflow,
        "background": stats.evictions_background,
        "reboot_workflow": stats.reboot_kills_workflow,
        "reboot_background": stats.reboot_kills_background,
        "total": stats.evictions_workflow + stats.evictions_background
        + stats.reboot_kills_workflow + stats.reboot_kills_background,
    }
    return SimResult(
        config=config,
        trace_source=trace.source,
        machines=trace.machine_count,
        simulated_seconds=until,
        template_names=[t.name for t in templates],
        wf_template=wf_template,
        wf_trace_job=np.asarray(runner.wf_trace_job, dtype=np.int64),
        wf_start=wf_start,
        wf_finish=wf_finish,
        wf_critical_path=wf_cr,
        wf_deadline=wf_start + (dl_of[wf_template] if n_wf else 0.0),
        wf_p=wf_p,
        wf_good_j=per_wf(tasks["good_j"]),
        wf_bad_j=per_wf(tasks["bad_j"]),
        wf_replicas=per_wf(tasks["replicas"].astype(np.float64)).astype(np.int64),
        wf_evictions=per_wf(tasks["evictions"].astype(np.float64)).astype(np.int64),
        tasks=tasks,
        task_names=[list(t.tasks) for t in templates],
        within=within_counts(wf_p, config.p_grid),
        energy_kwh=energy,
        evictions=evictions,
        completion=table,
        events=stats.events,
        wall_seconds=0.0,
        extra={"workflow_invocation_energy_j": stats.workflow_energy_j, "background_finished": stats.background_finished,
               "stale_pops": stats.stale_pops},
    )


def result_for_phi(result: SimResult, phi: float) -> SimResult:
    """The result ``simulate`` gives for the same run at contingency ``phi``,
    without simulating again — for policies whose run does not depend on φ
    (:func:`~condor_rlrep.sim.policies.depends_on_phi`).

    Only the judging moves with φ: each task's ``φ′`` at its (unchanged)
    submission, hence its deadline, success and reward, and each workflow's
    deadline. They are recomputed by the same functions the run uses (the
    plan's criticality, :func:`~condor_rlrep.outcome.task_deadline`, the
    reward ``1 − σ`` or the failure reward), so the arrays are bit for bit
    those of a run at ``phi``.
    """
    config = result.config
    if depends_on_phi(config.policy):
        raise ValueError(f"policy {config.policy!r} depends on phi: simulate it at phi={phi!r}")
    new_config = replace(config, phi=phi)
    if phi == config.phi:
        return replace(result, config=new_config)
    templates = [
        load_template(spec, phi=phi, phi_mode=config.phi_mode, default_estimate=config.default_estimate)[0]
        for spec in config.workflows
    ]
    t = result.tasks
    wf = t["workflow"].tolist()
    node = t["node"].tolist()
    submit = t["submit"].tolist()
    finish = t["finish"].tolist()
    sigma = t["sigma"].tolist()
    jobless = (t["replicas"] == 0).tolist()
    tpl_of = [templates[i] for i in result.wf_template.tolist()]
    wf_start = result.wf_start.tolist()
    failure = config.failure_reward
    phi_prime: list[float] = []
    success: list[bool] = []
    reward: list[float] = []
    for w, i, s_t, f, sg, empty in zip(wf, node, submit, finish, sigma, jobless):
        tpl = tpl_of[w]
        value = tpl.criticality(tpl.tasks[i], s_t - wf_start[w])
        phi_prime.append(value)
        if empty:
            success.append(True)
            reward.append(math.nan)
        elif f != f:  # not completed by the end: no outcome
            success.append(False)
            reward.append(math.nan)
        else:
            ok = f <= task_deadline(s_t, value, tpl.estimate[i])
            success.append(ok)
            reward.append(1.0 - sg if ok else failure)
    tasks = dict(t)
    tasks["phi_prime"] = np.asarray(phi_prime, dtype=np.float64)
    tasks["success"] = np.asarray(success, dtype=bool)
    tasks["reward"] = np.asarray(reward, dtype=np.float64)
    dl_of = np.asarray([tpl.deadline_offset for tpl in templates] or [0.0])
    deadline = result.wf_start + (dl_of[result.wf_template] if result.workflows else 0.0)
    return replace(result, config=new_config, tasks=tasks, wf_deadline=deadline, extra=dict(result.extra))
