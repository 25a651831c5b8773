""":func:`instrument`: the user's DAG in, its instrumented copy and the
context folder out (what they hold: :mod:`condor_rlrep.instrument`).

The order is the contract: every check that can refuse (options, DAGMan,
hook paths, estimates, the store) runs before anything is written, so that
a refused DAG leaves nothing behind; then the context's node files, the DAG
copy, and last ``hooks.json`` with the plan cache warmed, so that the first
PRE finds everything in place.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from condor_rlrep.dag.model import Node, Workflow
from condor_rlrep.errors import InputError
from condor_rlrep.instrument.agentstore import default_policy, prepare_store
from condor_rlrep.instrument.context import writing
from condor_rlrep.instrument.checks import (
    DAGID_SINCE, check_estimates, choose_tolerance, dagman_version, has_blank, refuse_blanks, refuse_instrumented,
    prohibited_multi_jobs, refuse_multi_jobs_if_fixed,
    run_warnings,
)
from condor_rlrep.instrument.nodefiles import (
    forget_fixed_state, original_description, static_description, vars_of, write_fixed_state, write_node_vars,
)
from condor_rlrep.instrument.options import InstrumentOptions, InstrumentResult, checked_options
from condor_rlrep.instrument.wiring import add_reaper, add_scripts, dagman_config, hook_executables

__all__ = ["instrument"]


@dataclass(frozen=True)
class _Wiring:
    """What every replicable node of this copy gets."""

    context: str
    hooks: dict[str, str]
    fixed: int | None
    """K of a fixed policy, else None."""
    always_pre: bool
    prefer_idle: bool
    idle_attribute: str
    with_dagid: bool
    with_success: bool
    tolerance: str | None
    dag_mode: int


@dataclass
class _Tally:
    """What became of the nodes, for the result and ``hooks.json``."""

    replicated: list[str] = field(default_factory=list)
    passed: dict[str, str] = field(default_factory=dict)
    """Node → why it keeps its own definition."""
    without_pre: list[str] = field(default_factory=list)
    without_post: list[str] = field(default_factory=list)
    kept_pre: dict[str, str] = field(default_factory=dict)
    """Nodes of a fixed policy that still run PRE, and why."""
    in_place: list[str] = field(default_factory=list)
    """Nodes whose replicas run in their submit directory (no file transfer)."""


def instrument(source: str | os.PathLike[str], out: str | os.PathLike[str], options: InstrumentOptions | None = None) -> InstrumentResult:
    """Write the instrumented copy of DAG ``source`` to ``out`` (see :mod:`condor_rlrep.instrument`)."""
    from condor_rlrep.atomic import source_mode, write_atomic
    from condor_rlrep.dag.load import detect_format
    from condor_rlrep.dag.parser import read_dag
    from condor_rlrep.dag.writer import write_dag
    from condor_rlrep.rundir.layout import REPLICABLE_FILE, HookSettings, context_dir_for

    opts = options or InstrumentOptions()
    src = os.path.abspath(os.fspath(source))
    dst = os.path.abspath(os.fspath(out))
    if src == dst:
        raise InputError("the instrumented copy must not overwrite the DAG itself (choose another -o)", path=src)
    with open(src, "rb") as handle:
        if detect_format(handle.read(4096), src) != "dag":
            raise InputError("not a DAGMan DAG file; turn it into one with `condor-rlrep export` first", path=src)
    policy_note = ""
    if opts.policy is None:  # the default, which depends on what the store has learnt
        policy, policy_note = default_policy(opts)
        opts = replace(opts, policy=policy)
    opts, spec = checked_options(opts)
    fixed = spec.fixed_replicas
    version, version_known, dagman_note = dagman_version(opts)
    tolerance = choose_tolerance(opts, version, version_known)
    if fixed is not None and fixed > opts.max_replicas:
        raise InputError(f"--policy {opts.policy} asks for more replicas than --max-replicas {opts.max_replicas}; "
                         f"pass --max-replicas {fixed} to run {fixed}")
    hooks = hook_executables(opts.hooks_bin)
    workflow = read_dag(src)
    refuse_instrumented(workflow, src)
    src_dir = os.path.dirname(src)
    prohibited = prohibited_multi_jobs(workflow, src_dir,
                                       dict(opts.environ) if opts.environ is not None else dict(os.environ))
    refuse_multi_jobs_if_fixed(prohibited, fixed)
    # Under DAGMAN_PROHIBIT_MULTI_JOBS a node runs one replica (the store
    # keeps its own range of actions; only this run is capped).
    max_replicas = 1 if prohibited else int(opts.max_replicas)
    context = context_dir_for(dst)
    refuse_blanks((context, *hooks.values()))
    from condor_rlrep.condor.submit import check_idle_attribute

    check_idle_attribute(opts.idle_attribute)  # one error naming it, before anything is written
    estimates_path = os.path.abspath(opts.estimates) if opts.estimates else None
    check_estimates(workflow, estimates_path, opts.default_estimate)
    _absolute_model_paths(workflow)
    _absolute_output_paths(workflow, src_dir)
    store_path, store_created, store_note = prepare_store(opts, spec)  # the last check before writing: a bad store writes nothing
    with writing(context, dst):  # a fresh 0700 context (or a checked one); undone if writing fails
        dag_mode = source_mode(src)
        wiring = _Wiring(
            context=context, hooks=hooks, fixed=fixed, always_pre=opts.always_pre, prefer_idle=spec.prefers_idle,
            idle_attribute=opts.idle_attribute, with_dagid=version >= DAGID_SINCE,
            # $SUCCESS is what DAGMan concluded: with TOLERANCE 99% it is True when a
            # replica won and a surplus one was removed; with the knob (R - 1 for
            # every node) it is True when fewer than R replicas failed, even if all
            # of this node's did, so it is not passed there.
            with_success=tolerance == "node",
            tolerance=tolerance, dag_mode=dag_mode,
        )
        tally = _Tally()
        user_scripts = {kind: sorted(n.name for n in workflow.nodes.values() if kind in n.scripts) for kind in ("PRE", "POST")}
        for node in workflow.nodes.values():
            _instrument_node(workflow, node, src_dir, wiring, tally)

        spliced = any("+" in name for name in workflow.nodes)
        config_path = dagman_config(workflow, src_dir, context, tolerance, max_replicas, spliced,
                                    opts.dagman_scan_interval)
        if fixed != 1:  # one replica per node: no surplus to remove, no decision to close
            from condor_rlrep.store.location import is_url

            reaper_node = add_reaper(workflow, hooks["reaper"], context, opts.reaper_interval,
                                     server_store=store_path is not None and is_url(store_path))
            user_jobstate, workflow.jobstate_log = internal_jobstate(workflow.jobstate_log, context)
        else:
            reaper_node = user_jobstate = None
        write_dag(workflow, dst, allow_any_node_name_characters=spliced)
        _narrow(dst, dag_mode)
        write_atomic(os.path.join(context, REPLICABLE_FILE), "".join(f"{name}\n" for name in tally.replicated),
                     mode=dag_mode)

        settings = HookSettings(
            dag=dst, source_dag=src, node_log=os.path.abspath(opts.node_log) if opts.node_log else None,
            store=store_path, phi=float(opts.phi), criticality=opts.criticality, max_replicas=max_replicas,
            policy=spec.hook_policy, estimates=estimates_path, default_estimate=opts.default_estimate,
            power_default_watts=opts.power_default_watts, power_hosts=dict(opts.power_hosts), tolerance=tolerance,
            store_timeout=float(opts.store_timeout), allow_any_node_name_characters=spliced,
            fixed_without_pre={name: int(fixed) for name in tally.without_pre} if fixed else {},
            without_post=[name for name in tally.without_post if "POST" not in workflow.nodes[name].scripts],
            jobstate_log=user_jobstate, reaper_node=reaper_node, user_scripts=user_scripts,
            idle_attribute=opts.idle_attribute,
        )
        settings.fixed_replicas()  # validates fixed:K
        _narrow(settings.save(context), 0o600)  # names the store: private, like it
        from condor_rlrep.rundir.plan import load_plan

        load_plan(context, settings)  # parse once now: the first PRE finds the cache warm
    warnings = run_warnings(context, store_path, tally.in_place, fixed or max_replicas)
    if prohibited and (fixed or opts.max_replicas) > 1:
        warnings.append(f"{prohibited}: DAGMan refuses a node job of more than one proc, and replicas are the procs "
                        "of one cluster, so every node of this run gets one replica (as without condor-rlrep)")
    return InstrumentResult(dst, context, tally.replicated, tally.passed, store_path, config_path, hooks,
                            store_created=store_created, store_note=store_note, warnings=warnings,
                            dagman_note=dagman_note, without_pre=tally.without_pre, without_post=tally.without_post,
                            pre_kept=tally.kept_pre, policy=str(opts.policy), policy_note=policy_note)


def _instrument_node(workflow: Workflow, node: Node, src_dir: str, wiring: _Wiring, tally: _Tally) -> None:
    """Wire one node of the copy (in place), or pass it through as it is,
    with every relative path of it made absolute."""
    from condor_rlrep.atomic import source_mode, write_atomic
    from condor_rlrep.condor.replica_files import runs_in_place
    from condor_rlrep.condor.submit import find_queue
    from condor_rlrep.rundir.layout import node_original_path, node_submit_path

    context, fixed, dag_mode = wiring.context, wiring.fixed, wiring.dag_mode
    node_dir = os.path.abspath(os.path.join(src_dir, node.directory or ""))
    node.directory = node_dir
    if node.kind != "JOB" or node.noop or node.done:
        tally.passed[node.name] = "NOOP" if node.noop else ("DONE" if node.done else node.kind)
        if node.kind == "SUBDAG" and node.submit and not os.path.isabs(node.submit):
            node.submit = os.path.join(node_dir, node.submit)
        elif node.submit and node.inline_submit is None and node.submit not in workflow.submit_descriptions:
            node.submit = os.path.join(node_dir, node.submit)
        return
    original, body = original_description(workflow, node, node_dir, node_original_path(context, node.name))
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
            tally.passed[node.name] = f"own description has {what}"
            if node.inline_submit is None and node.submit not in workflow.submit_descriptions:
                node.submit = original
            return
    if not _pin_per_proc_macros(node, text, tally):
        if node.inline_submit is None and node.submit not in workflow.submit_descriptions:
            node.submit = original
        return
    if has_blank(original):
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
                     mode=source_mode(original, dag_mode))
    write_node_vars(context, node, dag_mode)
    if text is not None and runs_in_place(text, {"JOB": node.name, "RETRY": "0", **vars_of(node)}):
        tally.in_place.append(node.name)
    static = (static_description(node, text, fixed, node_dir, tally.kept_pre, wiring.prefer_idle,
                                 wiring.idle_attribute)
              if fixed is not None and not wiring.always_pre else None)
    if static is not None:
        # A fixed policy decides nothing at run time: the description PRE
        # would write on every attempt is written once, here, and the node
        # runs without PRE (DAGMan submits it a cycle sooner).
        write_atomic(generated, static.body, mode=source_mode(original, dag_mode))
    if static is not None and fixed > 1:
        write_fixed_state(context, node.name, fixed, static.files)
    else:  # a copy instrumented here before must not leave POST a stale one
        forget_fixed_state(context, node.name)
    node.submit = generated
    node.inline_submit = None
    tally.replicated.append(node.name)
    # One replica: DAGMan's own result is exactly the node's, so no POST
    # judges it (a user's POST line stays as it was, with DAGMan's macros).
    one = fixed == 1 and not wiring.always_pre
    add_scripts(node, wiring.hooks, context, original, wiring.with_dagid, wiring.with_success,
                pre=static is None, post=not one)
    if static is not None:
        tally.without_pre.append(node.name)
    if one:
        tally.without_post.append(node.name)
        return
    if wiring.tolerance == "node":
        node.tolerance = "99% WAIT"


def _pin_per_proc_macros(node: Node, text: str | None, tally: _Tally) -> bool:
    """Whether every replica of ``node`` can see the plain job's
    ``$(Process)`` (and the other per-proc macros): its VARS are pinned here,
    its description (``text``, None when not there yet) by PRE or the static
    description (:mod:`condor_rlrep.condor.procmacros`). If not, the node
    keeps its own definition, and why is said."""
    from condor_rlrep.condor.procmacros import pin_proc_macros, pin_var
    from condor_rlrep.condor.submit import SubmitError

    try:
        if text is not None:
            pin_proc_macros(text)
        pinned = [pin_var(assignment.key, assignment.value) for assignment in node.vars]
    except SubmitError as err:
        tally.passed[node.name] = f"its replicas would not see the plain job's $(Process): {err}"
        return False
    for assignment, value in zip(node.vars, pinned):
        assignment.value = value
    return True


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


def _absolute_output_paths(workflow: Workflow, src_dir: str) -> None:
    """DOT, NODE_STATUS_FILE and JOBSTATE_LOG paths are relative to DAGMan's
    working directory, which for the user's DAG submitted beside it is the
    DAG's directory; the copy is submitted elsewhere, so it names them
    absolutely and writes them where the user's run would."""
    if workflow.node_status_file is not None:
        workflow.node_status_file = os.path.join(src_dir, workflow.node_status_file)
    if workflow.jobstate_log is not None:
        workflow.jobstate_log = os.path.join(src_dir, workflow.jobstate_log)
    if workflow.dot is not None:
        words = workflow.dot.split()
        if words and not words[0].startswith(('"', "'")):
            words[0] = os.path.join(src_dir, words[0])
            for i, word in enumerate(words[:-1]):
                if word.upper() == "INCLUDE" and not words[i + 1].startswith(('"', "'")):
                    words[i + 1] = os.path.join(src_dir, words[i + 1])
            workflow.dot = " ".join(words)


def internal_jobstate(user_path: str | None, context: str) -> tuple[str | None, str | None]:
    """(the user's JOBSTATE_LOG, the one DAGMan writes): with replicas DAGMan
    logs every replica and our hooks, so it writes an internal file that the
    reaper translates into the user's (:mod:`condor_rlrep.rundir.jobstatelog`)."""
    if user_path is None:
        return None, None
    from condor_rlrep.rundir.jobstatelog import INTERNAL_JOBSTATE

    return user_path, os.path.join(context, INTERNAL_JOBSTATE)


def _narrow(path: str, mode: int) -> None:
    """Take from ``path`` every permission ``mode`` lacks (never adds one)."""
    current = os.stat(path).st_mode & 0o777
    if current & ~mode:
        os.chmod(path, current & mode)


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
