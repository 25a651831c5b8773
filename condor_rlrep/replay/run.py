"""A whole replay, end to end and resumable: :func:`run_replay`.

``OUT/plan.json`` fixes the window, slots, arrivals and compression; every
policy then runs in a fresh pool of its own (``OUT/<policy>/pool``), one
after the other, with the same owners and the same arrivals: the pool's
clock origin is set a few seconds after its start, so every policy sees
the sessions at the same replay seconds. A policy is done when
``OUT/<policy>/rows.json`` exists (its live and simulated rows); a rerun of
the same command skips it (``--rescore``: recomputes its rows from its kept
files with today's code, no pool). A policy interrupted half-way is replayed again
from a clean folder (a live replay cannot continue in the middle: the
owners' clock would not match). The pool is stopped whatever happens.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from condor_rlrep.atomic import write_atomic
from condor_rlrep.errors import InputError
from condor_rlrep.replay.plan import ReplayPlan
from condor_rlrep.replay.results import (NO_LATENCY, Row, live_row, measure_latency, measured_turnaround,
                                         simulated_row)

__all__ = ["ReplaySettings", "run_replay", "load_rows", "simulated_rows", "start_excess", "latency_samples",
           "latency_workflows", "PLAN", "ROWS"]

PLAN = "plan.json"
ROWS = "rows.json"
START_MARGIN = 20.0
"""Seconds between writing the pool's configuration and its clock's origin:
the pool starts (≈ 5 s; 10–15 s on a loaded machine) before the first owner
can matter. ``submitted.json`` records when it was up (``pool_up``, seconds
after the origin: negative is in time)."""


@dataclass
class ReplaySettings:
    policies: list[str]
    phi: float
    seed: int
    negotiation_interval: float
    release: Path | None
    """The HTCondor release folder; None: none found (enough to rescore kept runs)."""
    grace: float = 120.0
    dagman_latency: float | None = None
    """The simulated row's per-level DAGMan latency (s); None: as measured on the policy's live run."""
    slot_turnaround: float | None = None
    """The simulated row's slot turnaround after a removal (s); None: as measured on the policy's live run."""
    rescore: bool = False
    """Recompute the rows of policies already replayed from their kept files (no pool is started)."""
    latency_neighbours: int = 1
    """The modelled row's ``SimConfig.latency_neighbours``: each simulated workflow takes the per-node delays
    of one of this many live workflows nearest to it in arrival."""


def _same_plan(out: Path, plan: ReplayPlan) -> ReplayPlan:
    path = out / PLAN
    if path.exists():
        old = ReplayPlan.from_json(json.loads(path.read_text(encoding="utf-8")))
        if old.to_json() != plan.to_json():
            raise InputError("holds the plan of another replay (other trace, window, slots or arrivals): "
                             "use another -o folder", path=str(path))
        return old
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(str(path), plan.dumps() + "\n")
    return plan


def load_rows(out: Path, policy_folder: str) -> list[Row] | None:
    path = out / policy_folder / ROWS
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for item in data["rows"]:
        item = {k: v for k, v in item.items() if k not in ("replicas_per_task", "replica_kwh")}
        rows.append(Row(**item))
    return rows


def run_replay(out: Path, plan: ReplayPlan, settings: ReplaySettings, *,
               progress: Callable[[str, int, int, str], None] | None = None,
               should_stop: Callable[[], bool] | None = None) -> dict[str, list[Row]]:
    """Every policy's live and simulated rows (replaying those not done yet)."""
    from condor_rlrep.condor.version import detect_dagman_version
    from condor_rlrep.replay.live import SUBMITTED, run_live
    from condor_rlrep.replay.pool import PoolError, ReplayPool
    from condor_rlrep.replay.workflows import policy_slug, prepare_workflows

    out = Path(out).resolve()
    plan = _same_plan(out, plan)
    say = progress or (lambda policy, done, total, what: None)
    rows: dict[str, list[Row]] = {}
    for policy in settings.policies:
        slug = policy_slug(policy)
        done = load_rows(out, slug)
        if done is not None and settings.rescore:
            record = json.loads((out / slug / SUBMITTED).read_text(encoding="utf-8"))
            live = live_row(policy, plan, record)
            rows[policy] = [live, *simulated_rows(policy, plan, settings, live)]
            _write_rows(out / slug, policy, rows[policy])
            say(policy, len(plan.arrivals), len(plan.arrivals), "rescored from its files")
            continue
        if done is not None:
            rows[policy] = done
            say(policy, len(plan.arrivals), len(plan.arrivals), "done before")
            continue
        if settings.release is None:
            raise PoolError(f"{policy} has no kept run to rescore and there is no HTCondor to replay it: no "
                            "condor_master on PATH (give the HTCondor release folder, --condor DIR)")
        folder = out / slug
        if folder.exists():
            shutil.rmtree(folder)  # an interrupted live replay cannot be continued: start it again
        folder.mkdir(parents=True)
        pool = ReplayPool(folder / "pool", settings.release, plan, origin=0.0,
                          negotiation_interval=settings.negotiation_interval)
        found = detect_dagman_version(pool.env)
        say(policy, 0, len(plan.arrivals), "instrumenting")
        dags = prepare_workflows(plan, folder, policy, phi=settings.phi,
                                 dagman_version=found[0] if found else None, environ=pool.env,
                                 watts=sum(plan.active_watts) / plan.slots)
        pool.origin = time.time() + START_MARGIN
        try:
            pool.start()
            say(policy, 0, len(plan.arrivals), "pool up")
            record = run_live(plan, dags, pool.env, pool.origin, grace=settings.grace,
                              progress=lambda d, t, what: say(policy, d, t, what), should_stop=should_stop)
        finally:
            pool.stop()
        live = live_row(policy, plan, record)
        rows[policy] = [live, *simulated_rows(policy, plan, settings, live)]
        _write_rows(folder, policy, rows[policy])
        say(policy, len(plan.arrivals), len(plan.arrivals), "done")
    return rows


