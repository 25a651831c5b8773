"""What a store hands out, and the interface every store backend implements.

:class:`AgentStore` is the contract the hooks, the CLI and ``train`` use;
:class:`~condor_rlrep.store.sqlite.SqliteStore` is the embedded backend and
:class:`~condor_rlrep.store.postgres.PostgresStore` the server one (see
:mod:`condor_rlrep.store.backends` for opening either from a spec). Light:
no numpy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from typing import IO

    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.agent.config import AgentConfig
    from condor_rlrep.store.retention import PruneResult, Retention
    from condor_rlrep.outcome import TaskOutcome

__all__ = [
    "AgentStore",
    "Decision",
    "DecisionRecord",
    "StoreStats",
    "default_store_path",
    "DOCUMENT_FORMAT",
    "DEFAULT_BUSY_TIMEOUT",
]

DOCUMENT_FORMAT = "condor-rlrep-agent-store"
DEFAULT_BUSY_TIMEOUT = 30.0


def default_store_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$CONDOR_RLREP_STORE``, else ``$XDG_DATA_HOME/condor-rlrep/agent.sqlite``
    (``XDG_DATA_HOME`` defaulting to ``~/.local/share``)."""
    from pathlib import Path

    env = os.environ if environ is None else environ
    if env.get("CONDOR_RLREP_STORE"):
        return Path(env["CONDOR_RLREP_STORE"])
    data_home = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "condor-rlrep" / "agent.sqlite"


@dataclass(frozen=True)
class Decision:
    """What ``decide`` chose; ``decision_id`` is what the outcome is recorded against."""

    decision_id: int
    replicas: int
    state: int
    hour: int
    phi_bin: int
    explored: bool
    estimate: float
    epsilon: float
    phi_prime: float
    made_at: float

    def to_json(self) -> dict[str, Any]:
        """The scripting form: ``{"decision_id", "replicas", "state": [hour, bin], "explored"}``."""
        return {
            "decision_id": self.decision_id,
            "replicas": self.replicas,
            "state": [self.hour, self.phi_bin],
            "explored": self.explored,
        }


@dataclass(frozen=True)
class DecisionRecord:
    """One row of the decision log; ``reward is None`` while pending."""

    decision_id: int
    made_at: float
    state: int
    hour: int
    phi_bin: int
    replicas: int
    phi_prime: float | None
    estimate: float
    explored: bool
    epsilon: float
    context: dict[str, Any]
    closed_at: float | None
    reward: float | None
    outcome: dict[str, Any] | None

    @property
    def pending(self) -> bool:
        return self.reward is None


@dataclass(frozen=True)
class StoreStats:
    path: str
    """The store's file, or its URL without the password."""
    schema_version: int
    strategy: str
    schedule: str
    decisions: int
    closed: int
    pending: int
    rewards_seen: int
    epsilon: float
    """ε of a state not recovering from drift (ε-greedy)."""
    states_recovering: int
    last_decision_id: int
    survival_cells: int = 0
    """Cells of the model policy's survival model (never pruned)."""
    survival_runs: int = 0
    """Keys of node attempts the model has counted (a repeated POST counts
    once); pruned with closed decisions (:mod:`.retention`)."""
    survival_horizon: float | None = None
    """Runs that ended before this are no longer counted (their keys may be
    pruned); None: no key was ever pruned."""


class AgentStore(Protocol):
    """What the hooks, the CLI and ``train`` need from a store.

    Every call is one short transaction (``export_to`` reads one snapshot;
    ``prune`` runs in bounded batches). Failures are
    :class:`~condor_rlrep.errors.StoreError`.
    """

    path: str
    """The file, or the URL without its password: what messages name."""

    @property
    def config(self) -> AgentConfig: ...

    def decide(
        self,
        *,
        phi_prime: float,
        hour: int | None = None,
        timestamp: float | None = None,
        context: Mapping[str, Any] | None = None,
        rng: Any = None,
        now: float | None = None,
        max_replicas: int | None = None,
    ) -> Decision: ...

    def record(
        self, decision_id: int, reward: float, outcome: Mapping[str, Any] | None = None, *, now: float | None = None
    ) -> bool: ...

    def record_outcome(self, decision_id: int, outcome: TaskOutcome, *, now: float | None = None) -> bool: ...

    def decision(self, decision_id: int) -> DecisionRecord: ...

    def survival_cells(self) -> list[tuple[int, int, float, float]]:
        """The ``model:R`` policy's survival model: cells ``(hour of week,
        idle bucket (-1: unknown), exposure seconds, owner evictions)``."""
        ...

    def record_exposure(self, key: str, cells: Any, *, now: float | None = None,
                        ran_until: float | None = None) -> bool:
        """Add one node attempt's cells under ``key`` once (False: already
        added); with ``ran_until`` (when its last run ended), an unknown key
        older than the survival horizon is refused (StaleExposureError)."""
        ...

    def stats(self) -> StoreStats: ...

    def load_agent(self, *, rng: Any = None) -> Agent: ...

    def decisions(self) -> list[DecisionRecord]: ...

    def export(self) -> dict[str, Any]: ...

    def export_to(self, out: IO[str]) -> int: ...

    def reset(self, config: AgentConfig | None = None) -> None: ...

    @property
    def retention(self) -> Retention: ...

    def set_retention(self, retention: Retention) -> None: ...

    def prune(
        self, *, closed_before: float | None = None, pending_before: float | None = None,
        runs_before: float | None = None, batch: int = ...
    ) -> PruneResult: ...

    def apply_retention(self, *, now: float | None = None) -> PruneResult: ...

    def close(self) -> None: ...

    def __enter__(self) -> AgentStore: ...

    def __exit__(self, *exc: object) -> None: ...
