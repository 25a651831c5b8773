"""``status`` cold (issue 28): the faster readers give the values of the code they replace.

- ``.dagman.out`` stamps are read by one regular expression, not ``strptime``:
  same epoch, and the same ValueError for a stamp that is no time.
- A node log's ``EventTime`` is converted by its hour (:func:`time_of_text`):
  same value as ``fromisoformat(...).timestamp()`` in time zones with DST
  changes, the 30-minute one of Lord Howe included.
- :func:`replay_runs` writes the end of an evicted run in place: same history
  and runs as the rules as they were written before (kept below as the oracle).
- A cluster's summary for ``status`` is made in one pass over its records:
  the same as :func:`summarize` of the replayed history with its proc states.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from condor_rlrep.condor import eventlog
from condor_rlrep.condor.eventlog import (
    ABORTED, EVICTED, EXECUTABLE_ERROR, EXECUTE, HELD, JOB_AD_INFORMATION, POST_SCRIPT_TERMINATED, RECONNECT_FAILED,
    REMOVAL_EVICT_CODE, SHADOW_EXCEPTION, SUBMIT, TERMINATED, ClusterHistory, replay_runs, time_of_text,
)
from condor_rlrep.runreport.dagman_out import stamp_time

# -- .dagman.out stamps ---------------------------------------------------------------------------------------------


def _strptime_epoch(text: str) -> float:
    return datetime.strptime(text, "%m/%d/%y %H:%M:%S.%f" if "." in text else "%m/%d/%y %H:%M:%S").timestamp()


two = st.integers(0, 99).map(lambda v: f"{v:02d}")
valid_two = {"month": st.integers(1, 12), "day": st.integers(1, 28), "hour": st.integers(0, 23),
             "minute": st.integers(0, 59), "second": st.integers(0, 59)}


@settings(max_examples=400, deadline=None)
@given(fields=st.one_of(st.tuples(two, two, two, two, two, two),
                        st.tuples(*(s.map(lambda v: f"{v:02d}") for s in (valid_two["month"], valid_two["day"])), two,
                                  *(s.map(lambda v: f"{v:02d}") for s in
                                    (valid_two["hour"], valid_two["minute"], valid_two["second"])))),
       fraction=st.one_of(st.none(), st.text("0123456789", min_size=1, max_size=8)))
def test_dagman_out_stamps_read_as_strptime_reads_them(fields: tuple[str, ...], fraction: str | None) -> None:
    month, day, year, hour, minute, second = fields
    text = f"{month}/{day}/{year} {hour}:{minute}:{second}" + ("" if fraction is None else f".{fraction}")
    try:
        expected: Any = _strptime_epoch(text)
    except ValueError as err:
        expected = ("ValueError", str(err))
    try:
        got: Any = stamp_time(text.encode("ascii"))
    except ValueError as err:
        got = ("ValueError", str(err))
    assert got == expected


def test_dagman_out_stamp_examples() -> None:
    assert stamp_time(b"12/02/26 11:11:39") == datetime(2026, 12, 2, 11, 11, 39).timestamp()
    assert stamp_time(b"12/02/26 11:11:39.5") == datetime(2026, 12, 2, 11, 11, 39, 500000).timestamp()
    assert stamp_time(b"01/01/69 00:00:00") == datetime(1969, 1, 1).timestamp()  # %y: 69 is 1969
    assert stamp_time(b"01/01/68 00:00:00") == datetime(2068, 1, 1).timestamp()
    with pytest.raises(ValueError):
        stamp_time(b"13/02/26 11:11:39")
    with pytest.raises(ValueError):
        stamp_time(b"12/02/26 11:11:39.1234567")



def _dagman_out_oracle(data: bytes) -> list:
    """``DagmanOut._parse`` as it was: every match's groupdict."""
    from condor_rlrep.runreport.dagman_out import _LINES, Session

    sessions: list = []
    for match in _LINES.finditer(data):
        at = stamp_time(match.group(1))
        groups = match.groupdict()
        if groups["start"]:
            sessions.append(Session(started_at=at))
            continue
        if not sessions:
            sessions.append(Session(started_at=at))
        session = sessions[-1]
        if groups["dagid"]:
            session.dagid = groups["dagid"].decode()
        elif groups["run"]:
            state = session.node(groups["run_node"].decode("utf-8", "replace"))
            if groups["run"] == b"PRE":
                state.pre, state.pre_code, state.pre_time = "running", None, at
                state.post = state.post_code = state.post_time = None
            else:
                state.post, state.post_code, state.post_time = "running", None, at
        elif groups["ok"]:
            state = session.node(groups["ok_node"].decode("utf-8", "replace"))
            if groups["ok"] == b"PRE":
                state.pre, state.pre_code, state.pre_time = "ok", 0, at
            else:
                state.post, state.post_code, state.post_time = "ok", 0, at
        elif groups["bad"]:
            state = session.node(groups["bad_node"].decode("utf-8", "replace"))
            code = int(groups["bad_code"])
            if groups["bad"] == b"PRE":
                state.pre, state.pre_code, state.pre_time = "failed", code, at
            else:
                state.post, state.post_code, state.post_time = "failed", code, at
        elif groups["retry_node"]:
            session.node(groups["retry_node"].decode("utf-8", "replace")).retries = int(groups["retry"])
        elif groups["rescue"]:
            session.rescue = groups["rescue"].decode("utf-8", "replace")
        elif groups["exit"]:
            session.exit_status = int(groups["exit"])
            session.exited_at = at
    return sessions


