"""The outcome of one replication decision: success, energy, σ and reward.

This is the one place where the live POST hook and the simulator meet: both
describe what happened to a task's replicas as a list of :class:`Invocation`
and call :func:`evaluate`. Definitions follow §4.2 and §4.4 of the
replication paper, with the decisions recorded in docs/model.md §8.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from condor_rlrep.energy import PowerTable

__all__ = [
    "Invocation",
    "TaskOutcome",
    "evaluate",
    "evaluate_runs",
    "Run",
    "sigma",
    "reward",
    "task_deadline",
    "DEFAULT_FAILURE_REWARD",
]

DEFAULT_FAILURE_REWARD = -5.0

EndReason = Literal["success", "failure", "evicted", "held", "removed", "running"]


@dataclass(frozen=True, slots=True)
class Invocation:
    """One run of one replica on one machine, from execute to its end.

    ``ended_by``: ``success`` (exit 0), ``failure`` (non-zero exit, signal,
    shadow exception), ``evicted`` (owner login, vacate, preemption, reboot:
    the machine stopped it and the replica is requeued), ``held`` (put on
    hold by a user, an admin or a policy), ``removed`` (killed as surplus or by a user) or
    ``running`` (no end seen; charged up to the time of evaluation).
    """

    replica: int
    host: str | None
    start: float
    end: float
    ended_by: EndReason
    exit_code: int | None = None

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    completed: bool
    """Some replica finished successfully."""
    success: bool
    """Completed by the task's own deadline s_t + max(0, 1+φ′)·e_t."""
    finish_time: float | None
    duration: float | None
    """D_t: from submission to the first successful finish."""
    good_energy_j: float
    bad_energy_j: float
    mean_active_watts: float
    """Ξ: mean active power over the machines the invocations ran on."""
    sigma: float
    reward: float
    winner: int | None
    """Replica (proc) whose invocation won, if any."""

    @property
    def total_energy_j(self) -> float:
        return self.good_energy_j + self.bad_energy_j


def task_deadline(submit_time: float, phi_prime: float, estimate: float) -> float:
    """Latest finish that counts as success: ``s_t + max(0, 1+φ′)·e_t``.

    A task estimated to take no time (φ′ = ∞ by the zero-denominator rule of
    the criticality module) has no slack to give: its deadline is ``s_t``.
    """
    if estimate == 0.0:
        return submit_time
    return submit_time + max(0.0, 1.0 + phi_prime) * estimate


def sigma(bad_energy_j: float, replicas: int, duration_s: float, mean_active_watts: float) -> float:
    """σ_t = min(1, bad / (a · D_t · Ξ)): wasted energy relative to the energy
    ``a`` replicas running for the whole task duration would draw.

    A zero denominator means nothing ran for any time: no waste is 0, any
    waste is the worst case 1.
    """
    if bad_energy_j < 0 or replicas < 1 or duration_s < 0 or mean_active_watts < 0:
        raise ValueError(
            "sigma needs bad >= 0, replicas >= 1, duration >= 0 and power >= 0; "
            f"got {bad_energy_j!r}, {replicas!r}, {duration_s!r}, {mean_active_watts!r}"
        )
    denominator = replicas * duration_s * mean_active_watts
    if denominator <= 0:
        return 0.0 if bad_energy_j <= 0 else 1.0
    return min(1.0, bad_energy_j / denominator)


def reward(success: bool, sigma_value: float, *, failure_reward: float = DEFAULT_FAILURE_REWARD) -> float:
    """``+1 − σ`` on success, ``failure_reward`` (default −5) otherwise."""
    if not 0.0 <= sigma_value <= 1.0 or math.isnan(sigma_value):
        raise ValueError(f"sigma must lie in [0, 1], got {sigma_value!r}")
    return 1.0 - sigma_value if success else failure_reward


