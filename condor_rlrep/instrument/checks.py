"""What ``instrument`` refuses, and what it warns about, before a run starts.

Refused (nothing is written): a pool whose DAGMan cannot tolerate a node's
failing replicas the way asked (``TOLERANCE`` since 25.14.0, the
``DAGMAN_NODE_JOB_FAILURE_TOLERANCE`` knob since 24.8.1: without either,
DAGMan removes a node's other replicas at its first failure); a DAG that
``instrument`` wrote itself (every node would be decided twice, by two
reapers); a path with a blank in a SCRIPT line (DAGMan splits the line
there); a node without an estimate.

Warned (the run is written): the copy made as root (HTCondor runs
everything as the submitting user, who must be able to write the run), and
replicas run in place on a shared filesystem, where a file the job writes
without declaring it is written by every replica at once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from condor_rlrep.dag.model import Workflow
from condor_rlrep.errors import DagError, InputError
from condor_rlrep.instrument.options import InstrumentOptions
from condor_rlrep.instrument.wiring import HOOK_NAMES

__all__ = [
    "TOLERANCE_SINCE",
    "FAILURE_TOLERANCE_SINCE",
    "DAGID_SINCE",
    "dagman_version",
    "choose_tolerance",
    "refuse_instrumented",
    "refuse_blanks",
    "prohibited_multi_jobs",
    "refuse_multi_jobs_if_fixed",
    "check_estimates",
    "run_warnings",
]

TOLERANCE_SINCE = (25, 14, 0)
"""``TOLERANCE node n[%] [WAIT]`` in the DAG file."""
FAILURE_TOLERANCE_SINCE = (24, 8, 1)
"""``DAGMAN_NODE_JOB_FAILURE_TOLERANCE`` (the ``--no-tolerance`` knob)."""
DAGID_SINCE = (23, 9, 6)
"""``$DAGID`` (and ``$CLUSTERID``) in SCRIPT lines."""


def dagman_version(opts: InstrumentOptions) -> tuple[tuple[int, int, int], bool, str]:
    """The DAGMan version to instrument for, whether it is known, and how."""
    from condor_rlrep.condor.version import detect_dagman_version, version_text

    if opts.dagman_version is not None:
        return tuple(opts.dagman_version), True, f"{version_text(opts.dagman_version)} (as given)"  # type: ignore[return-value]
    found = detect_dagman_version(opts.environ)
    if found is not None:
        return found[0], True, f"{version_text(found[0])} (from {found[1]})"
    return TOLERANCE_SINCE, False, (f"{version_text(TOLERANCE_SINCE)} assumed (no condor_dagman on PATH; "
                                    "pass --dagman-version if the pool's is older)")


def choose_tolerance(opts: InstrumentOptions, version: tuple[int, int, int], known: bool) -> str | None:
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


def refuse_instrumented(workflow: Workflow, src: str) -> None:
    """An instrumented DAG instrumented again would decide every node twice
    and run two reapers: refuse it, naming the user's DAG."""
    from condor_rlrep.rundir.layout import CONTEXT_SUFFIX, SETTINGS_FILE

    for node in workflow.nodes.values():
        names = [os.path.basename(script.executable) for script in node.scripts.values()]
        ours = [name for name in names if name in HOOK_NAMES]
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


def prohibited_multi_jobs(workflow: Workflow, src_dir: str, environ: dict[str, str]) -> str | None:
    """Where ``DAGMAN_PROHIBIT_MULTI_JOBS`` is set true for this DAG (its
    CONFIG file and line, or the environment instrument runs in), else None.
    Replicas are the procs of one cluster, which that setting forbids: DAGMan
    would refuse every replicated submission (a submit failure per node)."""
    import re

    where, value = None, environ.get("_CONDOR_DAGMAN_PROHIBIT_MULTI_JOBS")
    if value is not None:
        where = "the environment (_CONDOR_DAGMAN_PROHIBIT_MULTI_JOBS)"
    if workflow.config:
        path = os.path.join(src_dir, workflow.config)
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError as err:
            raise InputError(f"CONFIG file cannot be read: {err.strerror or err}", path=path) from err
        for number, line in enumerate(text.splitlines(), 1):
            found = re.match(r"\s*DAGMAN_PROHIBIT_MULTI_JOBS\s*=\s*(.*?)\s*$", line, re.I)
            if found:  # the last assignment counts, as in any HTCondor config file
                where, value = f"{path}:{number}", found.group(1)
    if value is not None and value.lower() in ("true", "t", "yes", "y", "1"):
        return f"DAGMAN_PROHIBIT_MULTI_JOBS = {value} ({where})"
    return None


def refuse_multi_jobs_if_fixed(prohibited: str | None, fixed: int | None) -> None:
    """``fixed:K`` with K > 1 asks for what DAGMan would refuse: say so."""
    if prohibited and fixed is not None and fixed > 1:
        raise InputError(f"{prohibited}: condor-rlrep runs a node's replicas as the procs of one cluster, which "
                         f"that setting forbids, so DAGMan would refuse every node's {fixed} replicas. Drop the "
                         "setting for this DAG, or run one replica a node (--policy fixed:1)")


def refuse_blanks(paths: Iterable[str]) -> None:
    """Paths that go into SCRIPT lines: DAGMan splits SCRIPT arguments on blanks."""
    for path in paths:
        if has_blank(path):
            raise InputError(f"path {path!r} contains a blank: DAGMan splits SCRIPT arguments on blanks")


def has_blank(text: str) -> bool:
    return any(c.isspace() for c in text)


def check_estimates(workflow: Workflow, estimates_path: str | None, default: float | None) -> None:
    """Every node has an estimate (VARS, sidecar file or the default); raises naming the nodes."""
    from condor_rlrep.estimates import read_estimates, resolve_estimates

    sidecar = read_estimates(estimates_path) if estimates_path else None
    resolve_estimates(workflow, sidecar=sidecar, default_estimate=default)


def run_warnings(context: str, store_path: str | None, in_place: list[str], replicas: int) -> list[str]:
    """What the user should know about the run just written: ``in_place`` are
    the nodes whose replicas run in their submit directory, ``replicas`` the
    most a node runs."""
    warnings = []
    if os.geteuid() == 0:
        warnings.append(
            "instrumented as root: HTCondor runs DAGMan, its hooks and the jobs as the submitting user, never "
            f"root, so that user must be able to write {context}" + (f" and {store_path}" if store_path else "")
        )
    run_dir = os.path.realpath(os.path.dirname(context))
    if run_dir == "/tmp" or run_dir.startswith("/tmp/"):
        # DAGMan's default DAGMAN_USE_STRICT makes its "node log on /tmp" warning fatal
        warnings.append(
            f"the run is under /tmp ({run_dir}): DAGMan in its default strict mode refuses a node log there; "
            "instrument into a folder outside /tmp (or set DAGMAN_USE_STRICT = 0)"
        )
    if in_place and replicas > 1:
        shown = ", ".join(in_place[:5]) + (f" and {len(in_place) - 5} more" if len(in_place) > 5 else "")
        warnings.append(
            f"{len(in_place)} node(s) run their replicas in place on a shared filesystem (no "
            f"should_transfer_files = YES): {shown}. Each replica gets its own output/error (the winner's "
            "take your names when the node ends), but any other file such a job writes is written by every "
            "replica at once: declare it (transfer_output_files with should_transfer_files = YES), have the "
            "job write a fresh name and rename it when done, or use --max-replicas 1."
        )
    return warnings
