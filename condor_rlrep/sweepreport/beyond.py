"""The report's "beyond the paper" section (issue 14).

The policies that use what a pool knows at submission — ``idle-*``,
``model:*``, ``react:*``, ``model-react:*`` and the contextual bandits
``linucb:*``, ``lints:*`` (:mod:`condor_rlrep.policyspec` owns their names) — beside single, fixed:K, the paper's bandits and the
oracle bound, at each P, and the issue's goals checked on the runs:

- at P = 0.1, at least +45 % workflows within P over single,
- … with no more replica energy than rl:3 at that P,
- at every P, never more than 1 % below single (relative change),
- at every P, no more energy than fixed:2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from condor_rlrep.document import Code, Document, Inline, Strong
from condor_rlrep.sweepreport.data import ResultTable, parse_policy

__all__ = ["GOAL_P", "GOAL_GAIN_PERCENT", "FLOOR_PERCENT", "RL_REFERENCE", "FIXED_REFERENCE", "Check", "GoalChecks",
           "is_beyond", "beyond_policies", "comparison_policies", "check_goals", "policy_rows"]

GOAL_P = 0.1
GOAL_GAIN_PERCENT = 45.0
FLOOR_PERCENT = -1.0
RL_REFERENCE = "rl:3"
FIXED_REFERENCE = "fixed:2"
_COMPARED_KINDS = ("fixed", "rl", "rl-ucb1", "rl-thompson", "oracle")


_BEYOND_KINDS = ("model", "react", "model-react", "linucb", "lints")


def _spec(policy: str):
    from condor_rlrep.policyspec import parse_spec

    return parse_spec(policy)


def is_beyond(policy: str) -> bool:
    """``idle-…`` and the model kinds, as :mod:`condor_rlrep.policyspec` parses them."""
    from condor_rlrep.errors import InputError

    try:
        spec = _spec(policy)
    except InputError:  # a policy this version does not know: shown with the paper's, not as beyond
        return False
    return spec.idle or spec.kind in _BEYOND_KINDS


def beyond_policies(table: ResultTable, workflows: str) -> list[str]:
    return [p for p in table.all_policies(workflows) if is_beyond(p)]


def comparison_policies(table: ResultTable, workflows: str) -> list[str]:
    """What the beyond policies are shown beside: single, the goals'
    references (fixed:2, rl:3), and fixed/bandit/oracle runs with the same
    maximum as a beyond policy — not a paper grid's every fixed:K and rl:K."""
    beyond = beyond_policies(table, workflows)
    counts = {parse_policy(p)[1] for p in beyond}
    keep = []
    for policy in table.all_policies(workflows):
        kind, count = parse_policy(policy)
        if policy in beyond or policy in ("single", FIXED_REFERENCE, RL_REFERENCE) or (
                kind in _COMPARED_KINDS and count in counts):
            keep.append(policy)
    return keep


@dataclass(frozen=True)
class Check:
    ok: bool | None  # None: the runs to decide it are missing
    text: str
    values: dict[str, Any] = field(default_factory=dict)  # the numbers that decide it, for report.json

    @property
    def mark(self) -> str:
        return {True: "✓", False: "✗", None: "–"}[self.ok]

    def cell(self) -> str:
        return f"{self.mark} {self.text}" if self.text else self.mark

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "text": self.text, **self.values}


@dataclass(frozen=True)
class GoalChecks:
    policy: str
    gain: Check
    energy_vs_rl: Check
    floor: Check
    energy_vs_fixed: Check

    @property
    def all_met(self) -> bool | None:
        oks = [c.ok for c in (self.gain, self.energy_vs_rl, self.floor, self.energy_vs_fixed)]
        return None if None in oks else all(oks)

    def cells(self) -> list[str]:
        return [c.cell() for c in (self.gain, self.energy_vs_rl, self.floor, self.energy_vs_fixed)]

    def to_json(self) -> dict[str, Any]:
        return {"policy": self.policy, "all_met": self.all_met, "gain_at_p": self.gain.to_json(),
                "energy_vs_rl": self.energy_vs_rl.to_json(), "floor_every_p": self.floor.to_json(),
                "energy_vs_fixed_every_p": self.energy_vs_fixed.to_json()}


