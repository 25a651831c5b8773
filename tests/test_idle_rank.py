"""Idle placement live: the ``Rank`` an ``idle-`` policy's replicas carry.

The expression is checked by hand, with the real submit parser
(``htcondor2.Submit``: what the job ad's ``Rank`` becomes) and evaluated
with ``classad2`` against machine ads with and without ``KeyboardIdle``;
then end to end: ``instrument --policy idle-…`` and the real PRE hook.
"""

from __future__ import annotations

import json
from pathlib import Path

import classad2
import htcondor2
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from _hookutil import FIGURE1, pre_macros, run_script
from condor_rlrep.cli.main import cli
from condor_rlrep.condor.submit import IDLE_TIE_SCALE, idle_preference, idle_rank, replica_description
from condor_rlrep.instrument import InstrumentOptions, instrument

TAGS = {"RlrepNode": "A", "RlrepReplicas": 2}
PREFERENCE = ("ifThenElse((isInteger(TARGET.KeyboardIdle) || isReal(TARGET.KeyboardIdle)) && TARGET.KeyboardIdle > 0, "
              "0.001 * TARGET.KeyboardIdle / (TARGET.KeyboardIdle + 3600.0), 0.0)")


def job_rank(user_lines: str, *, replicas: int = 2) -> str:
    """The job ad's Rank of a replica description, as submit makes it."""
    body = replica_description(f"executable = /bin/true\n{user_lines}queue\n", replicas=replicas, tags=TAGS,
                               prefer_idle=True)
    submit = htcondor2.Submit(body)
    assert submit.getQArgs().strip() == str(replicas)
    return submit.expand("My.Rank")


def rank_on(rank: str, **machine: object) -> float:
    value = classad2.ExprTree(rank).eval(scope=classad2.ClassAd({"RequestMemory": 100}), target=classad2.ClassAd(machine))
    assert isinstance(value, float), value  # never undefined: the negotiator would count 0 and lose the order
    return value


def test_the_expression_by_hand():
    assert idle_preference() == PREFERENCE
    assert idle_rank() == ("ifThenElse(isReal(real($(My.Rank:$(rank:0)))), real($(My.Rank:$(rank:0))), 0.0) + "
                           + PREFERENCE)
    body = replica_description("executable = x\nrank = Memory\nqueue\n", replicas=3, tags={"RlrepNode": "A"},
                               prefer_idle=True)
    assert body == ("executable = x\nrank = Memory\nMy.RlrepNode = \"A\"\n"
                    f"My.Rank = {idle_rank()}\nqueue 3\n")
    assert "Rank" not in replica_description("executable = x\nqueue\n", replicas=3, tags={"RlrepNode": "A"})


def test_without_a_user_rank_machines_are_ordered_by_keyboard_idle():
    rank = job_rank("")
    assert rank == f"ifThenElse(isReal(real(0)), real(0), 0.0) + {PREFERENCE}"
    # hand-computed: 1e-3 * K / (K + 3600)
    assert rank_on(rank, KeyboardIdle=3600) == pytest.approx(0.0005, abs=1e-15)
    assert rank_on(rank, KeyboardIdle=10800) == pytest.approx(0.00075, abs=1e-15)
    assert rank_on(rank, KeyboardIdle=1200) < rank_on(rank, KeyboardIdle=86400) < rank_on(rank, KeyboardIdle=864000)


@pytest.mark.parametrize("machine", [{}, {"KeyboardIdle": "a while"}, {"KeyboardIdle": -5},
                                     {"KeyboardIdle": classad2.ExprTree("undefined")}])
def test_a_machine_that_does_not_say_still_matches_with_preference_zero(machine):
    """A preference, not a requirement: Requirements never name KeyboardIdle,
    and the Rank is a number (0) against such a machine."""
    body = replica_description("executable = /bin/true\nqueue\n", replicas=2, tags=TAGS, prefer_idle=True)
    assert "KeyboardIdle" not in (htcondor2.Submit(body).get("Requirements") or "")
    assert rank_on(job_rank(""), **machine) == 0.0


