"""The user's JOBSTATE_LOG said as the plain run would say it (issue 23 item 5).

The inputs are DAGMan 25.14's own lines, recorded on the personal pool: a
two-node DAG plain and instrumented with ``fixed:2`` (node A's replica 1
removed once replica 0 won), and the same DAG whose B fails.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, strategies as st

from condor_rlrep.condor.jobstate import JobstateTranslator
from condor_rlrep.rundir.jobstatelog import INTERNAL_JOBSTATE, JobstateFollower
from condor_rlrep.rundir.layout import REPLICABLE_FILE, HookSettings

INSTRUMENTED = """\
1796534355 INTERNAL *** DAGMAN_STARTED 2.0 ***
1796534356 RLREP_REAPER SUBMIT 4.0 - - 1
1796534356 A SUBMIT 5.0 - - 2
1796534356 A SUBMIT 5.1 - - 2
1796534358 A EXECUTE 5.0 - - 2
1796534358 A EXECUTE 5.1 - - 2
1796534360 A JOB_TERMINATED 5.0 - - 2
1796534361 RLREP_REAPER EXECUTE 4.0 - - 1
1796534362 A JOB_EVICTED 5.1 - - 2
1796534362 A JOB_ABORTED 5.1 - - 2
1796534362 A JOB_FAILURE -1002 - - 2
1796534362 A POST_SCRIPT_STARTED 5.0 - - 2
1796534362 A POST_SCRIPT_TERMINATED 5.0 - - 2
1796534362 A POST_SCRIPT_SUCCESS 5.0 - - 2
1796534364 B SUBMIT 7.0 - - 3
1796534364 B SUBMIT 7.1 - - 3
1796534364 B EXECUTE 7.0 - - 3
1796534364 B JOB_TERMINATED 7.0 - - 3
1796534364 B EXECUTE 7.1 - - 3
1796534364 B JOB_TERMINATED 7.1 - - 3
1796534364 B JOB_SUCCESS 0 - - 3
1796534364 B POST_SCRIPT_STARTED 7.0 - - 3
1796534365 RLREP_REAPER JOB_TERMINATED 4.0 - - 1
1796534365 RLREP_REAPER JOB_SUCCESS 0 - - 1
1796534365 B POST_SCRIPT_TERMINATED 7.0 - - 3
1796534365 B POST_SCRIPT_SUCCESS 7.0 - - 3
1796534366 INTERNAL *** DAGMAN_FINISHED 0 ***
"""

# what the translation must give: the plain run's lines (the plain run's own
# file had these with its own cluster numbers 3 and 6 and DAGMan id 1.0)
PLAIN_VIEW = """\
1796534355 INTERNAL *** DAGMAN_STARTED 2.0 ***
1796534356 A SUBMIT 5.0 - - 1
1796534358 A EXECUTE 5.0 - - 1
1796534360 A JOB_TERMINATED 5.0 - - 1
1796534362 A JOB_SUCCESS 0 - - 1
1796534364 B SUBMIT 7.0 - - 2
1796534364 B EXECUTE 7.0 - - 2
1796534364 B JOB_TERMINATED 7.0 - - 2
1796534364 B JOB_SUCCESS 0 - - 2
1796534366 INTERNAL *** DAGMAN_FINISHED 0 ***
"""

FAILING_B = """\
1796534378 B SUBMIT 14.0 - - 3
1796534378 B SUBMIT 14.1 - - 3
1796534380 B EXECUTE 14.1 - - 3
1796534380 B EXECUTE 14.0 - - 3
1796534380 B JOB_TERMINATED 14.1 - - 3
1796534380 B JOB_TERMINATED 14.0 - - 3
1796534380 B JOB_FAILURE 1 - - 3
1796534380 B POST_SCRIPT_STARTED 14.0 - - 3
1796534381 B POST_SCRIPT_TERMINATED 14.0 - - 3
1796534381 B POST_SCRIPT_FAILURE 14.0 - - 3
"""


class Verdicts:
    def __init__(self, known: dict[int, tuple]):
        self.known = known

    def outcome(self, cluster: int):
        return self.known.get(cluster)


WON = Verdicts({5: (0, None), 7: (0, None)})


def translator(**kw) -> JobstateTranslator:
    return JobstateTranslator(["A", "B"], hidden=["RLREP_REAPER"], **kw)


def test_a_replicated_run_reads_as_the_plain_run() -> None:
    out, used = translator().translate(INSTRUMENTED.splitlines(), WON)
    assert used == len(INSTRUMENTED.splitlines())
    assert "\n".join(out) + "\n" == PLAIN_VIEW


def test_replicas_that_all_failed_end_as_the_kept_replicas_failure() -> None:
    t = translator()
    t.hidden_seqs = [1]
    # POST keeps the first replica that failed: 14.1, exit 3 (DAGMan's line says 1: the other's)
    out, _ = t.translate(FAILING_B.splitlines(), Verdicts({14: (None, (1, 3))}))
    assert out == ["1796534378 B SUBMIT 14.0 - - 2", "1796534380 B EXECUTE 14.1 - - 2",
                   "1796534380 B JOB_TERMINATED 14.1 - - 2", "1796534380 B JOB_FAILURE 3 - - 2"]


def test_the_users_own_scripts_keep_their_lines() -> None:
    out, _ = translator(user_post=["B"]).translate(INSTRUMENTED.splitlines(), WON)
    assert [line.split()[2] for line in out if line.split()[1] == "B"] == [
        "SUBMIT", "EXECUTE", "JOB_TERMINATED", "JOB_SUCCESS", "POST_SCRIPT_STARTED", "POST_SCRIPT_TERMINATED",
        "POST_SCRIPT_SUCCESS"]
    pre = ["1 A PRE_SCRIPT_STARTED - - - 1", "2 A PRE_SCRIPT_TERMINATED 0 - - 1", "2 A PRE_SCRIPT_SUCCESS - - - 1"]
    assert translator().translate(pre, WON)[0] == []
    assert translator(user_pre=["A"]).translate(pre, WON)[0] == pre


def test_a_line_waits_for_its_verdict_and_resumes_in_order() -> None:
    lines = INSTRUMENTED.splitlines()
    t = translator()
    out, used = t.translate(lines, Verdicts({}))
    assert lines[used] == "1796534362 A JOB_FAILURE -1002 - - 2"  # A's verdict is not in the node log yet
    state = json.loads(json.dumps(t.to_state()))  # what the reaper leaves for the next caller
    rest, used2 = translator(state=state).translate(lines[used:], WON)
    assert "\n".join(out + rest) + "\n" == PLAIN_VIEW and used + used2 == len(lines)


def test_final_writes_dagmans_own_line_when_the_verdict_is_gone() -> None:
    lines = INSTRUMENTED.splitlines()
    out, used = translator().translate(lines, Verdicts({}), final=True)
    assert used == len(lines)
    assert "1796534362 A JOB_FAILURE -1002 - - 1" in out


def test_nodes_left_alone_and_one_replica_attempts_are_dagmans_lines() -> None:
    lines = ["5 C SUBMIT 9.0 - - 4", "6 C EXECUTE 9.0 - - 4", "7 C JOB_EVICTED 9.0 - - 4", "8 C EXECUTE 9.0 - - 4",
             "9 C JOB_TERMINATED 9.0 - - 4", "9 C JOB_FAILURE 2 - - 4"]
    t = translator()
    t.hidden_seqs = [1]
    expected = [line[:-1] + "3" for line in lines]
    assert t.translate(lines, Verdicts({}))[0] == expected  # C is not ours
    one = [line.replace(" C ", " A ") for line in lines]  # A ran 1 replica: a single job's own lines
    assert translator().translate(one, Verdicts({}))[0] == one


def test_a_new_dagman_numbers_again() -> None:
    t = translator()
    t.translate(INSTRUMENTED.splitlines(), WON)
    rescue = ["1796539999 INTERNAL *** DAGMAN_STARTED 30.0 ***", "1796540000 A SUBMIT 31.0 - - 1",
              "1796540000 B SUBMIT 32.0 - - 2"]
    assert t.translate(rescue, WON)[0] == rescue


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)),
                        max_size=40), max_size=20))
def test_any_text_is_translated_without_error_and_consumed(lines: list[str]) -> None:
    out, used = translator().translate(lines, WON, final=True)
    assert used == len(lines) and len(out) <= 2 * len(lines)


def test_the_follower_appends_only_whole_new_lines_once(tmp_path: Path) -> None:
    ctx = tmp_path / "run.dag.rlrep"
    ctx.mkdir()
    (ctx / REPLICABLE_FILE).write_text("A\nB\n")
    user = tmp_path / "w.jobstate.log"
    settings = HookSettings(jobstate_log=str(user), reaper_node="RLREP_REAPER", user_scripts={"PRE": [], "POST": []})
    internal = ctx / INTERNAL_JOBSTATE
    text = INSTRUMENTED
    cut = text.index("1796534364 B SUBMIT 7.1")
    internal.write_text(text[:cut + 10])  # DAGMan is half-way through a line
    follower = JobstateFollower(str(ctx), settings)
    follower.poll(WON)
    assert user.read_text() == PLAIN_VIEW[:PLAIN_VIEW.index("1796534364 B EXECUTE")]
    with internal.open("a") as handle:
        handle.write(text[cut + 10:])
    JobstateFollower(str(ctx), settings).poll(WON)  # a second caller (status) goes on where the first stopped
    follower.poll(WON)
    assert user.read_text() == PLAIN_VIEW
    assert oct(user.stat().st_mode & 0o777) == "0o644"
