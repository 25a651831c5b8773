"""Report arithmetic (gains, energy changes, findings) on hand-made results."""

from __future__ import annotations

import pytest

from condor_rlrep.report.data import ResultTable, parse_policy
from condor_rlrep.report.findings import findings


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
