"""The DAG parser on the HTCondor manual's examples, real DAGs and language details."""

from __future__ import annotations

import pytest

from condor_rlrep.dag import Join, Script, VarAssignment, parse_dag, read_dag
from _dagutil import DAGS, SHARED_DATA, loader_from, parse_text

DIAMOND_EDGES = {("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")}
X_EDGES = {(p, "D") for p in "ABC"} | {("D", c) for c in "EFG"}


def scoped(prefix: str, edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    return {(prefix + p, prefix + c) for p, c in edges}


# -- manual examples ------------------------------------------------------------

@pytest.mark.parametrize("name", ["diamond.dag", "diamond_split_edges.dag"])
def test_diamond(name):
    wf = read_dag(DAGS / name)
    assert list(wf.nodes) == ["A", "B", "C", "D"]
    assert wf.edges == DIAMOND_EDGES
    assert wf.weak_edges == set()
    assert wf.nodes["B"].submit == "B.sub"
    assert wf.nodes["B"].source_line == {"diamond.dag": 4, "diamond_split_edges.dag": 2}[name]
    assert wf.parents("D") == ["B", "C"]


def test_scripts():
    wf = read_dag(DAGS / "diamond_scripts.dag")
    assert wf.edges == DIAMOND_EDGES
    assert wf.nodes["A"].submit == "A.condor"
    assert wf.nodes["B"].scripts == {"PRE": Script("PRE", "pre.sh", ["$JOB", ".gz"])}
    assert wf.nodes["A"].scripts["POST"].argv == ["stage-out", "job_status=$RETURN"]
    d = wf.nodes["D"].scripts
    assert d["POST"] == Script("POST", "post.sh", ["$RETURN", "$PRE_SCRIPT_RETURN"], defer_status=4, defer_seconds=300)
    assert d["PRE"] == Script("PRE", "check.sh", [], 1, 60, "debug.log", "ALL")
    assert wf.nodes["C"].scripts["HOLD"].argv == ["notify.sh", "$JOB"]


def test_inline_description():
    wf = read_dag(DAGS / "diamond_inline.dag")
    a = wf.nodes["A"]
    assert a.submit is None
    assert a.inline_submit.splitlines() == [
        "executable   = /path/diamond.exe",
        "output       = diamond.out.$(cluster)",
        "error        = diamond.err.$(cluster)",
        "log          = diamond_condor.log",
        "universe     = vanilla",
    ]
    assert wf.edges == DIAMOND_EDGES


def test_submit_description_command():
    wf = read_dag(DAGS / "diamond_submit_description.dag")
    body = wf.submit_descriptions["DiamondDesc"].splitlines()
    assert body[0] == "executable   = /path/diamond.exe" and body[-1] == "request_disk   = 10240K"
    assert len(body) == 8
    assert {n.submit for n in wf.nodes.values()} == {"DiamondDesc"}
    assert wf.edges == DIAMOND_EDGES


def test_vars_manual_examples():
    wf = read_dag(DAGS / "vars.dag")
    n = wf.nodes
    assert n["A"].vars == [VarAssignment("state", "Wisconsin")]
    assert n["P"].vars == [VarAssignment("var1", "A", "PREPEND"), VarAssignment("var2", "B", "APPEND")]
    assert [v.value for v in n["job1"].vars] == ["foo", "bar"] and n["job1"].var("a") == "bar"
    assert n["NodeA"].var("first") == "Alberto Contador"
    assert n["NodeA"].var("second") == '""Andy\tSchleck""'
    assert n["NodeA"].var("third") == "Lance\\ Armstrong"
    assert n["NodeA"].var("fourth") == "Vincenzo ''The Shark'' Nibali"
    assert n["NodeA"].var("misc") == "!@#$%^&*()_-=+=[]{}?/"
    assert n["NodeB"].var("second") == '\\"Andreas_Kloden\\"'
    assert n["NodeB"].var("fourth") == "Bernard_'The_Badger'_Hinault"
    assert n["NodeC"].var("args") == "'Nairo Quintana' 'Chris Froome'"
    assert n["NodeC"].var("nodename") == "$(JOB)"
    assert n["NodeD"].var("outfilename") == "$(JOB)-output"
    assert n["NodeF"].var("My.A") == '"bob"'
    assert n["NodeF"].var("My.B") == '"bob"'  # +B is rewritten to My.B
    e = n["NodeE"]
    assert (e.var("noderetry"), e.var("country"), e.var("city"), e.var("empty")) == ("$(RETRY)", "USA", "Madison", "")


def test_all_nodes_skips_final_and_last_wins():
    wf = read_dag(DAGS / "all_nodes.dag")
    for name in "ABC":
        node = wf.nodes[name]
        assert node.scripts["PRE"].argv == ["my_script", "$JOB"]
        assert node.retry == 3
    assert wf.nodes["A"].var("name") == "$(JOB)"
    assert wf.nodes["B"].var("name") == "nodeB"
    f = wf.nodes["F"]
    assert f.kind == "FINAL" and f.scripts == {} and f.vars == [] and f.retry is None


def test_include_is_textual():
    wf = read_dag(DAGS / "include" / "foo.dag")
    assert list(wf.nodes) == ["A", "B", "C"]
    b = wf.nodes["B"]
    assert b.source_path.endswith("include/bar.dag") and b.source_line == 3


def test_include_vars_file():
    wf = read_dag(DAGS / "include" / "run_dataset57.dag")
    procs = [f"Process0{i}" for i in range(3)]
    assert list(wf.nodes) == ["Split", *procs, "Combine"]
    assert wf.edges == {("Split", p) for p in procs} | {(p, "Combine") for p in procs}
    assert all(n.var("dataset") == "data57" for n in wf.nodes.values())


def test_splice_diamond_between_x_and_y():
    wf = read_dag(DAGS / "splice" / "topLevel.dag")
    assert list(wf.nodes) == ["X", "Y", "DIAMOND+A", "DIAMOND+B", "DIAMOND+C", "DIAMOND+D"]
    assert wf.edges == scoped("DIAMOND+", DIAMOND_EDGES) | {("X", "DIAMOND+A"), ("DIAMOND+D", "Y")}


def test_splice_twice_s1():
    wf = read_dag(DAGS / "splice" / "s1.dag")
    assert len(wf.nodes) == 16
    assert [n for n in wf.nodes if n.startswith("X2+")] == [f"X2+{c}" for c in "ABCDEFG"]
    expected = (
        scoped("X1+", X_EDGES) | scoped("X2+", X_EDGES)
        | {("A", f"X1+{c}") for c in "ABC"}
        | {(f"X2+{p}", "B") for p in "EFG"}
    )
    assert wf.edges == expected and len(expected) == 18
    # X1's 3 terminal nodes -> X2's 3 initial nodes: one join (as DAGMan makes it), not 9 edges
    assert wf.joins == [Join("_condor_join_node0", tuple(f"X1+{p}" for p in "EFG"), tuple(f"X2+{c}" for c in "ABC"))]
    assert wf.joins[0].source_line == 14  # the PARENT X1 CHILD X2 line
    assert wf.dependency_pairs() == expected | {(f"X1+{p}", f"X2+{c}") for p in "EFG" for c in "ABC"}
    assert wf.children("X1+E") == ["X2+A", "X2+B", "X2+C"] and wf.parents("X2+A") == ["X1+E", "X1+F", "X1+G"]


def test_disjoint_nested_splice():
    wf = read_dag(DAGS / "splice" / "toplevel_disjoint.dag")
    assert len(wf.nodes) == 4 + 7 + 16
    assert "S3+X1+A" in wf.nodes and "S3+X2+G" in wf.nodes and "S3+B" in wf.nodes
    s1 = read_dag(DAGS / "splice" / "s1.dag")
    assert {e for e in wf.edges if e[0].startswith("S3+")} == scoped("S3+", s1.edges)
    assert [(j.name, j.parents, j.children) for j in wf.joins] == [
        ("S3+_condor_join_node0", tuple(f"S3+{p}" for p in s1.joins[0].parents), tuple(f"S3+{c}" for c in s1.joins[0].children))
    ]
    assert {e for e in wf.edges if e[0] == "D"} == {("D", f"S2+{c}") for c in "ABC"}
    # no edge leads into the disjoint splice
    assert not any(c.startswith("S3+") and not p.startswith("S3+") for p, c in wf.edges)


def test_splice_dir_prefixes_node_dirs():
    wf = read_dag(DAGS / "splice_dir" / "top.dag")
    assert wf.nodes["S+A"].directory == "subdir/work"
    assert wf.nodes["S+B"].directory == "subdir"
    assert wf.nodes["S+C"].directory == "/abs/dir"
    assert wf.edges == {("Pre", "S+A"), ("Pre", "S+C"), ("S+A", "S+B")}


def test_connect_pins():
    wf = read_dag(DAGS / "connect" / "top.dag")
    expected = {
        ("A+A1", "B+B1"), ("A+A1", "B+B2"), ("A+A2", "B+B3"), ("A+A2", "B+B4"),
        *((f"B+B{i}", "C+C1") for i in range(1, 5)),
    }
    assert wf.edges == expected


def test_splice_categories_and_maxjobs_override():
    wf = read_dag(DAGS / "categories" / "upper.dag")
    assert {n: wf.nodes[n].category for n in ("A+C", "A+D", "B+X", "B+Y")} == dict.fromkeys(("A+C", "A+D", "B+X", "B+Y"), "+init")
    assert wf.nodes["L+P"].category == "L+catX"
    assert wf.nodes["L+Q"].category == "+catY"
    # settings at a higher level override those in the splice
    assert wf.maxjobs == {"+init": 2, "L+catX": 10, "+catY": 2}


def test_subdag_external_is_one_node():
    wf = read_dag(DAGS / "subdag" / "line.dag")
    assert list(wf.nodes) == ["X", "Y", "Z"]
    assert wf.nodes["Y"].kind == "SUBDAG" and wf.nodes["Y"].submit == "diamond.dag"
    assert wf.edges == {("X", "Y"), ("Y", "Z")}


def test_noop_nodes_around_splice():
    wf = read_dag(DAGS / "noop_splice" / "example.dag")
    assert wf.nodes["OnlyPreNode"].noop and wf.nodes["OnlyPostNode"].noop
    assert wf.edges == {("OnlyPreNode", "TheSplice+TheNode"), ("TheSplice+TheNode", "OnlyPostNode")}


def test_node_types():
    wf = read_dag(DAGS / "node_types.dag")
    kinds = {n.name: n.kind for n in wf.nodes.values()}
    assert kinds == {"Prov": "PROVISIONER", "Monitor": "SERVICE", "A": "JOB", "B": "JOB", "C": "JOB", "Cleanup": "FINAL"}
    assert wf.final_node == "Cleanup"
    assert wf.nodes["B"].noop and not wf.nodes["B"].done and wf.nodes["C"].done
    assert not wf.nodes["B"].is_replicable and wf.nodes["A"].is_replicable
    assert wf.nodes["Cleanup"].scripts["PRE"].arguments == ["$DAG_STATUS", "$FAILED_COUNT"]


def test_completion_commands():
    wf = read_dag(DAGS / "completion.dag")
    a, b, c = (wf.nodes[x] for x in "ABC")
    assert (a.retry, a.retry_unless_exit, b.retry, b.retry_unless_exit) == (3, None, 5, 42)
    assert a.abort_dag_on == (3, None) and c.abort_dag_on == (10, 1)
    assert c.pre_skip == 1 and c.scripts["PRE"].executable == "pre.sh"
    assert (a.priority, b.priority, c.priority) == (None, 10, -5)
    assert a.category == b.category == "small" and wf.maxjobs == {"small": 1}
    assert c.tolerance == "99% WAIT"


def test_information_files_and_dagman_job_commands():
    wf = read_dag(DAGS / "info_files.dag")
    assert wf.config == "dagman.config"
    assert wf.set_job_attrs == [("Project", '"rlrep"')]
    assert wf.env == [("GET", "PATH HOME"), ("SET", "CUDA_VISIBLE_DEVICES=0;OMP_NUM_THREADS=2;")]
    assert wf.dot == "dag.dot UPDATE DONT-OVERWRITE INCLUDE header.dot"
    assert (wf.node_status_file, wf.node_status_min_seconds, wf.node_status_always_update) == ("my.dag.status", 30, True)
    assert wf.jobstate_log == "jobstate.log"
    assert wf.nodes["A"].save_point and wf.nodes["A"].save_point_file is None
    assert wf.nodes["B"].save_point_file == "b_save.file"


REAL = sorted((SHARED_DATA / "eventlogs" / "real-dagman").glob("**/test.dag"))


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.parent.name)
def test_real_dagman_dags(path):
    wf = read_dag(path)
    text = path.read_text()
    jobs = [ln.split()[1] for ln in text.splitlines() if ln.split()[:1] in (["JOB"], ["FINAL"])]
    assert list(wf.nodes) == jobs
    for node in wf.nodes.values():
        for s in node.scripts.values():
            assert s.executable.endswith(".sh") and s.arguments[0] == f"{s.kind}_{node.name}"


