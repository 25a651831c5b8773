"""Issue 23 items that need the real DAGMan, on the personal pool.

The plain DAG and its instrumented copy run side by side (two copies of the
user's folder, so that their files do not mix) and must end alike: an
instrumented DAG ends exactly as the plain one would. Each test is a strict
``xfail`` until its item is fixed. The items that need no pool are in
``test_issue23_repro.py``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from _compat import dagman_parse, pool_runner
from _pool import Pool, dagman_out, hooks_log, write

pytestmark = pytest.mark.pool

REPO = Path(__file__).resolve().parents[1]


def xfail(item: int, what: str):
    return pytest.mark.xfail(strict=True, reason=f"issue 23 item {item}: {what}")


def twins(pool: Pool, name: str, files: dict[str, str]) -> tuple[Path, Path]:
    """The user's folder twice: ``plain/`` runs the DAG, ``inst/`` its instrumented copy."""
    base = pool.workdir(name)
    for side in ("plain", "inst"):
        for file, text in files.items():
            write(base / side / file, text, 0o755 if file.endswith(".sh") else 0o644)
    pool.own(base)
    return base / "plain", base / "inst"


def run_both(pool: Pool, plain: Path, inst: Path, *instrument_args: str, timeout: float = 180) -> tuple[int, int, Path]:
    """Instrument ``inst/w.dag``, submit both DAGs at once, DAGMan's exit status of each."""
    pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", *instrument_args, cwd=inst)
    copy = inst / "run" / "w.rlrep.dag"
    pool.submit_dag(plain / "w.dag")
    pool.submit_dag(copy)
    return pool.wait_dag(plain / "w.dag", timeout=timeout), pool.wait_dag(copy, timeout=timeout), copy


# -- item 1 ------------------------------------------------------------------

BOGUS = {
    "a.sub": "universe = bogus\nexecutable = /bin/true\nlog = a.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n",
    "b.sub": "executable = /bin/touch\narguments = B.ran\nlog = b.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n",
    "w.dag": 'JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nVARS ALL_NODES rlrep_estimate="30"\n',
}


def test_item1_a_node_whose_submit_fails_fails_the_dag(pool: Pool) -> None:
    plain, inst = twins(pool, "issue23-bogus", BOGUS)
    store = inst / "agent.sqlite"
    plain_exit, inst_exit, copy = run_both(pool, plain, inst, "--store", str(store), "--policy", "agent")
    assert plain_exit == 1 and "Shortcutting node A retries because of submit failure" in dagman_out(plain / "w.dag")
    assert not (plain / "B.ran").exists()
    assert (inst_exit, (inst / "B.ran").exists()) == (1, False), "\n".join(hooks_log(copy))


MULTI = {
    "a.sub": "executable = /bin/touch\narguments = A.ran\nlog = a.log\nrequest_memory = 32MB\nrequest_disk = 1MB\nqueue\n",
    "multi.config": "DAGMAN_PROHIBIT_MULTI_JOBS = True\n",
    "w.dag": 'CONFIG multi.config\nJOB A a.sub\nVARS A rlrep_estimate="30"\n',
}


def test_item1_prohibit_multi_jobs_runs_the_job_or_is_refused(pool: Pool) -> None:
    plain, inst = twins(pool, "issue23-multi", MULTI)
    pool.submit_dag(plain / "w.dag")
    made = pool.run([str(pool.venv / "bin" / "condor-rlrep"), "instrument", "w.dag", "-o", "run/w.rlrep.dag",
                     "--policy", "fixed:2"], cwd=inst)
    assert pool.wait_dag(plain / "w.dag", timeout=120) == 0 and (plain / "A.ran").exists()
    if made.returncode != 0:  # refused, with the reason
        assert "PROHIBIT_MULTI_JOBS" in made.stderr, made.stderr
        return
    copy = inst / "run" / "w.rlrep.dag"
    pool.submit_dag(copy)
    assert pool.wait_dag(copy, timeout=120) == 0
    assert (inst / "A.ran").exists(), "the instrumented DAG exited 0 without running A:\n" + "\n".join(hooks_log(copy))


