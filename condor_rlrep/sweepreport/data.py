"""Sweep results arranged for the report: one record per run, and the
comparisons the paper's tables and figures are made of.

A run result (what :func:`condor_rlrep.sweep.execute.execute_run` returns)
has at least ``workflows``, ``within`` (P as text → count), ``energy_kwh``
with ``workflow_total``, ``workflow_good`` and ``workflow_bad``,
``p_quantiles`` (p(W) at 0 %, 1 %, … 100 %) and
``completion_by_hour_length``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from condor_rlrep.policyspec import IDLE_PREFIX, parse_spec

__all__ = ["RunRecord", "ResultTable", "parse_policy", "max_replicas", "fixed_counterpart"]


@lru_cache(maxsize=None)
def parse_policy(policy: str) -> tuple[str, int]:
    """The report's (family, maximum replicas) of a simulated policy, read
    by :func:`condor_rlrep.policyspec.parse_spec` (the one grammar of
    ``--policy``). The family is the spec's kind with the bandit strategy as
    written and ``idle-`` kept, since the report shows each as its own
    family: ``"fixed:3"`` → ``("fixed", 3)``, ``"single"`` → ``("single", 1)``,
    ``"rl-ucb1:3"`` → ``("rl-ucb1", 3)``, ``"idle-rl:3"`` → ``("idle-rl", 3)``,
    ``"model:3,target=0.9"`` → ``("model", 3)``. An :class:`InputError` for
    what the simulator would not have run."""
    spec = parse_spec(policy)
    family = spec.kind if spec.strategy is None else f"{spec.kind}-{spec.strategy}"
    if spec.idle:
        family = IDLE_PREFIX + family
    assert spec.count is not None  # the simulator's grammar always has a count
    return family, spec.count


def max_replicas(policy: str) -> int:
    """K of fixed:K, R of rl:R, oracle:R, model:R…; 1 for single."""
    return parse_policy(policy)[1]


def fixed_counterpart(policy: str) -> str:
    """The fixed policy with ``policy``'s maximum (rl:3 → fixed:3), which the
    paper compares it against."""
    return f"fixed:{max_replicas(policy)}"


@dataclass(frozen=True)
class RunRecord:
    workflows: str
    policy: str
    phi: float
    result: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return parse_policy(self.policy)[0]

    @property
    def max_replicas(self) -> int:
        return parse_policy(self.policy)[1]

    def within(self, p: float | None = None) -> int:
        """Workflows with p(W) ≤ P (default P = φ, as in the paper's Table 1)."""
        key = _p_key(self.phi if p is None else p)
        return int(self.result["within"][key])

    @property
    def energy_mwh(self) -> float:
        return float(self.result["energy_kwh"]["workflow_total"]) / 1000.0

    @property
    def bad_energy_mwh(self) -> float:
        return float(self.result["energy_kwh"]["workflow_bad"]) / 1000.0

    @property
    def replicas_per_task(self) -> float | None:
        """Mean replicas started per task invocation (1 for single)."""
        value = self.result.get("mean_replicas")
        return None if value is None else float(value)

    def kwh_per_success(self, p: float | None = None) -> float | None:
        """Energy per successful workflow: the run's replica energy (kWh,
        wasted replicas included) over the workflows within P (default P = φ);
        None when no workflow made it."""
        within = self.within(p)
        return float(self.result["energy_kwh"]["workflow_total"]) / within if within else None

    def share_percent(self, p: float | None = None) -> float | None:
        total = self.result.get("workflows") or 0
        return 100.0 * self.within(p) / total if total else None


_PAPER_KINDS = ("single", "fixed", "rl", "rl-ucb1", "rl-thompson", "oracle")


def _p_key(p: float) -> str:
    return f"{p:g}"


class ResultTable:
    """All runs of a sweep, indexed by (workflows, policy, φ)."""

    def __init__(self, documents: Iterable[Mapping[str, Any]]):
        self.records: dict[tuple[str, str, float], RunRecord] = {}
        for doc in documents:
            params = doc["params"]
            workflows = "+".join(params.get("workflows", ["?"]))
            record = RunRecord(workflows, str(params["policy"]), float(params["phi"]), doc["result"])
            self.records[(record.workflows, record.policy, record.phi)] = record

    def workflow_sets(self) -> list[str]:
        return sorted({key[0] for key in self.records})

    def phis(self, workflows: str) -> list[float]:
        return sorted({key[2] for key in self.records if key[0] == workflows})

    def policies(self, workflows: str, kind: str) -> list[str]:
        found = {key[1] for key in self.records if key[0] == workflows and parse_policy(key[1])[0] == kind}
        return sorted(found, key=lambda p: parse_policy(p)[1])

    def all_policies(self, workflows: str) -> list[str]:
        """Every policy of ``workflows``: single, fixed:K, the bandits, the
        oracle, then the rest (the policies beyond the paper) by name."""
        found = {key[1] for key in self.records if key[0] == workflows}
        order = {kind: rank for rank, kind in enumerate(_PAPER_KINDS)}

        def key(policy: str) -> tuple[int, str, int, str]:
            kind, count = parse_policy(policy)
            return order.get(kind, len(order)), kind, count, policy

        return sorted(found, key=key)

    def get(self, workflows: str, policy: str, phi: float) -> RunRecord | None:
        return self.records.get((workflows, policy, phi))

    def baseline(self, workflows: str, phi: float) -> RunRecord | None:
        return self.get(workflows, "single", phi)

    def gain_percent(self, workflows: str, policy: str, phi: float) -> float | None:
        """Change in workflows within P = φ against the single-replica baseline."""
        run, base = self.get(workflows, policy, phi), self.baseline(workflows, phi)
        if run is None or base is None or base.within() == 0:
            return None
        return 100.0 * (run.within() - base.within()) / base.within()

    def energy_change_percent(self, workflows: str, policy: str, reference: str, phi: float) -> float | None:
        run, ref = self.get(workflows, policy, phi), self.get(workflows, reference, phi)
        if run is None or ref is None or ref.energy_mwh == 0:
            return None
        return 100.0 * (run.energy_mwh - ref.energy_mwh) / ref.energy_mwh

    def within_change_percent(self, workflows: str, policy: str, reference: str, phi: float) -> float | None:
        run, ref = self.get(workflows, policy, phi), self.get(workflows, reference, phi)
        if run is None or ref is None or ref.within() == 0:
            return None
        return 100.0 * (run.within() - ref.within()) / ref.within()
