"""Replica policy specs: the one grammar of ``--policy`` (simulate, sweep,
instrument) and which of its policies can run on a live pool.

::

    single                      every task once
    fixed:K                     every task K times
    rl:R, rl-STRATEGY:R         the bandit agent, 1 … R (STRATEGY: epsilon-greedy, ucb1, thompson)
    oracle:R                    the simulator's clairvoyant bound
    model:R[,target=T,hi=H,prior=E]
                                survival-model replication (issue 14); E: a new
                                model's evictions per hour (default 1/8)
    react:R, model-react:R[,…]  reactive replication (issue 14)
    linucb:R[,alpha=A,lam=L,forget=G], lints:R[,…]
                                contextual bandits (issue 14; simulator only)
    idle-BASE                   BASE's count, placed on the machines idle longest
                                (BASE: single, fixed:K, rl…:R; live also agent / a strategy)

Live only (``instrument``): ``agent`` (the store's strategy), a bare strategy
name or ``rl[-STRATEGY]`` without R (that strategy for a new store, R from
``--max-replicas``).

This module only parses: the simulator builds its policy objects from a
:class:`PolicySpec` (:mod:`condor_rlrep.sim.policies`), ``instrument``
turns one into hook settings, and the PRE hook reads the stored spec back
(:meth:`condor_rlrep.rundir.layout.HookSettings.policy_spec`).

The seam for a new live policy: delete its kind from :data:`NOT_LIVE`, and
give the PRE hook a branch for its ``kind`` (``instrument`` stores
:attr:`PolicySpec.hook_policy` and needs nothing else). Idle placement
(:attr:`PolicySpec.prefers_idle`) comes with it for the model kinds, as in
the simulator.

No dataclasses, no imports beyond ``re``: the PRE hook parses its spec on
every call.
"""

from __future__ import annotations

import re

from condor_rlrep.errors import InputError

__all__ = [
    "PolicySpec",
    "parse_spec",
    "live_spec",
    "NOT_LIVE",
    "STRATEGIES",
    "CONTEXTUAL_KINDS",
    "IDLE_PREFIX",
    "MAX_LIVE_REPLICAS",
]

STRATEGIES = ("epsilon-greedy", "ucb1", "thompson")
IDLE_PREFIX = "idle-"
MAX_LIVE_REPLICAS = 100
"""``TOLERANCE 99%`` lets one of up to 100 replicas decide the node."""

NOT_LIVE = {
    "oracle": "is the simulator's clairvoyant bound (it knows every future login)",
    "react": "is simulator-only (held spare replicas released by the reaper are not built live)",
    "model-react": "is simulator-only (held spare replicas released by the reaper are not built live)",
    "linucb": "is simulator-only (the contextual bandit's model is not stored or read by the hooks)",
    "lints": "is simulator-only (the contextual bandit's model is not stored or read by the hooks)",
}
"""Kinds ``instrument`` refuses, with why (the one line it prints)."""

CONTEXTUAL_KINDS = ("linucb", "lints")
"""Contextual bandits over replica counts (:mod:`condor_rlrep.sim.contextual`)."""
_MODEL_KINDS = ("model", "model-react", "react") + CONTEXTUAL_KINDS
_OPTIONS = {"model": ("target", "hi", "prior"), "model-react": ("target", "hi", "prior"), "react": (),
            "linucb": ("alpha", "lam", "forget"), "lints": ("alpha", "lam", "forget")}
_BASE = re.compile(
    r"^(?:(single|agent)|(fixed|oracle):(\d+)|rl(?:-([a-z0-9-]+))?(?::(\d+))?|(epsilon-greedy|ucb1|thompson)"
    r"|(model|model-react|react|linucb|lints):(\d+)((?:,[^,]*)*))$"
)
_LIVE_EXAMPLES = "agent, rl:R, single, fixed:K, idle-<one of them>, or model:R[,target=T,hi=H,prior=E]"
_SIM_EXAMPLES = ("single, fixed:K, rl:R, rl-ucb1:R, rl-thompson:R, oracle:R, idle-<policy>, "
                 "model:R[,target=T,hi=H,prior=E], react:R, model-react:R, linucb:R[,alpha=A,lam=L,forget=G] "
                 "or lints:R[,…]")


