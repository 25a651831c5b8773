"""Nothing in a DAG or in the files the hooks read can make them do something
else (issue 11, part 2): no node name, VARS value, path, DAG id or file
content adds a submit command, redirects a hook's output or context, or
writes outside the instrumented run's directory; files keep their source's
mode (0600 for state). Also: an instrumented DAG is not instrumented again,
and ``--no-tolerance`` is refused where its knob would do nothing."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from _hookutil import script_argv, substitute
from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.dag.parser import read_dag
from condor_rlrep.errors import DagError, InputError
from condor_rlrep.hooks.argv import hook_argv, parse_hook_argv
from condor_rlrep.rundir.layout import node_state_path, node_submit_path
from condor_rlrep.instrument import InstrumentOptions, instrument

SUB = "executable = /bin/true\noutput = job.out\nerror = job.err\nqueue\n"
T0 = 1_780_000_000.0


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def run_hook(dag: Path, node: str, kind: str, macros: dict[str, object]) -> subprocess.CompletedProcess[str]:
    argv, cwd = script_argv(dag, node, kind)
    full = substitute(argv, {"$JOB": node, **macros})
    return subprocess.run(full, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                          check=False)


def pre_macros(retry: int = 0) -> dict[str, object]:
    return {"$RETRY": retry, "$MAX_RETRIES": 0, "$DAGID": 100}


def in_process(dag: Path, node: str, kind: str, macros: dict[str, object]) -> int:
    from condor_rlrep.hooks.post import run_post
    from condor_rlrep.hooks.pre import run_pre

    argv, cwd = script_argv(dag, node, kind)
    full = substitute(argv, {"$JOB": node, **macros})
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return (run_pre if kind == "PRE" else run_post)(full[1:])
    finally:
        os.chdir(old)


@pytest.fixture()
def hostile(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A DAG whose node names look like hook options and separators."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text(SUB)
    names = ["--out=" + str(tmp_path / "pwned"), "--", "--ctx=" + str(tmp_path / "evil"), "$RETURN"]
    lines = [f"JOB {name} a.sub\nVARS {name} rlrep_estimate=\"5\"\n" for name in names]
    (user / "w.dag").write_text("".join(lines))
    dag = tmp_path / "run" / "w.dag"
    instrument(user / "w.dag", dag, InstrumentOptions(policy="fixed:2", always_pre=True, dagman_version=(25, 14, 0)))
    return tmp_path, dag, user


def test_node_names_never_become_hook_options(hostile: tuple[Path, Path, Path]) -> None:
    tmp_path, dag, user = hostile
    context = Path(str(dag) + ".rlrep")
    before = files_under(tmp_path)
    nodes = [name for name, node in read_dag(dag).nodes.items() if node.kind == "JOB"]
    assert len(nodes) == 4
    for name in nodes:
        argv, _ = script_argv(dag, name, "PRE")
        parsed = parse_hook_argv(substitute(argv[1:], {"$JOB": name, **pre_macros()}))
        assert parsed.options["node"] == name and parsed.options["job"] == name and not parsed.problems
        assert parsed.options["ctx"] == str(context) and parsed.user_argv == []
        done = run_hook(dag, name, "PRE", pre_macros())
        assert done.returncode == 0, done.stderr
        assert "FAIL-OPEN" not in (context / "hooks.log").read_text()
        assert "queue 2" in Path(node_submit_path(str(context), name)).read_text()
    written = files_under(tmp_path) - before
    assert written and all(context in p.parents for p in written), sorted(written)
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "evil").exists()


def test_macro_values_are_positional(tmp_path: Path) -> None:
    argv = hook_argv([("ctx", "/c"), ("node", "--")], [("job", "$JOB"), ("retry", "$RETRY")], ["u.sh", "--", "$JOB"])
    got = parse_hook_argv(substitute(argv, {"$JOB": "--return=0", "$RETRY": "--"}))
    assert got.options["job"] == "--return=0" and got.options["retry"] == "--" and "return" not in got.options
    assert got.user_argv == ["u.sh", "--", "--return=0"] and got.options["node"] == "--"
    # an option-looking token anywhere but in the option section is never an option
    assert "out" not in parse_hook_argv(["--ctx=/c", "--", "--out=/x"]).options
    assert parse_hook_argv(["--ctx=/c", "--out=/x", "--"]).problems  # not an option we know


def test_dagid_and_state_contents_cannot_add_submit_commands(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text(SUB)
    (user / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="5"\n')
    dag = tmp_path / "run" / "w.dag"
    instrument(user / "w.dag", dag, InstrumentOptions(policy="fixed:2", always_pre=True, dagman_version=(25, 14, 0)))
    context = Path(str(dag) + ".rlrep")
    out = Path(node_submit_path(str(context), "A"))
    # a $DAGID that is not an id: ignored, never a tag
    assert in_process(dag, "A", "PRE", {**pre_macros(), "$DAGID": "1\nqueue 99\nexecutable = /bin/evil"}) == 0
    assert "evil" not in out.read_text() and "queue 2" in out.read_text()
    assert "not a decimal id" in (context / "hooks.log").read_text()
    # a run file naming a run with a line break: refused, the user's job runs unchanged
    run = {**json.loads((context / "run.json").read_text()), "dagids": ["100"]}
    (context / "run.json").write_text(json.dumps({**run, "run_id": "r\nexecutable = /bin/evil"}))
    assert in_process(dag, "A", "PRE", pre_macros(1)) == 0
    assert out.read_text() == SUB and "control character" in (context / "hooks.log").read_text()
    # VARS for PRE with a line break (the DAG parser cannot make one; the file can)
    (context / "run.json").write_text(json.dumps(run))
    (context / "nodes" / "A.vars.json").write_text(json.dumps({"rlrep_estimate": "5", "x": "1\nexecutable = /bin/evil"}))
    assert in_process(dag, "A", "PRE", pre_macros(2)) == 0
    assert out.read_text() == SUB and "one submit line" in (context / "hooks.log").read_text()


def test_state_cannot_point_post_at_other_files(tmp_path: Path) -> None:
    """PRE's state names the replica files POST promotes; a state naming
    other files is refused as a whole, and nothing is renamed or deleted."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text(SUB)
    (user / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="5"\n')
    dag = tmp_path / "run" / "w.dag"
    instrument(user / "w.dag", dag, InstrumentOptions(policy="fixed:2", always_pre=True, dagman_version=(25, 14, 0)))
    assert in_process(dag, "A", "PRE", pre_macros()) == 0
    state_path = Path(node_state_path(str(dag) + ".rlrep", "A"))
    state = json.loads(state_path.read_text())
    victim = tmp_path / "precious"
    victim.write_text("keep me")
    state["files"] = ["relative/../../precious"]
    state_path.write_text(json.dumps(state))
    writer = EventLogWriter(Path(str(dag) + ".nodes.log"))
    for proc in range(2):
        writer.submit(7, proc, T0, "A")
    writer.terminate(7, 0, T0 + 9, exit_code=0)
    writer.remove(7, 1, T0 + 10, running=False)
    macros = {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": 100, "$JOBID": "7.1", "$CLUSTERID": 7,
              "$RETURN": -1002, "$SUCCESS": "True"}
    assert in_process(dag, "A", "POST", macros) == 0
    assert victim.read_text() == "keep me"
    assert "PRE state unreadable" in (Path(str(dag) + ".rlrep") / "hooks.log").read_text()


def test_dollar_macros_in_paths_are_not_expanded_in_the_reaper_submit(tmp_path: Path) -> None:
    import htcondor2

    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text(SUB)
    (user / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="5"\n')
    odd = tmp_path / "$(Owner)x" / "$(HOME)"
    result = instrument(user / "w.dag", odd / "w.dag", InstrumentOptions(policy="fixed:2", dagman_version=(25, 14, 0)))
    reaper = Path(result.context) / "reaper.sub"
    submit = htcondor2.Submit(reaper.read_text())
    assert submit.expand("output") == str(Path(result.context) / "reaper.out")
    assert submit.expand("error") == str(Path(result.context) / "reaper.err")
    assert f"--ctx={result.context}" in submit.expand("arguments")


def test_modes_follow_the_source(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text(SUB)
    os.chmod(user / "a.sub", 0o600)
    (user / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="5"\nJOB I {\nexecutable = /bin/true\nqueue\n}\n'
                                'VARS I rlrep_estimate="5"\n')
    os.chmod(user / "w.dag", 0o640)
    store = tmp_path / "agent.sqlite"
    dag = tmp_path / "run" / "w.dag"
    result = instrument(user / "w.dag", dag, InstrumentOptions(store=str(store), max_replicas=3,
                                                               dagman_version=(25, 14, 0)))
    context = Path(result.context)

    def mode(path: Path | str) -> int:
        return stat.S_IMODE(os.stat(path).st_mode)

    assert mode(node_submit_path(str(context), "A")) == 0o600  # the user's 0600 description
    assert mode(context / "nodes" / "I.orig.sub") == 0o640  # an inline body: the DAG's mode
    assert mode(node_submit_path(str(context), "I")) == 0o640
    assert mode(dag) == 0o640 and mode(context / "hooks.json") == 0o600 and mode(store) == 0o600
    assert in_process(dag, "A", "PRE", pre_macros()) == 0
    assert mode(node_submit_path(str(context), "A")) == 0o600
    for private in (node_state_path(str(context), "A"), context / "run.json", context / "run.lock",
                    context / "hooks.log"):
        assert mode(private) == 0o600, private
    # a spooled outcome is private too
    import sqlite3

    writer = EventLogWriter(Path(str(dag) + ".nodes.log"))
    replicas = int(Path(node_submit_path(str(context), "A")).read_text().rsplit("queue ", 1)[1])
    for proc in range(replicas):
        writer.submit(7, proc, T0, "A")
        writer.terminate(7, proc, T0 + 9, exit_code=0)
    conn = sqlite3.connect(store, timeout=0.1, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        settings = json.loads((context / "hooks.json").read_text())
        settings["store_timeout"] = 0.2
        (context / "hooks.json").write_text(json.dumps(settings))
        macros = {"$RETRY": 0, "$MAX_RETRIES": 0, "$DAGID": 100, "$JOBID": f"7.{replicas - 1}", "$CLUSTERID": 7,
                  "$RETURN": 0, "$SUCCESS": "True"}
        assert in_process(dag, "A", "POST", macros) == 0
    finally:
        conn.rollback()
        conn.close()
    (spooled,) = (context / "spool").glob("*.json")
    assert mode(spooled) == 0o600


def test_an_instrumented_dag_is_not_instrumented_again(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text(SUB)
    (user / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="5"\n')
    dag = tmp_path / "run" / "w.dag"
    instrument(user / "w.dag", dag, InstrumentOptions(policy="fixed:2", dagman_version=(25, 14, 0)))
    with pytest.raises(DagError, match=f"its source is {user / 'w.dag'}: instrument that one"):
        instrument(dag, tmp_path / "again" / "w.dag", InstrumentOptions(policy="fixed:2", dagman_version=(25, 14, 0)))
    assert not (tmp_path / "again").exists()
    # found by its hooks even without the context beside it
    (tmp_path / "moved.dag").write_text(dag.read_text())
    with pytest.raises(DagError, match="written by condor-rlrep instrument"):
        instrument(tmp_path / "moved.dag", tmp_path / "m2" / "w.dag", InstrumentOptions(policy="single"))
    refused = cli(["instrument", str(dag), "-o", str(tmp_path / "cli" / "w.dag")])
    assert refused.returncode == 2 and "instrument that one" in refused.stderr


def cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    import sys

    exe = str(Path(sys.executable).parent / "condor-rlrep")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)


def _fake_dagman(tmp_path: Path, stamp: str | None, prints: str = "") -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    body = "#!/bin/sh\n" + (f"# $CondorVersion: {stamp} 2025-01-01 BuildID: 1 $\n" if stamp else "")
    body += f"echo '{prints}'\nexit 0\n"
    (bin_dir / "condor_dagman").write_text(body)
    (bin_dir / "condor_dagman").chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin"}


def test_dagman_version_is_detected(tmp_path: Path) -> None:
    from condor_rlrep.condor.version import detect_dagman_version

    assert detect_dagman_version({"PATH": str(tmp_path / "nothing")}) is None
    env = _fake_dagman(tmp_path, "24.8.1")
    assert detect_dagman_version(env)[0] == (24, 8, 1)
    env = _fake_dagman(tmp_path, None, prints="$CondorVersion: 23.10.2 2024-05-01 $")
    assert detect_dagman_version(env)[0] == (23, 10, 2)
    real = Path("/work/shared/htcondor/htcondor-25.14-debian12-x86_64.tar.xz")
    if real.exists():  # the real binary's stamp, read without running it
        out = tmp_path / "real"
        out.mkdir()
        subprocess.run(["tar", "-xJf", str(real), "-C", str(out), "htcondor/bin/condor_dagman"], check=True)
        found = detect_dagman_version({"PATH": str(out / "htcondor" / "bin")})
        assert found is not None and found[0] == (25, 14, 0)


def test_no_tolerance_needs_a_dagman_that_has_the_knob(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text(SUB)
    (user / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="5"\n')

    def run(name: str, **options: object):
        return instrument(user / "w.dag", tmp_path / name / "w.dag", InstrumentOptions(policy="fixed:2", **options))

    with pytest.raises(InputError, match="neither TOLERANCE .* nor DAGMAN_NODE_JOB_FAILURE_TOLERANCE"):
        run("old", tolerance="config", dagman_version=(24, 8, 0))
    with pytest.raises(InputError, match="neither TOLERANCE"):  # the default for an old DAGMan is refused too
        run("old2", dagman_version=(23, 0, 0))
    with pytest.raises(InputError, match="pass --dagman-version"):
        run("unknown", tolerance="config", environ={"PATH": str(tmp_path / "nothing")})
    assert not (tmp_path / "old").exists() and not (tmp_path / "unknown").exists()
    done = run("detected", tolerance="config", environ=_fake_dagman(tmp_path, "24.8.1"))
    assert "DAGMAN_NODE_JOB_FAILURE_TOLERANCE = 1" in Path(done.config).read_text()
    assert done.dagman_note.startswith("24.8.1 (from the version stamp")
    # one replica a node needs no tolerance: allowed on any DAGMan, no knob written
    single = instrument(user / "w.dag", tmp_path / "single" / "w.dag",
                        InstrumentOptions(policy="single", tolerance="config", dagman_version=(23, 0, 0)))
    assert single.config is None or "FAILURE_TOLERANCE" not in Path(single.config).read_text()
    refused = cli(["instrument", str(user / "w.dag"), "-o", str(tmp_path / "c" / "w.dag"),
                   "--policy", "fixed:2", "--no-tolerance", "--dagman-version", "24.0.0"])
    assert refused.returncode == 2 and "24.8.1" in refused.stderr
    done = cli(["instrument", str(user / "w.dag"), "-o", str(tmp_path / "c" / "w.dag"), "--policy", "fixed:2",
                "--dagman-version", "25.14.0"])
    assert done.returncode == 0 and "DAGMan 25.14.0 (as given)" in done.stdout
