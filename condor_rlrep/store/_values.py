"""Checking what callers hand a store, and turning rows back into records.

Shared by every backend, so that SQLite and PostgreSQL refuse exactly the
same inputs with the same words and store the same canonical JSON text (an
identical repeated record is recognised by comparing that text). Light: the
hooks import it.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Mapping
from typing import Any

from condor_rlrep.agent.config import REWARD_LIMIT, AgentConfig
from condor_rlrep.store.interface import DecisionRecord
from condor_rlrep.agent.state import StateError
from condor_rlrep.errors import StoreError

__all__ = [
    "DECISION_COLUMNS",
    "config_json",
    "canonical_json",
    "context_json",
    "check_phi",
    "check_reward",
    "check_decision_id",
    "record_of",
    "decision_to_doc",
]

DECISION_COLUMNS = (
    "id, made_at, state, hour, phi_bin, action, phi_prime, estimate, explored, epsilon, "
    "context, closed_at, reward, outcome"
)
"""Column order of a decision row in every backend (and of an imported row)."""


def config_json(config: AgentConfig) -> str:
    return json.dumps(config.to_dict(), sort_keys=True, separators=(",", ":"))


def canonical_json(value: Any, what: str) -> str:
    if not isinstance(value, Mapping):
        raise StoreError(f"{what} must be a mapping; got {type(value).__name__}")
    try:
        return json.dumps(dict(value), sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise StoreError(f"{what} must be plain JSON data with finite numbers: {err}") from err


def context_json(context: Mapping[str, Any] | None) -> str:
    return "{}" if context is None else canonical_json(context, "context")


def check_phi(phi_prime: Any) -> float:
    if isinstance(phi_prime, bool):
        raise StateError(f"phi' must be a number; got {phi_prime!r}")
    try:
        value = float(phi_prime)
    except (TypeError, ValueError) as err:
        raise StateError(f"phi' must be a number; got {phi_prime!r}") from err
    if math.isnan(value):
        raise StateError("phi' is NaN: no state for it")
    return value


def check_reward(value: Any) -> float:
    try:
        reward = float(value)
    except (TypeError, ValueError):
        reward = math.nan
    if isinstance(value, (bool, str, bytes)) or not math.isfinite(reward):
        raise StoreError(f"reward must be a finite number; got {value!r}")
    if abs(reward) > REWARD_LIMIT:
        # the model's rewards are +1 − σ (σ in [0, 1]) and the failure reward, bounded the same way:
        # beyond, sums of estimates overflow to ±inf and the store could no longer be exported
        raise StoreError(f"reward {reward:g} is outside the model's range (|reward| <= {REWARD_LIMIT:g})")
    return reward


def check_decision_id(decision_id: Any) -> int:
    try:
        value = operator.index(decision_id)  # int, numpy integers; not "1" or 1.0
    except TypeError:
        value = 0
    if isinstance(decision_id, bool) or value < 1:
        raise StoreError(f"decision id must be a positive integer; got {decision_id!r}")
    return value


def record_of(row: tuple[Any, ...] | list[Any]) -> DecisionRecord:
    (id_, made_at, state, hour, phi_bin, action, phi_prime, estimate, explored, eps, context, closed_at, reward,
     outcome) = row
    return DecisionRecord(
        decision_id=id_,
        made_at=made_at,
        state=state,
        hour=hour,
        phi_bin=phi_bin,
        replicas=action,
        phi_prime=phi_prime,
        estimate=estimate,
        explored=bool(explored),
        epsilon=eps,
        context=json.loads(context),
        closed_at=closed_at,
        reward=reward,
        outcome=None if outcome is None else json.loads(outcome),
    )


def decision_to_doc(row: tuple[Any, ...] | list[Any]) -> dict[str, Any]:
    """A decision row as its export-document entry (the fields of :class:`DecisionRecord`, in order)."""
    (id_, made_at, state, hour, phi_bin, action, phi_prime, estimate, explored, eps, context, closed_at, reward,
     outcome) = row
    # JSON has no infinities; φ′ can legitimately be ±inf (e.g. e_t = 0)
    if phi_prime is not None and not math.isfinite(phi_prime):
        phi_prime = "inf" if phi_prime > 0 else "-inf"
    return {
        "decision_id": id_,
        "made_at": made_at,
        "state": state,
        "hour": hour,
        "phi_bin": phi_bin,
        "replicas": action,
        "phi_prime": phi_prime,
        "estimate": estimate,
        "explored": bool(explored),
        "epsilon": eps,
        "context": json.loads(context),
        "closed_at": closed_at,
        "reward": reward,
        "outcome": None if outcome is None else json.loads(outcome),
    }