def test_real_dagman_data_present_or_skip():
    if not REAL:
        pytest.skip("no real-dagman data next to the checkout")
    tol = read_dag(next(p for p in REAL if p.parent.name == "replicas-first-wins"))
    assert tol.nodes["A"].tolerance == "3 WAIT" and tol.edges == {("A", "B")}
    assert tol.nodes["A"].scripts["POST"].arguments[-1] == "$JOB_ABORT_COUNT"


# -- language details ---------------------------------------------------------------

def test_keywords_case_and_dash_underscore_and_comments():
    wf = parse_text(
        """
        // a C++-style comment
        job A a.sub
        Job B b.sub
        pre-skip A 2
        abort_dag_on A 1 return 3
        retry B 1 unless_exit 7
        submit_description D {
        x = 1
        }
        parent A child B
        """
    )
    assert wf.nodes["A"].pre_skip == 2 and wf.nodes["A"].abort_dag_on == (1, 3)
    assert wf.nodes["B"].retry_unless_exit == 7
    assert wf.submit_descriptions == {"D": "x = 1"}
    assert wf.edges == {("A", "B")}


def test_continuation_lines_skip_comments():
    wf = parse_text("JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nPARENT A \\\n# comment\n\n  B \\\n CHILD C\n")
    assert wf.edges == {("A", "C"), ("B", "C")}