def evaluate(
    invocations: Iterable[Invocation],
    *,
    submit_time: float,
    phi_prime: float,
    estimate: float,
    replicas: int,
    power: PowerTable,
    failure_reward: float = DEFAULT_FAILURE_REWARD,
    accepted: bool | None = None,
) -> TaskOutcome:
    """Judge one decision from everything its replicas did (eq. 3).

    The winner is the earliest successful invocation (ties: lowest replica);
    every other invocation, evicted and removed runs included, is bad energy.

    ``accepted``: the node's final verdict where something after the
    replicas judges it (live: the user's POST script), None where nothing
    does (the simulator). The task completed iff the node was accepted: a
    node failed despite a replica's exit 0 did not complete (its runs are
    all waste); a node accepted although no replica exited 0 completed with
    the result of the replica it kept, the first to fail (else the last run
    to end).
    """
    runs: Sequence[Invocation] = sorted(invocations, key=lambda inv: (inv.start, inv.replica))
    winner_index = None
    if accepted is not False:
        for index, inv in enumerate(runs):
            if inv.ended_by == "success" and (
                winner_index is None
                or (inv.end, inv.replica) < (runs[winner_index].end, runs[winner_index].replica)
            ):
                winner_index = index
    if accepted and winner_index is None:
        winner_index = _kept_result(runs)
    good = bad = 0.0
    watts_sum = 0.0
    for index, inv in enumerate(runs):
        watts = power.watts(inv.host)
        watts_sum += watts
        energy = inv.seconds * watts
        if index == winner_index:
            good += energy
        else:
            bad += energy
    mean_watts = watts_sum / len(runs) if runs else power.default_watts
    if winner_index is None:
        return TaskOutcome(
            completed=False,
            success=False,
            finish_time=None,
            duration=None,
            good_energy_j=good,
            bad_energy_j=bad,
            mean_active_watts=mean_watts,
            sigma=1.0 if bad > 0 else 0.0,
            reward=failure_reward,
            winner=None,
        )
    won = runs[winner_index]
    duration = max(0.0, won.end - submit_time)
    succeeded = won.end <= task_deadline(submit_time, phi_prime, estimate)
    s = sigma(bad, replicas, duration, mean_watts)
    return TaskOutcome(
        completed=True,
        success=succeeded,
        finish_time=won.end,
        duration=duration,
        good_energy_j=good,
        bad_energy_j=bad,
        mean_active_watts=mean_watts,
        sigma=s,
        reward=reward(succeeded, s, failure_reward=failure_reward),
        winner=won.replica,
    )


def _kept_result(runs: Sequence[Invocation]) -> int | None:
    """Index of the run whose result a node without a successful replica
    kept: the first failure to end (what POST promotes), else the last run
    to end; None when nothing ended."""
    failures = [i for i, inv in enumerate(runs) if inv.ended_by == "failure"]
    if failures:
        return min(failures, key=lambda i: (runs[i].end, runs[i].replica))
    ended = [i for i, inv in enumerate(runs) if inv.ended_by != "running"]
    return max(ended, key=lambda i: (runs[i].end, -runs[i].replica)) if ended else None


_START_REPLICA = operator.itemgetter(0, 1)

Run = tuple[float, int, float, str, float]
"""One invocation for :func:`evaluate_runs`: ``(start, replica, end, ended_by, watts)``."""


def evaluate_runs(
    runs: list[Run],
    *,
    submit_time: float,
    phi_prime: float,
    estimate: float,
    replicas: int,
    default_watts: float,
    failure_reward: float = DEFAULT_FAILURE_REWARD,
) -> tuple[bool, bool, float | None, float, float, float, float, int | None]:
    """:func:`evaluate` for callers that already know each run's power (the
    simulator): the same rules, sums in the same order and the same
    :func:`sigma`, :func:`reward` and :func:`task_deadline`, without building
    objects. Returns ``(completed, success, finish_time, good_j, bad_j, sigma,
    reward, winner)``. A property test checks it against :func:`evaluate`.
    """
    if len(runs) == 1:
        start, winner, end, how, watts = runs[0]
        if how == "success" and watts >= 0.0 and replicas >= 1:
            # The common case (one replica, not interrupted), with the
            # general path's arithmetic: good = its energy, nothing wasted,
            # so σ = 0 whatever the denominator.
            seconds = end - start
            good = (seconds if seconds > 0.0 else 0.0) * watts
            succeeded = end <= task_deadline(submit_time, phi_prime, estimate)
            return True, succeeded, end, good, 0.0, 0.0, (1.0 if succeeded else failure_reward), winner
    ordered = sorted(runs, key=_START_REPLICA)  # stable, by (start, replica), as evaluate sorts
    winner_index = -1
    best_end = best_replica = 0.0
    for index, run in enumerate(ordered):
        if run[3] == "success" and (winner_index < 0 or (run[2], run[1]) < (best_end, best_replica)):
            winner_index = index
            best_end = run[2]
            best_replica = run[1]
    good = bad = 0.0
    watts_sum = 0.0
    for index, (start, _replica, end, _how, watts) in enumerate(ordered):
        watts_sum += watts
        seconds = end - start
        energy = (seconds if seconds > 0.0 else 0.0) * watts
        if index == winner_index:
            good += energy
        else:
            bad += energy
    mean_watts = watts_sum / len(ordered) if ordered else default_watts
    if winner_index < 0:
        return False, False, None, good, bad, (1.0 if bad > 0 else 0.0), failure_reward, None
    won = ordered[winner_index]
    duration = max(0.0, won[2] - submit_time)
    succeeded = won[2] <= task_deadline(submit_time, phi_prime, estimate)
    s = sigma(bad, replicas, duration, mean_watts)
    return True, succeeded, won[2], good, bad, s, reward(succeeded, s, failure_reward=failure_reward), won[1]
