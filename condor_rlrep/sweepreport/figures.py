"""The report's matplotlib figures, one function per figure of the paper.

Each takes the :class:`~condor_rlrep.sweepreport.data.ResultTable` and a path,
draws with the non-interactive Agg backend, and returns whether it had the
data to draw (a quick sweep may lack some runs).
"""

from __future__ import annotations

from pathlib import Path

from condor_rlrep.sweepreport.data import ResultTable, fixed_counterpart, max_replicas
from condor_rlrep.sweepreport.paper import BASELINE_P_STATS, PAPER_WORKFLOWS, TABLE1_ENERGY_MWH, TABLE1_SUCCESSFUL

__all__ = ["FIGURES"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # A fixed date and no hash salt keep the PNG bytes stable for equal data.
    plt.rcParams["svg.hashsalt"] = "condor-rlrep"
    return plt


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})


# Where the paper gives numbers, they are drawn on our figure in black
# (crosses, triangles for bounds, dashed lines for headline figures).


def fig2a(table: ResultTable, workflows: str, path: Path) -> bool:
    phis = table.phis(workflows)
    base = next((table.baseline(workflows, phi) for phi in phis if table.baseline(workflows, phi)), None)
    if base is None or not base.result.get("p_quantiles"):
        return False
    plt = _pyplot()
    raw = base.result["p_quantiles"]
    shares = [i / (len(raw) - 1) for i in range(len(raw))]
    # None marks p = ∞ (a workflow that never finished): the CDF ends at the
    # finished share, and the rest is drawn as what it is.
    pairs = [(q, s) for q, s in zip(raw, shares) if q is not None]
    quantiles, shares = [q for q, _ in pairs], [s for _, s in pairs]
    total = base.result.get("workflows") or 0
    finished = base.result["completed"] / total if total and "completed" in base.result else (shares[-1] if shares else 0.0)
    # the quantiles end before the largest finite p(W) when some are ∞: close the curve there
    largest = (base.result.get("p_stats") or {}).get("max")
    if quantiles and largest is not None and largest >= quantiles[-1] and shares[-1] < finished:
        quantiles, shares = quantiles + [largest], shares + [finished]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    if quantiles:
        ax.step([0.0] + quantiles, [0.0] + shares, where="post", color="#1f77b4")
    right = max(quantiles[-1] * 3 if quantiles else 1.0, 1.0)
    unfinished = 1.0 - finished
    if unfinished > 0:
        ax.axhspan(finished, 1.0, color="#d62728", alpha=0.15, lw=0)
        ax.axhline(finished, color="#d62728", ls="--", lw=1)
        count = f"{round(unfinished * total)} of {total} workflows, " if total else ""
        ax.text(0.98, finished - 0.03 if unfinished < 0.1 else (finished + 1.0) / 2,
                f"never finished (p = ∞): {count}{100 * unfinished:.2g} %", transform=ax.get_yaxis_transform(),
                ha="right", va="top" if unfinished < 0.1 else "center", fontsize=8, color="#a01010")
    else:
        ax.text(0.98, 0.04, "every workflow finished", transform=ax.transAxes, ha="right", fontsize=8)
    ax.set_xscale("symlog", linthresh=0.01)
    if _is_paper_workflow(workflows, "figure1"):
        right = max(right, BASELINE_P_STATS["max"] * 1.3)
        # Table 1's within-P counts are points of the paper's CDF: F(P) = successful / workflows
        ps = sorted(TABLE1_SUCCESSFUL)
        ax.plot(ps, [TABLE1_SUCCESSFUL[p] / PAPER_WORKFLOWS for p in ps], ls="none", marker="x", color="black",
                markersize=6, label="paper, Table 1: share within P", zorder=3)
        ax.plot([BASELINE_P_STATS["max"]], [1.0], ls="none", marker="^", color="black", markersize=6,
                label=f"paper: largest p(W) = {BASELINE_P_STATS['max']:g}", zorder=3)
        ax.legend(fontsize=7, loc="lower right" if unfinished <= 0 else "center right")
    ax.set_xlim(0, right)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("p(W) = makespan / CR(W) − 1")
    ax.set_ylabel("fraction of workflows ≤ p(W)")
    ax.set_title("Figure 2a: CDF of p(W), single replica")
    ax.grid(alpha=0.3)
    _save(fig, path)
    plt.close(fig)
    return True


