"""Write run reports as ``report.md``, ``report.html`` and ``report.json`` with figures.

:func:`write_reports` renders every :class:`~.report.RunReport` into one
folder: the Markdown and the HTML say the same (the HTML links the same SVG
figures); the JSON holds every figure of every run, bars included.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from condor_rlrep.atomic import write_atomic
from condor_rlrep.document import Document
from condor_rlrep.runreport.report import NodeReport, RunReport

__all__ = ["write_reports", "report_document"]


_STYLE = ("body{font-family:sans-serif;max-width:90em;margin:auto;padding:0 1em}"
          "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #bbb;padding:2px 6px;font-size:0.92em}"
          "td{text-align:right}td:first-child{text-align:left}th{background:#eee}"
          "pre{background:#f6f6f6;padding:0.5em;overflow-x:auto}img{max-width:100%}")


def _clock(at: float | None) -> str:
    return "–" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def _num(value: float | None, fmt: str = "{:.1f}") -> str:
    return "–" if value is None else fmt.format(value)


def _since(at: float | None, origin: float | None) -> str:
    return "–" if at is None or origin is None else f"{at - origin:.1f}"


def _stem(index: int, run_id: str | None) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", run_id or "run")
    return f"run{index}-{safe}"


def report_document(reports: list[RunReport], figures: dict[str, dict[str, str]]) -> Document:
    """The report's blocks; ``figures``: run id → {"gantt": file, "policy": file} drawn."""
    doc = Document()
    dag = reports[0].dag if reports else "?"
    doc.h(1, f"Replicas of {os.path.basename(dag)}")
    doc.p(f"DAG: {dag}. Times are seconds since the run's workflow start s(W) unless a clock time is shown; "
          "energies in joules; σ, p(W) and rewards are unitless. A run is one first DAGMan and the rescues that "
          "continue it.")
    doc.table(["run", "DAGMan ids", "started", "makespan (s)", "CR(W) (s)", "deadline (s)", "p(W)", "φ",
               "deadline met", "replicas", "energy (J)"],
              [[r.run_id or "–", " ".join(r.dagids) or "–", _clock(r.workflow_start), _num(r.makespan_s),
                _num(r.critical_path_s), _since(r.deadline, r.workflow_start), _num(r.p_w, "{:.3f}"), f"{r.phi:g}",
                _met(r), str(r.replicas), _num(r.replica_energy_j, "{:,.0f}")] for r in reports])
    for report in reports:
        _run_section(doc, report, figures.get(report.run_id or "", {}))
    return doc


def _met(report: RunReport) -> str:
    if report.met_deadline is None:
        return "not finished" if not report.finished else "–"
    return "yes" if report.met_deadline else "no"


def _run_section(doc: Document, r: RunReport, figures: dict[str, str]) -> None:
    doc.h(2, f"Run {r.run_id}")
    ratio = r.replica_energy_j / r.single_replica_estimate_j if r.single_replica_estimate_j > 0 else None
    rows = [
        ["workflow start s(W)", _clock(r.workflow_start)],
        ["completion c(W)", _clock(r.completion) if r.completion is not None else "not finished"],
        ["makespan c(W) − s(W) (s)", _num(r.makespan_s)],
        ["critical path CR(W) (s, estimates)", _num(r.critical_path_s)],
        [f"deadline (1+φ)·CR(W), φ = {r.phi:g} (s)", _num((1 + r.phi) * r.critical_path_s)],
        ["p(W) = makespan / CR(W) − 1 (eq. 1)", _num(r.p_w, "{:.3f}")],
        ["deadline met (p(W) ≤ φ)", _met(r)],
        ["replicas run (procs)", str(r.replicas)],
        ["evictions / removals", f"{r.evictions} / {r.removed}"],
        ["replica energy (J)", _num(r.replica_energy_j, "{:,.0f}")],
        ["  good: the winners' runs (J)", _num(r.good_energy_j, "{:,.0f}")],
        ["  bad: every other run (J)", _num(r.bad_energy_j, "{:,.0f}")],
        [f"single-replica estimate Σ e_t · {r.watts_default:g} W (J)", _num(r.single_replica_estimate_j, "{:,.0f}")],
        ["replica energy / single-replica estimate", _num(ratio, "{:.2f}")],
    ]
    doc.table(["figure", "value"], rows)
    for warning in r.warnings:
        doc.p(f"Warning: {warning}")
    doc.h(3, "Nodes")
    doc.p("One row per attempt (a retry or a rescue is another attempt). How: the agent's greedy choice, an "
          "exploration, a fixed policy, or no decision. D_t: submit event to the winner's exit; the task deadline "
          "is s_t + max(0, 1+φ′)·e_t. Outcome and reward as POST judged them; 'recorded': what the store holds.")
    doc.table(["node", "try", "DAGMan", "how", "replicas", "winner (job id)", "host (slot)", "evictions", "removed",
               "φ′", "e_t (s)", "D_t (s)", "deadline (s after s_t)", "good (J)", "bad (J)", "σ", "outcome", "reward",
               "recorded"], [_node_row(n) for n in r.nodes])
    if r.failed:
        doc.h(3, "Failed nodes")
        for node in r.failed:
            doc.p(f"{node.node} (try {node.attempt}, cluster {node.cluster}, DAGMan {node.dagid}): POST exit "
                  f"{node.post_code}; {node.failed_replicas} replica(s) failed. stderr: {node.stderr or 'not found'}")
            if node.stderr_tail:
                doc.pre("\n".join(node.stderr_tail))
            elif node.stderr_note:
                doc.p(f"(its tail is not shown: {node.stderr_note})")
            elif node.stderr:
                doc.p("(the file is empty or unreadable)")
    if "gantt" in figures:
        doc.h(3, "Replicas on their slots")
        doc.img(figures["gantt"], f"Gantt chart of every replica of run {r.run_id} on its slot (seconds since s(W))",
                caption=True)
    if r.policy:
        doc.h(3, "Agent policy in the states this run visited")
        doc.p("The store's estimates as they are now (after every reward recorded so far), for each state "
              "(hour of submission, φ′ bin) a decision of this run was made in.")
        if "policy" in figures:
            doc.img(figures["policy"], "Estimated reward Q per replica count in each visited state", caption=True)
        actions = max(len(p.q) for p in r.policy)
        doc.table(["hour", "φ′ bin", "greedy a", "chosen here"] + [f"Q(a={a + 1}) (n)" for a in range(actions)],
                  [[f"{p.hour:02d}:00", p.phi_range, str(p.greedy), ", ".join(map(str, p.taken))]
                   + [f"{q:.3f} ({n})" for q, n in zip(p.q, p.n)] for p in r.policy])


