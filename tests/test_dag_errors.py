"""Every class of bad DAG input gives a DagError naming file, line and culprit."""

from __future__ import annotations

import pytest

from condor_rlrep.dag import Node, Workflow, parse_dag, read_dag, write_dag_lines
from condor_rlrep.errors import CycleError, DagError, DagSyntaxError, InputError
from _dagutil import loader_from


def fail(text: str, exc=DagError, path="bad.dag", **kw) -> DagError:
    with pytest.raises(exc) as info:
        parse_dag(text.splitlines(), path=path, **kw)
    err = info.value
    assert isinstance(err, InputError)
    return err


def where(err: DagError) -> tuple[str | None, int | None]:
    return err.path, err.line


def test_unknown_command():
    err = fail("JOB A a.sub\n\nDATA A file\n", DagSyntaxError)
    assert where(err) == ("bad.dag", 3)
    assert "'DATA' is not a valid DAG command" in str(err)
    assert str(err).startswith("bad.dag:3: ")


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("JOB A", "no submit description given for node 'A'"),
        ("JOB", "missing node name"),
        ("JOB B b.sub NOPE", "unexpected token 'NOPE'"),
        ("JOB B b.sub DIR", "no directory given after DIR"),
        ("SUBDAG B b.dag", "missing EXTERNAL keyword"),
        ("RETRY A many", "invalid retry count 'many'"),
        ("RETRY A -1", "invalid retry count '-1'"),
        ("RETRY A 1 UNLESS 3", "unexpected token 'UNLESS'"),
        ("ABORT-DAG-ON A 1 RETURN 300", "invalid RETURN code '300'"),
        ("PARENT A B", "missing CHILD"),
        ("PARENT CHILD A", "no parent node(s) given"),
        ("PARENT A CHILD", "no child node(s) given"),
        ("VARS A", "no key=value pairs given for node 'A'"),
        ("VARS A novalue", "'novalue' is not a key=value pair"),
        ("VARS A queue_x=\"1\"", "illegal variable name 'queue_x'"),
        ("VARS A k=\"unterminated", "no ending quote"),
        ("VARS A +=\"1\"", "needs at least one character"),
        ("SCRIPT PREE A x.sh", "unexpected token 'PREE'"),
        ("SCRIPT PRE A", "no script given for node 'A'"),
        ("SCRIPT DEFER 1 PRE A x.sh", "invalid DEFER time 'PRE'"),
        ("SCRIPT DEBUG f.txt BOTH PRE A x.sh", "unknown DEBUG output stream type 'BOTH'"),
        ("PRIORITY A high", "invalid priority value 'high'"),
        ("TOLERANCE A lots", "invalid tolerance 'lots'"),
        ("TOLERANCE A 2 NOW", "unexpected token 'NOW'"),
        ("PIN_IN A 0", "invalid pin number '0'"),
        ("MAXJOBS cat", "missing category name or limit"),
        ("ENV PUT X", "unexpected token 'PUT'"),
        ("SET_JOB_ATTR nothing", "'nothing' is not an attribute assignment"),
        ("DOT f.dot SOMETIMES", "unexpected token 'SOMETIMES'"),
        ("REJECT now", "unexpected token 'now'"),
        ("SUBMIT-DESCRIPTION D file.sub", "no inline description"),
        ('JOB C "@="', "no inline description closing token"),
        ("JOB C @=", "invalid key=value pair: no value found"),
    ],
)
def test_malformed_lines_say_what_is_expected(line, needle):
    err = fail(f"JOB A a.sub\n{line}\n", DagSyntaxError)
    assert where(err) == ("bad.dag", 2)
    assert needle in err.message
    assert "expected:" in err.message


def test_duplicate_node_names_both_places():
    err = fail("JOB A a.sub\nJOB B b.sub\nFINAL A f.sub\n")
    assert where(err) == ("bad.dag", 3)
    assert "duplicate node name 'A'" in err.message and "bad.dag:1" in err.message


