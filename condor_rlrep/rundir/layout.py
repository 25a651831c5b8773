"""Where an instrumented DAG keeps its hook files, and the hooks' settings.

``instrument`` writes ``OUT.dag`` and, beside it, the directory
``OUT.dag.rlrep/`` (the *context*):

* ``hooks.json``        – :class:`HookSettings` (store, φ, power table …)
* ``hooks.log``         – the per-DAG hook log (:mod:`condor_rlrep.hooks.hooklog`)
* ``nodes/<n>.sub``     – the node's submit file: the user's description as
  instrument copied it (mode kept), rewritten by PRE each attempt; for a
  fixed policy the replica description, written by instrument (no PRE)
* ``nodes/<n>.orig.sub``– an inline / SUBMIT-DESCRIPTION body, written out
* ``nodes/<n>.vars.json``– the node's VARS (PRE expands file names with them)
* ``nodes/<n>.fixed.json``– for a fixed policy's node that runs without PRE
  (instrument wrote its description): the node state PRE would have written
* ``replicable.txt``     – the nodes that run replicas, one per line (the reaper)
* ``state/<n>.json``    – what PRE decided for the node's current attempt (0600,
  checked by :func:`.runstate.check_node_state` when read)
* ``run.json``          – the DAG run: s(W) and the DAGMan ids that shared it
* ``cache/``            – graph + plan per DAG file content (:mod:`.plan`)
* ``spool/``            – outcomes and model updates not yet in the store (store
  unavailable), each with the store (and decision identity, or node attempt key)
  it belongs to (:mod:`condor_rlrep.hooks.spool`)
* ``reaper.sub``        – the SERVICE node running the reaper
* ``jobstate.log``      – DAGMan's JOBSTATE_LOG, when the user's DAG has one;
  ``jobstate.json``/``.lock`` where its translation into the user's file is
  (:mod:`condor_rlrep.rundir.jobstatelog`)

Node names become file names through :func:`node_file_stem` (injective).
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = [
    "CONTEXT_SUFFIX",
    "SETTINGS_FILE",
    "SETTINGS_VERSION",
    "HookSettings",
    "context_dir_for",
    "node_file_stem",
    "node_submit_path",
    "node_original_path",
    "node_state_path",
    "node_vars_path",
    "node_fixed_state_path",
    "REPLICABLE_FILE",
    "REAPER_NODE",
]

CONTEXT_SUFFIX = ".rlrep"
SETTINGS_FILE = "hooks.json"
SETTINGS_VERSION = 3
"""2: ``store`` is the absolute store resolved by instrument (never from the hook's environment).
3: hook argv in sections (:mod:`condor_rlrep.hooks.argv`), the node's submit file written by instrument."""

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")


def context_dir_for(dag_path: str | os.PathLike[str]) -> str:
    """``/abs/OUT.dag`` → ``/abs/OUT.dag.rlrep``."""
    return os.path.abspath(os.fspath(dag_path)) + CONTEXT_SUFFIX


def node_file_stem(node: str) -> str:
    """A file-name-safe, injective form of a node name (``%XX`` escapes;
    a leading ``.`` is escaped so no stem is hidden or ``..``)."""
    out = []
    for index, char in enumerate(node):
        if char in _SAFE and not (index == 0 and char == "."):
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out)


def node_submit_path(context: str, node: str) -> str:
    return os.path.join(context, "nodes", node_file_stem(node) + ".sub")


def node_original_path(context: str, node: str) -> str:
    return os.path.join(context, "nodes", node_file_stem(node) + ".orig.sub")


def node_fixed_state_path(context: str, node: str) -> str:
    """What PRE would have told POST, for a fixed-policy node instrument wrote the description of (no PRE)."""
    return os.path.join(context, "nodes", node_file_stem(node) + ".fixed.json")


def node_vars_path(context: str, node: str) -> str:
    return os.path.join(context, "nodes", node_file_stem(node) + ".vars.json")


REPLICABLE_FILE = "replicable.txt"
REAPER_NODE = "RLREP_REAPER"
"""The SERVICE node instrument adds to run the reaper (``reaper.sub``); a
``_`` is appended while the user's DAG has a node of that name."""


def node_state_path(context: str, node: str) -> str:
    return os.path.join(context, "state", node_file_stem(node) + ".json")


