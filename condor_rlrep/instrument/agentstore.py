"""The agent store a run's hooks will use, found (or created) once, at
``instrument`` time, and the policy ``instrument`` runs when none is named,
which depends on what that store has learnt (:func:`default_policy`).

The hooks never resolve a store themselves: under DAGMan their environment
is not the user's. So ``instrument`` resolves ``--store`` >
``$CONDOR_RLREP_STORE`` > the default once, checks that the user who
submits the DAG can write it, creates a missing one with the live defaults
(:data:`~condor_rlrep.instrument.options.LIVE_EPSILON_HIGH`), and writes
its spec into ``hooks.json``. This is the last check before anything is
written: a store that cannot be used leaves no run behind.

A server URL goes into the run without its password: the run's files are
readable by the pool user and end up in bug reports; the hooks find the
password the way libpq does.
"""

from __future__ import annotations

from condor_rlrep.errors import InputError
from condor_rlrep.instrument.options import LIVE_EPSILON_HIGH, InstrumentOptions
from condor_rlrep.policyspec import PolicySpec

__all__ = ["prepare_store", "default_policy", "DEFAULT_POLICY_HELP"]

DEFAULT_POLICY_HELP = ("the store's agent once its bandit has learnt anything (trained with `condor-rlrep train`, "
                       "or run under --policy agent), else model:R, R from --max-replicas (3): the best policy "
                       "on a fresh store in the simulator")
"""What ``instrument`` runs without ``--policy`` (:func:`default_policy`), in one phrase."""


def _model_empty(spec: PolicySpec) -> str:
    """What model:R does before any run is recorded: the prior rate, and
    from which estimate that asks for a second replica (docs/model.md §11)."""
    import math

    from condor_rlrep.survival.model import SurvivalModel, model_spec_of

    model = model_spec_of(spec)
    rate = SurvivalModel().prior_rate
    assert model is not None and rate > 0
    start = (f"for model:R's survival model, no runs yet: until POSTs record real runs it assumes the prior "
             f"eviction rate of 1 per {1 / rate / 3600:g} h")
    if model.max_replicas == 1 or model.target <= 0:
        return f"{start}, and runs 1 replica a task; no epsilon, no exploration"
    # one replica survives an estimate e with exp(-rate·e): below the target
    # (a second replica) once e > -ln(target)/rate
    minutes = -math.log(model.target) / rate / 60
    return (f"{start}, so from the first workflow a task estimated to run over {minutes:.0f} min (at φ′ below "
            f"{model.hi:g}) gets the replicas that lift its chance to finish to {model.target:g}, a shorter one "
            f"runs once until recorded runs show evictions; no epsilon, no exploration")


def default_policy(opts: InstrumentOptions) -> tuple[str, str]:
    """The policy ``instrument`` runs when none is asked for, and why:
    ``agent`` when the store exists and its bandit has learnt anything
    (rewards from ``train``, or decisions of runs under ``agent``), so a
    user who trained an agent keeps it; else ``model:R`` (R:
    ``max_replicas``, else the live default), which on a fresh store
    replicated best in the simulator (sim/results/default-policy: 69.8 %
    of workflows within P = 0.1 over 30 days vs 55.1 % for an empty
    agent's, 41.3 % for one replica). A store ``model:R`` has used records
    no bandit decisions, so it stays ``model:R``. A store that cannot be
    read leaves the question to :func:`prepare_store`, which says why."""
    from condor_rlrep.errors import StoreError
    from condor_rlrep.instrument.options import LIVE_MAX_REPLICAS, check_max_replicas
    from condor_rlrep.store.location import open_store, resolve_store, store_exists

    count = LIVE_MAX_REPLICAS if opts.max_replicas is None else opts.max_replicas
    if isinstance(count, bool) or not isinstance(count, int):  # a config file's 3.0 would spell model:3.0
        raise InputError(f"max_replicas must be a whole number within 1..100, got {count!r}")
    check_max_replicas(count)
    model = f"model:{count}"
    try:
        path = resolve_store(opts.store, opts.environ)
        if not store_exists(path):
            return model, "a new store"
        with open_store(path) as store:
            stats = store.stats()
    except StoreError:
        return model, "the store could not be read"
    if stats.rewards_seen or stats.decisions:
        return "agent", (f"the store's {stats.strategy} agent has learnt: {stats.rewards_seen} reward(s), "
                         f"{stats.decisions} decision(s); a store whose agent has learnt nothing gets {model}")
    return model, (f"the store's agent has learnt nothing; --policy agent runs its {stats.strategy} bandit")


