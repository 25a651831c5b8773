"""HTCondor's own test DAGs through ``inspect``, ``instrument`` and the real ``condor_dagman``.

Every DAG file of HTCondor's test suite (``tests/data/compat/htcondor``,
Apache-2.0, see its README) is, from its own directory, as a user would:

* parsed by the real ``condor_dagman`` 25.14 (:mod:`_compat`: ``condor_submit_dag
  -no_submit``, then DAGMan with ``-Dot`` and the ``.condor.sub``'s arguments and
  environment), which gives its verdict and, when it accepts, its graph;
* shown by the installed ``condor-rlrep inspect --json``;
* instrumented by the installed ``condor-rlrep instrument`` (the default agent
  policy: PRE and POST on every replicable node, TOLERANCE lines, the reaper),
  and the copy parsed by DAGMan again.

The promise checked: where DAGMan accepts the original, instrument writes a
copy DAGMan accepts with the same nodes, the same start states (DONE) and the
same edges (join nodes collapsed; DAGMan's DOT file leaves SERVICE nodes,
the reaper among them, out), and
inspect shows the same graph (without FINAL/SERVICE/PROVISIONER nodes, which
are outside the dependency graph); where DAGMan refuses the original,
instrument and inspect refuse it too, with a message and no traceback (issue
23, item 3). DAGs with a dependency cycle are parsed by DAGMan, which finds the
cycle only when it runs them (or at once, with DAGMAN_STARTUP_CYCLE_DETECT)
and then fails; refusing them up front, as instrument does, is right.

Each case where this does not hold today is a strict ``xfail`` naming the
issue item: it turns into a failure (and must lose its mark) once fixed.

All cases are computed once per module, a few at a time (the commands are
short processes; the machine has two cores).
"""

from __future__ import annotations

import json
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from _compat import DagmanView, collapse_joins, dagman_view, pool_runner
from _pool import Pool

pytestmark = pytest.mark.pool

FIXTURES = Path(__file__).resolve().parent / "data" / "compat" / "htcondor"
DAGS = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.dag"))
WORKERS = 3

KNOWN_INSTRUMENT: dict[str, str] = {}
KNOWN_INSPECT: dict[str, str] = {}
CYCLES = {"job_dagman_cycle-A.dag", "job_dagman_final-H.dag"}
"""Parsed by DAGMan, which finds the cycle only at run time (and fails), or
at once with ``DAGMAN_STARTUP_CYCLE_DETECT = True``."""
CYCLE_CHECK = {"_CONDOR_DAGMAN_STARTUP_CYCLE_DETECT": "True"}
REFUSED_BY_DAGMAN = {
    "job_dagman_gt4727-upper.dag": "JOB keyword for nested DAGs is prohibited",
    "job_dagman_node_name_illegal_chars.dag": "illegal charater",
    "job_dagman_reject-0.dag": "job_dagman_reject-1.dag:6",
    "job_dagman_reject-1.dag": "job_dagman_reject-1.dag:6",
    "job_dagman_splice-N-subdir1/job_dagman_splice-N-splice.dag": "Failed to open job_dagman_splice-N-subdir1/a/splice.dag",
    "job_dagman_splice-N-subdir2/job_dagman_splice-N-splice.dag": "Failed to open job_dagman_splice-N-subdir2/a/splice.dag",
    "job_dagman_splice-R-upper.dag": "Node A+A not found",
    "job_dagman_splice_connect-A-inc1.dag": "splice SpliceA does not exist",
    "job_dagman_splice_connect-A-inc2.dag": "Node NodeA not found",
    "job_dagman_splice_connect-D.dag": "has 0 pin_outs",
    "job_dagman_splice_connect-E.dag": "has no parents after making pin connections",
    "job_dagman_splice_connect-F.dag": "pin_in/out mismatch",
}
"""What DAGMan 25.14 refuses (a check on the harness as much as on DAGMan)."""
REAPER = "RLREP_REAPER"
_OUTSIDE = re.compile(r"^\s*(FINAL|SERVICE|PROVISIONER)\s+(\S+)", re.IGNORECASE | re.MULTILINE)


@dataclass
class Case:
    dag: str
    original: DagmanView
    inspect_code: int
    inspect_out: str
    inspect_err: str
    instrument_code: int
    instrument_err: str
    copy: DagmanView | None
    cycle_check: DagmanView | None = None
    """DAGMan's verdict with its startup cycle check on (only for :data:`CYCLES`)."""


@pytest.fixture(scope="module")
def compat(pool: Pool) -> dict[str, Case]:
    work = pool.workdir("compat")
    root = work / "htcondor"
    shutil.copytree(FIXTURES, root)
    outdir = work / "out"
    for dag in DAGS:
        (outdir / _safe(dag)).mkdir(parents=True)
    pool.own(work)
    cli = str(pool.venv / "bin" / "condor-rlrep")
    store = work / "agent.sqlite"
    pool.check([cli, "agent", "init", "--store", str(store), "--max-replicas", "3"], cwd=work)
    run = pool_runner(pool)

    def one(dag: str) -> Case:
        path = root / dag
        original = dagman_view(run, path)
        inspected = run([cli, "inspect", path.name, "--json"], cwd=path.parent)
        out = outdir / _safe(dag) / (path.name[: -len(".dag")] + ".rlrep.dag")
        made = run([cli, "instrument", path.name, "-o", str(out), "--default-estimate", "60",
                    "--store", str(store)], cwd=path.parent)
        copy = dagman_view(run, out) if made.returncode == 0 else None
        cycle_check = dagman_view(run, path, env=CYCLE_CHECK) if dag in CYCLES else None
        return Case(dag, original, inspected.returncode, inspected.stdout, inspected.stderr, made.returncode,
                    made.stderr, copy, cycle_check)

    with ThreadPoolExecutor(WORKERS) as workers:
        return {case.dag: case for case in workers.map(one, DAGS)}