class HookSettings:
    """The settings every hook of one instrumented DAG shares (``hooks.json``).

    Plain attributes with defaults; unknown keys in the file are kept (a
    newer ``instrument`` may add some) and ignored.
    """

    DEFAULTS: dict[str, Any] = {
        "version": SETTINGS_VERSION,
        "dag": None,              # the instrumented DAG (absolute)
        "source_dag": None,       # the user's DAG it was made from
        "node_log": None,         # DAGMan's node log (default <dag>.nodes.log)
        "store": None,            # agent store resolved by instrument (absolute); None: the policy needs none
        "phi": 0.5,               # criticality.DEFAULT_PHI; the user's contingency φ: deadline (1+φ)·CR(W) + s(W)
        "criticality": "balanced",  # φ′ ("balanced") or φ″ ("current")
        "max_replicas": 3,        # replicas per node at most; also capped at 100 (TOLERANCE 99%)
        "policy": "agent",        # [idle-]agent, [idle-]single, [idle-]fixed:K or model:R[,…] (condor_rlrep.policyspec)
        "estimates": None,        # sidecar estimates file (absolute)
        "default_estimate": None,
        "power_default_watts": None,  # None: condor_rlrep.energy.DEFAULT_ACTIVE_WATTS
        "power_hosts": {},
        "tolerance": "node",      # "node" (TOLERANCE 99% WAIT) or "config" (DAGMan knob)
        "allow_any_node_name_characters": False,
        "fixed_without_pre": {},  # node -> K: a fixed policy's node whose description instrument wrote (no PRE)
        "without_post": [],       # nodes with no POST script at all (one replica): DAGMan's verdict is the job's
        "jobstate_log": None,     # the user's JOBSTATE_LOG (absolute); DAGMan writes <ctx>/jobstate.log (rundir/jobstatelog.py)
        "reaper_node": None,      # the reaper's SERVICE node name (None: no reaper)
        "user_scripts": {},       # "PRE"/"POST" -> nodes with a script of the user's of that kind
        "idle_attribute": "KeyboardIdle",  # the machine attribute idle- policies and model:R rank by (condor/submit.py)
    }

    def __init__(self, **values: Any):
        data = dict(self.DEFAULTS)
        data.update(values)
        self.__dict__.update(data)

    def to_json(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items()}

    @classmethod
    def load(cls, context: str) -> HookSettings:
        """Read ``<context>/hooks.json``; raises OSError/ValueError when unusable."""
        path = os.path.join(context, SETTINGS_FILE)
        with open(path, encoding="utf-8") as handle:
            try:
                data = json.load(handle)
            except ValueError as err:
                raise ValueError(f"{path}: hook settings are not valid JSON ({err})") from err
        if not isinstance(data, dict):
            raise ValueError(f"{path}: not a JSON object")
        if data.get("version") != SETTINGS_VERSION:
            raise ValueError(
                f"{path}: settings version {data.get('version')!r}, expected {SETTINGS_VERSION} "
                "(written by another condor-rlrep: re-run instrument)"
            )
        return cls(**data)

    def save(self, context: str) -> str:
        from condor_rlrep.atomic import write_atomic

        path = os.path.join(context, SETTINGS_FILE)
        write_atomic(path, json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n", mode=0o600)
        return path

    def node_log_path(self) -> str:
        if self.node_log:
            return str(self.node_log)
        return str(self.dag) + ".nodes.log"

    def power_table(self) -> Any:
        from condor_rlrep.energy import DEFAULT_ACTIVE_WATTS, PowerTable

        default = DEFAULT_ACTIVE_WATTS if self.power_default_watts is None else float(self.power_default_watts)
        return PowerTable(default_watts=default, hosts={str(k): float(v) for k, v in dict(self.power_hosts).items()})

    def store_path(self) -> str:
        """The store instrument resolved. The hook's own environment is never
        consulted: under DAGMan it is not the user's (docs/dagman.md §4.1)."""
        if not self.store:
            raise ValueError("hooks.json names no agent store (instrumented for a fixed policy?)")
        return str(self.store)

    def policy_spec(self) -> Any:
        """The stored policy as a :class:`condor_rlrep.policyspec.PolicySpec`
        (``[idle-]agent``, ``[idle-]single``, ``[idle-]fixed:K`` or ``model:R[,…]``)."""
        from condor_rlrep.policyspec import live_spec

        return live_spec(str(self.policy))

    def fixed_replicas(self) -> int | None:
        """K of a ``fixed:K`` policy (``single`` = 1), else None (the agent decides)."""
        return self.policy_spec().fixed_replicas

    def model_spec(self) -> Any:
        """The :class:`~condor_rlrep.survival.model.ModelSpec` of a ``model:R`` policy, else None."""
        from condor_rlrep.survival.model import model_spec_of

        return model_spec_of(self.policy_spec())



BROKER_SOCKET = "store.sock"
#: sun_path holds 108 bytes on Linux (104 on the BSDs) with its NUL.
_MAX_SOCKET_PATH = 100


def broker_socket(context: str | None) -> str | None:
    """Where the run's store broker (:mod:`condor_rlrep.store.broker`) listens;
    None when the path is too long for a Unix socket (the hooks then open the
    store themselves)."""
    if not context:
        return None
    path = os.path.join(os.path.abspath(context), BROKER_SOCKET)
    return path if len(os.fsencode(path)) <= _MAX_SOCKET_PATH else None
