"""Report arithmetic (gains, energy changes, findings) on hand-made results."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from condor_rlrep.errors import InputError
from condor_rlrep.policyspec import STRATEGIES, parse_spec
from condor_rlrep.sweepreport.data import ResultTable, RunRecord, fixed_counterpart, max_replicas, parse_policy
from condor_rlrep.sweepreport.findings import findings


def _doc(policy, phi, within, energy_kwh, workflows=("figure1",)):
    return {
        "params": {"policy": policy, "phi": phi, "workflows": list(workflows)},
        "result": {
            "workflows": 1000,
            "within": {f"{phi:g}": within},
            "energy_kwh": {"workflow_total": energy_kwh, "workflow_bad": energy_kwh / 10, "workflow_good": energy_kwh * 0.9},
        },
    }


def test_parse_policy():
    assert parse_policy("single") == ("single", 1)
    assert parse_policy("rl-ucb1:3") == ("rl-ucb1", 3)


_COUNT = st.integers(1, 50)


def _cases():
    """(policy text, the report's family, maximum replicas), built from the
    parts — not from either parser — for every kind the simulator runs."""
    single = st.just(("single", "single", 1))
    counted = st.tuples(st.sampled_from(("fixed", "oracle", "react")), _COUNT).map(lambda t: (f"{t[0]}:{t[1]}", *t))
    rl = st.tuples(st.sampled_from((None, *STRATEGIES)), _COUNT).map(
        lambda t: (f"rl-{t[0]}:{t[1]}", f"rl-{t[0]}", t[1]) if t[0] else (f"rl:{t[1]}", "rl", t[1]))
    fixed = _COUNT.map(lambda k: (f"fixed:{k}", "fixed", k))
    idle = st.one_of(single, fixed, rl).map(lambda t: ("idle-" + t[0], "idle-" + t[1], t[2]))
    options = st.lists(st.tuples(st.sampled_from(("target", "hi")), st.sampled_from(("0.8", "0.95", "1", "2.5"))),
                       max_size=2, unique_by=lambda kv: kv[0])
    model = st.tuples(st.sampled_from(("model", "model-react")), _COUNT, options).map(
        lambda t: (f"{t[0]}:{t[1]}" + "".join(f",{k}={v}" for k, v in t[2]), t[0], t[1]))
    return st.one_of(single, counted, rl, idle, model)


@given(_cases())
def test_the_report_reads_every_policy_kind_as_policyspec_does(case):
    text, family, count = case
    assert parse_policy(text) == (family, count)
    spec = parse_spec(text)
    assert (spec.count, spec.idle) == (count, family.startswith("idle-"))
    record = RunRecord("figure1", text, 0.1, {})
    assert (record.kind, record.max_replicas, max_replicas(text)) == (family, count, count)
    assert fixed_counterpart(text) == f"fixed:{count}"


@given(st.one_of(st.text(max_size=20), st.sampled_from((
        "single:2", "agent", "ucb1", "rl", "rl:0", "fixed:0", "fixed", "oracle:", "idle-model:3", "idle-oracle:2",
        "model:3,foo=1", "model:3,target=x", "react:3,target=0.9", "rl-greedy:3", "fixed:3 ", " model:3,hi=1"))))
def test_the_report_refuses_what_policyspec_refuses(text):
    try:
        spec = parse_spec(text)
    except InputError:
        with pytest.raises(InputError):
            parse_policy(text)
    else:
        assert parse_policy(text)[1] == spec.count


def test_the_table_keeps_each_family_apart():
    policies = ["single", "fixed:3", "rl:3", "rl-ucb1:3", "idle-rl:3", "idle-fixed:2", "oracle:3",
                "model:3,target=0.9", "model-react:3", "react:2"]
    table = ResultTable([_doc(policy, 0.1, 400, 1000.0) for policy in policies])
    assert table.policies("figure1", "rl") == ["rl:3"]
    assert table.policies("figure1", "rl-ucb1") == ["rl-ucb1:3"]
    assert table.policies("figure1", "idle-rl") == ["idle-rl:3"]
    assert table.policies("figure1", "model") == ["model:3,target=0.9"]
    assert table.all_policies("figure1") == ["single", "fixed:3", "rl:3", "rl-ucb1:3", "oracle:3", "idle-fixed:2",
                                             "idle-rl:3", "model:3,target=0.9", "model-react:3", "react:2"]


def test_gain_and_energy_change_hand_values():
    table = ResultTable([_doc("single", 0.1, 400, 1000.0), _doc("fixed:2", 0.1, 500, 1500.0), _doc("rl:2", 0.1, 480, 1200.0)])
    assert table.gain_percent("figure1", "fixed:2", 0.1) == pytest.approx(25.0)
    assert table.gain_percent("figure1", "rl:2", 0.1) == pytest.approx(20.0)
    assert table.energy_change_percent("figure1", "rl:2", "fixed:2", 0.1) == pytest.approx(-20.0)
    assert table.get("figure1", "rl:2", 0.1).energy_mwh == pytest.approx(1.2)
    assert table.gain_percent("figure1", "fixed:3", 0.1) is None


def test_findings_verdicts_follow_the_numbers():
    docs = [
        _doc("single", 0.1, 400, 1000.0),
        _doc("fixed:2", 0.1, 500, 1500.0),  # +25 %
        _doc("fixed:3", 0.1, 490, 1900.0),
        _doc("fixed:4", 0.1, 450, 2300.0),  # contention: less than 2–3
        _doc("rl:2", 0.1, 480, 1200.0),
        _doc("rl:3", 0.1, 470, 1300.0),
    ]
    by_key = {f.key: f for f in findings(ResultTable(docs))}
    assert by_key["fixed_gain"].verdict == "reproduced"
    assert by_key["contention"].verdict == "reproduced"
    assert by_key["rl_energy"].verdict == "reproduced"
    assert by_key["rl_success"].verdict == "reproduced"  # 80 % and ~78 % of the fixed gains
    docs[1] = _doc("fixed:2", 0.1, 410, 1500.0)  # +2.5 %
    docs[2] = _doc("fixed:3", 0.1, 405, 1900.0)
    by_key = {f.key: f for f in findings(ResultTable(docs))}
    assert by_key["fixed_gain"].verdict == "not reproduced"


def test_montage_figure6_tables_and_finding(tmp_path):
    import json

    from condor_rlrep.sweepreport.render import render_report

    mt = ("montage",)
    docs = [
        _doc("single", 0.1, 400, 1000.0, mt), _doc("single", 1.0, 800, 1000.0, mt),
        _doc("fixed:2", 0.1, 500, 2000.0, mt), _doc("fixed:2", 1.0, 700, 2000.0, mt),
        _doc("rl:2", 0.1, 480, 1200.0, mt), _doc("rl:2", 1.0, 840, 1500.0, mt),
    ]
    (tmp_path / "runs").mkdir()
    for i, doc in enumerate(docs):
        (tmp_path / "runs" / f"{i:016x}.json").write_text(json.dumps({"run_id": f"{i:016x}", **doc}))
    (tmp_path / "experiment.json").write_text(json.dumps({
        "name": "m", "description": "", "trace": {"dir": "t"}, "base": {}, "grid": {"phi": [0.1, 1.0], "policy": ["x"]},
        "figures": ["fig6a", "fig6b"], "quick": False}))
    report = render_report(tmp_path).read_text()
    # RL against fixed at the same maximum: (480 − 500)/500 = −4 %, (840 − 700)/700 = +20 %;
    # energy (1200 − 2000)/2000 = −40 %, (1500 − 2000)/2000 = −25 %
    assert "| 2 | -4.0 | +20.0 |" in report
    assert "| 2 | -40.0 | -25.0 |" in report
    # against single: rl:2 +20 % and +5 %, fixed:2 +25 % and −12.5 %
    assert "| rl:2 | +20.0 | +5.0 |" in report and "| fixed:2 | +25.0 | -12.5 |" in report
    montage = next(f for f in findings(ResultTable(docs)) if f.key == "montage")
    assert montage.verdict == "reproduced"  # energy −32.5 % on average, workflows +8 %
    assert "energy -32.5%" in montage.evidence and "+20.0% at P = 0.1, +5.0% at P = 1" in montage.evidence


def test_montage_verdict_is_judged_per_maximum_and_p_not_on_means():
    """Energy saved everywhere but RL below single at P = 1 with a large maximum:
    means would call it reproduced; per (maximum, P) pair it is partly so."""
    mt = ("montage",)
    docs = [
        _doc("single", 0.1, 400, 1000.0, mt), _doc("single", 1.0, 800, 1000.0, mt),
        _doc("fixed:2", 0.1, 500, 2000.0, mt), _doc("fixed:2", 1.0, 700, 2000.0, mt),
        _doc("rl:2", 0.1, 480, 1200.0, mt), _doc("rl:2", 1.0, 840, 1500.0, mt),
        _doc("fixed:10", 0.1, 300, 9000.0, mt), _doc("fixed:10", 1.0, 300, 9000.0, mt),
        _doc("rl:10", 0.1, 460, 1500.0, mt), _doc("rl:10", 1.0, 720, 1600.0, mt),  # 720 < single's 800
    ]
    montage = next(f for f in findings(ResultTable(docs)) if f.key == "montage")
    assert montage.verdict == "partly reproduced"
    assert "energy below −15 % in 4 of 4" in montage.evidence and "RL above single in 3 of 4" in montage.evidence


def test_a_quick_report_says_what_it_ran_not_the_full_grids_year(tmp_path):
    import json

    from condor_rlrep.sweepreport.render import render_report

    docs = [_doc("single", 0.1, 400, 1000.0), _doc("fixed:2", 0.1, 500, 2000.0), _doc("single", 0.5, 600, 1000.0)]
    (tmp_path / "runs").mkdir()
    for i, doc in enumerate(docs):
        (tmp_path / "runs" / f"{i:016x}.json").write_text(json.dumps({"run_id": f"{i:016x}", **doc}))
    (tmp_path / "experiment.json").write_text(json.dumps({
        "name": "paper-figure1", "description": "Figure-1 workflows in a year, phi = P in 0.1..1.0 and 2.0",
        "trace": {"preset": "newcastle-2010", "days": 28, "seed": 1}, "base": {},
        "grid": {"phi": [0.1, 0.5], "policy": ["x"]}, "figures": [], "quick": True}))
    render_report(tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "This is the quick variant: a 28-day trace, not the description's year, and only P = 0.1, 0.5;" in text
    # fixed replica counts in numbers too: (500 − 400)/400 at P = 0.1, no run at P = 0.5
    assert "### Fixed replicas" in text
    row = next(line for line in text.splitlines() if line.startswith("| fixed:2 |"))
    assert row.endswith("| +25.0 % | – |"), row


def test_the_baseline_against_table1_is_a_verdict_by_hand():
    """Table 1: 14,982 / 40,054 = 37.4 % within 0.1, 25,475 / 40,054 = 63.6 % within 0.5.
    Ours (of 1000): 400 -> 40.0 % (gap 2.6), 740 -> 74.0 % (gap 10.4): partly reproduced."""
    docs = [_doc("single", 0.1, 400, 100.0), _doc("single", 0.5, 740, 100.0)]
    docs[0]["result"]["p_stats"] = {"mean": 0.3, "sd": 0.37, "max": 2.2, "share_p_ge_1": 0.06}
    (baseline,) = [f for f in findings(ResultTable(docs)) if f.key == "baseline"]
    assert baseline.verdict == "partly reproduced"
    assert "P = 0.1: 40.0 % (paper 37.4 %), P = 0.5: 74.0 % (paper 63.6 %); largest gap 10.4 points" in baseline.evidence
    assert "p(W) s.d. 0.37 (paper 0.82), maximum 2.2 (paper 17.1)" in baseline.evidence
    close = [_doc("single", 0.1, 380, 100.0), _doc("single", 0.5, 650, 100.0)]
    (again,) = [f for f in findings(ResultTable(close)) if f.key == "baseline"]
    assert again.verdict == "reproduced"  # gaps 0.6 and 1.4 points
    far = [_doc("single", 0.5, 900, 100.0)]
    assert [f.verdict for f in findings(ResultTable(far)) if f.key == "baseline"] == ["not reproduced"]  # 26.4
    montage = [_doc("single", 0.5, 740, 100.0, workflows=("montage",))]
    assert not [f for f in findings(ResultTable(montage)) if f.key == "baseline"]  # Table 1 is figure1's


def test_paper_values_are_drawn_where_the_paper_gives_numbers(tmp_path, monkeypatch):
    """The paper's published values on our figures: Table 1's shares on the
    CDF of Figure 2a (F(P) = successful / 40,054), the > 20 % bound on 3a,
    Table 1's energy (scaled to our workflows) on 3b, the abstract's −4 % / −34 % on 6a/6b."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.axes import Axes

    from condor_rlrep.sweepreport import figures

    drawn: dict[str, list] = {}
    plot, axhline = Axes.plot, Axes.axhline

    def spy_plot(self, *args, **kwargs):
        if str(kwargs.get("label", "")).startswith("paper"):
            drawn.setdefault(kwargs["label"], []).append((list(args[0]), list(args[1])))
        return plot(self, *args, **kwargs)

    def spy_line(self, y=0, *args, **kwargs):
        if str(kwargs.get("label", "")).startswith("paper"):
            drawn.setdefault(kwargs["label"], []).append(y)
        return axhline(self, y, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", spy_plot)
    monkeypatch.setattr(Axes, "axhline", spy_line)
    docs = [_doc(p, phi, w, e) for p, phi, w, e in [("single", 0.1, 400, 100.0), ("fixed:2", 0.1, 500, 180.0),
                                                    ("fixed:3", 0.1, 520, 260.0), ("rl:2", 0.1, 480, 120.0)]]
    docs[0]["result"]["p_quantiles"] = [0.0, 0.05, 0.1, 0.5, 2.0]
    docs[0]["result"]["completed"] = 1000
    docs[0]["result"]["p_stats"] = {"max": 2.0}
    table = ResultTable(docs)
    for name in ("fig2a", "fig3a", "fig3b"):
        assert figures.FIGURES[name](table, "figure1", tmp_path / f"{name}.png")
    (cdf,) = drawn["paper, Table 1: share within P"]
    assert cdf[0][0] == 0.1 and cdf[1][0] == pytest.approx(14_982 / 40_054)
    assert drawn["paper: > 20 % at P = 0.1 (2–3 replicas)"] == [([2, 3], [20.0, 20.0])]
    (energy,) = [v for k, v in drawn.items() if k.startswith("paper, Table 1 (single")]
    assert energy[0][1][0] == pytest.approx(28.83 * 1000 / 40_054)  # MWh of P = 0.1, scaled to 1000 workflows
    montage = ResultTable([_doc(p, 0.1, w, e, workflows=("montage",))
                           for p, w, e in [("single", 400, 100.0), ("fixed:3", 500, 200.0), ("rl:3", 480, 130.0)]])
    assert figures.FIGURES["fig6a"](montage, "montage", tmp_path / "6a.png")
    assert figures.FIGURES["fig6b"](montage, "montage", tmp_path / "6b.png")
    assert drawn["paper (abstract): about −4 %"] == [-4.0] and drawn["paper (abstract): −34 %"] == [-34.0]
