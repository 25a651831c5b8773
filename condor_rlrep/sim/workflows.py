"""Workflows in the simulator: templates, injection into a trace, enactment.

* A :class:`WorkflowTemplate` is a workflow planned once: tasks in
  topological order, their run times and estimates, and the
  :class:`~condor_rlrep.criticality.WorkflowPlan` at ``s(W) = 0`` (L′ does not
  depend on the start). An instance that starts at ``s`` asks the same plan
  for ``φ′`` at ``s_t − s`` — the very function the live PRE hook uses.
* :func:`inject` replaces a fraction ``w`` of the trace's jobs by workflow
  instances (each keeps the job's submit time as ``s(W)``), the template of
  each drawn by mix weight (§5 of the replication paper).
* :class:`~condor_rlrep.sim.runner.WorkflowRunner` enacts instances on
  the engine (§4.1).

Built-in workflows: :func:`figure1_workflow` and :func:`montage_workflow`.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from condor_rlrep.criticality import PHI_MODES, WorkflowPlan, plan_workflow
from condor_rlrep.dag.model import Node, Workflow
from condor_rlrep.errors import InputError
from condor_rlrep.dag.graph import VIRTUAL_NODES, build_graph, topological_order

__all__ = [
    "FIGURE1_TASK_SECONDS",
    "FIGURE1_EDGES",
    "figure1_workflow",
    "montage_workflow",
    "MONTAGE_RUNTIME_SCALE",
    "WorkflowTemplate",
    "make_template",
    "load_template",
    "parse_workflow_spec",
    "inject",
]

log = logging.getLogger(__name__)

FIGURE1_TASK_SECONDS = 32 * 60.0
"""Every task of the Figure-1 workflow takes 32 minutes (§2)."""

# The paper's text names the tasks A–H and one dependency (F needs C and D);
# the figure's other edges are not in the text. Our reconstruction: three
# entry tasks, a middle layer fed by two of them, F joining C and D, one exit.
# CR(W) = 4 × 32 min (S→A→D→F→H→T and S→A→E→G→H→T, S→B→E→G→H→T).
FIGURE1_EDGES: tuple[tuple[str, str], ...] = (
    ("A", "D"),
    ("A", "E"),
    ("B", "E"),
    ("C", "F"),
    ("D", "F"),
    ("D", "G"),
    ("E", "G"),
    ("F", "H"),
    ("G", "H"),
)


def figure1_workflow(task_seconds: float = FIGURE1_TASK_SECONDS) -> Workflow:
    """The replication paper's Figure-1 workflow (tasks A–H; S and T are the
    virtual start/end every graph gets), each task ``task_seconds`` long."""
    wf = Workflow(source_path="figure1")
    for name in "ABCDEFGH":
        wf.nodes[name] = Node(name=name, runtime=float(task_seconds))
    wf.edges = set(FIGURE1_EDGES)
    return wf


# Classic Pegasus Montage generator (docs/sources.md §3.1): mean runtimes (s) of a
# 1-degree run; mImgTbl and mJPEG are not in the generator's table and take
# the values of the shared Montage_25 DAX (assumed).
_MONTAGE_RUNTIME = {
    "mProjectPP": 13.59,
    "mDiffFit": 10.59,
    "mBackground": 10.74,
    "mAdd": 30.11,
    "mShrink": 12.21,
    "mImgTbl": 1.39,
    "mJPEG": 0.45,
}


MONTAGE_RUNTIME_SCALE = 120.0
"""Scale of the built-in ``montage`` workflow's runtimes (assumed). The
generator's runtimes are seconds of a 1-degree run; HTC jobs at Newcastle
run for tens of minutes (docs/sources.md §3.2: "a reproduction needs a run-time
scale factor"). ×120 puts mProjectPP at 27 min, near the Figure-1 tasks'
32 min; ``montage@1`` gives the raw seconds."""


def montage_workflow(projections: int = 5, overlaps: int = 9, runtime_scale: float = 1.0) -> Workflow:
    """A Montage workflow after the Pegasus generator's structure rules:
    ``projections`` mProjectPP; ``overlaps`` mDiffFit, each on two distinct
    projections (the first pairs in lexicographic order); mConcatFit; mBgModel;
    one mBackground per projection (parents mBgModel and its mProjectPP);
    then mImgTbl → mAdd → mShrink → mJPEG. The defaults give the 25-task
    shape of the shared Montage_25 DAX. Runtimes are the generator's means
    (mConcatFit 0.08·overlaps, mBgModel 0.13·overlaps) × ``runtime_scale``.
    """
    pairs = list(itertools.combinations(range(projections), 2))
    if projections < 2 or not 1 <= overlaps <= len(pairs):
        raise ValueError(f"montage needs >= 2 projections and 1..{len(pairs)} overlaps")
    wf = Workflow(source_path="montage")

    def add(name: str, kind: str, seconds: float) -> str:
        wf.nodes[name] = Node(name=name, runtime=seconds * runtime_scale, executable=kind)
        return name

    proj = [add(f"mProjectPP_{i}", "mProjectPP", _MONTAGE_RUNTIME["mProjectPP"]) for i in range(projections)]
    concat = add("mConcatFit", "mConcatFit", 0.08 * overlaps)
    model = add("mBgModel", "mBgModel", 0.13 * overlaps)
    for k, (a, b) in enumerate(pairs[:overlaps]):
        diff = add(f"mDiffFit_{k}", "mDiffFit", _MONTAGE_RUNTIME["mDiffFit"])
        wf.edges |= {(proj[a], diff), (proj[b], diff), (diff, concat)}
    wf.edges.add((concat, model))
    table = add("mImgTbl", "mImgTbl", _MONTAGE_RUNTIME["mImgTbl"])
    for i in range(projections):
        bg = add(f"mBackground_{i}", "mBackground", _MONTAGE_RUNTIME["mBackground"])
        wf.edges |= {(model, bg), (proj[i], bg), (bg, table)}
    last = table
    for kind in ("mAdd", "mShrink", "mJPEG"):
        node = add(kind, kind, _MONTAGE_RUNTIME[kind])
        wf.edges.add((last, node))
        last = node
    return wf


@dataclass
class WorkflowTemplate:
    """A workflow ready for the simulator; task ``i`` is ``tasks[i]``."""

    name: str
    tasks: list[str]
    runtime: list[float]
    """Seconds a replica runs when not interrupted."""
    estimate: list[float]
    """e_t used by φ′ and the task deadline."""
    children: list[list[int]]
    n_parents: list[int]
    roots: list[int]
    jobless: list[bool]
    """NOOP/DONE nodes: finish at submission, no job, no decision."""
    plan: WorkflowPlan
    """Planned at s(W) = 0 for contingency φ."""
    phi_mode: str = "balanced"

    def __post_init__(self) -> None:
        # φ′ or φ″ of the plan, bound once: criticality(node, s_t − s(W))
        self.criticality = self.plan.phi_prime if self.phi_mode == "balanced" else self.plan.phi_double_prime

    @property
    def critical_path_seconds(self) -> float:
        return self.plan.critical_path_seconds

    @property
    def deadline_offset(self) -> float:
        """d − s(W) = (φ+1)·CR(W) (eq. 2)."""
        return self.plan.deadline


def make_template(
    workflow: Workflow,
    *,
    name: str,
    phi: float,
    phi_mode: str = "balanced",
    runtime_scale: float = 1.0,
    default_estimate: float | None = None,
) -> WorkflowTemplate:
    """Plan ``workflow`` for the simulator.

    Estimates come from :func:`condor_rlrep.estimates.resolve_estimates`
    (VARS, DAX/WfFormat runtimes, ``default_estimate``); a task's simulated
    run time is its known runtime (DAX/WfFormat) or else its estimate. Both
    are multiplied by ``runtime_scale``.
    """
    from condor_rlrep.estimates import resolve_estimates

    if phi_mode not in PHI_MODES:
        raise InputError(f"unknown phi mode {phi_mode!r}; expected one of {', '.join(PHI_MODES)}")
    if not runtime_scale > 0 or not math.isfinite(runtime_scale):
        raise InputError(f"runtime scale must be a finite number > 0, got {runtime_scale!r}")
    estimates = resolve_estimates(workflow, default_estimate=default_estimate)
    scaled = {k: v * runtime_scale for k, v in estimates.items()}
    graph = build_graph(workflow, scaled)
    plan = plan_workflow(graph, phi, 0.0)
    order = [n for n in topological_order(graph) if n not in VIRTUAL_NODES]
    index = {n: i for i, n in enumerate(order)}
    children: list[list[int]] = [[] for _ in order]
    n_parents = [0] * len(order)
    for parent, child in sorted(graph.edges):  # joins expanded; virtual S/T edges skipped below
        if parent in index and child in index:
            children[index[parent]].append(index[child])
            n_parents[index[child]] += 1
    runtime = []
    jobless = []
    for n in order:
        node = workflow.nodes[n]
        known = node.runtime * runtime_scale if node.runtime is not None else scaled[n]
        empty = node.noop or node.done
        runtime.append(0.0 if empty else float(known))
        jobless.append(empty)
    if not order:
        raise InputError(f"workflow {name!r} has no tasks", path=workflow.source_path)
    return WorkflowTemplate(
        name=name,
        tasks=order,
        runtime=runtime,
        estimate=[scaled[n] for n in order],
        children=children,
        n_parents=n_parents,
        roots=[i for i, k in enumerate(n_parents) if k == 0],
        jobless=jobless,
        plan=plan,
        phi_mode=phi_mode,
    )


def parse_workflow_spec(spec: str) -> tuple[str, float | None, float]:
    """``NAME_OR_FILE[@SCALE][:WEIGHT]`` → (name or path, runtime scale or
    None when not given, weight).

    ``figure1`` and ``montage`` are built in; anything else is a file.
    """
    text = spec.strip()
    weight = 1.0
    head, sep, tail = text.rpartition(":")
    if sep and _is_number(tail):
        text, weight = head, float(tail)
    scale: float | None = None
    head, sep, tail = text.rpartition("@")
    if sep and _is_number(tail):
        text, scale = head, float(tail)
    if not text:
        raise InputError(f"workflow spec {spec!r} names no workflow")
    if not (weight > 0 and math.isfinite(weight)):
        raise InputError(f"workflow spec {spec!r}: weight must be > 0")
    if scale is not None and not (scale > 0 and math.isfinite(scale)):
        raise InputError(f"workflow spec {spec!r}: runtime scale must be > 0")
    return text, scale, weight


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_template(spec: str, *, phi: float, phi_mode: str = "balanced", default_estimate: float | None = None) -> tuple[WorkflowTemplate, float]:
    """Template and mix weight of one ``--workflow`` spec."""
    source, given_scale, weight = parse_workflow_spec(spec)
    scale = 1.0 if given_scale is None else given_scale
    if source == "figure1":
        wf = figure1_workflow()
    elif source == "montage":
        wf = montage_workflow()
        if given_scale is None:
            scale = MONTAGE_RUNTIME_SCALE
    else:
        from condor_rlrep.dag.load import load_workflow

        path = Path(source)
        if not path.is_file():
            raise InputError("workflow file not found (built-ins: figure1, montage)", path=source)
        wf = load_workflow(path)
    name = Path(source).stem if source not in ("figure1", "montage") else source
    template = make_template(
        wf, name=name, phi=phi, phi_mode=phi_mode, runtime_scale=scale, default_estimate=default_estimate
    )
    return template, weight


def inject(
    job_count: int, fraction: float, weights: Sequence[float], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Pick ``round(fraction·job_count)`` trace jobs to replace by workflows.

    Returns ``(replaced mask, template index per job, -1 where kept)``.
    """
    if not 0.0 <= fraction <= 1.0:
        raise InputError(f"workflow fraction must lie in [0, 1], got {fraction!r}")
    n = int(round(fraction * job_count))
    chosen = np.sort(rng.choice(job_count, size=n, replace=False)) if n else np.zeros(0, dtype=np.int64)
    mask = np.zeros(job_count, dtype=bool)
    mask[chosen] = True
    which = np.full(job_count, -1, dtype=np.int64)
    if n:
        w = np.asarray(weights, dtype=np.float64)
        which[chosen] = rng.choice(len(w), size=n, p=w / w.sum()) if len(w) > 1 else 0
    return mask, which
