"""The learned policy as a map of hour of day × φ′ bin.

Each cell holds the agent's greedy choice in that state — the best replica
count (ties: fewer), its estimated reward — and how many rewards the state
has seen, zero meaning the choice is only the untried default. The map is
plain data (what ``condor-rlrep agent show`` prints and emits as JSON) and
a heatmap PNG; matplotlib is imported only to draw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from condor_rlrep.agent.bandit import Agent

__all__ = ["policy_cells", "plot_policy"]


def policy_cells(agent: Agent) -> list[list[dict[str, Any]]]:
    """24 rows (hour of day) of one cell per φ′ bin: ``replicas``, ``estimate``, ``rewards``."""
    best, estimate, seen = agent.policy()
    n_bins = agent.space.n_phi_bins
    return [
        [
            {"replicas": int(best[h * n_bins + b]), "estimate": float(estimate[h * n_bins + b]),
             "rewards": int(seen[h * n_bins + b])}
            for b in range(n_bins)
        ]
        for h in range(24)
    ]


def plot_policy(path: str, cells: list[list[dict[str, Any]]], labels: list[str], max_replicas: int) -> None:
    """Heatmap of the best replica count: one discrete colour per count
    (1..R), blank where no reward was seen, and each cell's reward count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import BoundaryNorm, ListedColormap

    grid = np.array([[c["replicas"] if c["rewards"] else np.nan for c in row] for row in cells], dtype=float)
    counts = np.array([[c["rewards"] for c in row] for row in cells])
    palette = plt.get_cmap("viridis", max_replicas)
    colours = ListedColormap([palette(i) for i in range(max_replicas)]).with_extremes(bad="white")
    norm = BoundaryNorm(np.arange(0.5, max_replicas + 1.0), max_replicas)
    fig, ax = plt.subplots(figsize=(1.6 + 0.62 * len(labels), 8))
    image = ax.imshow(grid, aspect="auto", cmap=colours, norm=norm, origin="upper")
    for (hour, column), seen in np.ndenumerate(counts):
        if seen:
            shade = colours(norm(grid[hour, column]))
            light = 0.299 * shade[0] + 0.587 * shade[1] + 0.114 * shade[2] > 0.55
            ax.text(column, hour, str(seen), ha="center", va="center", fontsize=6,
                    color="black" if light else "white")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(24))
    ax.set_xlabel("φ′ bin")
    ax.set_ylabel("hour of day")
    ax.set_title("best replica count (number: rewards seen; blank: none yet)", fontsize=9)
    bar = fig.colorbar(image, ax=ax, ticks=range(1, max_replicas + 1))
    bar.set_label("replicas")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