@pytest.mark.parametrize("user_lines, primary", [
    ("rank = Memory > 1000\n", "rank"),
    ("rank = Memory\n", "rank"),
    ("+Rank = Memory\n", "+Rank"),
    ("rank = 0\nMy.Rank = Memory\n", "My.Rank"),  # My.Rank beats rank in the job ad, as without us
    ("R = Memory\nrank = $(R)\n", "macro"),
])
def test_the_users_rank_stays_primary_and_keyboard_idle_breaks_its_ties(user_lines, primary):
    rank = job_rank(user_lines)
    assert "Memory" in rank, primary
    big_busy = rank_on(rank, Memory=16000, KeyboardIdle=5)
    small_idle = rank_on(rank, Memory=500, KeyboardIdle=10 ** 7)
    assert big_busy > small_idle  # the user's preference first
    assert rank_on(rank, Memory=16000, KeyboardIdle=7200) > big_busy  # ours among equals


def test_a_user_rank_that_is_undefined_on_a_machine_counts_zero_and_keeps_the_preference():
    rank = job_rank("rank = TARGET.NoSuchAttribute * 2\n")
    assert rank_on(rank) == 0.0
    assert rank_on(rank, KeyboardIdle=3600) == pytest.approx(0.0005)
    assert rank_on(job_rank('rank = "text"\n'), KeyboardIdle=3600) == pytest.approx(0.0005)


@given(st.integers(0, 10 ** 8), st.integers(0, 10 ** 8))
def test_preference_is_bounded_and_monotone_in_keyboard_idle(a, b):
    low, high = sorted((a, b))
    rank = PREFERENCE
    lo, hi = rank_on(rank, KeyboardIdle=low), rank_on(rank, KeyboardIdle=high)
    assert 0.0 <= lo <= hi < IDLE_TIE_SCALE
    if high > low and high <= 10 ** 7:  # up to ~4 months apart in a double
        assert lo < hi


@given(st.integers(-10 ** 6, 10 ** 6), st.integers(1, 10 ** 6), st.integers(0, 10 ** 8), st.integers(0, 10 ** 8))
def test_integer_user_ranks_are_never_reordered(user, gap, idle_low, idle_high):
    rank = idle_rank("MY.UserRank")
    job = classad2.ClassAd({"UserRank": classad2.ExprTree("TARGET.U")})
    better = classad2.ExprTree(rank).eval(scope=job, target=classad2.ClassAd({"U": user + gap, "KeyboardIdle": idle_low}))
    worse = classad2.ExprTree(rank).eval(scope=job, target=classad2.ClassAd({"U": user, "KeyboardIdle": idle_high}))
    assert better > worse


# -- instrument and the real PRE hook on files ----------------------------------------------------

def _pre_body(out: Path, node: str = "A") -> str:
    done = run_script(out, node, "PRE", pre_macros())
    assert done.returncode == 0, done.stderr
    return (Path(str(out) + ".rlrep") / "nodes" / f"{node}.sub").read_text()


@pytest.mark.parametrize("always_pre", [False, True], ids=["written-by-instrument", "written-by-pre"])
@pytest.mark.parametrize("policy, replicas", [("idle-fixed:2", 2), ("idle-single", 1)])
def test_an_idle_fixed_policy_writes_the_rank(tmp_path, policy, replicas, always_pre):
    # a fixed policy's description is written once by instrument (no PRE), or
    # by PRE on every attempt with --always-pre: the rank is there either way
    def body_of(out: Path) -> str:
        if always_pre:
            return _pre_body(out)
        assert "SCRIPT PRE" not in out.read_text()
        return (Path(str(out) + ".rlrep") / "nodes" / "A.sub").read_text()

    out = tmp_path / "o" / "fig.dag"
    instrument(FIGURE1, out, InstrumentOptions(policy=policy, always_pre=always_pre))
    settings = json.loads((Path(str(out) + ".rlrep") / "hooks.json").read_text())
    assert settings["policy"] == policy and settings["store"] is None
    body = body_of(out)
    assert f"My.Rank = {idle_rank()}\n" in body and body.rstrip().endswith(f"queue {replicas}")
    assert htcondor2.Submit(body).expand("My.Rank").endswith(PREFERENCE)
    plain = tmp_path / "p" / "fig.dag"
    instrument(FIGURE1, plain, InstrumentOptions(policy=policy.removeprefix("idle-"), always_pre=always_pre))
    assert "Rank" not in body_of(plain)


