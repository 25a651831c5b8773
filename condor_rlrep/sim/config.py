"""What one simulation run depends on besides the trace: :class:`SimConfig`.

Frozen and comparable: a sweep groups runs whose configs differ in φ alone
(:mod:`condor_rlrep.sweep.execute`), and ``to_dict`` is the config as a
run's ``summary.json`` records it. Values are checked when the config is
made, so a bad one fails before any trace is read.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from condor_rlrep.criticality import DEFAULT_PHI
from condor_rlrep.errors import InputError
from condor_rlrep.outcome import DEFAULT_FAILURE_REWARD
from condor_rlrep.sim.metrics import P_GRID

__all__ = ["SimConfig"]


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
    dagman_latency: float = 0.0
    """Seconds between a task becoming ready (arrival or last parent done)
    and its submission: DAGMan's per-level turn (docs/simulator.md). 0: at once."""
    dagman_latency_samples: tuple[float, ...] = ()
    """When given, each task's latency is one of these seconds drawn at
    random (a random stream of its own) instead of ``dagman_latency``: a
    measured distribution, whose tail a mean would spread over every task."""
    dagman_start_samples: tuple[float, ...] = ()
    """When given (as many as ``dagman_latency_samples``, each at most its
    latency sample), the part of the drawn latency that comes after the
    decision: live, the PRE hook decides, and the replicas then wait to be
    matched and started. The task's φ′ is taken that much before its
    submission. Empty: the decision is at submission, as before."""
    latency_workflows: tuple[tuple[float, tuple[tuple[str, float, float, float], ...]], ...] = ()
    """Per-node delays measured on live workflows, one entry per workflow:
    its arrival (seconds on the trace's clock) and, per node, ``(name,
    latency, after, run_excess)``: the node's DAGMan latency (ready to
    start of its first run), the part of it after the decision (as
    ``dagman_start_samples``), and how many seconds longer than its task
    its winning run took. When given, every simulated workflow takes the
    delays of one of these — drawn among the ``latency_neighbours`` that
    arrived nearest to it — node for node (a node the measured workflow
    lacks takes one of its other nodes' at random), and every replica of
    a task runs its run excess longer: live, slow latencies come in
    periods (a busy startd, slots short), so a workflow's delays belong
    together and to their time; drawn each on its own they spread the
    slow tail over every workflow. Not with ``dagman_latency_samples``."""
    latency_neighbours: int = 1
    """How many measured workflows nearest in arrival a simulated workflow draws its delays from (≥ 1)."""
    slot_turnaround: float = 0.0
    """Seconds a machine freed by removing a job (a losing replica) waits
    before it is matched again (docs/simulator.md). 0: at once."""
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
        if not (math.isfinite(self.dagman_latency) and self.dagman_latency >= 0):
            raise InputError(f"DAGMan latency must be a finite number of seconds >= 0, got {self.dagman_latency!r}")
        if not all(math.isfinite(v) and v >= 0 for v in self.dagman_latency_samples):
            raise InputError("DAGMan latency samples must be finite numbers of seconds >= 0")
        if self.dagman_start_samples:
            if len(self.dagman_start_samples) != len(self.dagman_latency_samples):
                raise InputError(f"{len(self.dagman_start_samples)} DAGMan start samples for "
                                 f"{len(self.dagman_latency_samples)} latency samples: one per latency sample")
            if not all(math.isfinite(v) and 0 <= v <= t
                       for v, t in zip(self.dagman_start_samples, self.dagman_latency_samples)):
                raise InputError("each DAGMan start sample must be a number of seconds between 0 and its "
                                 "latency sample")
        if self.latency_workflows:
            _check_latency_workflows(self.latency_workflows, self.latency_neighbours)
            if self.dagman_latency_samples:
                raise InputError("give either DAGMan latency samples or measured latency workflows, not both")
        if not (math.isfinite(self.slot_turnaround) and self.slot_turnaround >= 0):
            raise InputError(f"slot turnaround must be a finite number of seconds >= 0, got {self.slot_turnaround!r}")
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
        if not self.dagman_latency:
            # runs without the knob record what they recorded before it existed
            del data["dagman_latency"]
        if not self.slot_turnaround:
            del data["slot_turnaround"]
        if not self.dagman_latency_samples:
            del data["dagman_latency_samples"]
        else:
            data["dagman_latency_samples"] = list(self.dagman_latency_samples)
        if not self.latency_workflows:
            # off: the run records what it recorded before the knob existed
            del data["latency_workflows"], data["latency_neighbours"]
        else:
            data["latency_workflows"] = [[arrival, [list(node) for node in nodes]]
                                         for arrival, nodes in self.latency_workflows]
        if not self.dagman_start_samples:
            del data["dagman_start_samples"]
        else:
            data["dagman_start_samples"] = list(self.dagman_start_samples)
        data["workflows"] = list(self.workflows)
        data["p_grid"] = list(self.p_grid)
        return data


def _check_latency_workflows(workflows: Any, neighbours: Any) -> None:
    if isinstance(neighbours, bool) or not isinstance(neighbours, int) or neighbours < 1:
        raise InputError(f"latency neighbours must be a whole number >= 1, got {neighbours!r}")
    for k, (arrival, nodes) in enumerate(workflows):
        if not math.isfinite(arrival):
            raise InputError(f"measured latency workflow {k}: arrival must be a finite number of seconds, "
                             f"got {arrival!r}")
        if not nodes:
            raise InputError(f"measured latency workflow {k}: no node")
        for name, latency, after, excess in nodes:
            if not (math.isfinite(latency) and latency >= 0 and math.isfinite(after) and 0 <= after <= latency
                    and math.isfinite(excess) and excess >= 0):
                raise InputError(f"measured latency workflow {k}, node {name!r}: latency {latency!r} s must be "
                                 f">= 0, its part after the decision {after!r} s between 0 and it, and the run "
                                 f"excess {excess!r} s >= 0")
