"""What ``instrument`` is asked to do, and what it reports back.

:class:`InstrumentOptions` are the command's options (``--config FILE``
keys have the same names); :func:`checked_options` refuses the ones that
cannot make a run and fills in what was left to the defaults, before
anything is read or written. The live defaults are deliberately more
cautious than the simulator's: a shared pool's users pay for every replica
and every random decision.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from condor_rlrep.agent.config import DEFAULT_MAX_REPLICAS
from condor_rlrep.condor.submit import IDLE_ATTRIBUTE
from condor_rlrep.criticality import DEFAULT_PHI
from condor_rlrep.errors import InputError
from condor_rlrep.policyspec import PolicySpec, live_spec

__all__ = [
    "InstrumentOptions",
    "InstrumentResult",
    "checked_options",
    "check_max_replicas",
    "load_instrument_config",
    "load_power_table",
    "parse_version",
    "LIVE_MAX_REPLICAS",
    "LIVE_EPSILON_HIGH",
]

LIVE_MAX_REPLICAS = DEFAULT_MAX_REPLICAS
"""Replicas per node on a live pool unless asked (``--max-replicas``): the
agent's one default, :data:`condor_rlrep.agent.config.DEFAULT_MAX_REPLICAS`."""
LIVE_EPSILON_HIGH = 0.1
"""ε₁ of a store ``instrument`` creates (the paper's 0.5 is a simulation
setting: half of all decisions at random on a shared pool)."""


@dataclass
class InstrumentOptions:
    """What ``condor-rlrep instrument`` takes (``--config FILE`` keys have the same names)."""

    phi: float = DEFAULT_PHI
    store: str | None = None
    """Agent store: this, else ``$CONDOR_RLREP_STORE``, else the XDG default
    (:func:`condor_rlrep.store.location.resolve_store`), resolved once here."""
    estimates: str | None = None
    default_estimate: float | None = None
    max_replicas: int | None = None
    """At most this many replicas a node; None: K for ``fixed:K``, else
    :data:`LIVE_MAX_REPLICAS`."""
    policy: str | None = None
    """None: the default (:func:`condor_rlrep.instrument.agentstore.default_policy`):
    ``agent`` when the store's bandit has learnt something (``train``, or
    runs under ``agent``), else ``model:R`` (R: ``max_replicas``, else
    :data:`LIVE_MAX_REPLICAS`), the policy measured best on a fresh store
    (sim/results/default-policy). Given: ``agent`` (the store's strategy), a strategy name for a new store
    (``epsilon-greedy``, ``ucb1``, ``thompson``), the simulator's
    ``rl[-STRATEGY]:R`` (that strategy, at most R replicas), ``single`` or
    ``fixed:K``; ``idle-`` before any of them ranks the replicas' machines
    by how long their owners have been away (:mod:`condor_rlrep.policyspec`)."""
    criticality: str = "balanced"
    dagman_version: tuple[int, int, int] | None = None
    """The pool's DAGMan; None: detected (:mod:`condor_rlrep.condor.version`),
    else assumed to be 25.14.0 (and said so)."""
    tolerance: str | None = None
    """``node`` (TOLERANCE line) or ``config`` (CONFIG knob); default by version."""
    power_default_watts: float | None = None
    power_hosts: dict[str, float] = field(default_factory=dict)
    node_log: str | None = None
    hooks_bin: str | None = None
    reaper_interval: float = 0.2
    store_timeout: float = 10.0
    create_store: bool = True
    dagman_scan_interval: int | None = 1
    """``DAGMAN_USER_LOG_SCAN_INTERVAL`` for the copy (DAGMan's default is 5 s;
    every POST costs one scan more than a plain node). None: the pool's."""
    environ: Mapping[str, str] | None = None
    """Environment the store is resolved from (default: ``os.environ``)."""
    always_pre: bool = False
    """Run PRE (and POST) on every replicable node even under a fixed policy,
    which needs neither: each attempt then gets its journal entry with φ′
    (``status``/``report`` show φ′ and slack), at DAGMan's cost of a script
    cycle or two per node. False: instrument writes a fixed policy's
    descriptions itself and PRE runs only where it must."""
    idle_attribute: str = IDLE_ATTRIBUTE
    """The machine attribute ``idle-`` policies and ``model:R`` rank the
    replicas' machines by (seconds the owner has been away): the startd's
    ``KeyboardIdle``, or one the pool publishes instead (the replay pool's
    ``TraceKeyboardIdle``). A ClassAd attribute name."""


@dataclass
class InstrumentResult:
    dag: str
    context: str
    replicated: list[str]
    passed_through: dict[str, str]
    """Node → why it keeps its own definition."""
    store: str | None
    config: str | None
    hooks: dict[str, str]
    store_created: bool = False
    store_note: str = ""
    """How the store was found: created now / existing (what it holds)."""
    warnings: list[str] = field(default_factory=list)
    dagman_note: str = ""
    """The DAGMan version instrumented for, and how it was known."""
    without_pre: list[str] = field(default_factory=list)
    """Nodes of a fixed policy whose description instrument wrote: no PRE
    (and with one replica no POST either)."""
    without_post: list[str] = field(default_factory=list)
    """Of those, the nodes with no POST hook (one replica)."""
    pre_kept: dict[str, str] = field(default_factory=dict)
    """Nodes of a fixed policy that still run PRE, and why."""
    policy: str = ""
    """The policy the run uses: the one asked for, or the default's choice."""
    policy_note: str = ""
    """Why the default chose :attr:`policy`; empty when one was asked for."""


