"""One simulation run: :func:`simulate` (config in, result out) and its CSVs.

``simulate(trace, SimConfig(...)) -> SimResult`` is the single entry point
the CLI (``condor-rlrep simulate`` / ``train``) and the sweeps build on. The
result holds everything the paper's Table 1 and Figures 2–6 need: p(W) per
workflow, the per-decision log (state, action, reward, energy), energy and
eviction totals, and the Figure 2b completion table.

Randomness: ``seed`` feeds one :class:`numpy.random.SeedSequence`, spawned
into independent streams for (1) which trace jobs become workflows and of
which template, (2) the engine (machine choice), (3) the agent's
exploration. Stream (1) does not depend on the policy, so every policy of
a sweep with the same seed sees the same modified trace (as in §5).
"""

from __future__ import annotations

import gc
import json
import logging
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from condor_rlrep.criticality import DEFAULT_PHI
from condor_rlrep.energy import PowerTable
from condor_rlrep.errors import InputError
from condor_rlrep.outcome import DEFAULT_FAILURE_REWARD, task_deadline
from condor_rlrep.sim.clock import LocalClock
from condor_rlrep.sim.engine import Engine, EngineConfig
from condor_rlrep.sim.metrics import (
    J_PER_KWH,
    P_GRID,
    CompletionTable,
    completion_table,
    p_of_workflow,
    within_counts,
)
from condor_rlrep.policyspec import parse_spec
from condor_rlrep.sim.policies import build_policy, depends_on_phi
from condor_rlrep.sim.trace import Trace
from condor_rlrep.sim.runner import WorkflowRunner
from condor_rlrep.sim.workflows import inject, load_template

