"""Write an instrumented copy of a DAG that runs replicas through the hooks.

``instrument(IN.dag, OUT.dag)`` never modifies the user's files. It writes
``OUT.dag`` and the context directory ``OUT.dag.rlrep/`` (layout in
:mod:`condor_rlrep.rundir.layout`):

* every replicable node (a JOB that is not NOOP/DONE and whose description
  queues one proc) gets ``SCRIPT PRE``/``SCRIPT POST`` lines calling the
  installed ``rlrep-pre``/``rlrep-post`` by absolute path (DAGMan does no PATH
  lookup) with only whole-token macros valid for that script type; a user's
  own PRE/POST is kept after a ``--`` and run by our hook (DEFER/DEBUG kept);
* its JOB points at ``OUT.dag.rlrep/nodes/<node>.sub``, which PRE rewrites on
  every attempt; inline and SUBMIT-DESCRIPTION bodies are written out to
  ``nodes/<node>.orig.sub`` for PRE to read;
* ``TOLERANCE <node> 99% WAIT`` (⌊0.99·a⌋ = a − 1 failing replicas
  tolerated; HTCondor ≥ 25.14), or with ``tolerance="config"`` a CONFIG file
  setting ``DAGMAN_NODE_JOB_FAILURE_TOLERANCE = R − 1`` (a user CONFIG is
  merged into the copy);
* a SERVICE node (local universe) runs ``rlrep-reaper``.

A fixed policy (``fixed:K``, ``single``) decides nothing at run time, so
its nodes run without PRE: instrument writes each node's replica
description once, with PRE's own function
(:func:`condor_rlrep.hooks.nodesubmit.node_description`), and for K > 1
the state POST reads (``nodes/<node>.fixed.json``). With K = 1 there is
no POST and no reaper either: one proc, whose result DAGMan's own verdict
is. PRE stays where it is needed: a node with its own PRE script (which may
write the description DAGMan reads after it), or whose per-replica file
names depend on the attempt (``$(RETRY)``, ``$(DAGManJobId)``).
``always_pre`` wires every node as the agent's are.

NOOP, DONE, FINAL, SERVICE, PROVISIONER and SUBDAG nodes, and nodes whose
description queues several procs or uses itemdata, keep their definition.
A sub-DAG is instrumented by running ``instrument`` on its own DAG file.

Relative paths: DAGMan resolves a DAG's relative paths against its working
directory; we assume the user runs the original from the DAG file's
directory, and write every node with an absolute ``DIR`` so that the copy
behaves the same wherever ``condor_submit_dag OUT.dag`` is run.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from condor_rlrep.criticality import DEFAULT_PHI
from condor_rlrep.dag.model import Node, Script, Workflow
from condor_rlrep.errors import DagError, InputError
from condor_rlrep.policyspec import PolicySpec, live_spec

__all__ = [
    "InstrumentOptions",
    "InstrumentResult",
    "instrument",
    "hook_executables",
    "load_instrument_config",
    "REAPER_NODE",
    "TOLERANCE_SINCE",
    "LIVE_MAX_REPLICAS",
    "LIVE_EPSILON_HIGH",
]

log = logging.getLogger(__name__)

REAPER_NODE = "RLREP_REAPER"
LIVE_MAX_REPLICAS = 3
"""Replicas per node on a live pool unless asked (``--max-replicas``): a
shared pool's users pay for every extra replica."""
LIVE_EPSILON_HIGH = 0.1
"""ε₁ of a store ``instrument`` creates (the paper's 0.5 is a simulation
setting: half of all decisions at random on a shared pool)."""
TOLERANCE_SINCE = (25, 14, 0)
"""``TOLERANCE node n[%] [WAIT]`` in the DAG file."""
FAILURE_TOLERANCE_SINCE = (24, 8, 1)
"""``DAGMAN_NODE_JOB_FAILURE_TOLERANCE`` (the ``--no-tolerance`` knob)."""
_DAGID_SINCE = (23, 9, 6)
_HOOK_NAMES = ("rlrep-pre", "rlrep-post", "rlrep-reaper")


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
    policy: str = "agent"
    """``agent`` (the store's strategy), a strategy name for a new store
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


def hook_executables(hooks_bin: str | None = None) -> dict[str, str]:
    """Absolute paths of ``rlrep-pre``, ``rlrep-post``, ``rlrep-reaper``:
    from ``hooks_bin``, else beside the running Python, else on PATH."""
    found: dict[str, str] = {}
    for name in ("rlrep-pre", "rlrep-post", "rlrep-reaper"):
        candidates = []
        if hooks_bin:
            candidates.append(os.path.join(hooks_bin, name))
        candidates.append(os.path.join(os.path.dirname(sys.executable), name))
        on_path = shutil.which(name)
        if on_path:
            candidates.append(on_path)
        for candidate in candidates:
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                found[name.split("-", 1)[1]] = os.path.abspath(candidate)
                break
        else:
            raise InputError(f"hook executable {name} not found (install condor-rlrep, or pass --hooks-bin)")
    return found


def load_instrument_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Options from a TOML or JSON file (keys as :class:`InstrumentOptions`;
    a ``[power]`` table with ``default_watts`` and ``hosts``)."""
    spath = os.fspath(path)
    try:
        with open(spath, "rb") as handle:
            raw = handle.read()
    except OSError as err:
        raise InputError(f"cannot read config: {err.strerror or err}", path=spath) from err
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


