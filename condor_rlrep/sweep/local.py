"""The ``local`` sweep backend: finished runs are skipped, the rest run in a
process pool, each result written the moment its run ends."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass

from condor_rlrep.sweep.execute import execute_run, prepare_trace
from condor_rlrep.sweep.experiment import Experiment, RunSpec
from condor_rlrep.sweep.store import SweepDir

__all__ = ["run_local", "SweepSummary"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepSummary:
    total: int
    skipped: int
    ran: int


def run_local(
    experiment: Experiment,
    out: SweepDir,
    *,
    jobs: int = 1,
    only: set[str] | None = None,
    on_run_done: Callable[[RunSpec], None] | None = None,
) -> SweepSummary:
    """Run every unfinished run of ``experiment`` into ``out``.

    Interrupting this (Ctrl-C, kill) loses at most the runs in flight; a later
    call with the same arguments does the rest and nothing twice.
    """
    out.save_experiment(experiment)
    prepare_trace(experiment, out)
    specs = [s for s in experiment.runs() if only is None or s.run_id in only]
    todo = [s for s in specs if not out.is_done(s)]
    skipped = len(specs) - len(todo)
    if on_run_done:
        for spec in specs:
            if out.is_done(spec):
                on_run_done(spec)
    if jobs <= 1 or len(todo) <= 1:
        for spec in todo:
            out.save_result(spec, execute_run(spec.params, out.trace_dir))
            if on_run_done:
                on_run_done(spec)
        return SweepSummary(len(specs), skipped, len(todo))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pending = {pool.submit(execute_run, spec.params, out.trace_dir): spec for spec in todo}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                spec = pending.pop(future)
                out.save_result(spec, future.result())
                if on_run_done:
                    on_run_done(spec)
    return SweepSummary(len(specs), skipped, len(todo))