def fig2b(table: ResultTable, workflows: str, path: Path) -> bool:
    phis = table.phis(workflows)
    base = next((table.baseline(workflows, phi) for phi in phis if table.baseline(workflows, phi)), None)
    grid = base.result.get("completion_by_hour_length") if base else None
    if not grid:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    import numpy as np

    probability = np.array([[np.nan if v is None else v for v in row] for row in grid["probability"]], dtype=float)
    image = ax.imshow(
        probability,
        origin="lower",
        aspect="auto",
        extent=(0, 24, 0, len(grid["length_edges_hours"]) - 1),
        vmin=0,
        vmax=1,
        cmap="viridis",
    )
    ax.set_yticks(range(len(grid["length_edges_hours"])))
    ax.set_yticklabels([f"{edge:g}" for edge in grid["length_edges_hours"]])
    ax.set_xlabel("submit hour of day")
    ax.set_ylabel("task length (hours, bin edges)")
    ax.set_title("Figure 2b: task completion probability (one attempt)")
    fig.colorbar(image, ax=ax, label="probability")
    if np.isnan(probability).any():
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor="white", edgecolor="#888888", label="white: no task of that length started then")],
                  fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.17), frameon=False)
    _save(fig, path)
    plt.close(fig)
    return True


# 11 values of P (0.1 … 1.0 and 2): Tableau's ten colours and black, each
# with its own marker, so that no two lines look alike.
_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf", "#000000"]
_MARKERS = ["o", "s", "D", "^", "v", "<", ">", "p", "h", "X", "*"]


def _style(index: int) -> dict:
    return {"color": _COLOURS[index % len(_COLOURS)], "marker": _MARKERS[index % len(_MARKERS)]}


def _replica_axis(ax, counts, single: bool = False) -> None:
    """Replica counts are integers: one tick per count drawn, none between."""
    ticks = sorted(set(counts))
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t}\n(single)" if single and t == 1 else str(t) for t in ticks])
    ax.set_xlabel("replicas (fixed count or RL maximum)")


def _baseline(ax, label: str = "single replica (baseline)") -> None:
    ax.axhline(0.0, color="#444444", lw=1.2, ls=":", label=label, zorder=1)


def _lines_by_phi(table, workflows, kind, value, ylabel, title, path, *, single=None, zero_line=False,
                  paper=None) -> bool:
    """One line per P over the replica counts of ``kind``; ``single(phi)``
    adds the single-replica run at x = 1, ``zero_line`` a baseline at 0,
    ``paper(ax)`` draws the paper's published values (and returns their x)."""
    policies = table.policies(workflows, kind)
    if not policies:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.9))
    series = []
    for phi in table.phis(workflows):
        xs, ys = [], []
        first = single(phi) if single else None
        if first is not None:
            xs.append(1)
            ys.append(first)
        for policy in policies:
            y = value(policy, phi)
            if y is not None:
                xs.append(max_replicas(policy))
                ys.append(y)
        if xs:
            series.append((f"P = {phi:g}", xs, ys))
    if not series:
        plt.close(fig)
        return False
    if len(series) > 1 and all(xs == series[0][1] and ys == series[0][2] for _, xs, ys in series):
        # e.g. energy of fixed runs: the same simulations judged at each P
        series = [(f"every P ({len(series)} values; the runs do not depend on P)", series[0][1], series[0][2])]
    counts: list[int] = []
    for index, (label, xs, ys) in enumerate(series):
        # one replica count only: points, not a line through one x value
        ax.plot(xs, ys, lw=1, ls="-" if len(set(xs)) > 1 else "none", alpha=0.9, markersize=5, label=label,
                **_style(index))
        counts += xs
    if zero_line:
        _baseline(ax)
    if paper is not None:
        counts += paper(ax)
    _replica_axis(ax, counts, single=single is not None)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(series) > 3:  # beside the axes: inside, a dozen entries hide lines
        fig.set_size_inches(7.6, 3.9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:
        ax.legend(fontsize=7)
    _save(fig, path)
    plt.close(fig)
    return True


def fig3a(table, workflows, path) -> bool:
    return _lines_by_phi(
        table, workflows, "fixed", lambda pol, phi: table.gain_percent(workflows, pol, phi),
        "% more workflows within P", "Figure 3a: fixed replicas, success gain", path, zero_line=True,
        paper=_paper_fig3a if _is_paper_workflow(workflows, "figure1") else None,
    )


def _paper_fig3a(ax) -> list[int]:
    # §6: "over 20% more workflows" at P = 0.1 with two and three replicas — a lower bound
    ax.plot([2, 3], [20.0, 20.0], ls="none", marker="^", color="black", markersize=7,
            label="paper: > 20 % at P = 0.1 (2–3 replicas)", zorder=3)
    return [2, 3]


def fig3b(table, workflows, path) -> bool:
    def energy(pol, phi):
        run = table.get(workflows, pol, phi)
        return run.energy_mwh if run else None

    def paper(ax) -> list[int]:
        base = next((table.baseline(workflows, phi) for phi in table.phis(workflows) if table.baseline(workflows, phi)),
                    None)
        ours = (base.result.get("workflows") or 0) if base else 0
        if not ours:
            return []
        # the paper's year had 40,054 workflows: its energies scaled to our count
        scaled = [TABLE1_ENERGY_MWH[p] * ours / PAPER_WORKFLOWS for p in sorted(TABLE1_ENERGY_MWH)]
        ax.plot([1] * len(scaled), scaled, ls="none", marker="x", color="black", markersize=6, zorder=3,
                label=f"paper, Table 1 (single, each P), × {ours:,}/{PAPER_WORKFLOWS:,} workflows")
        return [1]

    return _lines_by_phi(table, workflows, "fixed", energy, "energy of all workflow replicas,\nwhole trace (MWh)",
                         "Figure 3b: fixed replicas, energy", path, single=lambda phi: energy("single", phi),
                         paper=paper if _is_paper_workflow(workflows, "figure1") else None)


def fig3c(table, workflows, path) -> bool:
    return _lines_by_phi(
        table, workflows, "rl",
        lambda pol, phi: table.energy_change_percent(workflows, pol, fixed_counterpart(pol), phi),
        "% energy change, RL vs fixed", "Figure 3c: energy change from using RL", path,
    )


def fig4(table, workflows, path) -> bool:
    fixed, rl = table.policies(workflows, "fixed"), table.policies(workflows, "rl")
    if not fixed or not rl:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.9))
    counts: list[int] = []
    for index, (kind, policies) in enumerate((("fixed", fixed), ("RL", rl))):
        xs, ys = [], []
        for policy in policies:
            changes = [table.energy_change_percent(workflows, policy, "single", phi) for phi in table.phis(workflows)]
            changes = [c for c in changes if c is not None]
            if changes:
                xs.append(max_replicas(policy))
                ys.append(sum(changes) / len(changes))
        ax.plot(xs, ys, lw=1, markersize=5, label=kind, **_style(index))
        counts += xs
    _baseline(ax)
    _replica_axis(ax, counts)
    ax.set_ylabel("% energy increase over single (mean over P)")
    ax.set_title("Figure 4: energy increase, fixed vs RL")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, path)
    plt.close(fig)
    return True