def _safe(dag: str) -> str:
    return dag.replace("/", "__")


def _marked(known: dict[str, str]) -> list:
    return [pytest.param(dag, marks=pytest.mark.xfail(strict=True, reason=known[dag])) if dag in known else dag
            for dag in DAGS]


def _graph(view: DagmanView, *, drop: set[str] = frozenset()) -> tuple[dict[str, str], set[tuple[str, str]]]:
    nodes = {name: state for name, state in view.nodes.items() if name not in drop}
    edges = {(p, c) for p, c in view.edges if p not in drop and c not in drop}
    return collapse_joins(nodes, edges)


def _no_traceback(text: str) -> None:
    assert "Traceback" not in text, text[-2000:]


def test_fixtures_are_htcondors_test_dags() -> None:
    assert len(DAGS) == 226
    assert (FIXTURES / "LICENSE").is_file() and (FIXTURES / "NOTICE.txt").is_file()


def test_dagman_refuses_what_it_is_known_to_refuse(compat: dict[str, Case]) -> None:
    """The harness reads DAGMan right: it accepts all but these, for these reasons."""
    refused = {dag: case.original.reason for dag, case in compat.items() if not case.original.accepted}
    assert set(refused) == set(REFUSED_BY_DAGMAN), refused
    for dag, reason in refused.items():
        assert REFUSED_BY_DAGMAN[dag] in reason, (dag, reason)
    accepted = [case for case in compat.values() if case.original.accepted]
    assert sum(len(case.original.nodes) for case in accepted) > 1000


@pytest.mark.parametrize("dag", _marked(KNOWN_INSTRUMENT))
def test_instrument_keeps_what_dagman_parses(compat: dict[str, Case], dag: str) -> None:
    case = compat[dag]
    _no_traceback(case.instrument_err)
    if not case.original.accepted:
        assert case.instrument_code == 2, (
            f"DAGMan refuses {dag} ({case.original.reason}) but instrument wrote a copy"
            + (f" that DAGMan {'accepts' if case.copy and case.copy.accepted else 'refuses too'}" if case.copy else ""))
        assert "error:" in case.instrument_err
        return
    if dag in CYCLES:
        assert case.cycle_check is not None and "a cycle exists in the dag" in case.cycle_check.reason
        assert case.instrument_code == 2 and "dependency cycle" in case.instrument_err, case.instrument_err
        return
    assert case.instrument_code == 0, case.instrument_err[-1500:]
    assert case.copy is not None and case.copy.accepted, f"DAGMan refuses the copy: {case.copy and case.copy.reason}"
    reapers = {name for name in case.copy.nodes if name.startswith(REAPER)}  # DAGMan's DOT leaves SERVICE nodes out
    original, copy = _graph(case.original), _graph(case.copy, drop=reapers)
    assert copy[0] == original[0], "nodes or their start states differ"
    assert copy[1] == original[1], (sorted(original[1] - copy[1])[:10], sorted(copy[1] - original[1])[:10])


@pytest.mark.parametrize("dag", _marked(KNOWN_INSPECT))
def test_inspect_shows_dagmans_graph(compat: dict[str, Case], dag: str) -> None:
    case = compat[dag]
    _no_traceback(case.inspect_err)
    if not case.original.accepted or dag in CYCLES:
        assert case.inspect_code == 2 and "error:" in case.inspect_err, (
            f"DAGMan {'refuses ' + dag + ' (' + case.original.reason + ')' if not case.original.accepted else 'cannot run ' + dag}"
            f" but inspect shows it (exit {case.inspect_code})")
        return
    assert case.inspect_code == 0, case.inspect_err[-1500:]
    shown = json.loads(case.inspect_out)
    joins = shown["joins"]
    nodes = dict.fromkeys(shown["nodes"], "")
    edges = {(p, name) for name, node in shown["nodes"].items() for p in node["parents"]}
    edges |= {(name, c) for name, node in shown["nodes"].items() for c in node["children"]}
    edges |= {(p, j) for j, join in joins.items() for p in join["parents"]}
    edges |= {(j, c) for j, join in joins.items() for c in join["children"]}
    inspected = collapse_joins(nodes, edges, is_join=lambda name: name in joins)
    dagman = _graph(case.original)
    # FINAL, SERVICE and PROVISIONER nodes are outside the dependency graph inspect shows
    outside = {m.group(2) for m in _OUTSIDE.finditer((FIXTURES / dag).read_text(errors="replace"))}
    missing = set(dagman[0]) - set(inspected[0])
    assert missing <= outside, sorted(missing - outside)
    assert not {e for e in dagman[1] if set(e) & missing}
    assert set(inspected[0]) == set(dagman[0]) - missing
    assert inspected[1] == dagman[1], (sorted(dagman[1] - inspected[1])[:10], sorted(inspected[1] - dagman[1])[:10])