def _write_rows(folder: Path, policy: str, rows: list[Row]) -> None:
    payload: dict[str, Any] = {"policy": policy, "rows": [r.to_json() for r in rows]}
    write_atomic(str(folder / ROWS), json.dumps(payload, indent=1, default=_jsonable) + "\n")


def simulated_rows(policy: str, plan: ReplayPlan, settings: ReplaySettings, live: Row) -> list[Row]:
    """The simulator on the plan modelling the live pool and, beside it, the
    paper's simulator (no latency, random machine choice).

    The modelled row takes from ``live``: DAGMan's per-level turn (or the
    given latency), the slot turnaround after a removal, the negotiator's
    order (``slot-order``: HTCondor's default ``NEGOTIATOR_POST_JOB_RANK``
    prefers the lowest ``SlotID``, and slot k is the plan's machine k − 1),
    and the *start excess*: how much longer the live start (submission to
    first execution: negotiation, claim activation, shadow, starter) is on
    average than the simulated one, which has only its negotiation tick.
    The excess is added to the latency (it delays every task's run as the
    turn does) unless the latency is given; where the live row kept each
    node's turn and start, every simulated task's latency is drawn from
    them instead (:func:`latency_samples`), with the same mean.

    Where the live row kept each workflow's per-node delays (turn + start,
    start, run excess: :func:`latency_workflows`), the modelled row takes
    those instead: each simulated workflow the delays of a live workflow
    that arrived about when it did (``SimConfig.latency_workflows``), node
    for node, each replica running its node's run excess longer, and jobs
    matched as soon as a slot is free (no negotiation tick: the live start
    already holds the wait for the match, and the simulator's own wait on
    top would count it twice)."""
    measured = settings.dagman_latency is None
    turnaround = settings.slot_turnaround if settings.slot_turnaround is not None else measured_turnaround(live)
    common = {"phi": settings.phi, "seed": settings.seed, "negotiation_interval": settings.negotiation_interval}
    workflows = latency_workflows(live) if measured else ()
    if workflows:
        return [_replayed_delays_row(policy, plan, settings, live, workflows, turnaround or 0.0),
                simulated_row(policy, plan, side=NO_LATENCY, **common)]
    latency = (measure_latency(live) if measured else settings.dagman_latency) or 0.0
    modelled = dict(common, slot_turnaround=turnaround or 0.0, machine_choice="slot-order")
    sim = simulated_row(policy, plan, dagman_latency=latency, **modelled)
    excess = start_excess(live, sim) if measured else 0.0
    samples = latency_samples(live, sim) if measured else ()
    starts = start_samples(live, sim, samples) if samples else ()
    if samples or excess > 0:
        sim = simulated_row(policy, plan, dagman_latency=latency + excess, latency_samples=samples,
                            start_samples=starts, **modelled)
    sim.extra["latency_samples"] = len(samples)
    sim.extra["decided_before_start"] = bool(starts)
    sim.extra["dagman_latency_s"] = latency + excess
    sim.extra["dagman_latency_from"] = "given" if not measured else "measured live"
    sim.extra["turn_s"] = latency
    sim.extra["start_excess_s"] = excess
    sim.extra["slot_turnaround_s"] = turnaround or 0.0
    sim.extra["slot_turnaround_from"] = "given" if settings.slot_turnaround is not None else "measured live"
    return [sim, simulated_row(policy, plan, side=NO_LATENCY, **common)]


