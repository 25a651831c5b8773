"""The report's matplotlib figures, one function per figure of the paper.

Each takes the :class:`~condor_rlrep.report.data.ResultTable` and a path,
draws with the non-interactive Agg backend, and returns whether it had the
data to draw (a quick sweep may lack some runs).
"""

from __future__ import annotations

from pathlib import Path

from condor_rlrep.report.data import ResultTable

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


def fig2a(table: ResultTable, workflows: str, path: Path) -> bool:
    phis = table.phis(workflows)
    base = next((table.baseline(workflows, phi) for phi in phis if table.baseline(workflows, phi)), None)
    if base is None or not base.result.get("p_quantiles"):
        return False
    plt = _pyplot()
    raw = base.result["p_quantiles"]
    shares = [i / (len(raw) - 1) for i in range(len(raw))]
    # None marks workflows that never finished (p = ∞): the CDF stops below 1.
    pairs = [(q, s) for q, s in zip(raw, shares) if q is not None]
    quantiles, shares = [q for q, _ in pairs], [s for _, s in pairs]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.step(quantiles, shares, where="post")
    ax.set_xscale("symlog", linthresh=0.01)
    ax.set_xlabel("p(W)")
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
    _save(fig, path)
    plt.close(fig)
    return True


def _lines_by_phi(table, workflows, kind, value, ylabel, title, path) -> bool:
    policies = table.policies(workflows, kind)
    if not policies:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    drawn = False
    for phi in table.phis(workflows):
        xs, ys = [], []
        for policy in policies:
            y = value(policy, phi)
            if y is not None:
                xs.append(int(policy.split(":")[1]))
                ys.append(y)
        if xs:
            ax.plot(xs, ys, marker="o", label=f"P = {phi:g}")
            drawn = True
    if not drawn:
        plt.close(fig)
        return False
    ax.set_xlabel("replicas (fixed count or RL maximum)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    _save(fig, path)
    plt.close(fig)
    return True


def fig3a(table, workflows, path) -> bool:
    return _lines_by_phi(
        table, workflows, "fixed", lambda pol, phi: table.gain_percent(workflows, pol, phi),
        "% more workflows within P", "Figure 3a: fixed replicas, success gain", path,
    )


def fig3b(table, workflows, path) -> bool:
    def energy(pol, phi):
        run = table.get(workflows, pol, phi)
        return run.energy_mwh if run else None

    return _lines_by_phi(table, workflows, "fixed", energy, "workflow energy (MWh)", "Figure 3b: fixed replicas, energy", path)


def fig3c(table, workflows, path) -> bool:
    return _lines_by_phi(
        table, workflows, "rl",
        lambda pol, phi: table.energy_change_percent(workflows, pol, pol.replace("rl", "fixed"), phi),
        "% energy change, RL vs fixed", "Figure 3c: energy change from using RL", path,
    )


def fig4(table, workflows, path) -> bool:
    fixed, rl = table.policies(workflows, "fixed"), table.policies(workflows, "rl")
    if not fixed or not rl:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for kind, policies in (("fixed", fixed), ("RL", rl)):
        xs, ys = [], []
        for policy in policies:
            changes = [table.energy_change_percent(workflows, policy, "single", phi) for phi in table.phis(workflows)]
            changes = [c for c in changes if c is not None]
            if changes:
                xs.append(int(policy.split(":")[1]))
                ys.append(sum(changes) / len(changes))
        ax.plot(xs, ys, marker="o", label=kind)
    ax.set_xlabel("replicas (fixed count or RL maximum)")
    ax.set_ylabel("% energy increase over single (mean over P)")
    ax.set_title("Figure 4: energy increase, fixed vs RL")
    ax.grid(alpha=0.3)
    ax.legend()
    _save(fig, path)
    plt.close(fig)
    return True


def fig5(table, workflows, path) -> bool:
    return _lines_by_phi(
        table, workflows, "rl", lambda pol, phi: table.gain_percent(workflows, pol, phi),
        "% more workflows within P", "Figure 5: RL replicas, success gain", path,
    )


def fig6a(table, workflows, path) -> bool:
    return _lines_by_phi(
        table, workflows, "rl", lambda pol, phi: table.within_change_percent(workflows, pol, pol.replace("rl", "fixed"), phi),
        "% change in workflows within P, RL vs fixed", "Figure 6a: Montage, RL vs fixed success", path,
    )


def fig6b(table, workflows, path) -> bool:
    return _lines_by_phi(
        table, workflows, "rl", lambda pol, phi: table.energy_change_percent(workflows, pol, pol.replace("rl", "fixed"), phi),
        "% energy change, RL vs fixed", "Figure 6b: Montage, RL vs fixed energy", path,
    )


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