def test_commands_in_any_order():
    wf = parse_text("PARENT A CHILD B\nRETRY B 2\nJOB A a.sub\nJOB B b.sub\n")
    assert wf.edges == {("A", "B")} and wf.nodes["B"].retry == 2


def test_quoted_file_arguments_lose_quotes():
    wf = parse_text("JOB A \"/path with space/a.sub\" DIR 'my dir' NOOP DONE\nSUBDAG EXTERNAL S \"sub dag.dag\" DIR d\n")
    a = wf.nodes["A"]
    assert (a.submit, a.directory, a.noop, a.done) == ("/path with space/a.sub", "my dir", True, True)
    assert wf.nodes["S"].submit == "sub dag.dag" and wf.nodes["S"].directory == "d"


def test_inline_options_after_closer_and_at_tag():
    wf = parse_text(
        "JOB A {\n  executable = a\n\n  # comment\n  queue\n} NOOP DIR foo\n"
        "FINAL F @=END\n}\nexecutable = f\n@END DIR fin\n"
    )
    a, f = wf.nodes["A"], wf.nodes["F"]
    assert (a.inline_submit, a.noop, a.directory) == ("executable = a\nqueue", True, "foo")
    assert (f.inline_submit, f.directory, f.kind) == ("}\nexecutable = f", "fin", "FINAL")