def test_duplicate_across_include():
    files = {"inc.dag": "JOB A again.sub\n"}
    err = fail("JOB A a.sub\nINCLUDE inc.dag\n", include_loader=loader_from(files), path="bad.dag")
    assert where(err) == ("inc.dag", 1) and "'A'" in err.message


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("PARENT A CHILD Z", "PARENT/CHILD: unknown node 'Z'"),
        ("RETRY Q 2", "RETRY: unknown node 'Q'"),
        ("VARS nobody k=\"v\"", "VARS: unknown node 'nobody'"),
        ("SCRIPT POST ghost x.sh", "SCRIPT: unknown node 'ghost'"),
        ("DONE ghost", "DONE: unknown node 'ghost'"),
    ],
)
def test_unknown_node_references(line, what):
    err = fail(f"JOB A a.sub\n{line}\n")
    assert where(err) == ("bad.dag", 2) and what in err.message


def test_cycle_names_nodes_in_order_and_closing_line():
    err = fail("JOB A a\nJOB B b\nJOB C c\nJOB D d\nPARENT A CHILD B\nPARENT B CHILD C\nPARENT D CHILD A\nPARENT C CHILD A\n", CycleError)
    cyc = err.cycle
    assert sorted(cyc) == ["A", "B", "C"]
    # consecutive names are edges, and the last returns to the first
    pairs = list(zip(cyc, cyc[1:] + cyc[:1]))
    assert set(pairs) <= {("A", "B"), ("B", "C"), ("C", "A")}
    assert "dependency cycle" in err.message and " -> ".join(cyc) in err.message
    closing = pairs[-1]
    line = {("A", "B"): 5, ("B", "C"): 6, ("C", "A"): 8}[closing]
    assert where(err) == ("bad.dag", line)


def test_self_loop_is_a_cycle():
    err = fail("JOB A a\nPARENT A CHILD A\n", CycleError)
    assert err.cycle == ["A"] and where(err) == ("bad.dag", 2)


def test_missing_include_and_splice_files(tmp_path):
    dag = tmp_path / "top.dag"
    dag.write_text("JOB A a.sub\nINCLUDE nothere.dag\n")
    with pytest.raises(DagError) as info:
        read_dag(dag)
    assert where(info.value) == (str(dag), 2) and "INCLUDE file 'nothere.dag' not found" in info.value.message
    dag.write_text("JOB A a.sub\n\nSPLICE S gone.dag DIR sub\n")
    with pytest.raises(DagError) as info:
        read_dag(dag)
    assert where(info.value) == (str(dag), 3) and "SPLICE file 'gone.dag' not found" in info.value.message
    assert str(tmp_path / "sub" / "gone.dag") in info.value.message


def test_missing_dag_file(tmp_path):
    with pytest.raises(DagError) as info:
        read_dag(tmp_path / "none.dag")
    assert "DAG file not found" in str(info.value) and info.value.path == str(tmp_path / "none.dag")


def test_include_recursion():
    files = {"a.dag": "JOB A a\nINCLUDE b.dag\n", "b.dag": "JOB B b\n\nINCLUDE a.dag\n"}
    err = fail(files["a.dag"], path="a.dag", include_loader=loader_from(files))
    assert where(err) == ("b.dag", 3)
    assert "INCLUDE recursion" in err.message and "a.dag -> b.dag -> a.dag" in err.message


def test_splice_recursion():
    files = {"s.dag": "SPLICE T s.dag\n"}
    err = fail("SPLICE S s.dag\n", path="top.dag", include_loader=loader_from(files))
    assert where(err) == ("s.dag", 1) and "SPLICE recursion" in err.message


@pytest.mark.parametrize("name", ["PARENT", "child", "All_Nodes"])
def test_reserved_node_names(name):
    err = fail(f"JOB {name} x.sub\n", DagSyntaxError)
    assert where(err) == ("bad.dag", 1) and f"node name '{name}' is a reserved word" in err.message


def test_plus_is_illegal_in_node_names():
    err = fail("JOB ok a\nJOB a+b x.sub\n", DagSyntaxError)
    assert where(err) == ("bad.dag", 2) and "'a+b'" in err.message and "'+'" in err.message


