"""The sections a sweep report gives each set of workflows.

For one workflow set of a :class:`~.data.ResultTable`: the baseline (the
paper's Table 1 beside ours, for the Figure-1 workflows), fixed replica
counts, the learned strategies and the oracle bound, the section on the
policies beyond the paper (:mod:`.beyond`), and the experiment's figures,
with the numbers behind Figures 6a and 6b as tables. :mod:`.render`
assembles these sections, once per workflow set of each trace, into the
report; a missing number is shown as "–".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from condor_rlrep.document import Document
from condor_rlrep.sweepreport.data import ResultTable, fixed_counterpart, max_replicas
from condor_rlrep.sweepreport.figures import FIGURES
from condor_rlrep.sweepreport.paper import BASELINE_P_STATS, PAPER_WORKFLOWS, TABLE1_ENERGY_MWH, TABLE1_SUCCESSFUL

__all__ = ["workflow_sections"]

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


def _num(value: float | None, fmt: str = "{:,.0f}") -> str:
    return "–" if value is None else fmt.format(value)


def workflow_sections(report: Document, table: ResultTable, workflows: str, figure_keys: list[str], figures_dir: Path,
                      prefix: str, role: str | None) -> dict[str, Any]:
    """Add the sections of ``workflows`` to ``report`` (figures drawn into
    ``figures_dir``, their files named with ``prefix``); return their numbers
    for report.json."""
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