def test_script_debug_before_defer_and_rest_of_line():
    wf = parse_text("JOB A a.sub\nSCRIPT DEBUG out.txt STDOUT DEFER 2 30 POST A /bin/post  x=1   $RETURN 'q r'\n")
    s = wf.nodes["A"].scripts["POST"]
    assert s == Script("POST", "/bin/post", ["x=1", "$RETURN", "'q", "r'"], 2, 30, "out.txt", "STDOUT")


def test_weak_edges_and_strong_wins():
    wf = parse_text(
        "JOB A a\nJOB B b\nJOB C c\nWEAK PARENT A CHILD B C\nPARENT A CHILD C\nweak parent B child C\n"
    )
    assert wf.edges == {("A", "B"), ("A", "C"), ("B", "C")}
    assert wf.weak_edges == {("A", "B"), ("B", "C")}


def test_second_script_replaces_first():
    wf = parse_text("JOB A a\nSCRIPT PRE A one.sh\nSCRIPT PRE A two.sh 2\n")
    assert wf.nodes["A"].scripts["PRE"].argv == ["two.sh", "2"]


def test_pure_parse_with_loader_and_base_dir():
    files = {
        "/d/top.dag": "JOB T t.sub\nSPLICE S sub/s.dag\nPARENT T CHILD S\nINCLUDE inc.dag",
        "/d/sub/s.dag": "JOB A a.sub\nINCLUDE sub/more.dag\nPARENT A CHILD B",
        "/d/sub/more.dag": "JOB B b.sub",
        "/d/inc.dag": "RETRY T 4",
    }
    wf = parse_dag(files["/d/top.dag"].splitlines(), path="/d/top.dag", include_loader=loader_from(files))
    assert list(wf.nodes) == ["T", "S+A", "S+B"]
    assert wf.edges == {("T", "S+A"), ("S+A", "S+B")}
    assert wf.nodes["T"].retry == 4
    wf2 = parse_dag(["INCLUDE inc.dag", "JOB T t"], base_dir="/d", include_loader=loader_from(files))
    assert wf2.nodes["T"].retry == 4


