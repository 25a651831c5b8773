"""The ``local`` sweep backend: finished runs are skipped, the rest run in a
process pool, one simulation per :class:`~condor_rlrep.sweep.experiment.RunGroup`,
each result written the moment its simulation ends."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass

from condor_rlrep.sweep.execute import execute_group, open_sweep
from condor_rlrep.sweep.experiment import Experiment, RunGroup, RunSpec, group_runs
from condor_rlrep.sweep.store import SweepDir

__all__ = ["run_local", "SweepSummary"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepSummary:
    total: int
    skipped: int
    ran: int
    """Runs whose result this call wrote."""
    simulations: int = 0
    """Simulations it took (a φ-independent run serves every φ)."""


def run_local(
    experiment: Experiment,
    out: SweepDir,
    *,
    jobs: int = 1,
    only: set[str] | None = None,
    on_run_done: Callable[[RunSpec], None] | None = None,
) -> SweepSummary:
    """Run every unfinished run of ``experiment`` into ``out``.

    Interrupting this (Ctrl-C, kill) loses at most the simulations in
    flight; a later call with the same arguments does the rest and nothing
    twice. A folder of another trace is refused before anything is written
    (:func:`~condor_rlrep.sweep.execute.open_sweep`).
    """
    trace_dir, identity = open_sweep(experiment, out)
    specs = [s for s in experiment.runs() if only is None or s.run_id in only]
    todo = [s for s in specs if not out.is_done(s)]
    skipped = len(specs) - len(todo)
    if on_run_done:
        for spec in specs:
            if out.is_done(spec):
                on_run_done(spec)
    groups = group_runs(todo)

    def finish(group: RunGroup, documents: list[dict]) -> None:
        for spec, document in zip(group.runs, documents):
            out.save_result(spec, document, identity)
            if on_run_done:
                on_run_done(spec)

    if jobs <= 1 or len(groups) <= 1:
        for group in groups:
            finish(group, execute_group([dict(s.params) for s in group.runs], trace_dir))
        return SweepSummary(len(specs), skipped, len(todo), len(groups))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pending = {
            pool.submit(execute_group, [dict(s.params) for s in group.runs], trace_dir): group for group in groups
        }
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                finish(pending.pop(future), future.result())
    return SweepSummary(len(specs), skipped, len(todo), len(groups))