class PolicySpec:
    """A parsed ``--policy``.

    ``kind``: ``single``, ``fixed``, ``rl`` (the agent; ``agent`` and bare
    strategies parse as ``rl`` with ``count`` None), ``oracle``, ``model``,
    ``react``, ``model-react``, ``linucb`` or ``lints``. ``count``: K or R (None: not given).
    ``strategy``: the agent's as written, None when not (the store's own, the
    simulator's configured one; a new live store: epsilon-greedy). ``options``: the
    model and contextual kinds' ``(key, value)`` pairs. ``idle``: ``idle-`` placement.
    """

    __slots__ = ("text", "kind", "count", "strategy", "options", "idle")

    def __init__(self, text: str, kind: str, count: int | None, strategy: str | None = None,
                 options: tuple[tuple[str, float], ...] = (), idle: bool = False):
        self.text = text
        self.kind = kind
        self.count = count
        self.strategy = strategy
        self.options = options
        self.idle = idle

    def __repr__(self) -> str:
        return f"PolicySpec({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PolicySpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[object, ...]:
        return (self.kind, self.count, self.strategy, self.options, self.idle)

    @property
    def base(self) -> PolicySpec:
        """The spec without its ``idle-``."""
        if not self.idle:
            return self
        return PolicySpec(self.text[len(IDLE_PREFIX):], self.kind, self.count, self.strategy, self.options)

    @property
    def fixed_replicas(self) -> int | None:
        """K of ``single`` (1) and ``fixed:K`` (and their ``idle-``), else None."""
        if self.kind == "single":
            return 1
        return self.count if self.kind == "fixed" else None

    @property
    def prefers_idle(self) -> bool:
        """Whether replicas go to the machines idle longest: ``idle-…``, the
        model kinds and the contextual bandits (which place like that in the
        simulator)."""
        return self.idle or self.kind in _MODEL_KINDS

    @property
    def depends_on_phi(self) -> bool:
        """Whether the run changes with φ: single, fixed, oracle and react
        never look at φ′ (nor does their idle placement)."""
        return self.kind not in ("single", "fixed", "oracle", "react")

    @property
    def hook_policy(self) -> str:
        """What ``hooks.json`` stores for a live spec: ``[idle-]agent``,
        ``[idle-]single``, ``[idle-]fixed:K`` (the agent's strategy and R
        live in the store and ``max_replicas``), the spec itself otherwise."""
        prefix = IDLE_PREFIX if self.idle else ""
        if self.kind == "rl":
            return prefix + "agent"
        if self.kind == "single":
            return prefix + "single"
        if self.kind == "fixed":
            return f"{prefix}fixed:{self.count}"
        return self.text


def parse_spec(text: str, *, live: bool = False) -> PolicySpec:
    """The spec ``text`` names (the module docstring); :class:`InputError`
    naming it when it is none. ``live``: the live spellings (``agent``, a
    bare strategy, ``rl`` without R) are allowed; the simulator needs R.
    Whether the policy can run live is :func:`live_spec`'s question."""
    if not isinstance(text, str):
        raise InputError(f"policy {text!r} is not a name")
    spec = text.strip()
    idle = spec.startswith(IDLE_PREFIX)
    body = spec[len(IDLE_PREFIX):] if idle else spec
    match = _BASE.match(body)
    if match is None:
        raise InputError(f"unknown policy {spec!r} (expected {_LIVE_EXAMPLES if live else _SIM_EXAMPLES})")
    plain, counted, k, rl_strategy, rl_count, bare, model, r, options = match.groups()
    if plain == "single":
        parsed = PolicySpec(spec, "single", 1, idle=idle)
    elif plain == "agent" or bare is not None:
        if not live:
            raise InputError(f"policy {spec!r} is instrument's spelling; the simulator takes rl:R or rl-{bare or 'ucb1'}:R")
        parsed = PolicySpec(spec, "rl", None, bare, idle=idle)
    elif counted is not None:
        parsed = PolicySpec(spec, counted, _count(spec, k, live), idle=idle)
    elif model is not None:
        if idle:
            raise InputError(f"policy {spec!r}: {model} already places on idle machines (drop idle-)")
        parsed = PolicySpec(spec, model, _count(spec, r, live), options=_model_options(spec, model, options))
    else:
        if rl_strategy is not None and rl_strategy not in STRATEGIES:
            raise InputError(f"policy {spec!r}: unknown strategy {rl_strategy!r} (expected {', '.join(STRATEGIES)})")
        if rl_count is None and not live:
            raise InputError(f"policy {spec!r} needs a replica count >= 1, e.g. rl:3")
        count = None if rl_count is None else _count(spec, rl_count, live)
        parsed = PolicySpec(spec, "rl", count, rl_strategy, idle=idle)
    return parsed


def live_spec(text: str) -> PolicySpec:
    """:func:`parse_spec` for ``instrument``: refuses, in one line naming
    it, a policy that cannot run on a live pool (:data:`NOT_LIVE`)."""
    spec = parse_spec(text, live=True)
    why = NOT_LIVE.get(spec.kind)
    if why is not None:
        raise InputError(f"policy {spec.text!r} {why}; on a pool use {_LIVE_EXAMPLES}")
    return spec


def _count(spec: str, digits: str, live: bool) -> int:
    count = int(digits)
    if count < 1:
        raise InputError(f"policy {spec!r} needs a replica count >= 1" + (f" (1..{MAX_LIVE_REPLICAS} live)" if live else ""))
    if live and count > MAX_LIVE_REPLICAS:
        raise InputError(f"policy {spec!r}: the count must be within 1..{MAX_LIVE_REPLICAS} on a pool "
                         "(TOLERANCE 99% covers at most 100 replicas)")
    return count


def _model_options(spec: str, kind: str, options: str) -> tuple[tuple[str, float], ...]:
    allowed = _OPTIONS[kind]
    found: dict[str, float] = {}
    for item in filter(None, options.split(",")):
        key, _, value = item.partition("=")
        if not allowed:
            raise InputError(f"policy {spec!r}: {kind} takes no options")
        if key not in allowed:
            expected = ", ".join(allowed[:-1]) + " or " + allowed[-1]
            raise InputError(f"policy {spec!r}: unknown option {key!r} (expected {expected})")
        try:
            found[key] = float(value)
        except ValueError:
            raise InputError(f"policy {spec!r}: {key} must be a number, got {value!r}") from None
    return tuple(sorted(found.items()))