def test_item1_prohibit_multi_jobs_runs_an_agent_copy_with_one_replica(pool: Pool) -> None:
    plain, inst = twins(pool, "issue23-multi-agent", MULTI)
    plain_exit, inst_exit, copy = run_both(pool, plain, inst, "--store", str(inst / "agent.sqlite"), "--policy", "agent")
    assert (plain_exit, inst_exit) == (0, 0), "\n".join(hooks_log(copy))
    assert (plain / "A.ran").exists() and (inst / "A.ran").exists()
    (pre,) = [line for line in hooks_log(copy) if " PRE A " in line]
    assert " a=1 " in pre, pre


# -- item 4 ------------------------------------------------------------------

STATUS_FILES = {
    "a.sub": "executable = /bin/true\nqueue\n",
    "w.dag": ('JOB A a.sub\nVARS A rlrep_estimate="30"\n'
              "NODE_STATUS_FILE first.status\nNODE_STATUS_FILE second.status 600\n"
              "JOBSTATE_LOG first.jobstate.log\nJOBSTATE_LOG second.jobstate.log\nDOT w.dot\n"),
}
_DAGMANS_OWN = (".condor.sub", ".dagman.out", ".metrics", ".lock", ".lib.out", ".lib.err", ".dagman.log")


def _written_by_dagman(pool: Pool, dag: Path, folders: list[Path]) -> set[Path]:
    """Files DAGMan writes when it starts ``dag`` (the DOT, node status and
    jobstate files: it writes them before ``-Dot`` makes it exit)."""
    before = {p for folder in folders for p in folder.rglob("*")}
    accepted, said = dagman_parse(pool_runner(pool), dag)
    assert accepted, said
    after = {p for folder in folders for p in folder.rglob("*")}
    made = {p for p in after - before if p.is_file() and not p.name.endswith(_DAGMANS_OWN)}
    for path in made:
        path.unlink()
    return made


def test_item4_the_copy_writes_the_users_status_files(pool: Pool) -> None:
    base = pool.workdir("issue23-status")
    user = base / "user"
    for file, text in STATUS_FILES.items():
        write(user / file, text)
    pool.own(base)
    pool.rlrep("instrument", "w.dag", "-o", str(base / "run" / "w.rlrep.dag"), "--policy", "fixed:2", cwd=user)
    pool.own(base)
    plain = _written_by_dagman(pool, user / "w.dag", [user, base / "run"])
    assert plain == {user / "first.status", user / "first.jobstate.log", user / "w.dot.0"}
    assert "does not override existing value of first.status" in dagman_out(user / "w.dag")
    copy = _written_by_dagman(pool, base / "run" / "w.rlrep.dag", [user, base / "run"])
    # DAGMan writes the copy's JOBSTATE_LOG in the run folder; the reaper (not run by -Dot) writes the user's
    # from it (item 5), to the path the plain DAG uses
    context = base / "run" / "w.rlrep.dag.rlrep"
    assert copy == plain - {user / "first.jobstate.log"} | {context / "jobstate.log"}
    assert json.loads((context / "hooks.json").read_text())["jobstate_log"] == str(user / "first.jobstate.log")


# -- item 18 -----------------------------------------------------------------

def test_item18_exported_submit_files_use_their_estimate(pool: Pool) -> None:
    out = pool.workdir("issue23-export")
    shutil.copy(REPO / "tests" / "data" / "diamond-3.6.dax", out / "diamond.dax")
    pool.own(out)
    pool.rlrep("export", "diamond.dax", "-o", "dag", cwd=out)
    dag = (out / "dag" / "diamond.dag").read_text()
    estimates = {line.split()[1]: line.split('"')[1] for line in dag.splitlines() if "rlrep_estimate=" in line}
    assert len(estimates) == 3
    unused = []
    for node, value in estimates.items():
        # DAGMan submits the node with its VARS added, as -a does here; an unused one is warned about
        tried = pool.run(["condor_submit", "-dry-run", "/dev/null", "-a", f"rlrep_estimate = {value}", f"{node}.sub"],
                         cwd=out / "dag")
        assert tried.returncode == 0, tried.stderr
        unused += [line for line in (tried.stdout + tried.stderr).splitlines() if "was unused" in line]
    assert unused == []