def _blank(text: str) -> bool:
    return any(c.isspace() for c in text)


def instrument(source: str | os.PathLike[str], out: str | os.PathLike[str], options: InstrumentOptions | None = None) -> InstrumentResult:
    """Write the instrumented copy of DAG ``source`` to ``out`` (see the module doc)."""
    from condor_rlrep.atomic import write_atomic
    from condor_rlrep.condor.submit import find_queue
    from condor_rlrep.dag.load import detect_format
    from condor_rlrep.dag.parser import read_dag
    from condor_rlrep.dag.writer import write_dag
    from condor_rlrep.condor.replica_files import runs_in_place
    from condor_rlrep.rundir.layout import (
        REPLICABLE_FILE,
        HookSettings,
        context_dir_for,
        node_original_path,
        node_submit_path,
    )

    opts = options or InstrumentOptions()
    src = os.path.abspath(os.fspath(source))
    dst = os.path.abspath(os.fspath(out))
    if src == dst:
        raise InputError("the instrumented copy must not overwrite the DAG itself (choose another -o)", path=src)
    with open(src, "rb") as handle:
        if detect_format(handle.read(4096), src) != "dag":
            raise InputError("not a DAGMan DAG file; turn it into one with `condor-rlrep export` first", path=src)
    spec = _live_policy(opts)
    if spec.count is not None and spec.kind in ("rl", "model"):
        opts = replace(opts, max_replicas=spec.count)
    hook_policy = spec.hook_policy
    if not (isinstance(opts.phi, (int, float)) and -1.0 < opts.phi < float("inf")):
        raise InputError(f"the contingency phi must be a finite number > -1, got {opts.phi!r}")
    fixed = spec.fixed_replicas
    if opts.max_replicas is None:
        opts = replace(opts, max_replicas=fixed or LIVE_MAX_REPLICAS)
    if not 1 <= opts.max_replicas <= 100:
        raise InputError(f"--max-replicas must be within 1..100 (TOLERANCE 99% covers a <= 100), got {opts.max_replicas}")
    if opts.criticality not in ("balanced", "current"):
        raise InputError(f"criticality must be 'balanced' or 'current', got {opts.criticality!r}")
    version, version_known, dagman_note = _dagman_version(opts)
    tolerance = _tolerance(opts, version, version_known)
    if fixed is not None and fixed > opts.max_replicas:
        raise InputError(f"--policy {opts.policy} asks for more replicas than --max-replicas {opts.max_replicas}; "
                         f"pass --max-replicas {fixed} to run {fixed}")
    hooks = hook_executables(opts.hooks_bin)
    workflow = read_dag(src)
    _refuse_instrumented(workflow, src)
    src_dir = os.path.dirname(src)
    context = context_dir_for(dst)
    for path in (context, *hooks.values()):
        if _blank(path):
            raise InputError(f"path {path!r} contains a blank: DAGMan splits SCRIPT arguments on blanks")
    estimates_path = os.path.abspath(opts.estimates) if opts.estimates else None
    _check_estimates(workflow, estimates_path, opts.default_estimate)
    _absolute_model_paths(workflow)
    store_path, store_created, store_note = _prepare_store(opts, spec)  # the last check before writing: a bad store writes nothing
    for sub in ("nodes", "state", "cache", "spool"):
        os.makedirs(os.path.join(context, sub), exist_ok=True)

    replicated: list[str] = []
    pre_less: list[str] = []
    post_less: list[str] = []
    kept_pre: dict[str, str] = {}  # nodes of a fixed policy that still run PRE, and why
    passed: dict[str, str] = {}
    in_place: list[str] = []
    with_dagid = version >= _DAGID_SINCE
    # $SUCCESS is what DAGMan concluded: with TOLERANCE 99% it is True when a
    # replica won and a surplus one was removed; with the knob (R - 1 for
    # every node) it is True when fewer than R replicas failed, even if all
    # of this node's did, so it is not passed there.
    with_success = tolerance == "node"
    dag_mode = _mode_of(src)
    for node in workflow.nodes.values():
        node_dir = os.path.abspath(os.path.join(src_dir, node.directory or ""))
        node.directory = node_dir
        if node.kind != "JOB" or node.noop or node.done:
            passed[node.name] = "NOOP" if node.noop else ("DONE" if node.done else node.kind)
            if node.kind == "SUBDAG" and node.submit and not os.path.isabs(node.submit):
                node.submit = os.path.join(node_dir, node.submit)
            elif node.submit and node.inline_submit is None and node.submit not in workflow.submit_descriptions:
                node.submit = os.path.join(node_dir, node.submit)
            continue
        original, body = _original(workflow, node, node_dir, node_original_path(context, node.name))
        if body is not None:
            write_atomic(original, body, mode=dag_mode)
        text = body
        if text is None and os.path.isfile(original):
            with open(original, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        if text is not None:
            statement = find_queue(text)
            if statement.kind != "single":
                what = f"queue {statement.arguments}" if statement.line_index is not None else "no queue statement"
                passed[node.name] = f"own description has {what}"
                if node.inline_submit is None and node.submit not in workflow.submit_descriptions:
                    node.submit = original
                continue
        if _blank(original):
            link = node_original_path(context, node.name)
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(original, link)
            original = link
        # DAGMan reads the node's submit file only after PRE succeeded, and PRE
        # (re)writes it on every attempt; it starts as the user's description,
        # so that a PRE that cannot write it (disk full, read-only) still
        # leaves DAGMan the user's job to submit.
        generated = node_submit_path(context, node.name)
        if text is not None:
            write_atomic(generated, text.encode("utf-8", "surrogateescape") if body is not None else _read_bytes(original),
                         mode=_mode_of(original, dag_mode))
        _write_node_vars(context, node, dag_mode)
        if text is not None and runs_in_place(text, {"JOB": node.name, "RETRY": "0", **_vars_of(node)}):
            in_place.append(node.name)
        static = (_static_description(node, text, fixed, node_dir, kept_pre, spec.prefers_idle)
                  if fixed is not None and not opts.always_pre else None)
        if static is not None:
            # A fixed policy decides nothing at run time: the description PRE
            # would write on every attempt is written once, here, and the node
            # runs without PRE (DAGMan submits it a cycle sooner).
            write_atomic(generated, static.body, mode=_mode_of(original, dag_mode))
        if static is not None and fixed > 1:
            _write_fixed_state(context, node.name, fixed, static.files)
        else:  # a copy instrumented here before must not leave POST a stale one
            _forget_fixed_state(context, node.name)
        node.submit = generated
        node.inline_submit = None
        replicated.append(node.name)
        # One replica: DAGMan's own result is exactly the node's, so no POST
        # judges it (a user's POST line stays as it was, with DAGMan's macros).
        one = fixed == 1 and not opts.always_pre
        _add_scripts(node, hooks, context, original, generated, with_dagid, with_success, pre=static is None,
                     post=not one)
        if static is not None:
            pre_less.append(node.name)
        if one:
            post_less.append(node.name)
            continue
        if tolerance == "node":
            node.tolerance = "99% WAIT"

    spliced = any("+" in name for name in workflow.nodes)
    config_path = _config(workflow, src_dir, context, tolerance, opts.max_replicas, spliced, opts.dagman_scan_interval)
    if fixed != 1:  # one replica per node: no surplus to remove, no decision to close
        from condor_rlrep.store.location import is_url

        _add_reaper(workflow, hooks["reaper"], context, opts.reaper_interval,
                    server_store=store_path is not None and is_url(store_path))
    write_dag(workflow, dst, allow_any_node_name_characters=spliced)
    _narrow(dst, dag_mode)
    write_atomic(os.path.join(context, REPLICABLE_FILE), "".join(f"{name}\n" for name in replicated), mode=dag_mode)

    settings = HookSettings(
        dag=dst, source_dag=src, node_log=os.path.abspath(opts.node_log) if opts.node_log else None,
        store=store_path, phi=float(opts.phi), criticality=opts.criticality, max_replicas=int(opts.max_replicas),
        policy=hook_policy, estimates=estimates_path, default_estimate=opts.default_estimate,
        power_default_watts=opts.power_default_watts, power_hosts=dict(opts.power_hosts), tolerance=tolerance,
        store_timeout=float(opts.store_timeout), allow_any_node_name_characters=spliced,
        fixed_without_pre={name: int(fixed) for name in pre_less} if fixed else {},
        without_post=[name for name in post_less if "POST" not in workflow.nodes[name].scripts],
    )
    settings.fixed_replicas()  # validates fixed:K
    _narrow(settings.save(context), 0o600)  # names the store: private, like it
    from condor_rlrep.rundir.plan import load_plan

    load_plan(context, settings)  # parse once now: the first PRE finds the cache warm
    warnings = []
    if os.geteuid() == 0:
        warnings.append(
            "instrumented as root: HTCondor runs DAGMan, its hooks and the jobs as the submitting user, never "
            f"root, so that user must be able to write {context}" + (f" and {store_path}" if store_path else "")
        )
    if in_place and (fixed or opts.max_replicas) > 1:
        shown = ", ".join(in_place[:5]) + (f" and {len(in_place) - 5} more" if len(in_place) > 5 else "")
        warnings.append(
            f"{len(in_place)} node(s) run their replicas in place on a shared filesystem (no "
            f"should_transfer_files = YES): {shown}. Each replica gets its own output/error (the winner's "
            "take your names when the node ends), but any other file such a job writes is written by every "
            "replica at once: declare it (transfer_output_files with should_transfer_files = YES), have the "
            "job write a fresh name and rename it when done, or use --max-replicas 1."
        )
    return InstrumentResult(dst, context, replicated, passed, store_path, config_path, hooks,
                            store_created=store_created, store_note=store_note, warnings=warnings,
                            dagman_note=dagman_note, without_pre=pre_less, without_post=post_less,
                            pre_kept=kept_pre)


def _live_policy(opts: InstrumentOptions) -> PolicySpec:
    """``--policy`` as a live spec (:func:`condor_rlrep.policyspec.live_spec`);
    the R of ``rl:R`` must agree with an explicit ``--max-replicas``."""
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


def _check_estimates(workflow: Workflow, estimates_path: str | None, default: float | None) -> None:
    from condor_rlrep.estimates import read_estimates, resolve_estimates

    sidecar = read_estimates(estimates_path) if estimates_path else None
    resolve_estimates(workflow, sidecar=sidecar, default_estimate=default)  # raises naming the nodes


def _absolute_model_paths(workflow: Workflow) -> None:
    """VARS ``rlrep_bottlemod`` paths are relative to the DAG file that names
    them; the copy lives elsewhere, so it names the models absolutely."""
    from condor_rlrep.dag.model import BOTTLEMOD_MACRO
    from condor_rlrep.estimates import absolute_bottlemod_spec

    for node in workflow.nodes.values():
        spec = absolute_bottlemod_spec(node)
        if spec is None:
            continue
        value = spec[0] + (f"#{spec[1]}" if spec[1] else "")
        for assignment in node.vars:
            if assignment.key == BOTTLEMOD_MACRO:
                assignment.value = value


def _static_description(node: Node, text: str | None, replicas: int, node_dir: str,
                        kept_pre: dict[str, str], prefer_idle: bool) -> Any:
    """The node's description for a fixed policy when it is the same on every
    attempt (:func:`condor_rlrep.hooks.nodesubmit.attempt_independent`), else
    None, with the reason PRE stays in ``kept_pre``."""
    from condor_rlrep.condor.submit import SubmitError
    from condor_rlrep.hooks.nodesubmit import attempt_independent

    if node.scripts.get("PRE") is not None:
        # the user's PRE may write or change the description DAGMan submits
        kept_pre[node.name] = "its own PRE script runs before the description is read"
        return None
    if text is None:
        kept_pre[node.name] = "its submit description is not there yet"
        return None
    try:
        static = attempt_independent(text, node=node.name, replicas=replicas,
                                     macros={"JOB": node.name, **_vars_of(node)}, cwd=node_dir,
                                     prefer_idle=prefer_idle)
    except SubmitError as err:
        kept_pre[node.name] = f"its description does not check out ({err}); PRE runs it unchanged"
        return None
    if static is None:
        kept_pre[node.name] = "its replicas' file names depend on $(RETRY) or $(DAGManJobId)"
    return static


def _forget_fixed_state(context: str, node: str) -> None:
    from condor_rlrep.rundir.layout import node_fixed_state_path

    try:
        os.unlink(node_fixed_state_path(context, node))
    except FileNotFoundError:
        pass


def _write_fixed_state(context: str, node: str, replicas: int, files: list[str]) -> None:
    """What PRE would have told POST, for a node that runs without PRE."""
    from condor_rlrep.rundir.layout import node_fixed_state_path
    from condor_rlrep.rundir.runstate import write_node_state

    write_node_state(node_fixed_state_path(context, node), {
        "node": node, "mode": "replicas", "retry": None, "dagid": None, "run_id": "", "decision_id": None,
        "replicas": replicas, "log_offset": 0, "submit_time": 0.0, "files": files, "chosen": "fixed",
        "written_by": "instrument",
    })


def _original(workflow: Workflow, node: Node, node_dir: str, body_path: str) -> tuple[str, str | None]:
    """Path PRE reads the user's description from, and a body to write there first."""
    if node.inline_submit is not None:
        return body_path, node.inline_submit.rstrip("\n") + "\n"
    if node.submit in workflow.submit_descriptions:
        return body_path, workflow.submit_descriptions[str(node.submit)].rstrip("\n") + "\n"
    if node.submit is None:
        raise DagError(f"node {node.name} has no submit description", path=workflow.source_path, line=node.source_line)
    return os.path.join(node_dir, node.submit), None


def _macro_positions(argv: list[str], macro: str) -> str | None:
    hits = [str(i) for i, token in enumerate(argv) if token.upper() == macro]
    return ",".join(hits) if hits else None


def _add_scripts(
    node: Node, hooks: Mapping[str, str], context: str, original: str, generated: str, with_dagid: bool, with_success: bool,
    *, pre: bool = True, post: bool = True,
) -> None:
    """SCRIPT lines in the layout of :mod:`condor_rlrep.hooks.argv`: our
    values as ``--name=value``, DAGMan's macros positionally after ``--``,
    the user's script after a second ``--``. (``generated`` is not passed:
    PRE derives the node's submit file from ``--ctx`` and ``--node``.)
    ``pre``: False for a node whose description instrument wrote; ``post``:
    False for one replica a node (DAGMan's own verdict is the node's), where
    the user's POST line, if any, stays as it was."""
    from condor_rlrep.hooks.argv import hook_argv

    user_pre = node.scripts.get("PRE")
    user_post = node.scripts.get("POST")
    common = [("ctx", context), ("node", node.name)]
    pre_macros = [("job", "$JOB"), ("retry", "$RETRY"), ("max-retries", "$MAX_RETRIES")]
    post_macros = [("job", "$JOB"), ("retry", "$RETRY"), ("jobid", "$JOBID"), ("return", "$RETURN")]
    if with_dagid:
        pre_macros.append(("dagid", "$DAGID"))
        post_macros += [("dagid", "$DAGID"), ("cluster", "$CLUSTERID")]
    if with_success:
        post_macros.append(("success", "$SUCCESS"))
    post_options = list(common)
    if user_post is not None:
        for option, macro in (("user-return-at", "$RETURN"), ("user-success-at", "$SUCCESS")):
            positions = _macro_positions(user_post.argv, macro)
            if positions:
                post_options.append((option, positions))
    pre_argv = hook_argv([*common, ("submit", original)], pre_macros, user_pre.argv if user_pre is not None else ())
    post_argv = hook_argv(post_options, post_macros, user_post.argv if user_post is not None else ())
    if pre:
        node.scripts["PRE"] = _script("PRE", hooks["pre"], pre_argv, user_pre)
    if post:
        node.scripts["POST"] = _script("POST", hooks["post"], post_argv, user_post)


def _script(kind: str, executable: str, arguments: list[str], user: Script | None) -> Script:
    if user is None:
        return Script(kind, executable, arguments)  # type: ignore[arg-type]
    return Script(
        kind, executable, arguments,  # type: ignore[arg-type]
        defer_status=user.defer_status, defer_seconds=user.defer_seconds,
        debug_file=user.debug_file, debug_type=user.debug_type,
    )


def _config(
    workflow: Workflow, src_dir: str, context: str, tolerance: str, max_replicas: int, spliced: bool,
    scan_interval: int | None = None,
) -> str | None:
    """The DAG's CONFIG: the user's (absolute), or a merged copy when we need knobs."""
    from condor_rlrep.atomic import write_atomic

    user = None
    user_text = ""
    if workflow.config:
        user = os.path.join(src_dir, workflow.config)
        try:
            with open(user, encoding="utf-8") as handle:
                user_text = handle.read()
        except OSError as err:
            raise InputError(f"CONFIG file cannot be read: {err.strerror or err}", path=user) from err
    knobs = []
    if scan_interval is not None and "DAGMAN_USER_LOG_SCAN_INTERVAL" not in user_text.upper():
        knobs += [
            "# condor-rlrep: a POST script's end reaches DAGMan through its node-log scan; scan every second",
            f"DAGMAN_USER_LOG_SCAN_INTERVAL = {int(scan_interval)}",
        ]
    if tolerance == "config" and max_replicas > 1:
        knobs += [
            "# condor-rlrep: tolerate a - 1 failing replicas of a node (R - 1 at most)",
            f"DAGMAN_NODE_JOB_FAILURE_TOLERANCE = {max(0, max_replicas - 1)}",
        ]
    if spliced:
        knobs += [
            "# condor-rlrep: the copy is flat; spliced nodes keep their 'splice+node' names",
            "DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS = True",
        ]
    if not knobs:
        workflow.config = user
        return user
    merged = user_text.rstrip("\n") + "\n" if user_text else ""
    merged += "\n".join(knobs) + "\n"
    path = os.path.join(context, "dagman.config")
    write_atomic(path, merged)
    workflow.config = path
    return path


def _quote_argument(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def submit_literal(text: str) -> str:
    """``text`` as a submit-file value that means exactly ``text``: ``$``
    becomes ``$(DOLLAR)`` (so a ``$(...)`` in a path is never expanded) and
    a line break, which would start another submit command, is refused."""
    if "\n" in text or "\r" in text:
        raise InputError(f"path {text!r} holds a line break: it cannot be written into a submit file")
    return text.replace("$", "$(DOLLAR)")


def _add_reaper(workflow: Workflow, executable: str, context: str, interval: float, *, server_store: bool = False) -> None:
    from condor_rlrep.atomic import write_atomic

    name = REAPER_NODE
    while name in workflow.nodes:
        name += "_"
    args = " ".join(_quote_argument(submit_literal(a)) for a in (f"--ctx={context}", f"--interval={interval:g}"))
    # getenv: the reaper needs CONDOR_CONFIG (and only what DAGMan's own job has) to reach the schedd
    submit = os.path.join(context, "reaper.sub")
    write_atomic(
        submit,
        "# condor-rlrep reaper: removes surplus replicas once one has succeeded\n"
        "universe = local\n"
        f"executable = {submit_literal(executable)}\n"
        f'arguments = "{args}"\n'
        f"output = {submit_literal(os.path.join(context, 'reaper.out'))}\n"
        f"error = {submit_literal(os.path.join(context, 'reaper.err'))}\n"
        "getenv = true\n"
        # The reaper serves a server store to the hooks (agent/broker.py) and so
        # needs the password they find in $HOME/.pgpass; but HTCondor's local
        # universe starter resets HOME to the passwd entry's, so name libpq's
        # files from DAGMan's HOME, expanded when DAGMan submits this.
        + ("environment = \"PGPASSFILE='$ENV(HOME)/.pgpass' PGSERVICEFILE='$ENV(HOME)/.pg_service.conf'\"\n"
           if server_store else "")
        + "queue\n",
    )
    workflow.nodes[name] = Node(name=name, kind="SERVICE", submit=submit, directory=context)


def _prepare_store(opts: InstrumentOptions, spec: PolicySpec) -> tuple[str | None, bool, str]:
    """The store the hooks will use (an absolute path, or a server URL without
    its password), whether it was created now, and a line about it for the user.

    Fixed policies record nothing: no store unless one is named. An agent
    policy resolves ``--store`` > ``$CONDOR_RLREP_STORE`` > the default once,
    creates a missing store with the live defaults, and refuses one this user
    cannot write (the hooks run as the user who submits the DAG).
    """
    from condor_rlrep.store.location import (
        create_store, describe_store, has_password, open_store, resolve_store, store_exists, unwritable_reason,
    )
    from condor_rlrep.errors import StoreError

    try:
        path = resolve_store(opts.store, opts.environ) if opts.store or spec.fixed_replicas is None else None
    except StoreError as err:
        raise InputError(f"agent store unusable: {err}") from err
    # A server URL goes into the run without its password (the run's files are
    # readable by the pool user and end up in bug reports): the hooks find it
    # the way libpq does, in ~/.pgpass or a service file of the user they run as.
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
        raise InputError(f"agent store unusable: {err}", path=run_spec) from err
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
            raise InputError(f"agent store unusable: {err}", path=run_spec) from err
        return run_spec, True, (f"created now ({strategy}, 1..{opts.max_replicas} replicas, "
                                f"epsilon {LIVE_EPSILON_HIGH:g} then {config.epsilon_low:g}){secret}")
    try:
        with open_store(path) as store:
            config, stats = store.config, store.stats()
    except StoreError as err:
        raise InputError(f"agent store unusable: {err}", path=run_spec) from err
    note = f"existing ({config.strategy}, {stats.rewards_seen} reward(s) learnt, {stats.pending} pending"
    if config.max_replicas > opts.max_replicas:
        note += f"; its actions are 1..{config.max_replicas} replicas, capped at {opts.max_replicas} per node"
    return run_spec, False, note + ")" + secret


def _vars_of(node: Node) -> dict[str, str]:
    return {a.key: a.value for a in node.vars}


def _write_node_vars(context: str, node: Node, mode: int) -> None:
    """The node's VARS for PRE (DAGMan passes them to the submit, not to scripts)."""
    from condor_rlrep.atomic import write_atomic
    from condor_rlrep.rundir.layout import node_vars_path

    path = node_vars_path(context, node.name)
    if node.vars:
        write_atomic(path, json.dumps(_vars_of(node), sort_keys=True), mode=mode)
    elif os.path.exists(path):
        os.unlink(path)


def _mode_of(path: str, default: int = 0o600) -> int:
    """Permission bits for files made from ``path``: never wider than its own."""
    try:
        return os.stat(path).st_mode & 0o666
    except OSError:
        return default


def _narrow(path: str, mode: int) -> None:
    """Take from ``path`` every permission ``mode`` lacks (never adds one)."""
    current = os.stat(path).st_mode & 0o777
    if current & ~mode:
        os.chmod(path, current & mode)


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _dagman_version(opts: InstrumentOptions) -> tuple[tuple[int, int, int], bool, str]:
    """The DAGMan version to instrument for, whether it is known, and how."""
    from condor_rlrep.condor.version import detect_dagman_version, version_text

    if opts.dagman_version is not None:
        return tuple(opts.dagman_version), True, f"{version_text(opts.dagman_version)} (as given)"  # type: ignore[return-value]
    found = detect_dagman_version(opts.environ)
    if found is not None:
        return found[0], True, f"{version_text(found[0])} (from {found[1]})"
    return TOLERANCE_SINCE, False, (f"{version_text(TOLERANCE_SINCE)} assumed (no condor_dagman on PATH; "
                                    "pass --dagman-version if the pool's is older)")


def _tolerance(opts: InstrumentOptions, version: tuple[int, int, int], known: bool) -> str | None:
    """How a node tolerates its failing replicas: ``node`` (a TOLERANCE line),
    ``config`` (the DAGMan knob) or None (one replica a node: nothing to
    tolerate). Refuses what the pool's DAGMan would not do."""
    from condor_rlrep.condor.version import version_text

    tolerance = opts.tolerance or ("node" if version >= TOLERANCE_SINCE else "config")
    if tolerance not in ("node", "config"):
        raise InputError(f"tolerance must be 'node' or 'config', got {tolerance!r}")
    if tolerance == "node" and version < TOLERANCE_SINCE:
        raise InputError(f"TOLERANCE needs DAGMan >= 25.14.0 (this one is {version_text(version)}); "
                         "use the CONFIG knob (--no-tolerance)")
    if tolerance == "config" and int(opts.max_replicas or 1) > 1:
        if not known:
            raise InputError("--no-tolerance writes DAGMAN_NODE_JOB_FAILURE_TOLERANCE, which only DAGMan >= 24.8.1 "
                             "has, and no condor_dagman is on PATH to tell: pass --dagman-version")
        if version < FAILURE_TOLERANCE_SINCE:
            raise InputError(
                f"DAGMan {version_text(version)} has neither TOLERANCE (25.14.0) nor DAGMAN_NODE_JOB_FAILURE_TOLERANCE "
                "(24.8.1): its first failing replica would make DAGMan remove the node's others. Run one replica "
                "a node there (--max-replicas 1 or --policy single), or use a newer DAGMan")
    return tolerance


def _refuse_instrumented(workflow: Workflow, src: str) -> None:
    """An instrumented DAG instrumented again would decide every node twice
    and run two reapers: refuse it, naming the user's DAG."""
    from condor_rlrep.rundir.layout import CONTEXT_SUFFIX, SETTINGS_FILE

    for node in workflow.nodes.values():
        names = [os.path.basename(script.executable) for script in node.scripts.values()]
        ours = [name for name in names if name in _HOOK_NAMES]
        submit = str(node.submit or "")
        # a fixed:1 copy has no hook at all, only our node submit files
        ours_submit = os.path.basename(os.path.dirname(os.path.dirname(submit))).endswith(CONTEXT_SUFFIX) \
            and os.path.basename(os.path.dirname(submit)) == "nodes" and submit.endswith(".sub")
        if ours or ours_submit or (node.kind == "SERVICE" and submit.endswith(CONTEXT_SUFFIX + os.sep + "reaper.sub")):
            source = None
            try:
                with open(src + CONTEXT_SUFFIX + os.sep + SETTINGS_FILE, encoding="utf-8") as handle:
                    source = json.load(handle).get("source_dag")
            except (OSError, ValueError, AttributeError):
                pass
            where = f"; its source is {source}: instrument that one" if source else ": instrument the DAG it was made from"
            raise DagError(f"this DAG was written by condor-rlrep instrument (node {node.name} runs "
                           f"{ours[0] if ours else ('the reaper' if node.kind == 'SERVICE' else 'its submit file ' + submit)}){where}", path=src, line=node.source_line)