_NODE = st.sampled_from(["A", "B", "n.1", "x\xe9"])
_DAGMAN_LINE = st.one_of(
    st.just("** condor_dagman (CONDOR_DAGMAN) STARTING UP"),
    st.integers(0, 99999).map(lambda d: f"Workflow batch-id: <{d}.0>"),
    st.tuples(st.sampled_from(["PRE", "POST"]), _NODE).map(lambda t: f"Running {t[0]} script of Node {t[1]}..."),
    st.tuples(st.sampled_from(["PRE", "POST"]), st.sampled_from(["node", "Node"]), _NODE).map(
        lambda t: f"{t[0]} Script of {t[1]} {t[2]} completed successfully."),
    st.tuples(st.sampled_from(["PRE", "POST"]), _NODE, st.integers(-3, 300)).map(
        lambda t: f"{t[0]} Script of node {t[1]} failed with status {t[2]}"),
    st.tuples(_NODE, st.integers(1, 5)).map(lambda t: f"Retrying node {t[0]} (retry #{t[1]} of 5)"),
    st.sampled_from(["Writing Rescue DAG to x.dag.rescue001...", "Running PRE script of Node A",
                     "**** condor_dagman (condor_DAGMAN) pid 7 EXITING WITH STATUS 1",
                     "**** condor_dagman (condor_DAGMAN) pid 7 EXITING WITH STATUS 0", "Submitting HTCondor Node A"]),
)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.tuples(st.integers(0, 4000), _DAGMAN_LINE), max_size=30))
def test_dagman_out_lines_read_as_by_their_groupdict(lines: list) -> None:
    """Each line is told by the last group its alternative matched, as the
    whole groupdict told it before."""
    from condor_rlrep.runreport.dagman_out import DagmanOut

    stamp = datetime(2026, 5, 28, 11, 0, 0)
    data = "".join(f"{(stamp + timedelta(seconds=s)).strftime('%m/%d/%y %H:%M:%S')} {text}\n" for s, text in lines)
    out = DagmanOut("/nonexistent")
    out._parse(data.encode("utf-8"))
    assert out.sessions == _dagman_out_oracle(data.encode("utf-8"))

# -- EventTime -----------------------------------------------------------------------------------------------------


def _iso_epoch(text: str) -> float | None:
    """What event_time computed before the hour cache."""
    try:
        if text.endswith("Z"):
            return float(int(datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc).timestamp()))
        return float(int(datetime.fromisoformat(text).timestamp()))
    except ValueError:
        return None