def test_pre_of_idle_agent_decides_with_the_store_and_writes_the_rank(tmp_path):
    out = tmp_path / "o" / "fig.dag"
    result = instrument(FIGURE1, out, InstrumentOptions(policy="idle-rl-ucb1:2", store=str(tmp_path / "s.sqlite")))
    assert result.store_created and "ucb1, 1..2 replicas" in result.store_note
    settings = json.loads((Path(str(out) + ".rlrep") / "hooks.json").read_text())
    assert (settings["policy"], settings["max_replicas"]) == ("idle-agent", 2)
    body = _pre_body(out)
    assert f"My.Rank = {idle_rank()}\n" in body and "My.RlrepDecision = \"1\"" in body


def test_instrument_cli_takes_idle_policies_and_refuses_simulator_only_ones(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(cli, ["instrument", str(FIGURE1), "-o", str(tmp_path / "a.dag"), "--policy", "idle-fixed:2"])
    assert ok.exit_code == 0, ok.output
    for policy in ("oracle:2", "react:3", "model-react:3,target=0.9", "idle-oracle:2"):
        refused = runner.invoke(cli, ["instrument", str(FIGURE1), "-o", str(tmp_path / "x.dag"), "--policy", policy])
        assert refused.exit_code == 2, (policy, refused.output)
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and f"'{policy}'" in lines[0] and "on a pool use" in lines[0]
    assert not (tmp_path / "x.dag").exists()


# -- another idle attribute (instrument --idle-attribute; the replay pool's TraceKeyboardIdle) ---------

def test_the_rank_reads_another_attribute_when_pointed_at_it():
    body = replica_description("executable = /bin/true\nqueue\n", replicas=2, tags=TAGS, prefer_idle=True,
                               idle_attribute="TraceKeyboardIdle")
    rank = htcondor2.Submit(body).expand("My.Rank")
    assert rank == "ifThenElse(isReal(real(0)), real(0), 0.0) + " + PREFERENCE.replace("KeyboardIdle",
                                                                                        "TraceKeyboardIdle")
    # the replay pool: every slot has the host's KeyboardIdle, the trace's idle time differs
    away_long = rank_on(rank, KeyboardIdle=50, TraceKeyboardIdle=7200)
    away_short = rank_on(rank, KeyboardIdle=50, TraceKeyboardIdle=60)
    assert away_long == pytest.approx(1e-3 * 7200 / (7200 + 3600))
    assert away_short == pytest.approx(1e-3 * 60 / (60 + 3600))
    default = job_rank("")
    assert rank_on(default, KeyboardIdle=50, TraceKeyboardIdle=7200) == rank_on(default, KeyboardIdle=50,
                                                                                TraceKeyboardIdle=60)


@pytest.mark.parametrize("always_pre", [False, True], ids=["written-by-instrument", "written-by-pre"])
def test_instrument_and_pre_write_the_chosen_attribute(tmp_path, always_pre):
    out = tmp_path / "o" / "fig.dag"
    instrument(FIGURE1, out, InstrumentOptions(policy="idle-fixed:2", always_pre=always_pre,
                                               idle_attribute="TraceKeyboardIdle"))
    settings = json.loads((Path(str(out) + ".rlrep") / "hooks.json").read_text())
    assert settings["idle_attribute"] == "TraceKeyboardIdle"
    body = _pre_body(out) if always_pre else (Path(str(out) + ".rlrep") / "nodes" / "A.sub").read_text()
    assert f"My.Rank = {idle_rank(attribute='TraceKeyboardIdle')}\n" in body
    assert "TARGET.KeyboardIdle" not in body


def test_a_bad_idle_attribute_is_one_error_and_writes_nothing(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(cli, ["instrument", str(FIGURE1), "-o", str(tmp_path / "a.dag"), "--policy", "idle-fixed:2",
                             "--idle-attribute", "TraceKeyboardIdle"])
    assert ok.exit_code == 0, ok.output
    assert "TARGET.TraceKeyboardIdle" in (tmp_path / "a.dag.rlrep" / "nodes" / "A.sub").read_text()
    for bad in ("Keyboard Idle", "1Idle", "KeyboardIdle; x = 1", ""):
        refused = runner.invoke(cli, ["instrument", str(FIGURE1), "-o", str(tmp_path / "x.dag"),
                                      "--policy", "idle-fixed:2", "--idle-attribute", bad])
        assert refused.exit_code != 0, (bad, refused.output)
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "idle attribute" in lines[0] and "Traceback" not in refused.output, refused.output
        assert not (tmp_path / "x.dag").exists()
