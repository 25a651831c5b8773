"""Figures of the "beyond the paper" section: workflows within P against P,
and replica energy against workflows within P (the frontier)."""

from __future__ import annotations

from pathlib import Path

from condor_rlrep.sweepreport.data import ResultTable, parse_policy
from condor_rlrep.sweepreport.figures import _pyplot

__all__ = ["within_by_p", "frontier", "policy_style"]

# single grey, fixed blues, bandits oranges, oracle purple (dashed: it knows
# the future), the policies beyond the paper in greens, reds and browns
_FAMILY = {"single": ["#444444"], "fixed": ["#1f77b4", "#6baed6", "#08519c"],
           "rl": ["#ff7f0e", "#fdae6b", "#a63603"], "oracle": ["#9467bd", "#c5b0d5"]}
_BEYOND = ["#2ca02c", "#d62728", "#8c564b", "#17becf", "#bcbd22", "#e377c2", "#98df8a", "#ff9896"]
_MARKERS = {"single": "o", "fixed": "s", "rl": "^", "oracle": "*"}
_BEYOND_MARKERS = ["D", "P", "X", "v", "h", "<", ">", "p"]


def policy_style(policies: list[str]) -> dict[str, dict]:
    """One colour, marker and line style per policy, by family."""
    styles: dict[str, dict] = {}
    used: dict[str, int] = {}
    beyond = 0
    for policy in policies:
        kind = parse_policy(policy)[0]
        family = "rl" if kind.startswith("rl") else kind
        if family in _FAMILY:
            index = used.get(family, 0)
            used[family] = index + 1
            colours = _FAMILY[family]
            styles[policy] = {"color": colours[index % len(colours)], "marker": _MARKERS[family],
                              "ls": "--" if family == "oracle" else "-"}
        else:
            styles[policy] = {"color": _BEYOND[beyond % len(_BEYOND)], "marker": _BEYOND_MARKERS[beyond % len(_BEYOND_MARKERS)],
                              "ls": "-"}
            beyond += 1
    return styles


def _label(policy: str) -> str:
    return policy + " (knows the future)" if parse_policy(policy)[0] == "oracle" else policy