GOAL_HEADER = [
    f"P = {GOAL_P:g}: gain over single (goal ≥ +{GOAL_GAIN_PERCENT:g} %)",
    f"P = {GOAL_P:g}: energy ≤ {RL_REFERENCE}'s (MWh)",
    f"every P: not below single by > {-FLOOR_PERCENT:g} %",
    f"every P: energy ≤ {FIXED_REFERENCE}'s (MWh)",
]


def check_goals(table: ResultTable, workflows: str, policy: str) -> GoalChecks:
    """Issue 14's goals for ``policy``, each decided from the runs present
    (a check without the runs it needs is "–", never passed)."""
    phis = table.phis(workflows)
    run, rl = table.get(workflows, policy, GOAL_P), table.get(workflows, RL_REFERENCE, GOAL_P)
    gain = table.gain_percent(workflows, policy, GOAL_P)
    gain_check = Check(None, f"no run at P = {GOAL_P:g} with single") if gain is None else Check(
        gain >= GOAL_GAIN_PERCENT, f"{gain:+.1f} %", {"gain_percent": gain, "goal_percent": GOAL_GAIN_PERCENT})
    if run is None or rl is None:
        rl_check = Check(None, f"no {RL_REFERENCE if run else policy} run at P = {GOAL_P:g}")
    else:
        rl_check = Check(run.energy_mwh <= rl.energy_mwh,
                         f"{run.energy_mwh:.1f} {'≤' if run.energy_mwh <= rl.energy_mwh else '>'} {rl.energy_mwh:.1f}",
                         {"energy_mwh": run.energy_mwh, "reference": RL_REFERENCE, "reference_mwh": rl.energy_mwh})
    gains = {phi: g for phi in phis if (g := table.gain_percent(workflows, policy, phi)) is not None}
    if gains:
        low = [phi for phi, g in gains.items() if g < FLOOR_PERCENT]
        text = f"{min(gains.values()):+.1f} … {max(gains.values()):+.1f} % ({len(gains)} of {len(phis)} P)"
        if low:
            text += "; below at P = " + ", ".join(f"{phi:g} ({gains[phi]:+.1f} %)" for phi in low)
        floor_check = Check(not low, text, {"gain_percent_by_p": {f"{phi:g}": g for phi, g in gains.items()},
                                            "floor_percent": FLOOR_PERCENT, "below_at_p": low})
    else:
        floor_check = Check(None, "no run with single at the same P")
    pairs = {phi: (r.energy_mwh, f.energy_mwh) for phi in phis
             if (r := table.get(workflows, policy, phi)) and (f := table.get(workflows, FIXED_REFERENCE, phi))}
    if pairs:
        over = [phi for phi, (e, ef) in pairs.items() if e > ef]
        ours = [e for e, _ in pairs.values()]
        theirs = [ef for _, ef in pairs.values()]
        text = (f"{_span(ours)} vs {_span(theirs)} ({len(pairs)} of {len(phis)} P)")
        if over:
            text += "; above at P = " + ", ".join(f"{phi:g}" for phi in over)
        fixed_check = Check(not over, text, {
            "energy_mwh_by_p": {f"{phi:g}": e for phi, (e, _) in pairs.items()}, "reference": FIXED_REFERENCE,
            "reference_mwh_by_p": {f"{phi:g}": ef for phi, (_, ef) in pairs.items()}, "above_at_p": over})
    else:
        fixed_check = Check(None, f"no {FIXED_REFERENCE} run at the same P")
    return GoalChecks(policy, gain_check, rl_check, floor_check, fixed_check)


def _span(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}–{high:.1f}"


POLICY_HEADER = ["policy", "within P", "share within P", "gain over single", "energy MWh", "replicas/task",
                 "kWh per workflow within P"]


def policy_rows(table: ResultTable, workflows: str, phi: float, policies: list[str]) -> list[dict[str, Any]]:
    """The numbers of each policy's run at P = φ (JSON-ready; None where unknown)."""
    rows = []
    for policy in policies:
        run = table.get(workflows, policy, phi)
        if run is None:
            continue
        rows.append({
            "policy": policy, "phi": phi, "workflows": run.result.get("workflows"), "within": run.within(),
            "share_percent": run.share_percent(), "gain_percent": table.gain_percent(workflows, policy, phi),
            "energy_mwh": run.energy_mwh, "replicas_per_task": run.replicas_per_task,
            "kwh_per_workflow_within_p": run.kwh_per_success(),
        })
    return rows


