"""What the replication paper publishes, to print beside our numbers.

Table 1 is quoted from the paper (McGough & Forshaw, §6). The figures are
only published as plots, so their findings are kept as the claims the text
makes about them, each checked against our data by :mod:`.findings`.
"""

from __future__ import annotations

__all__ = ["TABLE1_SUCCESSFUL", "TABLE1_ENERGY_MWH", "PAPER_WORKFLOWS", "BASELINE_P_STATS", "CLAIMS"]

PAPER_WORKFLOWS = 40_054
"""Figure-1 workflows in the paper's year (w = 10 %)."""

BASELINE_P_STATS = {"mean": 0.4467, "sd": 0.8217, "share_p_ge_1": 0.10, "share_p_near_0": 0.30, "max": 17.1113}

TABLE1_SUCCESSFUL = {
    0.1: 14_982, 0.2: 19_622, 0.3: 22_979, 0.4: 24_791, 0.5: 25_475, 0.6: 26_494,
    0.7: 29_967, 0.8: 33_081, 0.9: 35_015, 1.0: 36_318, 2.0: 39_650,
}
TABLE1_ENERGY_MWH = {
    0.1: 28.83, 0.2: 30.86, 0.3: 30.87, 0.4: 29.86, 0.5: 29.08, 0.6: 29.78,
    0.7: 30.98, 0.8: 30.25, 0.9: 28.92, 1.0: 28.49, 2.0: 30.72,
}

CLAIMS = {
    "baseline": "Without replication, 37 % of the workflows finish within P = 0.1, 64 % within 0.5 and 91 % within 1.0, "
                "with a long tail (p(W) s.d. 0.82, maximum 17.1) (Table 1, Figure 2a).",
    "fixed_gain": "Fixed 2–3 replicas raise the workflows within P = 0.1 by over 20 % over the baseline (Figure 3a).",
    "contention": "Four or more fixed replicas lead to contention and worse results than 2–3 (Figure 3a).",
    "rl_energy": "RL cuts the energy of replication against fixed replicas at the same maximum, by about half (Figures 3c, 4).",
    "rl_success": "RL keeps most of the success gain, across a wider range of maximum replica counts (Figure 5).",
    "montage": "On Montage, RL saves about 34 % energy for about 4 % fewer successful workflows (Figure 6).",
}
