"""condor_submit_dag's options for the bindings' Submit.from_dag, and the
.condor.sub it writes (no pool needed: from_dag only wants a condor_dagman on
PATH); the pool itself: tests/test_pool_submit.py."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from condor_rlrep.condor.dagsubmit import SUBMIT_DAG_OPTIONS, parse_submit_dag_args
from condor_rlrep.errors import InputError

CLI = str(Path(sys.executable).parent / "condor-rlrep")
FIGURE1 = Path(__file__).resolve().parents[1] / "examples" / "figure1" / "figure1.dag"


def test_options_as_condor_submit_dag_takes_them() -> None:
    request = parse_submit_dag_args(["-maxjobs", "10", "--MaxIdle=5", "-batch-name", "b", "-f", "-usedagdir",
                                     "-append", "accounting_group = g", "-append", "+Foo = 1", "-no_submit"])
    assert request.options == {"MaxJobs": 10, "MaxIdle": 5, "BatchName": "b", "Force": True, "UseDagDir": True}
    assert request.append == ["accounting_group = g", "+Foo = 1"] and request.no_submit


@pytest.mark.parametrize("args, message", [
    (["-maxjbs", "3"], "unknown condor_submit_dag option '-maxjbs'"),
    (["-maxjobs"], "-maxjobs needs a value"),
    (["-maxjobs", "x"], "-maxjobs 'x': not a whole number"),
    (["-maxjobs", "-1"], "must be >= 0"),
    (["-force=1"], "-force takes no value"),
    (["-append", "nothing"], "a submit command 'key = value'"),
    (["maxjobs"], "condor_submit_dag option expected"),
])
def test_bad_options_are_one_message(args: list[str], message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_submit_dag_args(args)


@given(st.lists(st.text(max_size=12), max_size=6))
def test_any_words_parse_or_fail_cleanly(words: list[str]) -> None:
    try:
        request = parse_submit_dag_args(words)
    except InputError:
        return
    assert all("=" in line for line in request.append)
    assert set(request.options) <= {key for key, _ in SUBMIT_DAG_OPTIONS.values()}


def test_instrument_submit_no_submit_writes_the_condor_sub_with_the_options(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "condor_dagman"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho '$CondorVersion: 25.14.0 2026-01-01 $'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "XDG_DATA_HOME": str(tmp_path / "d")}
    done = subprocess.run([CLI, "instrument", str(FIGURE1), "-o", str(tmp_path / "run" / "f.dag"), "--submit",
                           "--submit-args", "-maxjobs 2 -batch-name tour -append '+RlrepTest = 7' -no_submit"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"wrote {tmp_path}/run/f.dag.condor.sub (-no_submit" in done.stdout
    sub = (tmp_path / "run" / "f.dag.condor.sub").read_text()
    assert "-MaxJobs 2" in sub and 'My.JobBatchName = "tour"' in sub and "+RlrepTest = 7\nqueue" in sub
    # bad options are refused before anything is written
    bad = subprocess.run([CLI, "instrument", str(FIGURE1), "-o", str(tmp_path / "run2" / "f.dag"), "--submit",
                          "--submit-args", "-maxjbs 2"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "unknown condor_submit_dag option '-maxjbs'" in bad.stderr
    assert not (tmp_path / "run2").exists()
    plain = subprocess.run([CLI, "submit", str(FIGURE1)], capture_output=True, text=True, env=env, timeout=60)
    assert plain.returncode == 2 and "not an instrumented DAG" in plain.stderr
