"""POST's bookkeeping: what a node attempt taught, into the store.

The outcome is judged by :func:`condor_rlrep.outcome.evaluate` on the
replicas rebuilt from the node log (the simulator's function, so that live
and simulated rewards mean the same), and then

* under an agent policy, recorded against the decision PRE made
  (``record_outcome``: idempotent, a rerun POST counts once), but only when
  the store's decision of that id is still this node's (a store replaced
  since PRE restarts its ids);
* under ``model:R``, the attempt's runs go into the store's survival model
  (:mod:`condor_rlrep.survival.live`; idempotent per node attempt);
* under a fixed policy, nothing is recorded (the summary says what ran).

A store that cannot take them gets them later, from the spool
(:mod:`.spool`); every POST that reaches the store flushes what waits
there. Bookkeeping never changes the node's verdict: it returns a line for
the hook log and never raises for a store problem.
"""

from __future__ import annotations

from typing import Any

from condor_rlrep.hooks.failopen import describe
from condor_rlrep.hooks.hookstore import open_hook_store
from condor_rlrep.hooks.spool import flush_spool, spool_model, spool_outcome

__all__ = ["record_attempt", "decision_identity"]


def record_attempt(context: str, settings: Any, state: dict[str, Any], history: Any, *,
                   accepted: bool | None = None) -> str:
    """Judge and record the attempt PRE decided (``state``) from its replicas
    (``history``) and the node's final verdict (``accepted``: the user's
    POST's, None when the replicas alone decide); a summary for the hook log
    ("" for a node run unchanged)."""
    if state.get("mode") != "replicas":
        return ""
    from condor_rlrep.outcome import evaluate

    decision_id = state.get("decision_id")
    # s_t is when the pool saw the cluster (its submit event), so that PRE,
    # DAGMan's submit cycle and the hooks are not scored against the task;
    # PRE's clock only when the log has no submit event for it.
    submit_time = float(history.submit_time if history.submit_time is not None else state["submit_time"])
    removed = sum(1 for inv in history.invocations if inv.ended_by == "removed")
    if decision_id is None and "phi_prime" not in state:
        # no PRE ran (instrument wrote the node's description): no φ′ to judge the task by, and nothing to record
        return (f"s_t={submit_time:.0f} replicas={int(state['replicas'])} evictions={history.evictions} "
                f"removed={removed} winner={history.winner} (fixed policy, no PRE: nothing to record)")
    outcome = evaluate(
        history.invocations,
        submit_time=submit_time,
        phi_prime=float(state["phi_prime"]),
        estimate=float(state["estimate"]),
        replicas=int(state["replicas"]),
        power=settings.power_table(),
        accepted=accepted,
    )
    summary = (
        f"s_t={submit_time:.0f} replicas={int(state['replicas'])} evictions={history.evictions} removed={removed} "
        f"success={outcome.success} completed={outcome.completed} reward={outcome.reward:.4g} "
        f"sigma={outcome.sigma:.4g} good={outcome.good_energy_j:.4g}J bad={outcome.bad_energy_j:.4g}J"
    )
    if decision_id is None and state.get("model"):
        return f"{summary}; {_record_model(context, settings, state, history)}"
    if decision_id is None and state.get("chosen") == "forced":
        return summary + " (forced, phi'<=0: nothing learnt)"
    if decision_id is None:
        return summary + " (fixed policy: nothing to record)"
    from dataclasses import asdict

    store_path = str(settings.store or "")
    try:
        with open_hook_store(context, settings) as store:
            failure_reward = store.config.failure_reward
            if failure_reward != outcome.reward and not outcome.success:
                outcome = evaluate(
                    history.invocations, submit_time=submit_time,
                    phi_prime=float(state["phi_prime"]), estimate=float(state["estimate"]),
                    replicas=int(state["replicas"]), power=settings.power_table(), failure_reward=failure_reward,
                    accepted=accepted,
                )
            identity = decision_identity(settings, state)
            held = store.decision(int(decision_id)).context
            if any(held.get(key) != value for key, value in identity.items()):
                # the store was replaced since PRE (ids restart): that id is another decision
                return (f"{summary}; outcome NOT recorded: decision {decision_id} of {store_path} is not this "
                        f"node's (it is {held.get('node')!r} of run {held.get('run')!r}; store replaced since PRE?)")
            fresh = store.record_outcome(int(decision_id), outcome)
            flushed, kept = flush_spool(context, store, store_path)
    except Exception as err:
        spool_outcome(context, int(decision_id), store_path, decision_identity(settings, state), asdict(outcome))
        return f"{summary}; decision {decision_id} spooled ({describe(err)})"
    note = "recorded" if fresh else "already recorded"
    if flushed:
        note += f", {flushed} spooled outcome(s)/model update(s) flushed"
    if kept:
        note += f"; {'; '.join(kept[:3])}"
    return f"{summary}; decision {decision_id} {note}"


def _record_model(context: str, settings: Any, state: dict[str, Any], history: Any) -> str:
    """model:R: the attempt's runs into the store's survival model, or into
    the spool when the store cannot take them (never raises)."""
    from condor_rlrep.condor.joblog import keyboard_idle_from
    from condor_rlrep.survival import live as model_path

    try:
        key = model_path.record_key(str(settings.dag), state.get("run_id"), str(state.get("node")),
                                    state.get("retry"), history.cluster)
        model = state["model"]
        idle, note = None, ""
        if model.get("job_log"):
            try:
                idle = keyboard_idle_from(str(model["job_log"]), int(model.get("job_log_offset") or 0),
                                          history.cluster)
            except Exception as err:  # the runs still count, their idle bucket unknown
                note = f" (job log unreadable: {describe(err)})"
        runs = model_path.runs_of(history.invocations, {**history.keyboard_idle, **(idle or {})})
    except Exception as err:
        return f"model NOT updated: {describe(err)}"
    if not runs:
        return "model: no run to learn from" + note
    from condor_rlrep.errors import StaleExposureError

    store_spec = str(settings.store or "")
    try:
        with open_hook_store(context, settings) as store:
            done = model_path.record_runs(store, key, runs) + note
            flushed, kept = flush_spool(context, store, store_spec)
    except StaleExposureError as err:
        # the store will refuse these runs whenever they come: a spool entry would only wait forever
        return f"model NOT updated: {describe(err)}"
    except Exception as err:
        try:
            name = spool_model(context, store_spec, key, runs, describe(err))
        except Exception as spool_err:
            return f"model NOT updated: {describe(err)}; NOT spooled either: {describe(spool_err)}"
        return f"model update spooled in spool/{name} ({describe(err)}){note}"
    if flushed:
        done += f"; {flushed} spooled update(s) flushed"
    if kept:
        done += f"; {'; '.join(kept[:3])}"
    return done


def decision_identity(settings: Any, state: dict[str, Any]) -> dict[str, Any]:
    """What PRE told the store about the decision (its ``context``): a spooled
    outcome is flushed only into a store whose decision of that id says the
    same, so that a store replaced since (ids restart) is never given it."""
    return {"dag": settings.dag, "node": state.get("node"), "run": state.get("run_id"), "retry": state.get("retry")}
