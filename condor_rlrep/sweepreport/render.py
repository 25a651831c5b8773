"""Render a sweep folder as ``report.md``, ``report.html`` and ``report.json`` with figures.

The report depends only on the run results and the experiment definition —
no wall times, host names or paths — so the same runs give the same report
whichever backend produced them. This module assembles it: one sweep, or
several grouped by trace, their runs and parameters, and the paper's
findings against ours; each workflow set's sections are :mod:`.sections`',
and :class:`~condor_rlrep.document.Document` writes the Markdown and HTML.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from condor_rlrep.atomic import write_atomic
from condor_rlrep.document import Code, Document, Strong
from condor_rlrep.sweepreport.data import ResultTable
from condor_rlrep.sweepreport.findings import findings
from condor_rlrep.sweepreport.sections import workflow_sections

__all__ = ["render_report", "render_combined"]

_STYLE = ("body{font-family:sans-serif;max-width:75em;margin:auto}"
          "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}"
          "td:first-child,th:first-child{text-align:left}img{max-width:100%}")

DEFINITIONS = {
    "energy_mwh": "replica energy of the simulated trace (the year, unless a quick run says otherwise above) in MWh: every replica of every workflow task, the ones "
                  "evicted, killed or removed as losers included (background jobs excluded)",
    "replicas_per_task": "mean number of replicas started per task (1 for single)",
    "kwh_per_workflow_within_p": "energy per successful workflow: the replica energy in kWh divided by the "
                                 "workflows with p(W) ≤ P, i.e. what each workflow that met its deadline cost, "
                                 "the energy wasted on the others included",
}

_UNITS = (Strong("Units."), " energy MWh: " + DEFINITIONS["energy_mwh"] + ". replicas/task: "
          + DEFINITIONS["replicas_per_task"] + ". kWh per workflow within P: " + DEFINITIONS["kwh_per_workflow_within_p"] + ".")


def render_report(sweep_dir: str | Path, *, tuning_seeds: list[int] | None = None) -> Path:
    """Write ``report.md``, ``report.html``, ``report.json`` and
    ``figures/*.png`` into the sweep folder; return the Markdown path.
    ``tuning_seeds``: the trace seeds the policies were tuned on (the
    report then calls every other seed held out)."""
    from condor_rlrep.sweepreport.sources import Sweep, group_by_trace

    sweep = Sweep.load(sweep_dir)
    experiment, documents = sweep.experiment, sweep.documents
    group = group_by_trace([sweep])[0] if documents else None
    table = ResultTable(documents)
    figures_dir = sweep.root / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)

    report = Document()
    report.h(1, f"condor-rlrep sweep report: {experiment['name']}" + (" (quick)" if experiment.get("quick") else ""))
    report.p(experiment.get("description", ""))
    trace = experiment["trace"]
    if experiment.get("quick"):
        # the description is the full grid's: say what this quick run covered instead
        phis = sorted({phi for workflows in table.workflow_sets() for phi in table.phis(workflows)})
        length = f"a {trace['days']}-day trace" if trace.get("days") else "a shortened trace"
        report.p(
            f"This is the quick variant: {length}, not the description's year, and only P = "
            + ", ".join(f"{phi:g}" for phi in phis) + "; the full grid is ",
            Code(f"condor-rlrep sweep {experiment['name']}"), ".",
        )
    trace_text = f"preset {trace['preset']}, {trace.get('days')} days, trace seed {trace.get('seed')}" if "preset" in trace else "a trace folder"
    role = group.role(tuning_seeds) if group else None
    report.p(
        f"Runs: {len(documents)} finished of {_grid_size(experiment)}. Trace: {trace_text}",
        *((" (a ", Strong(role), ")") if role else ()),
        ". "
        f"Shared parameters: {_params_text(experiment['base'])}. "
        f"Reproduce with: condor-rlrep sweep {experiment['name']}{' --quick' if experiment.get('quick') else ''} --out DIR "
        "(finished runs are kept; the seeds are in the experiment file).",
    )
    report.p(*_UNITS)
    workflows_json = {}
    for workflows in table.workflow_sets():
        report.h(2, f"Workflows: {workflows}")
        workflows_json[workflows] = workflow_sections(report, table, workflows, experiment.get("figures", []),
                                                       figures_dir, "", role)
    report.h(2, "The paper's findings against ours")
    found = findings(table)
    for finding in found:
        report.p(*_finding_text(finding))
    document = {
        "sweeps": [_sweep_json(sweep, sweep.root)],
        "tuning_seeds": tuning_seeds,
        "definitions": DEFINITIONS,
        "groups": [{"label": group.label if group else None, "trace": trace, "role": role,
                    "sweeps": [experiment["name"]], "workflows": workflows_json,
                    "findings": [_finding_json(f) for f in found]}],
    }
    return _write(sweep.root, report, f"condor-rlrep: {experiment['name']}", document)


def render_combined(folders: list[str | Path], out_dir: str | Path, *,
                    tuning_seeds: list[int] | None = None) -> Path:
    """One report of several sweeps (or of the sweep folders under a parent
    folder), grouped by trace seed, written into ``out_dir``; the goals of
    the policies beyond the paper are tabled across the seeds, each seed
    called tuning or held out when ``tuning_seeds`` is given."""
    from condor_rlrep.sweepreport.beyond import (GOAL_GAIN_PERCENT, GOAL_HEADER, GOAL_P, beyond_policies, check_goals,
                                            comparison_policies)
    from condor_rlrep.sweepreport.beyond_figures import goals_by_seed
    from condor_rlrep.sweepreport.sources import find_sweeps, group_by_trace

    out = Path(out_dir)
    sweeps = find_sweeps(folders)
    groups = group_by_trace(sweeps)
    figures_dir = out / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    report = Document()
    report.h(1, f"condor-rlrep sweep report: {len(sweeps)} sweeps, {len(groups)} traces")
    report.p("Sweeps in this report (runs of the same trace and shared parameters are read as one grid):")
    report.table(["folder", "experiment", "trace", "runs", "description"], [
        [Code(_relative(s.root, out)), s.experiment["name"], _trace_text(s.experiment["trace"]),
         _runs_text(s), s.experiment.get("description", "")] for s in sweeps])
    if tuning_seeds is not None:
        present = {g.seed for g in groups}
        tuned = ", ".join(str(seed) for seed in tuning_seeds)
        missing = [seed for seed in tuning_seeds if seed not in present]
        held = [str(g.seed) for g in groups if g.role(tuning_seeds) == "held-out seed"]
        report.p(
            Strong(f"Tuned on trace seed {tuned}"),
            ": the policies' parameters were chosen on it" + (" (its runs are not in this report)" if missing else "")
            + ". ",
            *((Strong(f"Held out: trace seeds {', '.join(held)}"), " — nothing was tuned on them.") if held
              else ("No seed here is held out.",)),
        )
    else:
        report.p("The report was not told which trace seed the policies were tuned on (", Code("--tuning-seed"),
                 "), so no seed is called held out.")
    report.p(*_UNITS)
    shared = groups[0].base if len(groups) == 1 or all(g.base == groups[0].base for g in groups) else None
    if shared is not None:
        report.p(f"Shared parameters: {_params_text(shared)}.")
    goal_rows, seed_entries = [], []
    for group in groups:
        table = group.table()
        for workflows in table.workflow_sets():
            if beyond_policies(table, workflows):
                role = group.role(tuning_seeds)
                seed_entries.append((f"{group.label}" + (f"\n({role})" if role else "")
                                     + (f"\n{workflows}" if len(table.workflow_sets()) > 1 else ""),
                                     table, workflows, comparison_policies(table, workflows)))
            for policy in beyond_policies(table, workflows):
                checks = check_goals(table, workflows, policy)
                goal_rows.append([str(group.seed if group.seed is not None else group.label),
                                  group.role(tuning_seeds) or "–", workflows, Code(policy)] + checks.cells())
    if goal_rows:
        report.h(2, "Beyond the paper — the targets on every trace")
        report.p("✓ met, ✗ not met, – the runs to decide it are missing. Each trace's section below has the numbers.")
        report.table(["trace seed", "role", "workflows", "policy"] + GOAL_HEADER, goal_rows)
        if goals_by_seed(seed_entries, figures_dir / "beyond-goals-by-seed.png", GOAL_P, GOAL_GAIN_PERCENT):
            title = f"Gain over single and replica energy at P = {GOAL_P:g}, every trace"
            report.h(3, title)
            report.img("figures/beyond-goals-by-seed.png", title)
    groups_json = []
    for group in groups:
        table = group.table()
        role = group.role(tuning_seeds)
        names = [s.experiment["name"] for s in group.sweeps]
        figure_keys = list(dict.fromkeys(k for s in group.sweeps for k in s.experiment.get("figures", [])))
        prefix = f"seed-{group.seed}-" if group.seed is not None else f"{len(groups_json)}-"
        workflows_json = {}
        for workflows in table.workflow_sets():
            report.h(2, f"{group.label[0].upper()}{group.label[1:]}" + (f" ({role})" if role else "")
                     + f" — workflows: {workflows}")
            report.p(f"From {', '.join(names)}: {_trace_text(group.trace)}; {len(group.documents)} runs.")
            workflows_json[workflows] = workflow_sections(report, table, workflows, figure_keys, figures_dir, prefix,
                                                           role)
        found = findings(table)
        report.h(3, f"The paper's findings against ours ({group.label})")
        for finding in found:
            report.p(*_finding_text(finding))
        groups_json.append({"label": group.label, "trace": group.trace, "role": role, "sweeps": names,
                            "workflows": workflows_json, "findings": [_finding_json(f) for f in found]})
    document = {"sweeps": [_sweep_json(s, out) for s in sweeps], "tuning_seeds": tuning_seeds,
                "definitions": DEFINITIONS, "groups": groups_json}
    return _write(out, report, "condor-rlrep: " + ", ".join(s.experiment["name"] for s in sweeps), document)


def _finding_text(finding) -> tuple:
    return Strong(finding.verdict.upper()), f" — {finding.claim} Ours: {finding.evidence}"


def _write(root: Path, report: Document, title: str, document: dict[str, Any]) -> Path:
    import json

    md_path = root / "report.md"
    write_atomic(md_path, report.markdown())
    write_atomic(root / "report.html", report.html(title, style=_STYLE))
    write_atomic(root / "report.json", json.dumps(_finite(document), indent=1, ensure_ascii=False) + "\n")
    return md_path


def _finite(value: Any) -> Any:
    """NaN/inf as null: report.json is strict JSON."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _sweep_json(sweep, relative_to: Path) -> dict[str, Any]:
    e = sweep.experiment
    return {"folder": _relative(sweep.root, relative_to), "name": e["name"], "trace": e["trace"],
            "runs": len(sweep.documents), "grid_size": _grid_size(e), "quick": bool(e.get("quick"))}


def _finding_json(finding) -> dict[str, str]:
    return {"key": finding.key, "claim": finding.claim, "verdict": finding.verdict, "evidence": finding.evidence}


def _relative(path: Path, start: Path) -> str:
    import os

    return os.path.relpath(path.resolve(), start.resolve())


def _runs_text(sweep) -> str:
    size = _grid_size(sweep.experiment)
    n = len(sweep.documents)
    # a folder may hold more runs than its grid (runs copied in from another sweep of the same trace)
    return f"{n} of {size}" if n <= size else f"{n} ({size} in its grid, the rest copied in)"


def _trace_text(trace: dict[str, Any]) -> str:
    if "preset" in trace:
        return f"preset {trace['preset']}, {trace.get('days')} days, trace seed {trace.get('seed')}"
    return "a trace folder"


def _grid_size(experiment: dict[str, Any]) -> int:
    size = 1
    for values in experiment["grid"].values():
        size *= len(values)
    return size


def _params_text(base: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(base.items()))
