"""The journal reader's records: what ``json`` reads, with shared strings."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.rundir.journal import _parse

values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=80),
                   st.lists(st.integers(), max_size=3))
records = st.dictionaries(st.text(max_size=10), values, max_size=6).map(
    lambda extra: {**extra, "v": 1, "node": extra.get("node") if isinstance(extra.get("node"), str) else "N"})


@settings(max_examples=200, deadline=None)
@given(st.lists(records, max_size=8))
def test_records_equal_what_json_reads(documents):
    data = "".join(json.dumps(d) + "\n" for d in documents).encode("utf-8", "surrogatepass")
    got, skipped = _parse(data)
    assert skipped == 0
    assert got == [json.loads(json.dumps(d)) for d in documents]
    assert [list(r) for r in got] == [list(json.loads(json.dumps(d))) for d in documents]  # key order kept


def test_lines_share_their_keys_and_short_values():
    # a big run's journal repeats the same keys and run ids in every line: held once, not per line
    line = {"v": 1, "hook": "PRE", "node": "A", "run_id": "4242@1780000000", "long": "x" * 65}
    got, _ = _parse(b"".join(json.dumps({**line, "node": f"N{i}"}).encode() + b"\n" for i in range(2)))
    first, second = ({k: k for k in r} for r in got)
    assert all(first[key] is second[key] for key in first)
    assert got[0]["run_id"] is got[1]["run_id"] and got[0]["hook"] is got[1]["hook"]
    assert got[0]["long"] == got[1]["long"]
