"""POST on node logs a real HTCondor 25.14 pool wrote (and the older test_condor.log).

The POST hook is run exactly as DAGMan ran the recorded POST scripts: the
macro values are taken from the scenario's ``scripts.out``. It must judge the
node from the log, not from ``$RETURN``: on ``replicas-first-wins`` DAGMan
passed ``$RETURN`` -1002 although proc 0 exited 0.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from _hookutil import SHARED_DATA, call_script, run_script
from condor_rlrep.instrument import InstrumentOptions, instrument

REAL = SHARED_DATA / "eventlogs" / "real-dagman"
POST_FIELDS = ["$JOB", "$RETRY", "$MAX_RETRIES", "$DAGID", "$DAG_STATUS", "$FAILED_COUNT", "$JOBID", "$CLUSTERID",
               "$RETURN", "$SUCCESS", "$PRE_SCRIPT_RETURN", "$JOB_COUNT", "$EXIT_CODES", "$EXIT_CODE_COUNTS",
               "$EXIT_CODE_LIST", "$JOB_ABORT_COUNT"]


def recorded_posts(scenario: Path, node: str) -> list[dict[str, str]]:
    """Macro values of every recorded POST call of ``node`` (scripts.out)."""
    calls = []
    for line in (scenario / "scripts.out").read_text().splitlines():
        args = re.findall(r"\[([^\]]*)\]", line.split("argv:", 1)[-1])
        if len(args) == 18 and args[1] == f"POST_{node}":
            calls.append(dict(zip(POST_FIELDS, args[2:])))
    return calls


def single_node_dag(tmp_path: Path, node_log: Path, store: Path | None, policy: str = "fixed:4") -> Path:
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (user / "w.dag").write_text("JOB A a.sub\nJOB C a.sub\nVARS A rlrep_estimate=\"60\"\nVARS C rlrep_estimate=\"60\"\n")
    out = tmp_path / "run" / "w.rlrep.dag"
    instrument(user / "w.dag", out, InstrumentOptions(node_log=str(node_log), policy=policy, always_pre=True,
                                                      store=None if store is None else str(store)))
    return out


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("replicas-first-wins", 0),  # $RETURN -1002, proc 0 exited 0
        ("replica-fails-others-continue/with-tolerance", 0),  # proc 0 exit 1, proc 1 exit 0
        ("replica-fails-others-continue/no-tolerance", 1),  # proc 0 exit 1, others removed by DAGMan
        ("eviction", 0),  # vacated once, then ran to exit 0
        ("noop-and-final", 0),
    ],
)
def test_post_decides_from_the_real_log(tmp_path: Path, scenario: str, expected: int) -> None:
    directory = need(REAL / scenario)
    call = recorded_posts(directory, "A")[0]
    store = tmp_path / "agent.sqlite"
    dag = single_node_dag(tmp_path, directory / "test.dag.nodes.log", store, policy="agent")
    pre = call_script(dag, "A", "PRE", {"$RETRY": call["$RETRY"], "$MAX_RETRIES": 0, "$DAGID": call["$DAGID"]})
    assert pre.returncode == 0
    post = call_script(dag, "A", "POST", call)
    assert post.returncode == expected
    log = (Path(str(dag) + ".rlrep") / "hooks.log").read_text()
    assert "FAIL-OPEN" not in log
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT reward, outcome FROM decisions").fetchall()
    assert len(rows) == 1 and rows[0][0] is not None
    if expected == 1:
        assert rows[0][0] == -5.0


def test_first_wins_charges_the_removed_replicas_as_bad_energy(tmp_path: Path) -> None:
    directory = need(REAL / "replicas-first-wins")
    import json

    call = recorded_posts(directory, "A")[0]
    assert call["$RETURN"] == "-1002"
    store = tmp_path / "agent.sqlite"
    dag = single_node_dag(tmp_path, directory / "test.dag.nodes.log", store, policy="agent")
    assert run_script(dag, "A", "PRE", {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": call["$DAGID"]}).returncode == 0
    assert run_script(dag, "A", "POST", call).returncode == 0
    with sqlite3.connect(store) as conn:
        (outcome,) = conn.execute("SELECT outcome FROM decisions").fetchone()
    outcome = json.loads(outcome)
    assert outcome["completed"] is True and outcome["winner"] == 0
    # proc 0 ran 11:07:54 -> 11:07:59 (5 s); procs 1-3 ran 5 s each before condor_rm
    assert outcome["good_energy_j"] == pytest.approx(5 * 75.0)
    assert outcome["bad_energy_j"] == pytest.approx(3 * 5 * 75.0)


def test_retry_attempts_are_judged_separately(tmp_path: Path) -> None:
    directory = need(REAL / "retry-and-pre-failure")
    calls = recorded_posts(directory, "A")
    assert [c["$RETRY"] for c in calls] == ["0", "1"]
    dag = single_node_dag(tmp_path, directory / "test.dag.nodes.log", None)
    codes = []
    for call in calls:
        assert call_script(dag, "A", "PRE", {"$RETRY": call["$RETRY"], "$MAX_RETRIES": 1, "$DAGID": call["$DAGID"]}).returncode == 0
        codes.append(call_script(dag, "A", "POST", call).returncode)
    assert codes == [1, 0]  # the first attempt must fail, or DAGMan never retries


def test_old_format_log_with_foreign_events(tmp_path: Path) -> None:
    log = need(SHARED_DATA / "eventlogs" / "test_condor.log")
    dag = single_node_dag(tmp_path, log, None)
    for node, cluster in (("A", 2758), ("C", 2759)):
        assert call_script(dag, node, "PRE", {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": 9}).returncode == 0
        macros = {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": 9, "$JOBID": f"{cluster}.0", "$CLUSTERID": cluster,
                  "$RETURN": 0, "$SUCCESS": "True"}
        assert call_script(dag, node, "POST", macros).returncode == 0
        # a POST without $CLUSTERID finds the node's cluster from the log notes
        macros["$CLUSTERID"] = "$CLUSTERID"
        macros["$RETURN"] = 1  # and still trusts the log over $RETURN
        assert call_script(dag, node, "POST", macros).returncode == 0
    assert "FAIL-OPEN" not in (Path(str(dag) + ".rlrep") / "hooks.log").read_text()
