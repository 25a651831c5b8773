"""The per-node replica submit description: a textual edit of the queue line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.atomic import write_atomic
from condor_rlrep.condor.submit import (
    SubmitError,
    find_queue,
    is_replicable,
    replica_description,
    validate_description,
)

TAGS = {"RlrepDagRun": "7@1", "RlrepNode": 'we"ird', "RlrepDecision": "12", "RlrepReplicas": 3}


@pytest.mark.parametrize(
    ("text", "kind", "count"),
    [
        ("executable = x\nqueue\n", "single", 1),
        ("executable = x\n  Queue 1  \n", "single", 1),
        ("executable = x\nQUEUE 5\n", "count", 5),
        ("executable = x\nqueue seed from (\n1\n2\n)\n", "itemdata", None),
        ("executable = x\nqueue $(n)\n", "itemdata", None),
        ("executable = x\nqueue in (a b)\n", "itemdata", None),
        ("executable = x\n", "none", None),
        ("executable = x\n# queue 3\nqueue\n", "single", 1),
        ("arguments = a \\\nqueue 9\nqueue\n", "single", 1),  # a continued line is not a statement
        ("queue_extra = 3\nqueue 2\n", "count", 2),
    ],
)
def test_find_queue(text: str, kind: str, count: int | None) -> None:
    statement = find_queue(text)
    assert (statement.kind, statement.count) == (kind, count)


def test_replica_description_changes_only_the_queue_line() -> None:
    text = "# mine\r\nif defined X\r\n  arguments = $(X)\r\nendif\r\nexecutable = /bin/true\r\nqueue\r\n+Extra = 1\r\n"
    out = replica_description(text, replicas=3, tags=TAGS)
    assert out.startswith("# mine\r\nif defined X\r\n  arguments = $(X)\r\nendif\r\nexecutable = /bin/true\r\n")
    assert 'My.RlrepNode = "we\\"ird"\r\n' in out
    assert "My.RlrepReplicas = 3\r\nqueue 3\r\n+Extra = 1\r\n" in out
    validate_description(out, expected_procs=3)


def test_multi_proc_descriptions_pass_through_with_one_replica() -> None:
    text = "executable = x\nqueue 4\n"
    assert not is_replicable(text)
    assert replica_description(text, replicas=1, tags={}) == text
    with pytest.raises(SubmitError, match="queues its own procs"):
        replica_description(text, replicas=2, tags={})
    with pytest.raises(SubmitError, match="no queue"):
        replica_description("executable = x\n", replicas=1, tags={})


def test_validation_uses_the_real_submit_parser() -> None:
    with pytest.raises(SubmitError, match="htcondor2.Submit"):
        validate_description("executable = x\nif $(broken\nqueue\n")
    with pytest.raises(SubmitError, match="expected 2"):
        validate_description("executable = x\nqueue 3\n", expected_procs=2)


def test_write_atomic_replaces_whole_file(tmp_path) -> None:
    target = tmp_path / "n.sub"
    write_atomic(target, "one\n")
    write_atomic(target, b"two\n")
    assert target.read_text() == "two\n" and [p.name for p in tmp_path.iterdir()] == ["n.sub"]


_line = st.sampled_from(["executable = /bin/sleep", "arguments = 60", "# comment", "", "request_cpus = 1",
                         "if defined FOO", "endif", "log = $(JOB).log", "My.Thing = \"x\"", "include : $(X)"])


@settings(max_examples=40, deadline=None)
@given(before=st.lists(_line, max_size=6), after=st.lists(_line, max_size=3), replicas=st.integers(1, 100))
def test_only_queue_line_and_tags_differ(before: list[str], after: list[str], replicas: int) -> None:
    text = "\n".join([*before, "queue", *after]) + "\n"
    out = replica_description(text, replicas=replicas, tags=TAGS).splitlines()
    added = [f"My.{k} = " for k in TAGS]
    kept = [line for line in out if not any(line.startswith(a) for a in added)]
    assert kept == [*before, f"queue {replicas}", *after]


def test_validation_knows_dagman_macros(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "A.inc").write_text("arguments = 1\n")
    text = "executable = x\ninclude : $(JOB).inc\nqueue\n"
    validate_description(text, expected_procs=1, macros={"JOB": "A", "RETRY": "0"})
    with pytest.raises(SubmitError):
        validate_description(text, expected_procs=1, macros={"JOB": "B", "RETRY": "0"})
