"""The ``local`` sweep backend: finished runs are skipped, the rest run in a
process pool, one simulation per :class:`~condor_rlrep.sweep.experiment.RunGroup`,
each result written the moment its simulation ends."""

from __future__ import annotations

import logging
import multiprocessing
import resource
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from condor_rlrep.sweep.execute import execute_group, open_sweep
from condor_rlrep.sweep.experiment import Experiment, RunGroup, RunSpec, group_runs
from condor_rlrep.sweep.store import SweepDir

__all__ = ["run_local", "SweepSummary", "SweepPlan", "SweepInterrupted"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepSummary:
    total: int
    skipped: int
    ran: int
    """Runs whose result this call wrote."""
    simulations: int = 0
    """Simulations it took (a φ-independent run serves every φ)."""


@dataclass(frozen=True)
class SweepPlan:
    """How much work a call has before it starts."""

    total: int
    skipped: int
    todo: int
    simulations: int
    jobs: int


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep: the runs that finished are kept, the ones in
    flight are lost, and running the same sweep again does the rest."""

    def __init__(self, finished: int, total: int, root: Path) -> None:
        super().__init__(
            f"{finished} of {total} runs finished and kept in {root}; the same command resumes the rest"
        )
        self.finished = finished
        self.total = total


def _ignore_sigint() -> None:
    # A terminal's Ctrl-C goes to the whole process group: the workers must
    # leave it to the parent, which stops them all at once (Pool.terminate)
    # instead of each one dying with a traceback or starting the next run.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_group(item: tuple[int, list[dict], Path]) -> tuple[int, list[dict]]:
    index, params, trace_dir = item
    return index, execute_group(params, trace_dir)


def run_local(
    experiment: Experiment,
    out: SweepDir,
    *,
    jobs: int = 1,
    only: set[str] | None = None,
    on_run_done: Callable[[RunSpec], None] | None = None,
    on_plan: Callable[[SweepPlan], None] | None = None,
) -> SweepSummary:
    """Run every unfinished run of ``experiment`` into ``out``.

    Interrupting this (Ctrl-C, kill) loses at most the simulations in
    flight; a later call with the same arguments does the rest and nothing
    twice. On Ctrl-C the workers are stopped at once and
    :class:`SweepInterrupted` says how many runs were kept.
    ``on_plan`` hears how much work there is before any starts. A folder of another trace is refused before anything is written
    (:func:`~condor_rlrep.sweep.execute.open_sweep`).
    """
    clock = PhaseClock()
    trace_dir, identity = open_sweep(experiment, out)
    clock.lap("trace ready")
    specs = [s for s in experiment.runs() if only is None or s.run_id in only]
    todo = [s for s in specs if not out.is_done(s)]
    skipped = len(specs) - len(todo)
    if on_run_done:
        for spec in specs:
            if out.is_done(spec):
                on_run_done(spec)
    groups = group_runs(todo)
    if on_plan:
        on_plan(SweepPlan(len(specs), skipped, len(todo), len(groups), max(1, min(jobs, len(groups)))))
    finished = [skipped]

    def finish(group: RunGroup, documents: list[dict]) -> None:
        for spec, document in zip(group.runs, documents):
            out.save_result(spec, document, identity)
            finished[0] += 1
            if on_run_done:
                on_run_done(spec)

    try:
        if jobs <= 1 or len(groups) <= 1:
            for group in groups:
                finish(group, execute_group([dict(s.params) for s in group.runs], trace_dir))
        else:
            _run_pool(groups, trace_dir, jobs, finish)
    except KeyboardInterrupt:
        raise SweepInterrupted(finished[0], len(specs), out.root) from None
    clock.lap(f"{len(todo)} runs ({len(groups)} simulations) done")
    return SweepSummary(len(specs), skipped, len(todo), len(groups))


class PhaseClock:
    """Wall and CPU time of a sweep's phases, logged at INFO (``-v``) as each ends.

    CPU counts this process and the worker processes it has waited for
    (a pool's workers are reaped when it closes), so a ``--jobs`` sweep's
    simulations show their whole cost."""

    def __init__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), self.cpu()

    @staticmethod
    def cpu() -> float:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime

    def lap(self, what: str) -> None:
        wall, cpu = time.perf_counter(), self.cpu()
        log.info("sweep phase: %s in %.2f s (CPU %.2f s)", what, wall - self._wall, cpu - self._cpu)
        self._wall, self._cpu = wall, cpu


def _run_pool(groups: list[RunGroup], trace_dir: Path, jobs: int,
              finish: Callable[[RunGroup, list[dict]], None]) -> None:
    """The groups on ``jobs`` worker processes, each result saved as it
    comes; on any exit but success (Ctrl-C, a failed run) the workers are
    terminated, not waited for, so nothing is left running."""
    pool = multiprocessing.get_context().Pool(jobs, initializer=_ignore_sigint)
    try:
        items = [(i, [dict(s.params) for s in group.runs], trace_dir) for i, group in enumerate(groups)]
        for index, documents in pool.imap_unordered(_run_group, items, chunksize=1):
            finish(groups[index], documents)
        pool.close()
    except BaseException:
        # a second Ctrl-C must not cut the clean-up short and orphan a worker
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            pool.terminate()
            pool.join()
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        raise
    pool.join()