def fig5(table, workflows, path) -> bool:
    return _lines_by_phi(
        table, workflows, "rl", lambda pol, phi: table.gain_percent(workflows, pol, phi),
        "% more workflows within P", "Figure 5: RL replicas, success gain", path, zero_line=True,
    )


def fig6a(table, workflows, path) -> bool:
    return _lines_by_phi(
        table, workflows, "rl", lambda pol, phi: table.within_change_percent(workflows, pol, fixed_counterpart(pol), phi),
        "% change in workflows within P, RL vs fixed", "Figure 6a: Montage, RL vs fixed success", path,
        paper=_headline(-4.0, "paper (abstract): about −4 %") if _is_paper_workflow(workflows, "montage") else None,
    )


def fig6b(table, workflows, path) -> bool:
    return _lines_by_phi(
        table, workflows, "rl", lambda pol, phi: table.energy_change_percent(workflows, pol, fixed_counterpart(pol), phi),
        "% energy change, RL vs fixed", "Figure 6b: Montage, RL vs fixed energy", path,
        paper=_headline(-34.0, "paper (abstract): −34 %") if _is_paper_workflow(workflows, "montage") else None,
    )


def _headline(value: float, label: str):
    """The paper's one published number for a figure, as a reference line."""
    def draw(ax) -> list[int]:
        ax.axhline(value, color="black", lw=1.2, ls="--", label=label, zorder=1)
        low, high = ax.get_ylim()
        margin = 0.06 * (max(high, value) - min(low, value) or 1.0)
        ax.set_ylim(min(low, value - margin), max(high, value + margin))  # the line inside the axes, not on its edge
        return []

    return draw


def _is_paper_workflow(workflows: str, name: str) -> bool:
    """The paper's numbers are for one workflow at a time: figure1 or Montage."""
    return workflows.split("@")[0].split(":")[0].lower() == name


FIGURES = {
    "fig2a": fig2a,
    "fig2b": fig2b,
    "fig3a": fig3a,
    "fig3b": fig3b,
    "fig3c": fig3c,
    "fig4": fig4,
    "fig5": fig5,
    "fig6a": fig6a,
    "fig6b": fig6b,
}
