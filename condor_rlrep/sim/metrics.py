"""Metrics of a simulation run (§2 and §4.2 of the replication paper).

* ``p(W) = (c(W) − s(W))/CR(W) − 1`` per completed workflow (eq. 1);
* the number of workflows with ``p(W) ≤ P`` for a grid of P (Table 1,
  Figures 3a and 5);
* good and bad energy of workflow tasks (eq. 3), in kWh, and the energy of
  the background (trace) jobs apart;
* evictions (logins) and reboot kills, workflow and background apart;
* the chance that a job's first run completes uninterrupted, by the hour of
  its submission and its length (the data of Figure 2b).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "P_GRID",
    "J_PER_KWH",
    "LENGTH_EDGES_HOURS",
    "p_of_workflow",
    "within_counts",
    "CompletionTable",
    "completion_table",
]

P_GRID: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0)
"""The contingencies of the paper's Table 1."""

J_PER_KWH = 3.6e6

LENGTH_EDGES_HOURS: tuple[float, ...] = tuple(float(h) for h in range(25)) + (math.inf,)
"""Job-length bins of Figure 2b: one hour wide up to 24 h, then > 24 h."""

# p(W) ≤ P is compared with a little slack: c(W) − s(W) is a sum of float
# times that, for a workflow with no delay at all, lands within rounding
# of CR(W) (the paper's "p(W) ~ 0.000043").
_P_TOLERANCE = 1e-9


def p_of_workflow(start: np.ndarray, finish: np.ndarray, critical_path: np.ndarray) -> np.ndarray:
    """``p(W) = (c(W) − s(W))/CR(W) − 1`` (eq. 1); NaN where not completed.

    A workflow with CR(W) = 0 has p = 0 if it finished at its start, else inf.
    """
    start = np.asarray(start, dtype=np.float64)
    finish = np.asarray(finish, dtype=np.float64)
    cr = np.asarray(critical_path, dtype=np.float64)
    span = finish - start
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(cr > 0, span / np.where(cr > 0, cr, 1.0) - 1.0, np.where(span > 0, np.inf, 0.0))
    return np.where(np.isnan(finish), np.nan, p)


def within_counts(p: np.ndarray, grid: Sequence[float] = P_GRID) -> dict[float, int]:
    """Number of completed workflows with ``p(W) ≤ P`` for each P of ``grid``."""
    done = p[~np.isnan(p)]
    return {float(P): int(np.count_nonzero(done <= P + _P_TOLERANCE)) for P in grid}


@dataclass
class CompletionTable:
    """Jobs by (submit hour, length bin): how many started, how many of those
    completed on their first run (no login, no reboot in between)."""

    length_edges_hours: tuple[float, ...]
    started: np.ndarray  # int64[24, bins]
    completed_first: np.ndarray  # int64[24, bins]

    @property
    def probability(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.started > 0, self.completed_first / np.maximum(self.started, 1), np.nan)


def completion_table(
    submit_hour: np.ndarray,
    duration: np.ndarray,
    first_ok: np.ndarray,
    edges_hours: Sequence[float] = LENGTH_EDGES_HOURS,
) -> CompletionTable:
    """Tabulate jobs that ran at least once (``first_ok`` is 1/0, −1: never ran)."""
    ran = first_ok >= 0
    hours = np.asarray(submit_hour)[ran].astype(np.int64)
    length_bin = np.searchsorted(np.asarray(edges_hours[1:-1]) * 3600.0, np.asarray(duration)[ran], side="right")
    bins = len(edges_hours) - 1
    flat = hours * bins + length_bin
    started = np.bincount(flat, minlength=24 * bins).reshape(24, bins)
    ok = np.bincount(flat, weights=(np.asarray(first_ok)[ran] == 1).astype(np.float64), minlength=24 * bins)
    return CompletionTable(tuple(edges_hours), started.astype(np.int64), ok.reshape(24, bins).astype(np.int64))
