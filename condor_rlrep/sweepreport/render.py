"""Render a sweep folder as ``report.md`` and ``report.html`` with figures.

The report depends only on the run results and the experiment definition —
no wall times, host names or paths — so the same runs give the same report
whichever backend produced them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from condor_rlrep.atomic import write_atomic
from condor_rlrep.document import Code, Document, Strong
from condor_rlrep.sweepreport.data import ResultTable, fixed_counterpart, max_replicas
from condor_rlrep.sweepreport.figures import FIGURES
from condor_rlrep.sweepreport.findings import findings
from condor_rlrep.sweepreport.paper import BASELINE_P_STATS, PAPER_WORKFLOWS, TABLE1_ENERGY_MWH, TABLE1_SUCCESSFUL

__all__ = ["render_report", "render_combined"]

_FIGURE_TITLES = {
    "fig2a": "Figure 2a — CDF of p(W) (single replica)",
    "fig2b": "Figure 2b — task completion probability by submit hour and length",
    "fig3a": "Figure 3a — fixed replicas: success gain over single",
    "fig3b": "Figure 3b — fixed replicas: workflow energy",
    "fig3c": "Figure 3c — energy change from using RL instead of fixed replicas",
    "fig4": "Figure 4 — energy increase over single, fixed vs RL",
    "fig5": "Figure 5 — RL replicas: success gain over single",
    "fig6a": "Figure 6a — Montage: workflows within P, RL vs fixed",
    "fig6b": "Figure 6b — Montage: energy, RL vs fixed",
}


_STYLE = ("body{font-family:sans-serif;max-width:75em;margin:auto}"
          "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}"
          "td:first-child,th:first-child{text-align:left}img{max-width:100%}")


def _num(value: float | None, fmt: str = "{:,.0f}") -> str:
    return "–" if value is None else fmt.format(value)


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
        workflows_json[workflows] = _workflow_sections(report, table, workflows, experiment.get("figures", []),
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
        report.h(2, "Beyond the paper — issue 14's goals on every trace")
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
            workflows_json[workflows] = _workflow_sections(report, table, workflows, figure_keys, figures_dir, prefix,
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


def _workflow_sections(report: Document, table: ResultTable, workflows: str, figure_keys: list[str], figures_dir: Path,
                       prefix: str, role: str | None) -> dict[str, Any]:
    from condor_rlrep.sweepreport.beyond import policy_rows, render_section

    _table1(report, table, workflows)
    _fixed(report, table, workflows)
    _strategies(report, table, workflows)
    beyond = render_section(report, table, workflows, figures_dir, prefix, role)
    for key in figure_keys:
        draw = FIGURES.get(key)
        if draw is None:
            continue
        name = f"{prefix}{workflows}-{key}.png"
        if draw(table, workflows, figures_dir / name):
            report.h(3, _FIGURE_TITLES[key])
            report.img(f"figures/{name}", _FIGURE_TITLES[key])
            if key in _FIGURE_TABLES:
                _FIGURE_TABLES[key](report, table, workflows)
    policies = table.all_policies(workflows)
    return {"runs": [row for phi in table.phis(workflows) for row in policy_rows(table, workflows, phi, policies)],
            "beyond": beyond}


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


def _table1(report: Document, table: ResultTable, workflows: str) -> None:
    # The paper publishes Table 1 and the p(W) statistics for Figure-1 workflows only.
    paper = workflows == "figure1"
    rows = []
    scale = None
    for phi in table.phis(workflows):
        base = table.baseline(workflows, phi)
        if base is None:
            continue
        total = base.result.get("workflows", 0)
        row = [f"{phi:g}", _num(total), _num(base.within()),
               _num(100.0 * base.within() / total if total else None, "{:.1f} %"), _num(base.energy_mwh, "{:.2f}")]
        if paper:
            paper_ok = TABLE1_SUCCESSFUL.get(phi)
            if scale is None and total:
                scale = PAPER_WORKFLOWS / total
            row[4:4] = [_num(paper_ok), _num(100.0 * paper_ok / PAPER_WORKFLOWS if paper_ok else None, "{:.1f} %")]
            row += [_num(base.energy_mwh * scale if scale else None, "{:.2f}"), _num(TABLE1_ENERGY_MWH.get(phi), "{:.2f}")]
        row += [_num(base.replicas_per_task, "{:.2f}"), _num(base.kwh_per_success(), "{:.3f}")]
        rows.append(row)
    if not rows:
        return
    report.h(3, "Table 1 — baseline (single replica)" if paper else "Baseline (single replica)")
    header = ["P = φ", "workflows", "within P (ours)", "share (ours)", "energy MWh (ours)"]
    if paper:
        header[4:4] = ["within P (paper)", "share (paper)"]
        header += ["energy MWh scaled to 40,054 wf", "energy MWh (paper)"]
    header += ["replicas/task", "kWh per workflow within P"]
    report.table(header, rows)
    base = next((table.baseline(workflows, phi) for phi in table.phis(workflows) if table.baseline(workflows, phi)), None)
    stats = base.result.get("p_stats") if base else None
    if stats and None not in (stats["mean"], stats["sd"], stats["max"], stats["share_p_ge_1"]):
        def beside(key: str, fmt: str) -> str:
            return f" (paper {fmt.format(BASELINE_P_STATS[key])})" if paper else ""

        report.p(
            f"p(W) of the baseline: mean {stats['mean']:.3f}{beside('mean', '{}')}, "
            f"s.d. {stats['sd']:.3f}{beside('sd', '{}')}, share with p ≥ 1 {stats['share_p_ge_1']:.1%}"
            f"{beside('share_p_ge_1', '≈ {:.0%}')}, maximum {stats['max']:.2f}{beside('max', '{}')}."
        )


_STRATEGY_NAMES = {"rl": "ε-greedy (rl:R)", "rl-ucb1": "UCB1 (rl-ucb1:R)", "rl-thompson": "Thompson sampling (rl-thompson:R)",
                   "oracle": "oracle (oracle:R, knows the future)"}


def _strategies(report: Document, table: ResultTable, workflows: str) -> None:
    kinds = [k for k in _STRATEGY_NAMES if table.policies(workflows, k)]
    if not kinds:
        return
    rows = []
    for phi in table.phis(workflows):
        for kind in kinds:
            for policy in table.policies(workflows, kind):
                run = table.get(workflows, policy, phi)
                fixed = table.get(workflows, fixed_counterpart(policy), phi)
                if run is None:
                    continue
                rows.append([
                    f"{phi:g}", policy, _num(run.within()), _num(table.gain_percent(workflows, policy, phi), "{:+.1f} %"),
                    _num(run.energy_mwh, "{:.2f}"), _num(fixed.energy_mwh if fixed else None, "{:.2f}"),
                    _num(run.replicas_per_task, "{:.2f}"), _num(run.kwh_per_success(), "{:.3f}"),
                ])
    report.h(3, "Learned replica counts" + (" and the oracle bound" if "oracle" in kinds else "") + " — "
             + ", ".join(_STRATEGY_NAMES[k] for k in kinds))
    report.table(["P = φ", "policy", "within P", "gain over single", "energy MWh", "fixed:K energy MWh", "replicas/task",
                  "kWh per workflow within P"], rows)


def _fixed(report: Document, table: ResultTable, workflows: str) -> None:
    """Fixed replica counts in numbers (Figures 3a/3b draw them): energy and
    replicas do not depend on P, the workflows within P do."""
    policies = sorted(table.policies(workflows, "fixed"), key=max_replicas)
    phis = table.phis(workflows)
    rows = []
    for policy in policies:
        runs = [table.get(workflows, policy, phi) for phi in phis]
        first = next((run for run in runs if run is not None), None)
        if first is None:
            continue
        gains = [_num(table.gain_percent(workflows, policy, phi), "{:+.1f} %") for phi in phis]
        rows.append([policy, _num(first.energy_mwh, "{:.2f}"), _num(first.replicas_per_task, "{:.2f}"), *gains])
    if rows:
        report.h(3, "Fixed replicas — energy, replicas and workflows within P against single")
        report.table(["policy", "energy MWh", "replicas/task", *[f"P = {phi:g}" for phi in phis]], rows)
        per = []
        for policy in ["single", *policies]:
            values = [(run.kwh_per_success() if (run := table.get(workflows, policy, phi)) else None) for phi in phis]
            if any(v is not None for v in values):
                per.append([policy, *[_num(v, "{:.3f}") for v in values]])
        report.p("Energy per successful workflow, kWh per workflow within P:")
        report.table(["policy", *[f"P = {phi:g}" for phi in phis]], per)


def _rl_against_fixed(report: Document, table: ResultTable, workflows: str, change, what: str) -> None:
    """The numbers behind Figure 6a or 6b: one row per maximum, one column per P."""
    phis = table.phis(workflows)
    rows = []
    for policy in table.policies(workflows, "rl"):
        fixed = fixed_counterpart(policy)
        values = [change(workflows, policy, fixed, phi) for phi in phis]
        if any(v is not None for v in values):
            rows.append([str(max_replicas(policy))] + [_num(v, "{:+.1f}") for v in values])
    if rows:
        report.p(f"{what}, in % (rl:R against fixed:R at the same maximum R):")
        report.table(["R"] + [f"P = {phi:g}" for phi in phis], rows)


def _fig6a_table(report: Document, table: ResultTable, workflows: str) -> None:
    _rl_against_fixed(report, table, workflows, table.within_change_percent, "Change in workflows within P")
    # The paper's caption ("percentage increase in workflows achieving the
    # contingency") may also mean against no replication: both are shown.
    phis = table.phis(workflows)
    rows = []
    for policy in table.policies(workflows, "rl") + table.policies(workflows, "fixed"):
        values = [table.gain_percent(workflows, policy, phi) for phi in phis]
        if any(v is not None for v in values):
            rows.append([policy] + [_num(v, "{:+.1f}") for v in values])
    if rows:
        report.p("Gain in workflows within P over a single replica, in %:")
        report.table(["policy"] + [f"P = {phi:g}" for phi in phis], rows)


def _fig6b_table(report: Document, table: ResultTable, workflows: str) -> None:
    _rl_against_fixed(report, table, workflows, table.energy_change_percent, "Change in workflow energy")


_FIGURE_TABLES = {"fig6a": _fig6a_table, "fig6b": _fig6b_table}