def format_row(row: dict[str, Any]) -> list[str]:
    def num(value, fmt):
        return "–" if value is None else fmt.format(value)

    return [row["policy"], num(row["within"], "{:,}"), num(row["share_percent"], "{:.1f} %"),
            num(row["gain_percent"], "{:+.1f} %"), num(row["energy_mwh"], "{:.2f}"),
            num(row["replicas_per_task"], "{:.3f}"), num(row["kwh_per_workflow_within_p"], "{:.3f}")]


def _joined(items: list[tuple[Inline, ...]], separator: str) -> list[Inline]:
    """The pieces of every item, ``separator`` between two items."""
    pieces: list[Inline] = []
    for index, item in enumerate(items):
        pieces += ([separator] if index else []) + list(item)
    return pieces


def render_section(report: Document, table: ResultTable, workflows: str, figures_dir: Path, prefix: str,
                   role: str | None = None) -> dict[str, Any] | None:
    """Add the section to ``report``;
    return its numbers for report.json, or None when the sweep has no
    policy beyond the paper."""
    from condor_rlrep.sweepreport.beyond_figures import frontier, within_by_p

    beyond = beyond_policies(table, workflows)
    if not beyond:
        return None
    compared = comparison_policies(table, workflows)
    report.h(3, "Beyond the paper — policies that use what a pool knows")
    kinds = {parse_policy(p)[0] for p in compared}
    explained = [text for test, text in (
        (any(_spec(p).idle for p in compared),
         (Code("idle-…"), " runs the named policy's replica count on the free machines idle longest (HTCondor's ",
          Code("KeyboardIdle"), ")")),
        ("model" in kinds, (Code("model:R"), " places its replicas on the free machines idle longest (HTCondor's ",
                            Code("KeyboardIdle"), ") and picks the fewest (≤ R) that an online survival model, learnt "
                            "from the run's own past evictions, expects to meet the deadline")),
        ("react" in kinds or "model-react" in kinds,
         (Code("react:R"), " and ", Code("model-react:R"),
          " hold the spare replicas (no energy) and release one per eviction")),
        ("linucb" in kinds or "lints" in kinds,
         (Code("linucb:R"), " and ", Code("lints:R"),
          " are contextual bandits: a ridge regression per replica count (1 … R) of the "
          "reward the paper's agent learns, on what the pool knows at submission (hour of week, φ′, the task's "
          "share of its remaining critical path, the fraction of machines free, how long the longest-idle free "
          "machines have been idle, whether the nightly reboot falls within the run), choosing by an upper "
          "confidence bound (LinUCB) or a posterior draw (Thompson), and place on the machines idle longest")),
        ("oracle" in kinds, ("the oracle knows the future (when owners log in): a bound, not a policy a pool can run",)),
    ) if test]
    report.p(
        "Policies beyond the paper (", *_joined([(Code(p),) for p in beyond], ", "), ") beside ",
        *_joined([(Code(p),) for p in compared if p not in beyond], ", "), ". ", *_joined(explained, "; "), ".",
    )
    checks = [check_goals(table, workflows, policy) for policy in beyond]
    report.p(
        f"The targets set beyond the paper (at P = {GOAL_P:g} at least +{GOAL_GAIN_PERCENT:g} % over single with no "
        "more energy than rl:3; "
        "at every P at most 1 % below single and no more energy than fixed:2), decided from these runs "
        "(✓ met, ✗ not met, – the runs to decide it are missing)",
        *(("; this is a ", Strong(role)) if role else ()), ":",
    )
    report.table(["policy"] + GOAL_HEADER, [[Code(c.policy)] + c.cells() for c in checks])
    document: dict[str, Any] = {"policies": beyond, "compared_with": [p for p in compared if p not in beyond],
                                "goals": [c.to_json() for c in checks], "by_p": {}}
    for phi in table.phis(workflows):
        rows = policy_rows(table, workflows, phi, compared)
        if not rows:
            continue
        document["by_p"][f"{phi:g}"] = rows
        report.h(4, f"At P = φ = {phi:g}")
        report.table(POLICY_HEADER, [format_row(row) for row in rows])
    for name, draw, title in (
        ("beyond-within", within_by_p, "Workflows within P and gain over single, by P"),
        ("beyond-frontier", frontier, "Energy against workflows within P"),
    ):
        file = f"{prefix}{workflows}-{name}.png"
        if draw(table, workflows, compared, figures_dir / file):
            report.h(4, f"Beyond the paper — {title}")
            report.img(f"figures/{file}", title)
    return document