def test_files_named_inside_a_splice_are_relative_to_dagmans_working_directory():
    """DAGMan opens SPLICE and INCLUDE files relative to its working directory
    (changed into a SPLICE's DIR while reading that splice), never relative to
    the file that names them (HTCondor's job_dagman_splice-N test)."""
    files = {
        "/d/top.dag": "JOB T t\nSPLICE S sub/s.dag\nSPLICE R r.dag DIR rdir\nPARENT T CHILD S R",
        "/d/sub/s.dag": "JOB A a\nSPLICE N sub/n.dag\nINCLUDE sub/inc.dag\nPARENT A CHILD N",
        "/d/sub/n.dag": "JOB X x",
        "/d/sub/inc.dag": "JOB I i",
        "/d/rdir/r.dag": "JOB B b\nSPLICE M m.dag",
        "/d/rdir/m.dag": "JOB Y y",
        # what the naming file's directory would give: must not be read
        "/d/sub/sub/n.dag": "JOB WRONG w",
        "/d/sub/sub/inc.dag": "JOB WRONG w",
    }
    wf = parse_dag(files["/d/top.dag"].splitlines(), path="/d/top.dag", include_loader=loader_from(files))
    assert list(wf.nodes) == ["T", "S+A", "S+N+X", "S+I", "R+B", "R+M+Y"]
    assert ("S+A", "S+N+X") in wf.edges
    assert wf.nodes["S+N+X"].source_path == "/d/sub/n.dag"