# -- items 2 and 9 -----------------------------------------------------------

_SEEN = ("#!/bin/sh\n"
         "# what this job saw, and which replica it is (its job ad's ProcId, not $(Process))\n"
         "proc=$(sed -n 's/^ProcId = //p' \"$_CONDOR_JOB_AD\")\n"
         "echo \"$proc|args=$*|env=$RLREP_SEEN|input=$(cat)\" >> seen.$1.txt\n"
         "sleep 8\n")
PER_PROC = {
    "in.0": "zero\n",
    "in.1": "one\n",
    "seen.sh": _SEEN,
    # every per-proc macro in arguments, input and environment, and in a VARS value
    "a.sub": ('executable = seen.sh\narguments = "A $(Process) $(ProcId) $(Step) $(Row) [$(Item)] $(tag)"\n'
              'input = in.$(Process)\nenvironment = "RLREP_SEEN=$(Process)"\nshould_transfer_files = NO\n'
              "request_memory = 32MB\nrequest_disk = 1MB\nqueue\n"),
    # an inline description without a queue statement (item 9)
    "w.dag": ('JOB A a.sub\nVARS A tag="t$(Process)"\n'
              "JOB B {\nexecutable = seen.sh\narguments = \"B $(Process)\"\ninput = in.$(Process)\n"
              "should_transfer_files = NO\nrequest_memory = 32MB\nrequest_disk = 1MB\n}\n"
              'VARS ALL_NODES rlrep_estimate="30"\n'),
}


def _seen(folder: Path, node: str) -> dict[str, str]:
    """Replica (ProcId) → what it saw."""
    lines = (folder / f"seen.{node}.txt").read_text().splitlines()
    return dict(line.split("|", 1) for line in lines)


@pytest.mark.parametrize("pre", [False, True], ids=["instrument-writes", "pre-writes"])
def test_items_2_and_9_every_replica_sees_what_the_plain_job_saw(pool: Pool, pre: bool) -> None:
    """The replica description written once by instrument (fixed:2 without PRE) or by PRE on the attempt."""
    plain, inst = twins(pool, f"issue23-procs-{pre}", PER_PROC)
    plain_exit, inst_exit, copy = run_both(pool, plain, inst, "--policy", "fixed:2", *(["--always-pre"] if pre else []))
    assert bool([line for line in hooks_log(copy) if " PRE A " in line]) is pre
    assert (plain_exit, inst_exit) == (0, 0), "\n".join(hooks_log(copy))
    for node in ("A", "B"):
        (saw,) = _seen(plain, node).values()
        assert saw.endswith("input=zero"), saw
        assert saw.startswith("args=A 0 0 0 0 [] t0|env=0|" if node == "A" else "args=B 0|"), saw
        replicas = _seen(inst, node)
        # both replicas ran (item 9: the inline description is replicated) and saw exactly what the plain job saw
        assert set(replicas) == {"0", "1"}, replicas
        assert set(replicas.values()) == {saw}, (saw, replicas)


# -- item 5 ------------------------------------------------------------------

_SLOW_LOSER = ("#!/bin/sh\n"
               "# proc 0 (the plain job, and replica 0) ends at once; any other replica would run on and is removed\n"
               "proc=$(sed -n 's/^ProcId = //p' \"$_CONDOR_JOB_AD\")\n"
               "[ \"$proc\" = 0 ] && sleep 2 || sleep 120\n")
