"""``instrument``: what the copy contains, and that the user's files stay untouched."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from _hookutil import FIGURE1, POST_MACROS, PRE_MACROS
from condor_rlrep.dag.parser import read_dag
from condor_rlrep.errors import EstimateError, InputError
from condor_rlrep.hooks.argv import parse_hook_argv
from condor_rlrep.instrument import REAPER_NODE, InstrumentOptions, instrument

SUB = "executable = /bin/true\nqueue\n"


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def _user(tmp_path: Path, dag: str, files: dict[str, str] | None = None) -> Path:
    user = tmp_path / "user"
    user.mkdir(exist_ok=True)
    for name, text in {"a.sub": SUB, **(files or {})}.items():
        path = user / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (user / "w.dag").write_text(dag)
    return user / "w.dag"


def test_figure1_copy(tmp_path: Path) -> None:
    out = tmp_path / "out" / "fig.dag"
    before = _tree(FIGURE1.parent)
    result = instrument(FIGURE1, out, InstrumentOptions(store=str(tmp_path / "s.sqlite")))
    assert _tree(FIGURE1.parent) == before
    wf = read_dag(out)
    for name in "ABCDEFGH":
        node = wf.nodes[name]
        assert node.submit == os.path.join(result.context, "nodes", f"{name}.sub")
        assert node.tolerance == "99% WAIT"
        assert node.directory == str(FIGURE1.parent)
        pre, post = node.scripts["PRE"], node.scripts["POST"]
        assert os.path.isabs(pre.executable) and os.access(pre.executable, os.X_OK)
        assert pre.executable.endswith("rlrep-pre") and post.executable.endswith("rlrep-post")
        # only whole-token macros valid for the script type (strict DAGMan aborts otherwise)
        for script, allowed in ((pre, PRE_MACROS), (post, POST_MACROS)):
            macros = {t for t in script.arguments if "$" in t}
            assert macros <= allowed, macros - allowed
            assert all(re.fullmatch(r"\$[A-Z_]+", t) for t in macros)
        assert node.var("rlrep_estimate") == "1920"
    for noop in "ST":
        assert wf.nodes[noop].noop and not wf.nodes[noop].scripts
    reaper = wf.nodes[REAPER_NODE]
    assert reaper.kind == "SERVICE"
    reaper_sub = Path(reaper.submit).read_text()
    assert "universe = local" in reaper_sub and result.hooks["reaper"] in reaper_sub
    assert sorted(wf.edges) == sorted(read_dag(FIGURE1).edges)


def test_existing_scripts_are_chained(tmp_path: Path) -> None:
    dag = _user(tmp_path, "JOB A a.sub\nSCRIPT DEFER 4 30 PRE A check.sh $JOB $RETRY\n"
                          "SCRIPT POST A pegasus-exitcode -r $RETURN -n $JOB $SUCCESS\nVARS A rlrep_estimate=\"5\"\n")
    out = tmp_path / "o" / "w.dag"
    instrument(dag, out, InstrumentOptions(policy="single", always_pre=True))  # single alone chains no POST
    node = read_dag(out).nodes["A"]
    pre, post = node.scripts["PRE"], node.scripts["POST"]
    assert (pre.defer_status, pre.defer_seconds) == (4, 30)
    assert pre.arguments[-4:] == ["--", "check.sh", "$JOB", "$RETRY"]
    assert parse_hook_argv(pre.arguments).user_argv == ["check.sh", "$JOB", "$RETRY"]
    parsed = parse_hook_argv(post.arguments)
    assert parsed.user_argv == ["pegasus-exitcode", "-r", "$RETURN", "-n", "$JOB", "$SUCCESS"]
    assert parsed.options["user-return-at"] == "2" and parsed.options["user-success-at"] == "5"
    assert parsed.options["return"] == "$RETURN" and not parsed.problems


def test_kinds_left_alone(tmp_path: Path) -> None:
    dag = _user(
        tmp_path,
        "JOB A a.sub\nJOB M many.sub\nJOB I items.sub\nJOB N a.sub NOOP\nJOB D a.sub DONE\n"
        "FINAL F a.sub\nSERVICE S a.sub\nPROVISIONER P a.sub\nSUBDAG EXTERNAL X inner.dag\n"
        'VARS A rlrep_estimate="1"\nVARS M rlrep_estimate="1"\nVARS I rlrep_estimate="1"\n'
        'VARS D rlrep_estimate="1"\nVARS X rlrep_estimate="1"\nPARENT A CHILD M I X\n',
        {"many.sub": "executable = x\nqueue 5\n", "items.sub": "executable = x\nqueue s from (\n1\n2\n)\n",
         "inner.dag": "JOB Z a.sub\n"},
    )
    result = instrument(dag, tmp_path / "o" / "w.dag", InstrumentOptions(policy="single", always_pre=True))
    assert result.replicated == ["A"]
    assert result.passed_through == {
        "M": "own description has queue 5", "I": "own description has queue s from (", "N": "NOOP", "D": "DONE",
        "F": "FINAL", "S": "SERVICE", "P": "PROVISIONER", "X": "SUBDAG",
    }
    wf = read_dag(tmp_path / "o" / "w.dag")
    assert wf.nodes["M"].submit == str(tmp_path / "user" / "many.sub") and not wf.nodes["M"].scripts
    assert wf.nodes["X"].submit == str(tmp_path / "user" / "inner.dag")
    assert wf.nodes["A"].tolerance == "99% WAIT" and wf.nodes["M"].tolerance is None


def test_inline_and_submit_description_bodies_are_written_out(tmp_path: Path) -> None:
    dag = _user(tmp_path, "SUBMIT-DESCRIPTION shared {\nexecutable = /bin/true\nqueue\n}\n"
                          "JOB A {\nexecutable = /bin/echo\nqueue\n}\nJOB B shared\n"
                          'VARS A rlrep_estimate="1"\nVARS B rlrep_estimate="1"\n')
    result = instrument(dag, tmp_path / "o" / "w.dag", InstrumentOptions(policy="single", always_pre=True))
    assert result.replicated == ["A", "B"]
    ctx = Path(result.context)
    assert (ctx / "nodes" / "A.orig.sub").read_text() == "executable = /bin/echo\nqueue\n"
    assert (ctx / "nodes" / "B.orig.sub").read_text() == "executable = /bin/true\nqueue\n"
    node = read_dag(tmp_path / "o" / "w.dag").nodes["A"]
    assert node.inline_submit is None and "submit" in parse_hook_argv(node.scripts["PRE"].arguments).options


def test_dir_is_respected(tmp_path: Path) -> None:
    dag = _user(tmp_path, 'JOB A a.sub DIR sub\nVARS A rlrep_estimate="1"\n', {"sub/a.sub": SUB})
    instrument(dag, tmp_path / "o" / "w.dag", InstrumentOptions(policy="single", always_pre=True))
    node = read_dag(tmp_path / "o" / "w.dag").nodes["A"]
    assert node.directory == str(tmp_path / "user" / "sub")
    args = node.scripts["PRE"].arguments
    assert parse_hook_argv(args).options["submit"] == str(tmp_path / "user" / "sub" / "a.sub")


def test_no_tolerance_merges_user_config(tmp_path: Path) -> None:
    dag = _user(tmp_path, 'CONFIG my.config\nJOB A a.sub\nVARS A rlrep_estimate="1"\n', {"my.config": "DAGMAN_MAX_JOBS_IDLE = 7\n"})
    result = instrument(dag, tmp_path / "o" / "w.dag", InstrumentOptions(policy="single", tolerance="config", max_replicas=6,
                                                                        dagman_version=(24, 8, 1)))
    text = Path(result.config).read_text()
    assert "DAGMAN_MAX_JOBS_IDLE = 7" in text and "DAGMAN_NODE_JOB_FAILURE_TOLERANCE = 5" in text
    wf = read_dag(tmp_path / "o" / "w.dag")
    assert wf.config == result.config and wf.nodes["A"].tolerance is None
    assert (tmp_path / "user" / "my.config").read_text() == "DAGMAN_MAX_JOBS_IDLE = 7\n"


def test_old_dagman_gets_no_new_macros(tmp_path: Path) -> None:
    dag = _user(tmp_path, 'JOB A a.sub\nVARS A rlrep_estimate="1"\n')
    instrument(dag, tmp_path / "o" / "w.dag", InstrumentOptions(policy="single", always_pre=True, dagman_version=(23, 0, 0)))
    node = read_dag(tmp_path / "o" / "w.dag").nodes["A"]
    tokens = set(node.scripts["PRE"].arguments) | set(node.scripts["POST"].arguments)
    assert not tokens & {"$DAGID", "$CLUSTERID", "$SUCCESS"}
    with pytest.raises(InputError, match="25.14"):
        instrument(dag, tmp_path / "o2" / "w.dag", InstrumentOptions(dagman_version=(24, 0, 0), tolerance="node"))


def test_bad_inputs(tmp_path: Path) -> None:
    dag = _user(tmp_path, "JOB A a.sub\n")
    with pytest.raises(EstimateError, match="A"):
        instrument(dag, tmp_path / "o" / "w.dag", InstrumentOptions(policy="single"))
    with pytest.raises(InputError, match="overwrite"):
        instrument(dag, dag, InstrumentOptions(policy="single", default_estimate=1))
    with pytest.raises(InputError, match="policy"):
        instrument(dag, tmp_path / "o" / "w.dag", InstrumentOptions(policy="sometimes", default_estimate=1))


def test_cli(tmp_path: Path) -> None:
    from condor_rlrep.cli.main import cli

    config = tmp_path / "c.toml"
    config.write_text('phi = 0.5\npolicy = "fixed:2"\n[power]\ndefault_watts = 60\nhosts = { "lab-*" = 90 }\n')
    out = tmp_path / "o" / "fig.dag"
    result = CliRunner().invoke(cli, ["instrument", str(FIGURE1), "-o", str(out), "--config", str(config),
                                      "--max-replicas", "4"])
    assert result.exit_code == 0, result.output
    assert "8 replicable node(s)" in result.output
    import json

    settings = json.loads((Path(str(out) + ".rlrep") / "hooks.json").read_text())
    assert settings["phi"] == 0.5 and settings["policy"] == "fixed:2" and settings["max_replicas"] == 4
    assert settings["power_default_watts"] == 60 and settings["power_hosts"] == {"lab-*": 90}
    bad = CliRunner().invoke(cli, ["instrument", str(FIGURE1), "-o", str(out), "--policy", "nope"])
    assert bad.exit_code != 0


def test_splices_are_flattened_with_the_any_name_knob(tmp_path: Path) -> None:
    dag = _user(tmp_path, 'SPLICE S inner.dag\nJOB A a.sub\nPARENT A CHILD S\nVARS A rlrep_estimate="1"\n',
                {"inner.dag": 'JOB X a.sub\nVARS X rlrep_estimate="2"\n'})
    result = instrument(dag, tmp_path / "o" / "w.dag", InstrumentOptions(policy="single", always_pre=True))
    assert sorted(result.replicated) == ["A", "S+X"]
    assert "DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS = True" in Path(result.config).read_text()
    wf = read_dag(tmp_path / "o" / "w.dag", allow_any_node_name_characters=True)
    assert ("A", "S+X") in wf.edges and wf.nodes["S+X"].scripts["PRE"]


def test_lazy_and_blank_named_submit_files(tmp_path: Path) -> None:
    """A submit file a user PRE creates later is still instrumented; a path with
    a blank reaches the hook through a link (DAGMan splits SCRIPT args on blanks)."""
    dag = _user(tmp_path, 'JOB L later.sub\nJOB B "my job.sub"\nVARS L rlrep_estimate="1"\nVARS B rlrep_estimate="1"\n',
                {"my job.sub": SUB})
    result = instrument(dag, tmp_path / "o" / "w.dag", InstrumentOptions(policy="single", always_pre=True))
    assert sorted(result.replicated) == ["B", "L"]
    wf = read_dag(tmp_path / "o" / "w.dag")
    args = wf.nodes["B"].scripts["PRE"].arguments
    link = Path(parse_hook_argv(args).options["submit"])
    assert " " not in str(link) and link.read_text() == SUB
    args = wf.nodes["L"].scripts["PRE"].arguments
    assert parse_hook_argv(args).options["submit"] == str(tmp_path / "user" / "later.sub")


@pytest.mark.parametrize("tolerance", ["node", "config"])
def test_htcondor_dag_parser_accepts_the_copy(tmp_path: Path, monkeypatch, tolerance: str) -> None:
    """HTCondor's own C++ DagParser (via Submit.from_dag, which only needs some
    condor_dagman on PATH) accepts every command the copy contains."""
    import htcondor2

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "condor_dagman").write_text("#!/bin/sh\nexit 0\n")
    (fake / "condor_dagman").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ.get('PATH', '')}")
    out = tmp_path / "o" / "fig.dag"
    instrument(FIGURE1, out, InstrumentOptions(policy="single", tolerance=tolerance))
    submit = htcondor2.Submit.from_dag(str(out), {"force": True})
    assert "condor_dagman" in submit["executable"]
