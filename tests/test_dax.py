from __future__ import annotations

from xml.sax.saxutils import quoteattr

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.dag.dax import parse_dax, read_dax
from condor_rlrep.dag.load import load_workflow
from condor_rlrep.dag.model import FileUse
from condor_rlrep.errors import CycleError, DagError, DagSyntaxError

from _formatutil import FIXTURES, regex_dax, shared_files

NS = 'xmlns="http://pegasus.isi.edu/schema/DAX" version="2.1"'


def dax(body: str) -> str:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<adag {NS}>\n{body}\n</adag>\n'


# -- real DAX 2.1 files ------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["Montage_25", "Montage_50", "Montage_100", "Montage_1000", "CyberShake_30", "Epigenomics_24"]
)
def test_shared_dax_loads_with_counts_runtimes_and_sizes(name):
    files = {p.stem: p for p in shared_files("dax", "*.xml")}
    if name not in files:
        pytest.skip(f"{name}.xml absent")
    path = files[name]
    jobs, edges, sizes = regex_dax(path.read_text())
    workflow = load_workflow(path)
    assert len(workflow.nodes) == len(jobs) == int(name.split("_")[1])
    assert list(workflow.nodes) == list(jobs)  # file order
    assert workflow.edges == edges
    for job_id, attrs in jobs.items():
        node = workflow.nodes[job_id]
        assert node.runtime == float(attrs["runtime"])
        assert node.executable == attrs["name"]
        assert sum(use.size or 0 for use in node.files) == pytest.approx(sizes[job_id])
        assert node.source_path == str(path) and node.source_line is not None


def test_montage_25_first_job_by_hand():
    found = shared_files("dax", "Montage_25.xml")
    if not found:
        pytest.skip("Montage_25.xml absent")
    path = found[0]
    workflow = read_dax(path)
    node = workflow.nodes["ID00000"]
    assert node.runtime == 13.39
    assert node.source_line == 7  # after the XML declaration, <adag> and four comments
    assert node.files[0] == FileUse("region.hdr", "input", 304.0)
    assert node.files[2] == FileUse("p2mass-atlas-ID00000s-jID00000.fits", "output", 4167312.0)
    assert workflow.parents("ID00005") == ["ID00000", "ID00001"]


# -- DAX 3.x fixture ---------------------------------------------------------


def test_dax_3_6_fixture():
    workflow = read_dax(FIXTURES / "diamond-3.6.dax")
    assert list(workflow.nodes) == [f"ID000000{i}" for i in range(1, 7)]
    first = workflow.nodes["ID0000001"]
    assert first.runtime == 60.0  # pegasus runtime profile
    assert first.cpus == 2
    assert first.executable == "preprocess"  # catalog pfn does not exist here
    assert first.arguments == ["-a", "preprocess", "-T60", "-i", "f.a", "-o", "f.b1", "f.b2"]
    assert first.files == [FileUse("f.a", "input", 1024.0), FileUse("f.b1", "output", 2048.0), FileUse("f.b2", "output")]
    assert workflow.nodes["ID0000002"].runtime == 30.5  # the attribute wins over the profile
    assert workflow.nodes["ID0000003"].runtime is None
    assert workflow.nodes["ID0000003"].files[1:] == [FileUse("f.c2", "input", 256.0), FileUse("f.c2", "output", 256.0)]
    sub_dag, sub_dax = workflow.nodes["ID0000005"], workflow.nodes["ID0000006"]
    assert (sub_dag.kind, sub_dag.submit) == ("SUBDAG", "cleanup.dag")
    assert (sub_dax.kind, sub_dax.submit) == ("SUBDAG", "inner.dax")
    assert workflow.edges == {
        ("ID0000001", "ID0000002"),
        ("ID0000001", "ID0000003"),
        ("ID0000002", "ID0000004"),
        ("ID0000003", "ID0000004"),
        ("ID0000004", "ID0000005"),
        ("ID0000004", "ID0000006"),
    }


def test_executable_catalog_with_local_pfn(tmp_path):
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\n")
    text = dax(
        f'<executable name="prog"><pfn url="file://{program}" site="local"/></executable>\n'
        '<executable name="remote"><pfn url="gsiftp://host/bin/remote" site="x"/></executable>\n'
        '<job id="a" name="prog"/><job id="b" name="remote"/>'
    )
    workflow = parse_dax(text)
    assert workflow.nodes["a"].executable == str(program)
    assert workflow.nodes["b"].executable == "remote"


def test_str_and_bytes_and_no_namespace_give_the_same_workflow():
    body = '<job id="a" name="x" runtime="1.5"/><job id="b" name="y"/><child ref="b"><parent ref="a"/></child>'
    plain = f"<adag>{body}</adag>"
    assert parse_dax(dax(body)) == parse_dax(dax(body).encode()) == parse_dax(plain)
    assert parse_dax(plain).edges == {("a", "b")}