__all__ = ["SimConfig", "SimResult", "simulate", "result_for_phi", "write_outputs", "load_trace"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SimConfig:
    """Everything one run depends on besides the trace."""

    workflows: tuple[str, ...] = ("figure1",)
    """Specs ``NAME_OR_FILE[@SCALE][:WEIGHT]``; built-ins ``figure1``, ``montage``."""
    fraction: float = 0.10
    """w: share of trace jobs replaced by workflows."""
    policy: str = "single"
    """single, fixed:K, rl:R, rl-ucb1:R, rl-thompson:R, oracle:R."""
    phi: float = DEFAULT_PHI
    """The users' contingency φ (deadline d = (φ+1)·CR(W) + s(W))."""
    phi_mode: str = "balanced"
    seed: int = 0
    negotiation_interval: float = 0.0
    machine_choice: str = "random"
    reboot_hour: float | None = 3.0
    owner_idle: float = 0.0
    """Seconds after the last logout before a machine takes jobs again."""
    days: float | None = None
    """Simulate only the first ``days`` of the trace (default: all of it)."""
    failure_reward: float = DEFAULT_FAILURE_REWARD
    default_estimate: float | None = None
    p_grid: tuple[float, ...] = P_GRID
    # Agent parameters (rl policies); None keeps AgentConfig's default.
    strategy: str | None = None
    schedule: str | None = None
    epsilon_high: float | None = None
    epsilon_low: float | None = None
    switch_after: int | None = None
    n_bins: int | None = None
    p_max: float | None = None

    def __post_init__(self) -> None:
        if not self.workflows and self.fraction > 0:
            raise InputError("a workflow fraction > 0 needs at least one workflow")
        if not 0.0 <= self.fraction <= 1.0:
            raise InputError(f"workflow fraction must lie in [0, 1], got {self.fraction!r}")
        if not (math.isfinite(self.phi) and self.phi > -1):
            raise InputError(f"phi must be a finite number > -1, got {self.phi!r}")
        if self.days is not None and not self.days > 0:
            raise InputError(f"days must be > 0, got {self.days!r}")

    def agent_config(self, timezone: str) -> Any:
        from condor_rlrep.agent.config import AgentConfig

        overrides = {
            k: getattr(self, k)
            for k in ("strategy", "schedule", "epsilon_high", "epsilon_low", "switch_after", "n_bins", "p_max")
            if getattr(self, k) is not None
        }
        return AgentConfig(timezone=timezone, failure_reward=self.failure_reward, **overrides)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["workflows"] = list(self.workflows)
        data["p_grid"] = list(self.p_grid)
        return data


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
        failure_reward=config.failure_reward,
    )
    engine = Engine(
        trace,
        EngineConfig(
            negotiation_interval=config.negotiation_interval,
            machine_choice=config.machine_choice,  # type: ignore[arg-type]
            reboot_hour=config.reboot_hour,
            until=until,
            owner_idle=config.owner_idle,
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
        result = _collect(trace, config, templates, runner, engine, stats, until)
    finally:
        if was_enabled:
            gc.enable()
    result.extra["setup_seconds"] = wall1 - wall0
    result.extra["run_seconds"] = wall2 - wall1
    result.extra["collect_seconds"] = time.perf_counter() - wall2
    result.agent = getattr(policy, "agent", None)
    result.wall_seconds = time.perf_counter() - wall0
    return result


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


def _collect(trace, config, templates, runner, engine, stats, until) -> SimResult:
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


# -- CSV output ------------------------------------------------------------------

def _fmt(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return "" if math.isnan(v) else repr(v)
    return str(value)


def _csv(path: Path, header: list[str], columns: list[Any]) -> None:
    rows = [",".join(header)]
    lists = [c.tolist() if isinstance(c, np.ndarray) else list(c) for c in columns]
    for row in zip(*lists):
        rows.append(",".join(_fmt(v) for v in row))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def write_outputs(result: SimResult, out_dir: str | os.PathLike[str]) -> Path:
    """Write ``workflows.csv``, ``tasks.csv``, ``completion.csv`` and
    ``summary.json`` into ``out_dir``, all or nothing: the files are written
    into a temporary folder beside it that is then renamed into place."""
    out = Path(out_dir)
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    try:
        names = result.template_names
        _csv(
            tmp / "workflows.csv",
            ["workflow", "template", "trace_job", "start", "finish", "critical_path", "deadline", "p",
             "replicas", "evictions", "good_j", "bad_j"],
            [np.arange(result.workflows), [names[t] for t in result.wf_template.tolist()], result.wf_trace_job,
             result.wf_start, result.wf_finish, result.wf_critical_path, result.wf_deadline, result.wf_p,
             result.wf_replicas, result.wf_evictions, result.wf_good_j, result.wf_bad_j],
        )
        t = result.tasks
        tpl_of_wf = result.wf_template.tolist()
        node_names = [result.task_names[tpl_of_wf[w]][n] for w, n in zip(t["workflow"].tolist(), t["node"].tolist())]
        _csv(
            tmp / "tasks.csv",
            ["workflow", "node", "submit", "hour", "phi_prime", "state", "replicas", "explored", "finish",
             "success", "good_j", "bad_j", "sigma", "reward", "invocations", "evictions"],
            [t["workflow"], node_names, t["submit"], t["hour"], t["phi_prime"], t["state"], t["replicas"],
             t["explored"], t["finish"], t["success"], t["good_j"], t["bad_j"], t["sigma"], t["reward"],
             t["invocations"], t["evictions"]],
        )
        c = result.completion
        hours, bins = np.nonzero(c.started >= 0)
        edges = c.length_edges_hours
        _csv(
            tmp / "completion.csv",
            ["submit_hour", "length_from_h", "length_to_h", "started", "completed_first"],
            [hours, [edges[b] for b in bins.tolist()], [edges[b + 1] for b in bins.tolist()],
             c.started[hours, bins], c.completed_first[hours, bins]],
        )
        summary = result.summary()
        summary.pop("wall_seconds")  # keep the folder byte-identical for a seed
        summary.pop("events_per_second")
        summary["config"] = result.config.to_dict()
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _swap_into_place(tmp: Path, out: Path) -> None:
    if not out.exists():
        os.replace(tmp, out)
        return
    if not out.is_dir():
        raise InputError("output path exists and is not a folder", path=str(out))
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.resolve().parent))
    os.rmdir(old)
    os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)