def test_splice_scoped_all_nodes_and_commands():
    files = {
        "s.dag": "JOB A a\nJOB B b\nRETRY ALL_NODES 2\nPARENT A CHILD B\nCONFIG ignored.cfg",
    }
    wf = parse_dag(
        ["JOB T t", "SPLICE S s.dag", "PRIORITY ALL_NODES 5", "PARENT S CHILD T"],
        include_loader=loader_from(files),
    )
    assert wf.nodes["T"].priority == 5 and wf.nodes["S+A"].priority is None
    assert wf.nodes["S+A"].retry == 2 and wf.nodes["T"].retry is None
    assert wf.config is None  # CONFIG inside a splice is ignored
    assert wf.edges == {("S+A", "S+B"), ("S+B", "T")}


def test_plus_names_accepted_with_option():
    wf = parse_text("JOB S+A a\nJOB S+B b\nPARENT S+A CHILD S+B\n", allow_any_node_name_characters=True)
    assert wf.edges == {("S+A", "S+B")}


def test_accepts_any_iterable_of_lines_with_newlines():
    wf = parse_dag(iter(["JOB A a.sub\n", "JOB B b.sub\r\n", "PARENT A CHILD B\n"]))
    assert wf.edges == {("A", "B")} and wf.nodes["B"].submit == "b.sub"


def test_edges_to_subdag_and_splice_nested_three_deep():
    files = {
        "top.dag": "SPLICE A a.dag\nJOB Z z\nPARENT A CHILD Z\n",
        "a.dag": "SPLICE B b.dag\nJOB Y y\nPARENT B CHILD Y\n",
        "b.dag": "SPLICE C c.dag\n",
        "c.dag": "JOB N n DIR d\nSUBDAG EXTERNAL S s.dag\nPARENT N CHILD S\n",
    }
    wf = parse_dag(files["top.dag"].splitlines(), include_loader=loader_from(files))
    assert list(wf.nodes) == ["A+B+C+N", "A+B+C+S", "A+Y", "Z"]
    assert wf.edges == {("A+B+C+N", "A+B+C+S"), ("A+B+C+S", "A+Y"), ("A+Y", "Z")}
    assert wf.nodes["A+B+C+N"].directory == "d"


@pytest.mark.parametrize(
    "order", [["A", "B", "C"], ["C", "B", "A"], ["A", "C", "B"], ["B", "A", "C"]], ids="".join
)
def test_acyclic_in_any_definition_order(order):
    text = "".join(f"JOB {n} {n}.sub\n" for n in order) + "PARENT A CHILD B\nPARENT B CHILD C\nPARENT A CHILD C\n"
    wf = parse_text(text)
    assert list(wf.nodes) == order and wf.edges == {("A", "B"), ("B", "C"), ("A", "C")}


def test_nested_splices_hold_their_members_once(tmp_path, monkeypatch):
    """Issue 24 item 12: 10,000 nested SPLICE files took 4.2 GB, because every
    finished splice kept its own copy of all the members and edges below it
    (n² list entries); once merged into the enclosing splice they are dropped."""
    from condor_rlrep.dag import firstpass

    parsers = []
    real_init = firstpass.Parser.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        parsers.append(self)

    monkeypatch.setattr(firstpass.Parser, "__init__", init)
    n = 200
    for i in range(n):
        text = f"JOB A{i} a.sub\n"
        if i + 1 < n:
            text += f"SPLICE S{i + 1} s{i + 1}.dag\nPARENT A{i} CHILD S{i + 1}\n"
        (tmp_path / f"s{i}.dag").write_text(text)
    wf = read_dag(tmp_path / "s0.dag")
    assert len(wf.nodes) == n and len(wf.edges) == n - 1
    assert ("A0", "S1+A1") in wf.edges and ("S1+A1", "S1+S2+A2") in wf.edges
    held = sum(len(scope.ends) + len(scope.has_parent) + len(scope.has_child)
               for scope, _lines, _path in parsers[-1].sources)
    assert held <= 2 * n  # linear (it was about n²: 39,800 here)