MONITORED = {
    "job.sh": _SLOW_LOSER,
    "a.sub": ("executable = job.sh\nshould_transfer_files = NO\nrequest_memory = 32MB\nrequest_disk = 1MB\n"
              "log = a.log\nqueue\n"),
    "b.sub": ("executable = /bin/true\nshould_transfer_files = NO\nrequest_memory = 32MB\nrequest_disk = 1MB\n"
              "queue\n"),
    "w.dag": ("JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nVARS ALL_NODES rlrep_estimate=\"30\"\n"
              "NODE_STATUS_FILE w.status 1\nJOBSTATE_LOG w.jobstate.log\n"),
}


def node_statuses(path: Path) -> dict[str, tuple[str, str, str]]:
    """Node → (NodeStatus, StatusDetails, RetryCount) of a node status file."""
    found = {}
    for block in re.findall(r"\[(.*?)\]", path.read_text(), re.S):
        fields = dict(re.findall(r"^\s*(\w+) = (.*?);", block, re.M))
        if fields.get("Type") == '"NodeStatus"':
            found[fields["Node"].strip('"')] = (fields["NodeStatus"], fields["StatusDetails"], fields["RetryCount"])
    return found


def jobstate_events(path: Path) -> dict[str, list[str]]:
    """Node → its JOBSTATE_LOG events in order (a JOB_SUCCESS/JOB_FAILURE with its code)."""
    events: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) >= 4 and words[1] != "INTERNAL":
            event = words[2] + (f" {words[3]}" if words[2] in ("JOB_SUCCESS", "JOB_FAILURE") else "")
            events.setdefault(words[1], []).append(event)
    return events


@pytest.fixture(scope="module")
def monitored(pool: Pool) -> tuple[Path, Path]:
    """The plain DAG and its fixed:2 copy run side by side: node A's replica 1 is removed once replica 0 won."""
    plain, inst = twins(pool, "issue23-monitor", MONITORED)
    plain_exit, inst_exit, copy = run_both(pool, plain, inst, "--policy", "fixed:2")
    assert (plain_exit, inst_exit) == (0, 0), "\n".join(hooks_log(copy))
    return plain, inst


def test_item5_the_final_node_status_file_says_what_the_plain_runs_does(monitored: tuple[Path, Path]) -> None:
    plain, inst = monitored
    assert node_statuses(plain / "w.status") == {"A": ("5", '""', "0"), "B": ("5", '""', "0")}  # STATUS_DONE
    assert node_statuses(inst / "w.status") == node_statuses(plain / "w.status")


def internal_lines(path: Path) -> list[str]:
    """DAGMan's own INTERNAL events of a JOBSTATE_LOG (DAGMAN_STARTED's argument, DAGMan's job id, left out)."""
    return [" ".join(line.split()[3:4]) + ("" if "STARTED" in line else " " + line.split()[4])
            for line in path.read_text().splitlines() if line.split()[1:2] == ["INTERNAL"]]


def test_item5_the_jobstate_log_says_what_the_plain_runs_does(pool: Pool, monitored: tuple[Path, Path]) -> None:
    plain, inst = monitored
    assert jobstate_events(plain / "w.jobstate.log") == {
        node: ["SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_SUCCESS 0"] for node in ("A", "B")}
    # written live by the reaper, which has ended before DAGMan: every node is there when DAGMan exits
    assert jobstate_events(inst / "w.jobstate.log") == jobstate_events(plain / "w.jobstate.log")
    seqs = {line.split()[1]: line.split()[-1] for line in (inst / "w.jobstate.log").read_text().splitlines()
            if "INTERNAL" not in line}
    assert seqs == {"A": "1", "B": "2"}  # the reaper's submission is not counted, as in the plain run
    # what DAGMan wrote after the reaper had gone (DAGMAN_FINISHED) is completed by status, once
    pool.rlrep("status", "run/w.rlrep.dag", cwd=inst)
    pool.rlrep("status", "run/w.rlrep.dag", cwd=inst)
    assert internal_lines(plain / "w.jobstate.log") == ["DAGMAN_STARTED", "DAGMAN_FINISHED 0"]
    assert internal_lines(inst / "w.jobstate.log") == internal_lines(plain / "w.jobstate.log")
    assert jobstate_events(inst / "w.jobstate.log") == jobstate_events(plain / "w.jobstate.log")


