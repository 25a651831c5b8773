"""``condor-rlrep inspect`` on small DAG files (values computed by hand).

fig1.dag: S → A, B, C; A → D, E; B → E; C, D → F; E, F → G; F → H;
G, H → Z (NOOP); plus a FINAL node, which is not part of the graph.
Estimates A 600, B 1200, C 300, D 300 (written "5m"), E 900, F 600, G 300,
H 1200. L′: H 1200, G 300, F 1800, E 1200, D 2100, C 2100, B 2400, A 2700;
CR(W) = 2700 along A → D → F → H (→ Z); φ = 0.5 gives d = 4050.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from condor_rlrep.cli.main import cli, main

DATA = Path(__file__).resolve().parent / "data" / "inspect"
FIG1 = str(DATA / "fig1.dag")


def invoke(*args: str):
    result = CliRunner().invoke(cli, ["inspect", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(["inspect", *args])
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_by_hand():
    report = json.loads(invoke(FIG1, "--json").output)
    assert set(report) == {"critical_path", "critical_path_seconds", "phi", "deadline", "missing_estimates", "nodes", "joins"}
    assert report["critical_path"] == ["A", "D", "F", "H", "Z"]
    assert report["deadline"] == 4050 and report["missing_estimates"] == [] and report["joins"] == {}
    assert report["critical_path_seconds"] == 2700 and report["phi"] == 0.5
    nodes = report["nodes"]
    assert list(nodes) == ["A", "B", "C", "D", "E", "F", "G", "H", "Z"]  # no virtual nodes, no FINAL
    assert nodes["D"] == {
        "estimate": 300.0,
        "source": "vars",
        "L": 2100.0,
        "earliest_start": 600.0,
        "phi_prime": pytest.approx((4050 - 600) / 2100 - 1),
        "phi_double_prime": pytest.approx((4050 - 600 - 1800) / 300 - 1),
        "parents": ["A"],
        "children": ["F"],
    }
    assert nodes["A"]["phi_prime"] == 0.5  # starts the workflow on its critical path
    assert nodes["E"]["parents"] == ["A", "B"] and nodes["E"]["earliest_start"] == 1200
    assert nodes["G"]["L"] == 300 and nodes["G"]["phi_prime"] == pytest.approx(5.5)
    # Z is a NOOP: no work left, so φ′ = φ″ = +inf, written as null
    assert nodes["Z"]["estimate"] == 0 and nodes["Z"]["phi_prime"] is None and nodes["Z"]["phi_double_prime"] is None


def test_human_output():
    out = invoke(FIG1, "--phi", "1").output
    assert "critical path  A -> D -> F -> H -> Z" in out
    assert "CR(W)          2700 s (0h45m00s)" in out
    assert "deadline       5400 s after s(W)" in out
    assert "balanced (φ′ decides" in out
    row = next(line for line in out.splitlines() if line.startswith("   E "))
    assert row.split() == ["E", "900", "vars", "1200", "1200", str(f"{(5400 - 1200) / 1200 - 1:.4f}"),
                           f"{(5400 - 1200 - 300) / 900 - 1:.4f}"]
    assert next(line for line in out.splitlines() if line.startswith("*  A ")).split()[-2] == "1.0000"
    assert "cleanup" not in out
    assert "φ″ decides" in invoke(FIG1, "--phi-mode", "current").output


def test_estimates_file_overrides_vars():
    report = json.loads(invoke(FIG1, "--json", "--estimates", str(DATA / "fig1-estimates.csv")).output)
    assert report["nodes"]["B"]["estimate"] == 3000
    assert report["critical_path"] == ["B", "E", "G", "Z"] and report["critical_path_seconds"] == 4200


def test_default_estimate(capsys):
    missing = str(DATA / "missing.dag")
    report = json.loads(invoke(missing, "--json", "--default-estimate", "2m").output)
    assert report["nodes"]["B"]["estimate"] == 120 and report["critical_path_seconds"] == 180
    code, _, err = run_main(capsys, missing, "--default-estimate", "soon")
    assert code == 2 and "soon" in err


def test_dot_file(tmp_path):
    target = tmp_path / "fig1.dot"
    result = invoke(FIG1, "--json", "--dot", str(target))
    json.loads(result.stdout)  # stdout stays one JSON object
    text = target.read_text()
    assert text.startswith('digraph "fig1.dag" {') and text.rstrip().endswith("}")
    for parent, child in [("A", "D"), ("D", "F"), ("F", "H"), ("H", "Z")]:
        assert f'"{parent}" -> "{child}" [color=red, penwidth=2];' in text
    assert '"A" -> "E";' in text and '"B" -> "E";' in text
    assert "cleanup" not in text and "rlrep" not in text
    assert list(tmp_path.iterdir()) == [target]  # no temporary left behind


def test_missing_estimate_shows_the_structure_and_names_the_node(capsys):
    code, out, err = run_main(capsys, str(DATA / "missing.dag"))
    assert code == 0 and "Traceback" not in err
    assert "warning: 1 node has no runtime estimate: B" in err
    assert "estimates      missing for 1 of 2 nodes: B" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line[:2] in ("A ", "B ")}
    assert rows == {"A": ["60", "vars", "0", "0", "1"], "B": ["-", "-", "1", "1", "0"]}  # estimate source level parents children
    code, out, _ = run_main(capsys, str(DATA / "missing.dag"), "--json")
    report = json.loads(out)
    assert code == 0 and report["missing_estimates"] == ["B"] and report["critical_path"] is None
    assert report["nodes"]["B"] == {"estimate": None, "source": None, "level": 1, "parents": ["A"], "children": []}


def test_cycle_exits_2_naming_the_cycle(capsys):
    code, _, err = run_main(capsys, str(DATA / "cycle.dag"))
    assert code == 2 and "cycle" in err
    # the parser finds the cycle; which node it starts from is its business
    assert any(cycle in err for cycle in ("A -> B -> C -> A", "B -> C -> A -> B", "C -> A -> B -> C"))


def test_bad_arguments(capsys, tmp_path):
    for bad in ("-0.5", "nan", "inf", "-inf", "half"):
        code, _, err = run_main(capsys, FIG1, "--phi", bad)
        assert code == 2 and "--phi" in err and "Traceback" not in err, (bad, err)
    code, _, err = run_main(capsys, str(tmp_path / "nope.dag"))
    assert code == 2 and "nope.dag" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("A,60\nB,-1\n")
    code, _, err = run_main(capsys, FIG1, "--estimates", str(bad))
    assert code == 2 and f"{bad}:2: node B" in err


def test_dax_runtimes_and_default():
    # ID1 100 s (attribute) → ID2 (no runtime: default 60 s), ID3 50 s (profile)
    out = invoke(str(DATA / "chain.dax"), "--default-estimate", "1m").output
    assert "critical path  ID1 -> ID2" in out and "CR(W)          160 s" in out
    rows = {
        cells[0]: cells[1:4]
        for cells in (line.lstrip("* ").split() for line in out.splitlines() if line.startswith(("*  ID", "   ID")))
    }
    # the transformation names show beside the DAX ids
    assert rows == {"ID1": ["first", "100", "runtime"], "ID2": ["second", "60", "default"], "ID3": ["third", "50", "runtime"]}
    report = json.loads(invoke(str(DATA / "chain.dax"), "--json", "--default-estimate", "60").output)
    assert report["nodes"]["ID3"]["phi_prime"] == pytest.approx((240 - 100) / 50 - 1)
    assert report["nodes"]["ID1"]["phi_double_prime"] == pytest.approx((240 - 60) / 100 - 1)
    assert report["nodes"]["ID1"]["transformation"] == "first"


def test_join_shown_as_dagman_makes_it(tmp_path):
    dag = tmp_path / "j.dag"
    dag.write_text("JOB a x.sub\nJOB b x.sub\nJOB c x.sub\nJOB d x.sub\nPARENT a b CHILD c d\n")
    report = json.loads(invoke(str(dag), "--json", "--default-estimate", "10").output)
    assert report["joins"] == {"_condor_join_node0": {"parents": ["a", "b"], "children": ["c", "d"]}}
    assert report["nodes"]["c"]["parents"] == ["_condor_join_node0"] and report["nodes"]["a"]["children"] == ["_condor_join_node0"]
    assert report["nodes"]["c"]["earliest_start"] == 10 and report["critical_path_seconds"] == 20
    indented = invoke(str(dag), "--json", "--indent", "2", "--default-estimate", "10").output
    assert json.loads(indented) == report and indented.startswith('{\n  "critical_path"')


MODEL = Path(__file__).resolve().parents[1] / "examples" / "bottlemod" / "paper_50_50.toml"
# the model's own analysis: makespan 260.0028… s (merge/whole), dl1 finishes at 178.0028… s
MAKESPAN, DL1 = 260.00283889926925, 178.00283898126926


def _bottlemod_dag(tmp_path: Path, spec: str) -> str:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.toml").write_text(MODEL.read_text())
    dag = tmp_path / "w.dag"
    dag.write_text(
        "JOB A a.sub\nJOB B a.sub\nJOB C a.sub\n"
        f'VARS A rlrep_bottlemod="{spec}"\nVARS B rlrep_bottlemod="models/m.toml#dl1"\n'
        'VARS C rlrep_estimate="100"\nVARS C rlrep_bottlemod="models/m.toml"\n'
        "PARENT A CHILD B\nPARENT B CHILD C\n"
    )
    return str(dag)


def test_bottlemod_model_gives_the_estimate(tmp_path: Path):
    report = json.loads(invoke(_bottlemod_dag(tmp_path, "models/m.toml"), "--json").output)
    nodes = report["nodes"]
    assert nodes["A"]["estimate"] == pytest.approx(MAKESPAN) and nodes["A"]["source"] == "bottlemod"
    assert nodes["B"]["estimate"] == pytest.approx(DL1) and nodes["B"]["source"] == "bottlemod"
    assert nodes["C"]["estimate"] == 100 and nodes["C"]["source"] == "vars"  # explicit beats the model
    assert report["critical_path_seconds"] == pytest.approx(MAKESPAN + DL1 + 100)


@pytest.mark.parametrize(("spec", "message"), [
    ("models/missing.toml", "missing.toml"),
    ("models/m.toml#nope", "no task 'nope'"),
])
def test_bad_bottlemod_model_names_node_and_file(capsys, tmp_path: Path, spec: str, message: str):
    dag = _bottlemod_dag(tmp_path, spec)
    code, out, err = run_main(capsys, dag, "--json")
    assert code == 2 and out == ""
    assert "node A" in err and message in err and "w.dag" in err and "Traceback" not in err


@pytest.mark.parametrize("args", [
    (str(DATA / "chain.dax"), "--default-estimate", "60"),  # transformations
    (FIG1,),  # NOOP: φ′ null
    (str(DATA / "chain.dax"),),  # missing estimates: the structure
])
def test_streamed_json_is_the_one_object_dump(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: tuple[str, ...]):
    """``--json`` is written a block of nodes at a time; the text is exactly
    ``json.dumps`` of the whole report (blocks of 2 nodes here, so that the
    seams between blocks are crossed)."""
    from condor_rlrep.cli import inspect_cmd

    dag = tmp_path / "j.dag"
    dag.write_text("JOB a x.sub\nJOB b x.sub\nJOB c x.sub\nJOB d x.sub\nJOB e x.sub\nPARENT a b CHILD c d\n"
                   "PARENT d CHILD e\n")
    for case in [args, (str(dag), "--default-estimate", "10")]:
        whole = json.loads(invoke(*case, "--json", "--indent", "0").stdout)
        monkeypatch.setattr(inspect_cmd, "_BLOCK", 2)
        streamed = invoke(*case, "--json").stdout
        monkeypatch.undo()
        assert streamed == json.dumps(whole) + "\n"
        assert len(whole["nodes"]) > 2


def test_out_of_memory_is_one_line_not_a_traceback(tmp_path: Path):
    """A DAG too large for the process's memory limit: one error line, exit 2."""
    import os
    import shutil
    import subprocess
    import sys

    if shutil.which("prlimit") is None:
        pytest.skip("no prlimit")
    dag = tmp_path / "big.dag"
    with dag.open("w") as out:
        for i in range(1_000_000):
            out.write(f"JOB N{i} n.sub\nVARS N{i} rlrep_estimate=\"60\"\n")
        for i in range(1, 1_000_000):
            out.write(f"PARENT N{i - 1} CHILD N{i}\n")
    (tmp_path / "n.sub").write_text("executable = /bin/true\nqueue\n")
    # One BLAS thread: OpenBLAS reserves per-thread buffers at import and would
    # die there, before condor-rlrep runs, under a limit this small.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    # A livelock (CPython unwinding the MemoryError with no memory left, at
    # 100 % CPU) must fail the test, not hang it: run() kills the child on timeout.
    try:
        done = subprocess.run(["prlimit", "--as=500000000", str(Path(sys.executable).with_name("condor-rlrep")), "inspect",
                               str(dag)], capture_output=True, text=True, timeout=240, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("condor-rlrep inspect hung under prlimit --as=500000000 (killed after 240 s)")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("condor-rlrep: error: out of memory running 'condor-rlrep inspect'")
    # the reader gave up itself, with memory to spare, naming the file
    assert f"(reading {dag}: " in lines[0]