def load_power_table(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A power table file (``--power-table``, ``RLREP_POWER_TABLE``): TOML or
    JSON with ``default_watts`` and a ``hosts`` table of watts by host name
    (or the same inside a ``[power]`` table), as :class:`InstrumentOptions`
    fields."""
    spath = os.fspath(path)
    raw = _read_file(spath, "power table")
    from condor_rlrep.safeload import LoadError, load_json, load_toml

    try:
        text = raw.decode("utf-8")
        data = load_json(text) if spath.endswith(".json") else load_toml(text)
    except (LoadError, UnicodeDecodeError) as err:
        raise InputError(f"not a valid power table: {err}", path=spath) from err
    table = data.get("power", data) if isinstance(data, dict) else None
    if not isinstance(table, dict) or not set(table) <= {"default_watts", "hosts"} or not table:
        raise InputError("a power table has default_watts and/or a [hosts] table, nothing else", path=spath)
    out: dict[str, Any] = {}
    try:
        if "default_watts" in table:
            out["power_default_watts"] = _watts(table["default_watts"], "default_watts")
        if "hosts" in table:
            if not isinstance(table["hosts"], dict):
                raise InputError("hosts must be a table of host = watts")
            out["power_hosts"] = {str(k): _watts(v, f"hosts.{k}") for k, v in table["hosts"].items()}
    except InputError as err:
        raise InputError(err.message, path=spath) from None
    return out


def _read_file(spath: str, what: str) -> bytes:
    try:
        with open(spath, "rb") as handle:
            return handle.read()
    except OSError as err:
        raise InputError(f"cannot read {what}: {err.strerror or err}", path=spath) from err


def _watts(value: Any, key: str) -> float:
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InputError(f"{key} must be watts (a finite number >= 0), got {value!r}")
    return float(value)


def load_instrument_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Options from a TOML or JSON file (keys as :class:`InstrumentOptions`;
    a ``[power]`` table with ``default_watts`` and ``hosts``)."""
    spath = os.fspath(path)
    raw = _read_file(spath, "config")
    try:
        if spath.endswith(".json"):
            data = json.loads(raw)
        else:
            import tomllib

            data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"not valid {'JSON' if spath.endswith('.json') else 'TOML'}: {err}", path=spath) from err
    if not isinstance(data, dict):
        raise InputError("config must be a table/object", path=spath)
    power = data.pop("power", None)
    if isinstance(power, Mapping):
        if "default_watts" in power:
            data["power_default_watts"] = float(power["default_watts"])
        if "hosts" in power:
            data["power_hosts"] = {str(k): float(v) for k, v in dict(power["hosts"]).items()}
    known = set(InstrumentOptions.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"unknown option(s) {', '.join(unknown)}", path=spath)
    if "dagman_version" in data:
        data["dagman_version"] = parse_version(str(data["dagman_version"]))
    return data


def parse_version(text: str) -> tuple[int, int, int]:
    try:
        parts = [int(p) for p in text.strip().split(".")]
    except ValueError as err:
        raise InputError(f"bad HTCondor version {text!r} (expected e.g. 25.14.0)") from err
    parts = (parts + [0, 0, 0])[:3]
    return parts[0], parts[1], parts[2]


def checked_options(opts: InstrumentOptions) -> tuple[InstrumentOptions, PolicySpec]:
    """The options with ``max_replicas`` filled in (the R of ``rl:R`` or
    ``model:R``, K of ``fixed:K``, else :data:`LIVE_MAX_REPLICAS`), and the
    policy as a live spec; refuses a policy, φ, replica cap or criticality
    the hooks could not run with."""
    spec = _live_policy(opts)
    if spec.count is not None and spec.kind in ("rl", "model"):
        opts = replace(opts, max_replicas=spec.count)
    if not (isinstance(opts.phi, (int, float)) and -1.0 < opts.phi < float("inf")):
        raise InputError(f"the contingency phi must be a finite number > -1, got {opts.phi!r}")
    if opts.max_replicas is None:
        opts = replace(opts, max_replicas=spec.fixed_replicas or LIVE_MAX_REPLICAS)
    check_max_replicas(opts.max_replicas)
    if opts.criticality not in ("balanced", "current"):
        raise InputError(f"criticality must be 'balanced' or 'current', got {opts.criticality!r}")
    return opts, spec


def check_max_replicas(count: int) -> None:
    """Refuses a replica cap the hooks could not run with."""
    if not 1 <= count <= 100:
        raise InputError(f"--max-replicas must be within 1..100 (TOLERANCE 99% covers a <= 100), got {count}")


def _live_policy(opts: InstrumentOptions) -> PolicySpec:
    """``--policy`` as a live spec (:func:`condor_rlrep.policyspec.live_spec`);
    the R of ``rl:R`` must agree with an explicit ``--max-replicas``."""
    if opts.policy is None:
        raise InputError("no policy: instrument() fills in the default (agentstore.default_policy) first")
    spec = live_spec(opts.policy)
    if spec.kind == "model":  # its target and hi checked as the PRE hook will read them
        from condor_rlrep.survival.model import model_spec_of

        try:
            model_spec_of(spec)
        except ValueError as err:
            raise InputError(str(err)) from None
    if spec.kind in ("rl", "model") and spec.count is not None and opts.max_replicas not in (None, spec.count):
        raise InputError(f"--policy {spec.text} means at most {spec.count} replicas but --max-replicas is "
                         f"{opts.max_replicas}; give one of them")
    return spec
