"""Plot an analysis: progress and bottleneck intervals per task, resource use.

matplotlib is imported here only, with the non-interactive Agg backend.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from condor_rlrep.bottlemod.analysis import Analysis

__all__ = ["plot_analysis"]


def plot_analysis(analysis: Analysis, out: str | Path, title: str = "") -> None:
    """Write a PNG (or any matplotlib format, by suffix) of ``analysis``.

    One panel per task: progress in % of ``P_max`` with its bottleneck
    intervals shaded; a last panel with each resource's use as a fraction of
    its allocation.  The file is written atomically.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(analysis.tasks.values())
    ends = [r.finish for r in tasks if r.finish is not None]
    ends += [b.start for r in tasks for b in r.bottlenecks if math.isfinite(b.start)]
    t_end = max(ends + [1.0]) * 1.05
    labels = sorted({b.label for r in tasks for b in r.bottlenecks})
    colors = {lab: f"C{k % 10}" for k, lab in enumerate(labels)}
    fig, axes = plt.subplots(len(tasks) + 1, 1, sharex=True, figsize=(9.5, 1.6 * (len(tasks) + 1)), squeeze=False)
    ts = np.linspace(0.0, t_end, 600)
    for ax, r in zip(axes[:-1, 0], tasks):
        for b in r.bottlenecks:
            ax.axvspan(b.start, min(b.end, t_end), color=colors[b.label], alpha=0.3, lw=0)
        ax.plot(ts, 100.0 * np.asarray(r.progress(ts)) / r.max_progress, color="black", lw=1.2)
        ax.set_ylim(0, 105)
        status = f"finish {r.finish:.6g}" if r.finish is not None else "never finishes"
        ax.set_ylabel(f"{r.name}\n%", rotation=0, ha="right", va="center")
        ax.text(0.01, 0.85, status, transform=ax.transAxes, fontsize=8)
    use_ax = axes[-1, 0]
    for r in tasks:
        for name, alloc in r.allocations.items():
            a = np.asarray(alloc(ts), dtype=float)
            u = np.asarray(r.usage(name)(ts), dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(a > 0, u / a, 0.0)
            use_ax.plot(ts, frac, lw=1, label=f"{r.name}.{name}")
    use_ax.set_ylabel("use /\nallocation", rotation=0, ha="right", va="center")
    use_ax.set_xlabel("time")
    use_ax.set_xlim(0, t_end)
    if use_ax.get_legend_handles_labels()[0]:
        use_ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[lab], alpha=0.3) for lab in labels]
    if handles:
        fig.legend(handles, labels, loc="upper right", bbox_to_anchor=(0.995, 0.97), fontsize=7,
                   title="limited by", title_fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0.0, 0.0, 0.8, 1.0))
    from condor_rlrep.atomic import atomic_path

    try:
        with atomic_path(out) as tmp:
            fig.savefig(tmp, dpi=110, format=Path(out).suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)