def _untried(strategy: str, epsilon: float) -> str:
    """What an agent that has learnt nothing does (docs/model.md §10)."""
    if strategy == "epsilon-greedy":
        return (f"nothing learnt yet: untried counts tie and ties go to fewer replicas, so it runs 1 replica "
                f"except when it explores ({epsilon:.0%} of decisions, uniformly among the counts)")
    if strategy == "ucb1":
        return "nothing learnt yet: it tries each count once per state, fewest replicas first"
    return "nothing learnt yet: it samples every count from the same prior, so it picks one at random"


def prepare_store(opts: InstrumentOptions, spec: PolicySpec) -> tuple[str | None, bool, str]:
    """The store the hooks will use (an absolute path, or a server URL without
    its password), whether it was created now, and a line about it for the user.

    Fixed policies record nothing: no store unless one is named. An agent
    policy resolves ``--store`` > ``$CONDOR_RLREP_STORE`` > the default once,
    creates a missing store with the live defaults, and refuses one this user
    cannot write (the hooks run as the user who submits the DAG).
    """
    from condor_rlrep.errors import StoreError
    from condor_rlrep.store.location import (
        create_store, describe_store, has_password, open_store, resolve_store, store_exists, unwritable_reason,
    )

    try:
        path = resolve_store(opts.store, opts.environ) if opts.store or spec.fixed_replicas is None else None
    except StoreError as err:
        raise InputError(f"agent store unusable: {err}") from err
    # the hooks find the password the way libpq does, in ~/.pgpass or a
    # service file of the user they run as
    run_spec = describe_store(path) if path is not None else None
    secret = (" The URL's password is not written into the run: the hooks, run as the user who submits"
              " the DAG, need it in that user's ~/.pgpass or a service file."
              if path is not None and has_password(path) else "")
    if spec.fixed_replicas is not None:
        if path is None:
            return None, False, "none (a fixed policy records nothing)"
        return run_spec, False, "named, unused (a fixed policy records nothing)"
    assert path is not None and run_spec is not None
    problem = unwritable_reason(path)
    if problem is not None:
        raise InputError(f"agent store unusable: {problem}; the hooks run as the user who submits the DAG", path=path)
    try:
        exists = store_exists(path)
    except StoreError as err:
        raise InputError(f"agent store unusable: {_without(err, run_spec)}", path=run_spec) from err
    if not exists:
        if not opts.create_store:
            raise InputError("no agent store here (create one with `condor-rlrep agent init` or `train`)", path=run_spec)
        from condor_rlrep.agent.config import AgentConfig

        strategy = spec.strategy or "epsilon-greedy"
        config = AgentConfig(max_replicas=opts.max_replicas, strategy=strategy,  # type: ignore[arg-type]
                             epsilon_high=LIVE_EPSILON_HIGH)
        try:
            create_store(path, config).close()
        except StoreError as err:
            raise InputError(f"agent store unusable: {_without(err, run_spec)}", path=run_spec) from err
        if spec.kind == "model":
            return run_spec, True, f"created now ({_model_empty(spec)}){secret}"
        return run_spec, True, (f"created now ({strategy}, 1..{opts.max_replicas} replicas, "
                                f"epsilon {LIVE_EPSILON_HIGH:g} then {config.epsilon_low:g}; "
                                f"{_untried(strategy, LIVE_EPSILON_HIGH)}){secret}")
    try:
        with open_store(path) as store:
            config, stats = store.config, store.stats()
            cells = store.survival_cells() if spec.kind == "model" else []
    except StoreError as err:
        raise InputError(f"agent store unusable: {_without(err, run_spec)}", path=run_spec) from err
    if spec.kind == "model":
        exposure = sum(cell[2] for cell in cells)
        if not exposure:
            return run_spec, False, f"existing ({_model_empty(spec)}){secret}"
        evictions = sum(cell[3] for cell in cells)
        return run_spec, False, (f"existing (model:R's survival model: {exposure / 3600:.4g} h of runs, "
                                 f"{evictions:g} eviction(s)){secret}")
    note = f"existing ({config.strategy}, {stats.rewards_seen} reward(s) learnt, {stats.pending} pending"
    if stats.rewards_seen == 0:
        note += f"; {_untried(config.strategy, config.epsilon_high)}"
    if config.max_replicas > opts.max_replicas:
        note += f"; its actions are 1..{config.max_replicas} replicas, capped at {opts.max_replicas} per node"
    return run_spec, False, note + ")" + secret


def _without(err: Exception, location: str | None) -> str:
    """The store's message without its own leading location: the error line
    names the store once (``URL: agent store unusable: cannot connect …``)."""
    text = str(err)
    prefix = f"{location}: " if location else ""
    return text[len(prefix):] if prefix and text.startswith(prefix) else text
