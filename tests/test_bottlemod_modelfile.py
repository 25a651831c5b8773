"""Model files, predict_finish, the CLI, and import hygiene."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from condor_rlrep.bottlemod import load_model, parse_function, parse_model, predict_finish
from condor_rlrep.errors import ModelError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "bottlemod"

SMALL = """
name = "small"
[tasks.a]
max_progress = 100
[tasks.a.inputs.in]
requirement = { points = [[0, 0], [100, 100]] }
source = { points = [[0, 0], [50, 100]] }
[tasks.a.resources.cpu]
requirement = { steps = [[0, 1], [50, 2]] }
allocation = { steps = [[0, 4], [10, 1]] }

[tasks.b]
max_progress = 10
[tasks.b.inputs.x]
from = "a"
requirement = { points = [[0, 0], [100, 0], [100, 10]] }
[tasks.b.resources.cpu]
requirement = 1
allocation = 1
"""


def test_small_model_hand_computed(tmp_path):
    p = tmp_path / "m.toml"
    p.write_text(SMALL)
    # a: data 2/s, CPU 4/s then 1/s from t = 10 (p = 20 there, data-bound so far);
    # then CPU-bound at 1/s to p = 50 at t = 40, then 0.5/s: 50 more take 100 s.
    assert predict_finish(p, "a") == pytest.approx(140.0)
    assert predict_finish(p, "b") == pytest.approx(150.0)
    assert predict_finish(p) == pytest.approx(150.0)


def test_functions_notation():
    f = parse_function({"points": [[0, 0], [1, 1], [1, 3]]}, "x")
    assert f(1.0) == 3.0
    assert parse_function(2.5, "x")(100.0) == 2.5
    g = parse_function({"ppoly": {"x": [0, 2], "c": [[1], [0], [0]]}, "end": 4}, "x")
    assert g(1.0) == pytest.approx(1.0) and g(3.0) == 4.0
    for bad, msg in [({"points": []}, "non-empty"), ({"points": [[1, 0], [0, 1]]}, "non-decreasing"),
                     ({"steps": [[0, 1]], "points": [[0, 1]]}, "exactly one"), (True, "expected"),
                     ({"points": [[0, "a"]]}, "number pairs"), ({"steps": [[0, 1]], "x": 1}, "unknown key")]:
        with pytest.raises(ModelError, match=msg):
            parse_function(bad, "tasks.a.x")


@pytest.mark.parametrize(
    "edit, item, msg",
    [
        (("max_progress = 100", "max_progress = -1"), "tasks.a.max_progress", "positive"),
        (('from = "a"', 'from = "zz"'), "tasks.b.inputs.x.from", "unknown task"),
        (("requirement = { steps = [[0, 1], [50, 2]] }", "requirement = { points = [[0, 1], [50, 2]] }"),
         "tasks.a.resources.cpu.requirement", "piecewise constant"),
        (("source = { points = [[0, 0], [50, 100]] }", "source = { points = [[0, 10], [50, 0]] }"),
         "tasks.a.inputs.in.source", "non-decreasing"),
        (("allocation = 1\n", "allocation = -1\n"), "tasks.b.resources.cpu.allocation", "negative"),
        (("allocation = 1\n", "allocaton = 1\n"), "tasks.b.resources.cpu.allocaton", "unknown key"),
    ],
)
def test_loader_errors_name_file_line_and_item(tmp_path, edit, item, msg):
    p = tmp_path / "bad.toml"
    p.write_text(SMALL.replace(*edit))
    with pytest.raises(ModelError) as err:
        load_model(p)
    text = str(err.value)
    assert text.startswith(str(p) + ":")
    assert item in text and msg in text
    assert err.value.line is not None
    assert item.split(".")[-1] in SMALL.replace(*edit).splitlines()[err.value.line - 1] or "[" in \
        SMALL.replace(*edit).splitlines()[err.value.line - 1]


def test_syntax_error_has_line(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[tasks.a]\nmax_progress = = 3\n")
    with pytest.raises(ModelError) as err:
        load_model(p)
    assert err.value.line == 2 and "not valid TOML" in str(err.value)


def test_predict_finish_raises_when_never_finishing(tmp_path):
    p = tmp_path / "m.toml"
    p.write_text(SMALL.replace("[50, 100]] }", "[50, 60]] }"))
    with pytest.raises(ModelError, match="never finishes"):
        predict_finish(p, "a")
    with pytest.raises(ModelError, match="never finishes"):
        predict_finish(p)
    with pytest.raises(ModelError, match="no task"):
        predict_finish(EXAMPLES / "paper_50_50.toml", "nope")
    with pytest.raises(ModelError, match="cannot read"):
        predict_finish(tmp_path / "missing.toml")


def test_examples_load():
    for p in sorted(EXAMPLES.glob("*.toml")):
        wf = load_model(p)
        assert {t.name for t in wf.tasks} == {"dl1", "dl2", "whole", "stream", "merge"}
    assert parse_model(SMALL).name == "small"


def test_cli_analyze_text_json_and_plot(tmp_path):
    from condor_rlrep.cli.bottlemod_cmd import bottlemod

    runner = CliRunner()
    model = str(EXAMPLES / "paper_50_50.toml")
    out = runner.invoke(bottlemod, ["analyze", model])
    assert out.exit_code == 0, out.output
    assert "makespan 260.003" in out.output and "resource:cpu" in out.output
    js = runner.invoke(bottlemod, ["analyze", model, "--json", "--plot", str(tmp_path / "p.png")])
    assert js.exit_code == 0, js.output
    data = json.loads(js.output)
    assert data["tasks"]["whole"]["bottlenecks"][-1]["name"] == "cpu"
    assert data["makespan"] == pytest.approx(predict_finish(model))
    assert (tmp_path / "p.png").stat().st_size > 1000 and data["plot"] == str(tmp_path / "p.png")
    said = runner.invoke(bottlemod, ["analyze", model, "--plot", str(tmp_path / "q.png")])
    assert said.exit_code == 0 and said.stdout == f"wrote plot {tmp_path / 'q.png'}\n"


def test_cli_error_is_one_line(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[tasks.a]\nmax_progress = 0\n")
    # main() is the entry point; call it the way the console script does
    proc = subprocess.run([sys.executable, "-c", "from condor_rlrep.cli.main import main; main()",
                           "bottlemod", "analyze", str(p)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "tasks.a.max_progress" in proc.stderr


@pytest.mark.parametrize("name", ["latin1.toml", "latin1.json"])
def test_a_file_that_is_not_utf8_is_one_line_naming_its_line(tmp_path, name):
    p = tmp_path / name
    p.write_bytes("# model\n[tasks.a]\nname = 'caf\u00e9'\n".encode("latin-1"))
    proc = subprocess.run([sys.executable, "-c", "from condor_rlrep.cli.main import main; main()",
                           "bottlemod", "analyze", str(p)], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == f"condor-rlrep: error: {p}:3: not UTF-8 text: byte 0xe9 at offset 29\n"
    with pytest.raises(ModelError, match="not UTF-8"):
        load_model(p)


def test_import_hygiene():
    code = (
        "import sys, condor_rlrep.bottlemod, condor_rlrep.cli.bottlemod_cmd\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported eagerly'\n"
        "assert 'scipy' not in sys.modules, 'scipy imported eagerly'\n"
        "import condor_rlrep.cli.main\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    code2 = "import sys, condor_rlrep.cli.main, condor_rlrep.outcome\nassert 'condor_rlrep.bottlemod' not in sys.modules"
    subprocess.run([sys.executable, "-c", code2], check=True)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(-1e6, 1e6)), min_size=1, max_size=12))
def test_points_notation_roundtrip(steps):
    # points with non-decreasing x (some repeated: jumps); the value at each
    # distinct x is the last y listed there, and points() gives them back
    xs, x = [], 0.0
    for dx, _ in steps:
        x += dx
        xs.append(x)
    ys = [y for _, y in steps]
    f = parse_function({"points": [[a, b] for a, b in zip(xs, ys)]}, "f")
    last = {}
    for a, b in zip(xs, ys):
        last[a] = b
    for a, b in last.items():
        assert f(a) == pytest.approx(b, rel=1e-9, abs=1e-6)
    px, py = f.points()
    g = parse_function({"points": [[a, b] for a, b in zip(px.tolist(), py.tolist())]}, "g")
    probe = sorted(set(xs)) + [xs[0] - 1, xs[-1] + 1] + [(a + b) / 2 for a, b in zip(xs, xs[1:])]
    for t in probe:
        assert g(t) == pytest.approx(f(t), rel=1e-9, abs=1e-6)


def test_cli_gain():
    from condor_rlrep.cli.bottlemod_cmd import bottlemod

    out = CliRunner().invoke(bottlemod, ["gain", str(EXAMPLES / "paper_50_50.toml"), "whole", "resource:cpu",
                                         "--factor", "2"])
    assert out.exit_code == 0, out.output
    # CPU twice as fast: whole ends 41 s after the downloads instead of 82 s
    assert "gain 41" in out.output


def test_estimate_source_for_dag_nodes(tmp_path):
    from condor_rlrep.bottlemod.estimate import estimate_source, split_spec
    from condor_rlrep.dag.model import Node, VarAssignment

    (tmp_path / "m.toml").write_text(SMALL)
    src = estimate_source(tmp_path)
    node = Node("n", vars=[VarAssignment("rlrep_bottlemod", "m.toml#a")])
    assert src(node) == pytest.approx(140.0)
    assert src(Node("m", vars=[VarAssignment("rlrep_bottlemod", "m.toml")])) == pytest.approx(150.0)
    assert src(Node("plain")) is None
    assert split_spec("a/b.toml#t") == ("a/b.toml", "t") and split_spec("a.toml") == ("a.toml", None)
    with pytest.raises(ModelError, match="node bad: .*no task 'zz'"):
        src(Node("bad", vars=[VarAssignment("rlrep_bottlemod", "m.toml#zz")]))
    # relative to the DAG file's directory when no base_dir is given
    dag_node = Node("d", vars=[VarAssignment("rlrep_bottlemod", "m.toml#b")], source_path=str(tmp_path / "w.dag"))
    assert estimate_source()(dag_node) == pytest.approx(150.0)


def test_json_model_same_structure(tmp_path):
    import tomllib

    data = tomllib.loads(SMALL)
    p = tmp_path / "m.json"
    p.write_text(json.dumps(data))
    assert predict_finish(p, "a") == pytest.approx(140.0)
    p.write_text('{"tasks": {"a": {"max_progress": 1,}}}')
    with pytest.raises(ModelError, match="not valid JSON") as err:
        load_model(p)
    assert err.value.line == 1


# --------------------------------------------- integers beyond float range
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from condor_rlrep.bottlemod import model_from_dict  # noqa: E402
from condor_rlrep.bottlemod.modelfile import _locate  # noqa: E402
from condor_rlrep.safeload import load_toml  # noqa: E402

_BIG = st.sampled_from(["9" * 400, "-" + "9" * 400, "1" + "0" * 308, "179769313486231570" + "0" * 291, "1", "0", "-1"])
_SLOTS = ["max_progress = {}", "start = {}", "output = {}", "output = {{ points = [[0, 0], [{}, 1]] }}",
          "output = {{ steps = [[0, {}]] }}", "output = {{ ppoly = {{ x = [0, {}], c = [[1]] }} }}",
          "output = {{ ppoly = {{ x = [0, 1], c = [[{}]] }}, end = 2 }}",
          "output = {{ ppoly = {{ x = [0, 1], c = [[1]] }}, left = {} }}", "name2 = {}"]


def _model_outcome(make) -> tuple:
    try:
        wf = make()
    except ModelError as err:
        return ("error", str(err))
    return ("ok", repr([(t.name, t.max_progress, t.start, None if t.output is None else
                         (t.output.x.tolist(), t.output.c.tolist(), t.output.left, t.output.end)) for t in wf.tasks]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_SLOTS), _BIG), min_size=1, max_size=3))
def test_huge_integers_read_as_when_the_parser_tamed_them(slots) -> None:
    # parse_model reads the TOML with integers beyond float range kept and
    # turns each into ±inf where it is read: the same model, or the same
    # error line, as reading the tamed document
    lines, seen = ["[tasks.a]"], set()
    for slot, value in slots:
        key = slot.split(" =")[0]
        if key not in seen:
            seen.add(key)
            lines.append(slot.format(value))
    if "max_progress" not in seen:
        lines.insert(1, "max_progress = 5")
    text = "\n".join(lines) + "\n"

    def tamed():
        try:
            wf = model_from_dict(load_toml(text), source="m.toml")
            wf.validate()
            return wf
        except ModelError as err:  # with the line, as parse_model finds it
            raise ModelError(err.message, path="m.toml", line=_locate(text, err.message.split(":", 1)[0])) from None

    assert _model_outcome(lambda: parse_model(text, source="m.toml")) == _model_outcome(tamed)


@pytest.mark.parametrize("value", ["true", '"5"', "nan", "inf", "-inf", "1e400", "9" * 400, "[5]"])
@pytest.mark.parametrize("slot, where, line, message", [
    ("max_progress = {}", "tasks.a.max_progress", 2, "must be a finite number"),
    ("max_progress = 5\nstart = {}", "tasks.a.start", 3, "must be a finite number"),
    ("max_progress = 5\n[tasks.a.resources.c]\nrequirement = 1\nallocation = 1\nweight = {}",
     "tasks.a.resources.c.weight", 6, "must be a finite number"),
])
def test_numbers_that_are_not_finite_numbers_are_named_with_their_line(slot, where, line, message, value) -> None:
    # (the fast paths for plain ints and floats leave every other value to the checks)
    with pytest.raises(ModelError) as err:
        parse_model("[tasks.a]\n" + slot.format(value) + "\n", source="m.toml")
    assert str(err.value) == f"m.toml:{line}: {where}: {message}"


@pytest.mark.parametrize("value, message", [
    ("true", "expected a number or a table with 'points', 'steps' or 'ppoly'"),
    ('"1"', "expected a number or a table with 'points', 'steps' or 'ppoly'"),
    ("nan", "must be finite"), ("-inf", "must be finite"), ("1e400", "must be finite"), ("9" * 400, "must be finite"),
    ("-" + "9" * 400, "must be finite"), ("-1", "must not be negative"),
    ("{ points = [[0, true]] }", "'points' must be a non-empty list of [x, y] number pairs"),
    ("{ steps = [[0, inf]] }", "steps must be finite numbers"),
])
def test_function_values_that_are_not_usable_are_named_with_their_line(value, message) -> None:
    text = f"[tasks.a]\nmax_progress = 5\n[tasks.a.resources.c]\nrequirement = 1\nallocation = {value}\n"
    with pytest.raises(ModelError) as err:
        parse_model(text, source="m.toml")
    assert str(err.value) == f"m.toml:5: tasks.a.resources.c.allocation: {message}"