@pytest.fixture(params=["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
def zone(request: pytest.FixtureRequest):
    if not os.path.exists(f"/usr/share/zoneinfo/{request.param}"):
        pytest.skip(f"no zoneinfo for {request.param}")
    old = os.environ.get("TZ")
    os.environ["TZ"] = request.param
    time.tzset()
    eventlog._HOURS.clear()  # the cache is per time zone
    try:
        yield request.param
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()
        eventlog._HOURS.clear()


# seconds around the DST changes of 2026 (both hemispheres) and anywhere in the year
AROUND = [datetime(2026, 3, 8, 2), datetime(2026, 3, 29, 2), datetime(2026, 4, 5, 1), datetime(2026, 10, 4, 2),
          datetime(2026, 10, 25, 2), datetime(2026, 11, 1, 1)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())  # the zone holds for every example (the hour cache is per zone)
def test_event_time_by_the_hour_is_fromisoformats_value(zone: str, data: st.DataObject) -> None:
    base = data.draw(st.one_of(st.sampled_from(AROUND), st.datetimes(datetime(2000, 1, 1), datetime(2040, 1, 1))))
    moment = base + timedelta(seconds=data.draw(st.integers(-7200, 7200)))
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    variant = data.draw(st.sampled_from(["plain", "plain", "Z", "second 60", "minute 61", "fraction", "space"]))
    if variant == "Z":
        text += "Z"
    elif variant == "second 60":
        text = text[:17] + "60"
    elif variant == "minute 61":
        text = text[:14] + "61" + text[16:]
    elif variant == "fraction":
        text += ".25"
    elif variant == "space":
        text = text[:10] + " " + text[11:]
    assert time_of_text(text) == _iso_epoch(text)
    assert time_of_text(text) == _iso_epoch(text)  # again, from the cache


def test_event_time_of_every_second_of_a_split_hour(zone: str) -> None:
    # Lord Howe moves by 30 minutes at 02:00: the hour is not one offset, each second converts itself
    for day in (datetime(2026, 4, 5, 1), datetime(2026, 10, 4, 2), datetime(2026, 3, 8, 2), datetime(2026, 11, 1, 1)):
        for second in range(0, 3600, 7):
            text = (day + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%S")
            assert time_of_text(text) == _iso_epoch(text), text
    assert time_of_text("") is None and time_of_text(None) is None
    assert time_of_text("2026-13-01T00:00:00") is None
    assert time_of_text("2026-05-28T12:0٣:00") is None  # a non-ASCII digit: not ISO for fromisoformat



@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_dagman_out_stamps_by_the_hour_are_strptimes_value(zone: str, data: st.DataObject) -> None:
    """A ``.dagman.out`` stamp has strptime's value in any time zone, around
    DST changes, with fractions, and strptime's error for what is no time."""
    base = data.draw(st.one_of(st.sampled_from(AROUND), st.datetimes(datetime(1970, 1, 2), datetime(2068, 12, 30))))
    moment = base + timedelta(seconds=data.draw(st.integers(-7200, 7200)))
    text = moment.strftime("%m/%d/%y %H:%M:%S")
    variant = data.draw(st.sampled_from(["plain", "plain", "fraction", "second 60", "minute 61", "day 31", "hour 24"]))
    if variant == "fraction":
        text += "." + data.draw(st.text("0123456789", min_size=1, max_size=6))
    elif variant == "second 60":
        text = text[:15] + "60"
    elif variant == "minute 61":
        text = text[:12] + "61" + text[14:]
    elif variant == "day 31":
        text = text[:3] + "31" + text[5:]
    elif variant == "hour 24":
        text = text[:9] + "24" + text[11:]
    for _ in range(2):  # the second time from the cache
        try:
            expected: Any = _strptime_epoch(text)
        except ValueError as err:
            expected = ("ValueError", str(err))
        try:
            got: Any = stamp_time(text.encode("ascii"))
        except ValueError as err:
            got = ("ValueError", str(err))
        assert got == expected, text


def test_dagman_out_stamps_of_every_second_of_a_split_hour(zone: str) -> None:
    for day in (datetime(2026, 4, 5, 1), datetime(2026, 10, 4, 2), datetime(2026, 3, 8, 2), datetime(2026, 11, 1, 1)):
        for second in range(0, 3600, 7):
            text = (day + timedelta(seconds=second)).strftime("%m/%d/%y %H:%M:%S")
            assert stamp_time(text.encode("ascii")) == _strptime_epoch(text), text
            assert stamp_time((text + ".5").encode("ascii")) == _strptime_epoch(text + ".5"), text

# -- replay_runs -----------------------------------------------------------------------------------------------------


def _oracle(records: Any, cluster: int, *, now: float | None = None, detail: bool = True) -> tuple[Any, list]:
    """replay_runs as written before issue 28's second pass (close() per eviction), with
    issue 27's rule that only a code-1009 eviction is a following abort's own."""
    history = ClusterHistory(cluster=cluster)
    open_runs: dict[int, tuple[float, Any]] = {}
    runs: list[tuple[Any, ...]] = []
    append = runs.append

    def close(proc: int, at: float, ended_by: str, code: int | None = None, *, terminal: bool = False) -> None:
        started = open_runs.pop(proc, None)
        if started is None:
            if terminal:
                append((proc, None, at, at, ended_by, code))
            return
        start, host = started
        append((proc, host, start, at if at > start else start, ended_by, code))

    def fail(code: int) -> None:
        if history.first_failure_code is None:
            history.first_failure_code = code

    def relabel(index: int, ended_by: str) -> None:
        replica, host, start, end, _was, code = runs[index]
        runs[index] = (replica, host, start, end, ended_by, code)

    provisional: dict[int, int] = {}
    evicted_by: dict[int, Any] = {}
    last_at = None
    count = 0
    for kind, proc, at, value, host in records:
        count += 1
        if last_at is None or at > last_at:
            last_at = at
        if kind == EVICTED:
            removal = value == REMOVAL_EVICT_CODE
            before = len(runs)
            close(proc, at, "removed" if removal else "evicted")
            if removal:
                provisional.pop(proc, None)
            else:
                history.evictions += 1
                if len(runs) > before:
                    provisional[proc] = before
                    evicted_by[proc] = value
        elif kind == EXECUTE:
            history.procs.add(proc)
            provisional.pop(proc, None)
            if proc in open_runs:
                close(proc, at, "evicted")
            open_runs[proc] = (at, host)
            if value and detail:
                history.slots[(proc, at)] = str(value)
        elif kind == SUBMIT:
            history.procs.add(proc)
            if history.submit_time is None or at < history.submit_time:
                history.submit_time = at
            if history.node is None:
                history.node = value
        elif kind == TERMINATED:
            history.procs.add(proc)
            history.exit_codes[proc] = value
            close(proc, at, "success" if value == 0 else "failure", value, terminal=True)
            if value != 0:
                fail(value)
        elif kind == ABORTED:
            index = provisional.pop(proc, None)
            if index is not None and evicted_by.get(proc) == 1009:
                relabel(index, "removed")
                history.evictions -= 1
            close(proc, at, "removed")
            history.aborted.add(proc)
            fail(-1002)
        elif kind in (SHADOW_EXCEPTION, EXECUTABLE_ERROR):
            close(proc, at, "failure")
        elif kind == HELD:
            history.holds += 1
            index = provisional.pop(proc, None)
            if index is not None:
                relabel(index, "held")
                history.evictions -= 1
            close(proc, at, "held")
        elif kind == RECONNECT_FAILED:
            close(proc, at, "evicted")
        elif kind == POST_SCRIPT_TERMINATED and history.node is None:
            history.node = value
        elif kind == JOB_AD_INFORMATION and proc in open_runs and value is not None and detail:
            history.keyboard_idle[(proc, open_runs[proc][0])] = value
    history.event_count = count
    if open_runs:
        end = now if now is not None else (last_at if last_at is not None else time.time())
        for proc in sorted(open_runs):
            close(proc, end, "running")
    return history, runs


KINDS = [SUBMIT, EXECUTE, EXECUTABLE_ERROR, EVICTED, TERMINATED, SHADOW_EXCEPTION, ABORTED, HELD,
         POST_SCRIPT_TERMINATED, RECONNECT_FAILED, JOB_AD_INFORMATION, 13, 6]
record = st.tuples(
    # evictions and executes most often, as in a big log, and the aborts and holds that relabel them
    st.sampled_from(KINDS + [EVICTED, EVICTED, EVICTED, EXECUTE, EXECUTE, EXECUTE, ABORTED, HELD]),
    st.integers(0, 2),
    st.sampled_from([10.0, 11.0, 12.0, 12.0, 15.0, 9.0]),
    st.sampled_from([None, 0, 1, REMOVAL_EVICT_CODE, 1022, 1009, 1009, "slot1_1@h", "N", 3.5]),
    st.sampled_from([None, "h", "g"]),
)


@settings(max_examples=1000, deadline=None)
@given(records=st.lists(record, max_size=40), detail=st.booleans(), now=st.sampled_from([None, 20.0]))
# found by hypothesis against a mutant whose eviction pointed the abort at the run before its own
@example(records=[(EXECUTE, 0, 10.0, None, None), (EXECUTE, 0, 10.0, None, None), (EVICTED, 0, 10.0, None, None),
                  (ABORTED, 0, 10.0, None, None)], detail=True, now=None)
def test_replay_runs_keeps_the_rules(records: list, detail: bool, now: float | None) -> None:
    got, got_runs = replay_runs(iter(records), 7, now=now, detail=detail)
    want, want_runs = _oracle(iter(records), 7, now=now, detail=detail)
    assert got_runs == want_runs
    assert got == want


def test_replay_runs_an_eviction_then_an_abort_is_a_removal() -> None:
    """A removal with a reason logs its own eviction (code 1009) before the
    abort; an owner's (1011) or a vacate's (1022) before an abort stays one."""
    records = [(SUBMIT, 0, 1.0, "N", None), (EXECUTE, 1, 2.0, "s", "h"), (EVICTED, 1, 2.5, 1022, None),
               (EXECUTE, 0, 2.0, "s", "h"), (EVICTED, 0, 3.0, 1009, None), (ABORTED, 0, 4.0, None, None),
               (EXECUTE, 1, 6.0, "s", "g"), (EVICTED, 1, 7.0, REMOVAL_EVICT_CODE, None)]
    history, runs = replay_runs(iter(records), 1)
    assert runs == [(1, "h", 2.0, 2.5, "evicted", None), (0, "h", 2.0, 3.0, "removed", None),
                    (1, "g", 6.0, 7.0, "removed", None)]
    assert history.evictions == 1 and history.aborted == {0}


def test_replay_runs_an_owners_eviction_then_an_idle_removal_stays_an_eviction() -> None:
    records = [(SUBMIT, 0, 1.0, "N", None), (EXECUTE, 0, 2.0, "s", "h"), (EVICTED, 0, 3.0, 1011, None),
               (ABORTED, 0, 4.0, None, None)]
    history, runs = replay_runs(iter(records), 1)
    assert runs == [(0, "h", 2.0, 3.0, "evicted", None)]
    assert history.evictions == 1 and history.aborted == {0}


# -- the lean summary -----------------------------------------------------------------------------------------------

lean_record = st.tuples(
    # a long cluster's evictions and executes most often, with the aborts, holds and releases between them
    st.sampled_from(KINDS + [EVICTED, EVICTED, EVICTED, EXECUTE, EXECUTE, EXECUTE, ABORTED, HELD, TERMINATED]),
    st.integers(0, 2),
    st.sampled_from([10.0, 11.0, 12.0, 12.0, 15.0, 9.0]),
    st.sampled_from([None, "", 0, 0, 1, REMOVAL_EVICT_CODE, REMOVAL_EVICT_CODE, 1022, 1009, "slot1_1@h", "N", -9]),
)


@settings(max_examples=800, deadline=None)
@given(records=st.lists(lean_record, max_size=60), node=st.sampled_from([None, "", "M"]))
def test_the_lean_summary_keeps_the_replays_rules(records: list, node: str | None) -> None:
    """``status``'s one-pass summary of a cluster equals :func:`summarize` of
    the history :func:`replay_cluster` rebuilds from the same records, with
    their :func:`proc_states` (the summary of ``report``'s reader)."""
    from condor_rlrep.runreport.clusters import ClusterEvents, CompactEvents, proc_states, summarize

    lean = ClusterEvents(7, node, CompactEvents(records), keep_history=False)
    full = ClusterEvents(7, node, CompactEvents(records))
    assert lean.summary() == summarize(full.history(), proc_states(full.events))
    assert lean._history is None


def test_the_lean_summary_of_a_hold_after_an_eviction() -> None:
    """An eviction a hold follows is the hold's (no eviction counted); a
    removal's own eviction (1023) counts none; the earliest success wins."""
    from condor_rlrep.runreport.clusters import ClusterEvents, CompactEvents

    records = [(SUBMIT, 0, 1.0, "N"), (SUBMIT, 1, 1.0, "N"), (EXECUTE, 0, 2.0, "s"), (EXECUTE, 1, 2.0, "s"),
               (EVICTED, 1, 3.0, 1022), (HELD, 1, 3.5, None), (13, 1, 4.0, None), (EXECUTE, 1, 5.0, "s"),
               (TERMINATED, 1, 8.0, 0), (TERMINATED, 0, 9.0, 0), (SUBMIT, 2, 1.0, "N"), (EXECUTE, 2, 2.0, "s"),
               (EVICTED, 2, 9.5, REMOVAL_EVICT_CODE), (ABORTED, 2, 9.6, None)]
    summary = ClusterEvents(7, None, CompactEvents(records), keep_history=False).summary()
    assert (summary.node, summary.submit_time, summary.procs, summary.winner) == ("N", 1.0, 3, 1)
    assert summary.evictions == 0
    assert summary.states == ((0, "success"), (1, "success"), (2, "removed"))
    assert (summary.last_end, summary.unfinished) == (9.5, 0)


# -- the DAG's POST scripts -----------------------------------------------------------------------------------------


def _post_nodes_oracle(dag: str) -> set[str] | None:
    """``_post_nodes`` as it was: the DAG file read again, every word upper-cased."""
    nodes: set[str] = set()
    try:
        with open(dag, encoding="utf-8", errors="surrogateescape") as handle:
            for line in handle:
                words = line.split()
                if len(words) < 3 or words[0].upper() != "SCRIPT":
                    continue
                upper = [w.upper() for w in words]
                if "POST" not in upper[1:6]:
                    continue
                at = upper.index("POST", 1) + 1
                if at < len(words):
                    if upper[at] == "ALL_NODES":
                        return None
                    nodes.add(words[at])
    except OSError:
        return None
    return nodes


_WORDS = st.sampled_from(["SCRIPT", "script", "ſcrıpt", "SCRIPTS", "POST", "post", "poﬆ", "PRE", "DEFER", "DEBUG", "1",
                          "2", "f", "ALL_NODES", "all_nodes", "A", "B", "C", "x/y", "JOB", "ßcript"])
_GAPS = st.sampled_from([" ", " ", "  ", "\t", "\x0c", "\x0b", "\x85", "\u2028", "\xa0", "\r", "\r\n", "\n", "\x1c"])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.tuples(_WORDS, _GAPS), max_size=40))
def test_post_nodes_of_the_text_read_once_are_the_files(tmp_path_factory: pytest.TempPathFactory, parts: list) -> None:
    """The POST nodes found in the text ``RunReader`` has read are those the
    DAG file read again line by line gave: odd whitespace, newlines other
    than ``\\n`` and letters that upper-case to ASCII (ſ, ı, ﬆ) included."""
    from condor_rlrep.runreport.load import _post_nodes

    text = "".join(word + gap for word, gap in parts)
    path = tmp_path_factory.mktemp("dag") / "x.dag"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        read = handle.read()
    assert _post_nodes(read) == _post_nodes_oracle(str(path))


def test_post_nodes_examples() -> None:
    from condor_rlrep.runreport.load import _post_nodes

    text = ("SCRIPT POST A post.sh\nSCRIPT DEFER 1 2 POST B x\nscript pre C x\nSCRIPT PRE POST D\r\n"
            "SCRIPT DEBUG f ALL DEFER 1 2 POST E x\nSCRIPT POST\nJOB F f.sub\n")
    assert _post_nodes(text) == {"A", "B", "D"}  # E: POST after the fifth word is not looked for
    assert _post_nodes("SCRIPT POST ALL_NODES x\nSCRIPT POST A x\n") is None