def test_unterminated_inline_description():
    err = fail("JOB A a\nJOB B {\nexecutable = x\nqueue\n", DagSyntaxError)
    assert where(err) == ("bad.dag", 2) and "'B'" in err.message and "unterminated" in err.message
    err = fail("SUBMIT-DESCRIPTION D @=END\nx = 1\n@ENDX\n", DagSyntaxError)
    assert where(err) == ("bad.dag", 1) and "'D'" in err.message and "@END" in err.message


def test_final_node_rules():
    err = fail("JOB A a\nFINAL F f\nPARENT A CHILD F\n")
    assert where(err) == ("bad.dag", 3) and "FINAL node 'F'" in err.message
    err = fail("FINAL F f\nFINAL G g\n")
    assert where(err) == ("bad.dag", 2) and "'G'" in err.message and "'F'" in err.message
    err = fail("SPLICE S s.dag\n", include_loader=loader_from({"s.dag": "FINAL F f\n"}))
    assert where(err) == ("s.dag", 1) and "not allowed in a splice" in err.message


def test_commands_not_applicable_to_splices():
    files = {"s.dag": "JOB A a\n"}
    err = fail("SPLICE S s.dag\nRETRY S 3\n", include_loader=loader_from(files))
    assert where(err) == ("bad.dag", 2) and "RETRY cannot be applied to splice 'S'" in err.message


def test_all_nodes_not_accepted_by_done():
    err = fail("JOB A a\nDONE ALL_NODES\n", DagSyntaxError)
    assert where(err) == ("bad.dag", 2) and "ALL_NODES" in err.message


def test_connect_errors():
    files = {
        "out.dag": "JOB O1 o\nPIN_OUT O1 1\nPIN_OUT O1 3\n",
        "in.dag": "JOB I1 i\nJOB I2 i\nPIN_IN I1 1\n",
        "in2.dag": "JOB I1 i\nJOB I2 i\nPIN_IN I1 1\nPIN_IN I2 2\n",
        "one.dag": "JOB O1 o\nPIN_OUT O1 1\n",
    }
    ld = loader_from(files)
    err = fail("SPLICE O out.dag\nSPLICE I in2.dag\nCONNECT O I\n", include_loader=ld)
    assert where(err) == ("bad.dag", 3) and "PIN_OUT pins of splice 'O' are not numbered" in err.message
    err = fail("SPLICE O one.dag\nSPLICE I in2.dag\nCONNECT O I\n", include_loader=ld)
    assert "1 PIN_OUT(s) of 'O' do not match 2 PIN_IN(s) of 'I'" in err.message
    err = fail("SPLICE O one.dag\nSPLICE I in.dag\nCONNECT O I\n", include_loader=ld)
    assert "initial node 'I+I2' of splice 'I' is not connected to a PIN_IN" in err.message
    err = fail("JOB N n\nSPLICE I in.dag\nCONNECT N I\n", include_loader=ld)
    assert "'N' is a node, not a splice" in err.message


def test_two_different_config_files():
    err = fail("CONFIG a.cfg\nCONFIG b.cfg\n")
    assert where(err) == ("bad.dag", 2) and "'b.cfg'" in err.message and "'a.cfg'" in err.message


def test_writer_refuses_plus_names_without_option():
    wf = Workflow(nodes={"S+A": Node("S+A", submit="a.sub")})
    with pytest.raises(DagError, match=r"node 'S\+A'.*DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS"):
        list(write_dag_lines(wf))
    assert "JOB S+A a.sub" in list(write_dag_lines(wf, allow_any_node_name_characters=True))


def test_writer_refuses_inexpressible_models():
    with pytest.raises(DagError, match="'A' has no submit description"):
        list(write_dag_lines(Workflow(nodes={"A": Node("A")})))
    wf = Workflow(nodes={"A": Node("A", submit="a")}, edges={("A", "Z")})
    with pytest.raises(DagError, match="unknown node 'Z'"):
        list(write_dag_lines(wf))
