"""The ``status`` checkpoint: resuming from it gives exactly what a cold read
gives, and a checkpoint that is not this run's current format — older,
corrupt, cut, written for another DAG — is ignored, never trusted."""

from __future__ import annotations

import hashlib
import json
import marshal
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from _runreport import RECORDED, replay, rlrep, trained_store

pytestmark = pytest.mark.skipif(not RECORDED.is_dir(), reason=f"recorded runs absent: {RECORDED}")

NOW = 1_900_000_000.0


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(path))
    return path


def status_of(dag: Path, *, checkpoint: bool) -> dict:
    from condor_rlrep.runreport.load import RunReader
    from condor_rlrep.runreport.status import run_status

    return run_status(RunReader(dag, use_checkpoint=checkpoint).read(now=NOW)).to_json()


def checkpoint_file(cache: Path) -> Path:
    (path,) = (cache / "condor-rlrep" / "status").glob("*.ckpt")
    return path


class _Codec:
    """encode/decode under this user's checkpoint key (the tests write what an attacker could not)."""

    def __init__(self, cache: Path):
        from condor_rlrep.runreport import checkpoint

        self.module = checkpoint
        self.key = (cache / "condor-rlrep" / "status" / "key").read_bytes()

    def encode(self, state: object) -> bytes:
        return self.module.encode(state, self.key)  # type: ignore[arg-type]

    def decode(self, data: bytes) -> dict:
        return self.module.decode(data, self.key)


def without_now(text: str) -> dict:
    data = json.loads(text)
    data.pop("now")
    return data


def event_ends(log: bytes) -> list[int]:
    ends, at = [], 0
    while (found := log.find(b"\n...\n", at)) >= 0:
        at = found + 5
        ends.append(at)
    return ends


@pytest.mark.parametrize("scenario", ["eviction", "replicas-first-wins", "retry-and-pre-failure"])
def test_status_after_appended_events_equals_a_cold_read_of_the_whole_log(
        scenario: str, tmp_path: Path, cache: Path) -> None:
    store = trained_store(tmp_path / "store" / "agent.sqlite", prefer=2)
    dag = replay(scenario, tmp_path / "run", estimate=30, store=store)
    log = Path(str(dag) + ".nodes.log")
    whole = log.read_bytes()
    cold = status_of(dag, checkpoint=False)
    assert cold["nodes"] and not cache.exists()
    # every event boundary: the checkpoint saved there, then the rest of the log appended
    # (clusters whose POST had ended are summaries in it; an event for one starts over)
    for end in [0, *event_ends(whole)]:
        log.write_bytes(whole[:end])
        first = status_of(dag, checkpoint=True)
        assert status_of(dag, checkpoint=True) == first  # resumed, nothing appended
        log.write_bytes(whole)
        assert status_of(dag, checkpoint=True) == cold, f"checkpoint saved at byte {end}"
        assert status_of(dag, checkpoint=True) == cold
        checkpoint_file(cache).unlink()


def test_a_checkpoint_of_another_format_dag_or_corrupt_is_ignored(tmp_path: Path, cache: Path) -> None:
    from condor_rlrep.runreport import load

    store = trained_store(tmp_path / "store" / "agent.sqlite", prefer=1)
    dag = replay("eviction", tmp_path / "ev", estimate=30, store=store)
    cold_text = rlrep("status", str(dag), "--json").stdout
    cold = without_now(cold_text)
    assert cold["nodes"][0]["state"] == "done" and cold["nodes"][0]["winner"] == 0
    path = checkpoint_file(cache)
    good = path.read_bytes()
    codec = _Codec(cache)
    state = codec.decode(good)
    assert state["version"] == load.CHECKPOINT_VERSION

    def lying(**changes: object) -> dict:
        """This run's checkpoint, but claiming A's cluster is still running with no winner."""
        fake = codec.decode(good)
        (entry,) = fake["nodelog"]["clusters"]
        summary = list(entry[6])
        summary[4], summary[6], summary[7], summary[8] = None, [[0, "running"]], None, 1
        fake["nodelog"]["clusters"] = [(*entry[:6], summary)]
        fake.update(changes)
        return fake

    # the lie itself, well-formed and current, is believed: the checks below are what stop it
    path.write_bytes(codec.encode(lying()))
    believed = without_now(rlrep("status", str(dag), "--json").stdout)
    assert believed["nodes"][0]["winner"] is None and believed != cold

    other = tmp_path / "other.rlrep.dag"
    variants = {
        "older version": codec.encode(lying(version=load.CHECKPOINT_VERSION - 1)),
        "another Python": codec.encode(lying(python=[2, 7])),
        "another DAG": codec.encode(lying(dag=str(other))),
        "another node log": codec.encode(lying(nodelog={**lying()["nodelog"], "path": str(other) + ".nodes.log"})),
        "a pickle (the old format)": pickle.dumps({"version": 2, "nodelog": None}),
        "corrupt payload": good[:-10] + bytes(b ^ 0x55 for b in good[-10:]),
        "cut short": good[: len(good) // 2],
        "digest of another payload": codec.module._MAGIC + b"0" * 64 + b"\n" + codec.encode(lying()).split(b"\n", 2)[2],
        "not a dict": codec.encode(["not", "a", "state"]),  # type: ignore[arg-type]
        # what anyone can compute without the key (issue 24 item 5: the old format believed it)
        "an unkeyed SHA-256 of the lie": (codec.module._MAGIC + hashlib.sha256(marshal.dumps(lying())).hexdigest().encode()
                                          + b"\n" + marshal.dumps(lying())),
        "the lie under another key": codec.module.encode(lying(), b"k" * 32),
        "empty": b"",
    }
    for what, data in variants.items():
        path.write_bytes(data)
        done = rlrep("status", str(dag), "--json")
        assert done.returncode == 0, (what, done.stderr)
        assert without_now(done.stdout) == cold, what
        assert codec.decode(path.read_bytes())["version"] == load.CHECKPOINT_VERSION, what  # rewritten
    table = rlrep("status", str(dag)).stdout
    path.unlink()
    assert rlrep("status", str(dag)).stdout.splitlines()[2:] == table.splitlines()[2:]


def test_a_warm_status_of_an_unchanged_log_does_not_import_the_bindings(tmp_path: Path, cache: Path) -> None:
    store = trained_store(tmp_path / "store" / "agent.sqlite", prefer=1)
    dag = replay("eviction", tmp_path / "ev", estimate=30, store=store)
    probe = ("import sys; from condor_rlrep.runreport.load import RunReader;"
             "from condor_rlrep.runreport.status import run_status;"
             f"run_status(RunReader({str(dag)!r}, use_checkpoint=True).read());"
             "print('htcondor2' in sys.modules)")

    def imported() -> str:
        return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()

    assert imported() == "True"  # cold: read through htcondor2.JobEventLog
    assert imported() == "False"  # warm, nothing appended
    with open(Path(str(dag) + ".nodes.log"), "ab") as handle:  # an event appended: read through the bindings
        handle.write(b"000 (099.000.000) 2026-05-28 20:26:41 Job submitted from host: <127.0.0.1:9618>\n"
                     b'    [ DAGNodeName = "A"; JobBatchName = "x" ]\n...\n')
    assert imported() == "True"