def _replayed_delays_row(policy: str, plan: ReplayPlan, settings: ReplaySettings, live: Row,
                         workflows: tuple[Any, ...], turnaround: float) -> Row:
    sim = simulated_row(policy, plan, phi=settings.phi, seed=settings.seed, negotiation_interval=0.0,
                        slot_turnaround=turnaround, machine_choice="slot-order",
                        latency_workflows=workflows, latency_neighbours=settings.latency_neighbours)
    nodes = [node for _, entry in workflows for node in entry]
    sim.extra["latency_model"] = f"live workflows' delays, {settings.latency_neighbours} nearest in arrival"
    sim.extra["latency_workflows"] = len(workflows)
    sim.extra["latency_samples"] = len(nodes)
    sim.extra["decided_before_start"] = True
    sim.extra["dagman_latency_s"] = sum(n[1] for n in nodes) / len(nodes)
    sim.extra["dagman_latency_from"] = "measured live"
    sim.extra["turn_s"] = measure_latency(live) or 0.0
    sim.extra["start_excess_s"] = 0.0
    sim.extra["run_excess_s"] = sum(n[3] for n in nodes) / len(nodes)
    sim.extra["negotiation_interval_s"] = 0.0
    # finish − submit − task seconds would hold each run's excess too: not the simulated start wait
    sim.extra["start_wait_mean_s"] = None
    sim.extra["slot_turnaround_s"] = turnaround
    sim.extra["slot_turnaround_from"] = "given" if settings.slot_turnaround is not None else "measured live"
    return sim


def latency_workflows(live: Row) -> tuple[tuple[float, tuple[tuple[str, float, float, float], ...]], ...]:
    """Per live workflow with measured nodes: its arrival (the plan's,
    seconds of the replay = the simulator's clock) and per node ``(name,
    turn + start, start, run excess)`` — ``SimConfig.latency_workflows``.
    Empty for a live row rescored before the delays were kept."""
    kept = live.extra.get("node_delays") or []
    return tuple((float(arrival), tuple((str(n), float(lat), float(after), float(excess))
                                        for n, lat, after, excess in nodes))
                 for arrival, nodes in kept if nodes)


def latency_samples(live: Row, sim: Row) -> tuple[float, ...]:
    """Per live node, its turn plus its start minus the simulated row's mean
    start (≥ 0): what each task's latency is drawn from, so that the slow
    tail (a busy startd, a loser's removal) reaches as many simulated tasks
    as it reached live ones, rather than its mean reaching all of them."""
    both = (live.extra.get("dagman_latency") or {}).get("turn_plus_start") or []
    sim_start = sim.extra.get("start_wait_mean_s") or 0.0
    return tuple(max(0.0, float(v) - float(sim_start)) for v in both)


def start_samples(live: Row, sim: Row, samples: tuple[float, ...]) -> tuple[float, ...]:
    """Per latency sample, its part after the decision: the live node's
    start minus the simulated mean start (within 0 and the sample). Live,
    the PRE hook decides before the replicas wait to be matched; a task
    decided after the whole wait would find less slack, be judged late
    more often and get one replica. Empty when the live row did not keep
    each node's start (runs rescored before it did)."""
    begins = (live.extra.get("dagman_latency") or {}).get("start_of_turn_plus_start") or []
    if len(begins) != len(samples):
        return ()
    sim_start = float(sim.extra.get("start_wait_mean_s") or 0.0)
    return tuple(min(total, max(0.0, float(begin) - sim_start)) for begin, total in zip(begins, samples))


def start_excess(live: Row, sim: Row) -> float:
    """Mean live start minus the simulated row's mean start (s, ≥ 0; 0 when either is unknown)."""
    live_start = (live.extra.get("dagman_latency") or {}).get("start_mean_s")
    sim_start = sim.extra.get("start_wait_mean_s")
    if live_start is None or sim_start is None:
        return 0.0
    return max(0.0, float(live_start) - float(sim_start))


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON: {type(value).__name__}")