def within_by_p(table: ResultTable, workflows: str, policies: list[str], path: Path) -> bool:
    phis = table.phis(workflows)
    if len(phis) < 2:
        return False
    plt = _pyplot()
    styles = policy_style(policies)
    fig, (share_ax, gain_ax) = plt.subplots(1, 2, figsize=(10.5, 4.4))
    for policy in policies:
        points = [(phi, run.share_percent(), table.gain_percent(workflows, policy, phi))
                  for phi in phis if (run := table.get(workflows, policy, phi)) is not None]
        if not points:
            continue
        style = styles[policy]
        kwargs = {"color": style["color"], "marker": style["marker"], "ls": style["ls"], "lw": 1.2, "markersize": 5}
        share_ax.plot([p for p, _, _ in points], [s for _, s, _ in points], label=_label(policy), **kwargs)
        gains = [(p, g) for p, _, g in points if g is not None]
        if gains and policy != "single":
            gain_ax.plot([p for p, _ in gains], [g for _, g in gains], **kwargs)
    gain_ax.axhline(0.0, color=styles.get("single", {}).get("color", "#444444"), lw=1.2, ls=":",
                    label="single (baseline)")
    for ax in (share_ax, gain_ax):
        ax.set_xscale("log")
        ax.set_xticks(phis)
        ax.set_xticklabels(_spaced_labels(phis), fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel("P = φ (deadline slack, fraction of CR(W); log scale)")
        ax.grid(alpha=0.3)
    share_ax.set_ylabel("workflows within P (% of all)")
    share_ax.set_title("Workflows within P")
    gain_ax.set_ylabel("gain over single (% more workflows within P)")
    gain_ax.set_title("Gain over single")
    return _legend_below(plt, fig, *share_ax.get_legend_handles_labels(), path)


def _spaced_labels(phis: list[float], gap: float = 0.1) -> list[str]:
    """Tick labels on a log axis: the round values (1, 2, 5 × 10^k) first,
    then any other whose label would not touch a labelled one (0.4, 0.6,
    0.8, 0.9 of the paper's grid stay unlabelled ticks)."""
    import math

    def round_value(phi: float) -> bool:
        mantissa = phi / 10 ** math.floor(math.log10(phi))
        return any(math.isclose(mantissa, m) for m in (1, 2, 5))

    labelled = [phi for phi in phis if round_value(phi)]
    for phi in phis:
        if phi not in labelled and all(abs(math.log10(phi / other)) >= gap for other in labelled):
            labelled.append(phi)
    return [f"{phi:g}" if phi in labelled else "" for phi in phis]


def _frontier_phis(phis: list[float]) -> list[float]:
    preferred = [phi for phi in (0.1, 0.5, 1.0) if phi in phis]
    if len(preferred) >= min(3, len(phis)):
        return preferred
    return sorted({phis[0], phis[len(phis) // 2], phis[-1]})


def frontier(table: ResultTable, workflows: str, policies: list[str], path: Path) -> bool:
    phis = table.phis(workflows)
    if not phis:
        return False
    shown = _frontier_phis(phis)
    plt = _pyplot()
    styles = policy_style(policies)
    fig, axes = plt.subplots(1, len(shown), figsize=(3.9 * len(shown) + 0.6, 4.4), squeeze=False)
    drawn = False
    for ax, phi in zip(axes[0], shown):
        points = []
        for policy in policies:
            run = table.get(workflows, policy, phi)
            if run is None or run.share_percent() is None:
                continue
            style = styles[policy]
            ax.plot([run.energy_mwh], [run.share_percent()], ls="none", marker=style["marker"], color=style["color"],
                    markersize=9 if style["marker"] == "*" else 7, label=_label(policy))
            ax.annotate(policy, (run.energy_mwh, run.share_percent()), textcoords="offset points", xytext=(5, 3),
                        fontsize=7, color=style["color"])
            if parse_policy(policy)[0] != "oracle":
                points.append((run.energy_mwh, run.share_percent()))
        if not points:
            continue
        drawn = True
        # the best a policy without future knowledge reached for its energy:
        # points no other run beats on both energy and workflows within P
        best = []
        for energy, share in sorted(points, key=lambda pt: (pt[0], -pt[1])):
            if not best or share > best[-1][1]:
                best.append((energy, share))
        if len(best) > 1:
            ax.step([e for e, _ in best], [s for _, s in best], where="post", color="#999999", lw=1, ls="-", zorder=0,
                    label="frontier: most within P for the energy (no future knowledge)")
        ax.set_title(f"P = φ = {phi:g}")
        ax.set_xlabel("replica energy of the year (MWh)")
        ax.grid(alpha=0.3)
        ax.margins(x=0.18, y=0.12)
    if not drawn:
        plt.close(fig)
        return False
    axes[0][0].set_ylabel("workflows within P (% of all)")
    by_label = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            by_label.setdefault(label, handle)
    fig.suptitle("Up and to the left is better: more workflows within P for less energy", fontsize=9)
    return _legend_below(plt, fig, list(by_label.values()), list(by_label), path)


def goals_by_seed(entries: list[tuple[str, ResultTable, str, list[str]]], path: Path, phi: float, goal: float) -> bool:
    """At P = ``phi``, each trace's gain over single and replica energy per
    policy, side by side: the goal at a glance. ``entries``: (trace label,
    table, workflows, policies) per trace."""
    import numpy as np

    policies = list(dict.fromkeys(p for _, _, _, ps in entries for p in ps))
    values = {(label, p): run for label, table, wf, _ in entries for p in policies
              if (run := table.get(wf, p, phi)) is not None}
    if not values:
        return False
    gains = {(label, p): g for label, table, wf, _ in entries for p in policies
             if (g := table.gain_percent(wf, p, phi)) is not None}
    plt = _pyplot()
    styles = policy_style(policies)
    labels = [label for label, *_ in entries]
    x = np.arange(len(labels))
    width = 0.8 / max(len(policies), 1)
    fig, (gain_ax, energy_ax) = plt.subplots(1, 2, figsize=(10.5, 4.4))
    for index, policy in enumerate(policies):
        offset = (index - (len(policies) - 1) / 2) * width
        colour = styles[policy]["color"]
        hatch = "//" if parse_policy(policy)[0] == "oracle" else None
        g = [gains.get((label, policy), np.nan) for label in labels]
        e = [values[(label, policy)].energy_mwh if (label, policy) in values else np.nan for label in labels]
        bars = gain_ax.bar(x + offset, g, width, color=colour, hatch=hatch, edgecolor="white", label=_label(policy))
        if policy != "single":
            gain_ax.bar_label(bars, fmt="%+.1f", fontsize=6, padding=1)
        bars = energy_ax.bar(x + offset, e, width, color=colour, hatch=hatch, edgecolor="white")
        energy_ax.bar_label(bars, fmt="%.1f", fontsize=6, padding=1)
    gain_ax.axhline(goal, color="#d62728", ls="--", lw=1.2, label=f"goal: +{goal:g} % over single")
    gain_ax.axhline(0.0, color="#444444", lw=0.8)
    for ax in (gain_ax, energy_ax):
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    gain_ax.set_ylabel("gain over single (% more workflows within P)")
    gain_ax.set_title(f"Gain over single at P = φ = {phi:g}")
    energy_ax.set_ylabel("replica energy of the year (MWh)")
    energy_ax.set_title(f"Energy at P = φ = {phi:g} (a missing bar: not run)")
    return _legend_below(plt, fig, *gain_ax.get_legend_handles_labels(), path)


def _legend_below(plt, fig, handles: list, labels: list[str], path: Path) -> bool:
    """One legend for every panel, below them in rows of four (the panels
    shrink to make room), then the figure saved and closed."""
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07 + 0.045 * ((len(labels) - 1) // 4), 1, 1))
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return True