def _node_row(n: NodeReport) -> list[str]:
    winner = "–" if n.winner is None else f"{n.cluster}.{n.winner}"
    host = "–" if n.winner_host is None else (n.winner_host + (f" ({n.winner_slot})" if n.winner_slot else ""))
    deadline = "–" if n.task_deadline is None or n.submit_time is None else f"{n.task_deadline - n.submit_time:.1f}"
    return [n.node, str(n.attempt), n.dagid or "–", n.chosen or "–", str(n.replicas), winner, host, str(n.evictions),
            str(n.removed), _num(n.phi_prime, "{:.3f}"), _num(n.estimate_s), _num(n.duration_s), deadline,
            _num(n.good_energy_j, "{:,.0f}"), _num(n.bad_energy_j, "{:,.0f}"), _num(n.sigma, "{:.3f}"), n.outcome,
            _num(n.reward, "{:.3f}"), _num(n.reward_recorded, "{:.3f}")]


def write_reports(reports: list[RunReport], out_dir: str | os.PathLike[str]) -> dict[str, str]:
    """Write the report into ``out_dir`` (created); returns {"md", "html", "json"} → path."""
    from condor_rlrep.runreport.figures import gantt, policy

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _check_ours(out)
    mode = _report_mode(reports)
    drawn: dict[str, dict[str, str]] = {}
    for index, report in enumerate(reports, start=1):
        stem = _stem(index, report.run_id)
        files: dict[str, str] = {}
        if gantt(report, out / f"{stem}-gantt"):
            files["gantt"] = f"{stem}-gantt.svg"
        if policy(report, out / f"{stem}-policy"):
            files["policy"] = f"{stem}-policy.svg"
        drawn[report.run_id or ""] = files
    doc = report_document(reports, drawn)
    title = f"Replicas of {os.path.basename(reports[0].dag)}" if reports else "Run report"
    paths = {"md": str(out / "report.md"), "html": str(out / "report.html"), "json": str(out / "report.json")}
    write_atomic(paths["md"], doc.markdown(), mode=mode)
    write_atomic(paths["html"], doc.html(title, style=_STYLE, lang="en"), mode=mode)
    document = {"runs": [r.to_json() for r in reports], "figures": drawn}
    write_atomic(paths["json"], json.dumps(document, indent=1, allow_nan=False) + "\n", mode=mode)
    return paths


def _check_ours(out: Path) -> None:
    """The report folder must be a real folder of ours: a symlink planted at
    ``RUN.dag.report`` (by the run's owner, when root reports) would send the
    report where its planter chose."""
    import stat

    from condor_rlrep.runreport.sources import RunInputError

    st = os.lstat(out)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise RunInputError("the report folder is a symlink or not a folder: not written through it; "
                            "remove it or choose another --out", path=str(out))
    if st.st_uid != os.geteuid():
        raise RunInputError(f"the report folder belongs to uid {st.st_uid}, not to you: not written into it; "
                            "choose another --out", path=str(out))


def _report_mode(reports: list[RunReport]) -> int | None:
    """0600 when the report quotes a stderr file others may not read (a copy
    is never wider than its source); else the umask decides (None)."""
    for report in reports:
        for node in report.failed:
            if node.stderr_tail and node.stderr:
                try:
                    if not os.stat(node.stderr).st_mode & 0o004:
                        return 0o600
                except OSError:
                    return 0o600
    return None
