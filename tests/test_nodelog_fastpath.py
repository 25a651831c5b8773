"""The status reader's fast path (issue 28): the bindings' private next/getter
give what the public iterator gives, a release without them falls back, the
compact events replay to the history the events themselves rebuild to, and
``status`` keeps no histories it does not show."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.condor.eventlog import read_events, rebuild_cluster
from condor_rlrep.runreport import nodelog
from condor_rlrep.runreport.clusters import ClusterEvents, CompactEvents
from condor_rlrep.runreport.nodelog import NodeLog

REAL = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "eventlogs" / "real-dagman"
LOGS = sorted([*REAL.glob("**/*.nodes.log"), *REAL.glob("**/*.job.log")]) if REAL.is_dir() else []
needs_real = pytest.mark.skipif(not LOGS, reason=f"real DAGMan logs absent: {REAL}")


def _read(path: Path) -> NodeLog:
    log = NodeLog(str(path))
    log.update()
    return log


def _picture(log: NodeLog) -> tuple:
    return (
        {c: (e.node, list(e.events or ()), e.post_code, e.post_time, e.abort_reasons, e.summary())
         for c, e in log.clusters.items()},
        log.noops, log.preskips, log.events_read, log.offset,
    )


@needs_real
@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(REAL)))
def test_private_and_public_paths_read_the_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert nodelog._private_api() is not None  # the bindings as today: the fast path is what runs
    fast = _read(path)
    monkeypatch.setattr(nodelog, "_PRIVATE", None)  # a release without the private functions
    public = _read(path)
    assert fast.events_read > 0
    assert _picture(fast) == _picture(public)


@needs_real
def test_a_reader_without_the_expected_attributes_takes_the_public_iterator(monkeypatch: pytest.MonkeyPatch) -> None:
    path = REAL / "eviction" / "test.dag.nodes.log"
    whole = _read(path)

    class Opaque:
        """A JobEventLog whose inner attributes are not as today."""

        def __init__(self, inner: object) -> None:
            self._inner = inner

        def events(self, stop_after: int) -> object:
            return self._inner.events(stop_after)  # type: ignore[attr-defined]

        def __getstate__(self) -> object:
            return self._inner.__getstate__()  # type: ignore[attr-defined]

    opened = nodelog._open_reader
    monkeypatch.setattr(nodelog, "_open_reader", lambda p, o: Opaque(opened(p, o)))
    assert nodelog._fast_next(Opaque(opened(str(path), 0))) is None
    assert _picture(_read(path)) == _picture(whole)


@needs_real
@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(REAL)))
def test_compact_events_replay_to_the_history_of_the_events(path: Path) -> None:
    events = list(read_events(str(path)))
    for cluster, entry in _read(path).clusters.items():
        expect = rebuild_cluster(events, cluster)
        got = entry.history()
        if got.node is None or expect.node is None:
            got.node = expect.node = None  # the compact history takes the node from the entry
        expect.keyboard_idle.clear()  # the compact events keep no job-ad-information values
        got.event_count = expect.event_count = 0  # 016/PRE_SKIP are not kept as events
        assert got == expect, cluster


def test_compact_events_round_trip_and_refuse_the_old_layout() -> None:
    events = CompactEvents([(0, 0, 10.0, "A"), (1, 0, 11.5, "slot1@h"), (5, 0, 20.0, 0), (4, 1, 21.0, 1023)])
    assert list(events) == [(0, 0, 10.0, "A"), (1, 0, 11.5, "slot1@h"), (5, 0, 20.0, 0), (4, 1, 21.0, 1023)]
    assert CompactEvents.from_state(events.to_state()) == events
    entry = ClusterEvents(7, "A", events)
    assert ClusterEvents.from_state(entry.to_state()).events == events
    # checkpoint format 4 kept one [type, proc, time, value] list per event: refused, not misread
    with pytest.raises((ValueError, TypeError)):
        CompactEvents.from_state([[0, 0, 10.0, "A"], [1, 0, 11.5, "slot1@h"], [5, 0, 20.0, 0]])
    with pytest.raises((ValueError, TypeError)):
        ClusterEvents.from_state((7, "A", [[0, 0, 10.0, "A"], [5, 0, 20.0, 0]], None, None, [], None))


@needs_real
def test_status_keeps_summaries_and_rebuilds_a_history_only_when_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                      ) -> None:
    from _runreport import replay, trained_store

    from condor_rlrep.runreport.load import RunReader

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    store = trained_store(tmp_path / "store" / "agent.sqlite", prefer=1)
    dag = replay("eviction", tmp_path / "ev", estimate=30, store=store)
    data = RunReader(dag, use_checkpoint=True).read()
    entries = list(data.nodelog.clusters.values())
    assert entries and all(e._history is None for e in entries)  # status: no history kept
    report = RunReader(dag).read()
    for (node, items), (_, again) in zip(sorted(data.attempts.items()), sorted(report.attempts.items())):
        for a, b in zip(items, again):
            assert a.summary == b.summary
            assert a.history == b.history, node  # rebuilt on first read, equal to report's


_KINDS = st.sampled_from([0, 1, 2, 4, 5, 7, 9, 12, 13, 16, 24, 28, 6])
_VALUES = st.one_of(st.none(), st.sampled_from(["", "A", "slot1_1@h1", "slot2@h2", "h3"]),
                    st.sampled_from([0, 1, 2, -9, 1023, 1009, 3]))


@settings(max_examples=400, deadline=None)
@given(records=st.lists(st.tuples(_KINDS, st.integers(0, 3), st.integers(0, 8).map(float), _VALUES), max_size=40),
       node=st.sampled_from([None, "", "N"]))
def test_the_lean_summary_is_the_summary_of_the_replayed_history(records: list, node: str | None) -> None:
    """``status``'s summary (runs as tuples, no history kept) equals
    :func:`summarize` of the history ``report`` rebuilds, on any records."""
    from condor_rlrep.runreport.clusters import proc_states, summarize

    lean = ClusterEvents(7, node, CompactEvents(records), keep_history=False)
    full = ClusterEvents(7, node, CompactEvents(records))
    assert lean.summary() == summarize(full.history(), proc_states(full.events)) == full.summary()
    assert lean._history is None