# -- bad input ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text, error, line, words",
    [
        ("JOB A a.sub\n", DagSyntaxError, 1, "not well-formed XML"),
        ('<adag>\n<job id="a">\n</adag>\n', DagSyntaxError, 3, "mismatched tag"),
        ("<dag>\n</dag>", DagSyntaxError, 1, "root element is <dag>"),
        ('<adag>\n<job id="a"/>\n<job id="a"/>\n</adag>', DagError, 3, "duplicate job id 'a' (first defined on line 2)"),
        ('<adag>\n<job id="a"/>\n<child ref="a">\n<parent ref="zz"/>\n</child>\n</adag>', DagError, 4, "'zz'"),
        ('<adag>\n<job id="a"/>\n<child ref="q">\n<parent ref="a"/>\n</child>\n</adag>', DagError, 4, "'q'"),
        ('<adag>\n<job id="a" runtime="-3"/>\n</adag>', DagSyntaxError, 2, "runtime '-3' must be"),
        ('<adag>\n<job id="a" runtime="fast"/>\n</adag>', DagSyntaxError, 2, "runtime 'fast' is not a number"),
        ('<adag>\n<job id="a" runtime="nan"/>\n</adag>', DagSyntaxError, 2, "finite"),
        ('<adag>\n<job id="a">\n<uses file="f" size="big"/>\n</job>\n</adag>', DagSyntaxError, 3, "size 'big'"),
        ('<adag>\n<job id="a">\n<uses file="f" link="sideways"/>\n</job>\n</adag>', DagSyntaxError, 3, "sideways"),
        ('<adag>\n<job name="x"/>\n</adag>', DagSyntaxError, 2, "without the id="),
        ('<adag>\n<dag id="s"/>\n</adag>', DagSyntaxError, 2, "<dag id='s'> without the file="),
        (
            '<adag>\n<job id="a">\n<profile namespace="pegasus" key="cores">1.5</profile>\n</job>\n</adag>',
            DagSyntaxError,
            3,
            "cores profile '1.5' must be a whole number",
        ),
        (
            '<adag>\n<job id="a">\n<profile namespace="pegasus" key="runtime">soon</profile>\n</job>\n</adag>',
            DagSyntaxError,
            3,
            "runtime profile 'soon'",
        ),
    ],
)
def test_bad_dax_names_file_line_and_culprit(text, error, line, words):
    with pytest.raises(error) as info:
        parse_dax(text, path="w.dax")
    err = info.value
    assert type(err) is error
    assert (err.path, err.line) == ("w.dax", line)
    assert words in str(err)
    assert str(err).startswith(f"w.dax:{line}: ")


def test_cycle_is_named():
    text = dax(
        '<job id="a"/><job id="b"/><job id="c"/>\n'
        '<child ref="b"><parent ref="a"/></child>\n'
        '<child ref="c"><parent ref="b"/></child>\n'
        '<child ref="b"><parent ref="c"/></child>'
    )
    with pytest.raises(CycleError) as info:
        parse_dax(text, path="c.dax")
    assert sorted(info.value.cycle) == ["b", "c"]
    assert info.value.line == 5  # the earlier of the cycle's two edges
    assert "b -> c -> b" in str(info.value) or "c -> b -> c" in str(info.value)


def test_self_loop_is_a_cycle():
    with pytest.raises(CycleError) as info:
        parse_dax(dax('<job id="a"/><child ref="a"><parent ref="a"/></child>'))
    assert info.value.cycle == ["a"]


# -- property: write a random DAG as DAX, read it back ---------------------


# ids with XML-special characters and blanks (tabs/newlines in attributes are normalised by XML)
_IDS = st.text(st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs"]), min_size=1, max_size=8)


@st.composite
def random_dags(draw):
    count = draw(st.integers(min_value=1, max_value=12))
    names = draw(st.lists(_IDS, min_size=count, max_size=count, unique=True))
    runtimes = draw(st.lists(st.none() | st.floats(0, 1e5, allow_nan=False).map(lambda x: round(x, 2)), min_size=count, max_size=count))
    pairs = [(i, j) for i in range(count) for j in range(i + 1, count)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=20)) if pairs else []
    order = draw(st.permutations(names))  # node order in the file, independent of the edge direction
    return order, dict(zip(names, runtimes)), {(names[i], names[j]) for i, j in chosen}


@settings(max_examples=60, deadline=None)
@given(random_dags())
def test_dax_round_trip_property(dag):
    order, runtimes, edges = dag
    jobs = "\n".join(
        f"<job id={quoteattr(n)} name=\"t\"" + (f' runtime="{runtimes[n]}"' if runtimes[n] is not None else "") + "/>"
        for n in order
    )
    children = "\n".join(
        f"<child ref={quoteattr(c)}>"
        + "".join(f"<parent ref={quoteattr(p)}/>" for p, c2 in sorted(edges) if c2 == c)
        + "</child>"
        for c in sorted({c for _, c in edges})
    )
    workflow = parse_dax(dax(jobs + "\n" + children))
    assert list(workflow.nodes) == list(order)
    assert workflow.edges == edges
    assert {n: node.runtime for n, node in workflow.nodes.items()} == runtimes