FEATURED = dict(MONITORED, **{
    "post.sh": "#!/bin/sh\n# the user's own POST: accepts what the job did\nexit $1\n",
    "b.sh": "#!/bin/sh\n# fails its first attempt, succeeds on the retry\n[ \"$1\" -gt 0 ]\n",
    "b.sub": ("executable = b.sh\narguments = $(RETRY)\nshould_transfer_files = NO\nrequest_memory = 32MB\n"
              "request_disk = 1MB\nqueue\n"),
    "f.sub": ("executable = /bin/true\nshould_transfer_files = NO\nrequest_memory = 32MB\nrequest_disk = 1MB\n"
              "queue\n"),
    "w.dag": ("JOB A a.sub\nSCRIPT POST A post.sh $RETURN\nJOB B b.sub\nRETRY B 1\nFINAL F f.sub\n"
              "PARENT A CHILD B\nVARS A rlrep_estimate=\"30\"\nVARS B rlrep_estimate=\"30\"\n"
              "JOBSTATE_LOG w.jobstate.log\n"),
})


def test_item5_a_users_post_a_retry_and_a_final_node_read_as_in_the_plain_run(pool: Pool) -> None:
    """PRE on every node (``--always-pre``), A's own POST, B failing once then retried, a FINAL node
    left alone that runs after the reaper has gone: after ``status``, node for node the plain run's lines."""
    plain, inst = twins(pool, "issue23-monitor-featured", FEATURED)
    plain_exit, inst_exit, copy = run_both(pool, plain, inst, "--policy", "fixed:2", "--always-pre")
    assert (plain_exit, inst_exit) == (0, 0), "\n".join(hooks_log(copy))
    pool.rlrep("status", "run/w.rlrep.dag", cwd=inst)
    assert jobstate_events(plain / "w.jobstate.log") == {
        "A": ["SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_SUCCESS 0",
              "POST_SCRIPT_STARTED", "POST_SCRIPT_TERMINATED", "POST_SCRIPT_SUCCESS"],
        "B": ["SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_FAILURE 1",
              "SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_SUCCESS 0"],
        "F": ["SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_SUCCESS 0"]}
    assert jobstate_events(inst / "w.jobstate.log") == jobstate_events(plain / "w.jobstate.log")
    assert internal_lines(inst / "w.jobstate.log") == internal_lines(plain / "w.jobstate.log")
    seqs = [line.split()[-1] for line in (plain / "w.jobstate.log").read_text().splitlines() if "INTERNAL" not in line]
    assert [line.split()[-1] for line in (inst / "w.jobstate.log").read_text().splitlines()
            if "INTERNAL" not in line] == seqs


@pytest.fixture(scope="module")
def monitored_failing(pool: Pool) -> tuple[Path, Path]:
    """As :func:`monitored`, but B's job fails: DAGMan fails the DAG and removes the reaper."""
    failing = dict(MONITORED, **{"b.sub": MONITORED["b.sub"].replace("/bin/true", "/bin/false")})
    plain, inst = twins(pool, "issue23-monitor-fails", failing)
    plain_exit, inst_exit, copy = run_both(pool, plain, inst, "--policy", "fixed:2")
    assert (plain_exit, inst_exit) == (1, 1), "\n".join(hooks_log(copy))
    return plain, inst


def test_item5_a_failed_dags_jobstate_log_is_complete_without_status(monitored_failing: tuple[Path, Path]) -> None:
    plain, inst = monitored_failing
    assert jobstate_events(plain / "w.jobstate.log") == {
        "A": ["SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_SUCCESS 0"],
        "B": ["SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_FAILURE 1"]}
    # removed with the failed DAG, the reaper translates up to DAGMAN_FINISHED before it goes
    assert jobstate_events(inst / "w.jobstate.log") == jobstate_events(plain / "w.jobstate.log")
    assert internal_lines(inst / "w.jobstate.log") == internal_lines(plain / "w.jobstate.log") == [
        "DAGMAN_STARTED", "DAGMAN_FINISHED 1"]
