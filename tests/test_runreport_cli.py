"""``condor-rlrep status`` / ``report``: bad input, the terminal table, --watch,
the --schedd seam, the sweep-folder form of ``report``, and the HTML report
rendered in headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from _runreport import RECORDED, replay, rlrep, trained_store

needs_recorded = pytest.mark.skipif(not RECORDED.is_dir(), reason=f"recorded runs absent: {RECORDED}")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(path))
    return path


@pytest.fixture
def evicted(tmp_path: Path, cache: Path) -> tuple[Path, Path]:
    """The recorded eviction run replayed through the hooks: (instrumented DAG, store)."""
    if not RECORDED.is_dir():
        pytest.skip(f"recorded runs absent: {RECORDED}")
    store = trained_store(tmp_path / "store" / "agent.sqlite", prefer=1)
    return replay("eviction", tmp_path / "ev", estimate=30, store=store), store


def files_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def refused(*args: str, expect: str) -> None:
    done = rlrep(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("condor-rlrep: error: "), done.stderr
    assert expect in lines[0], lines[0]


# -- bad input: one line, exit 2, nothing written ------------------------------------------

@needs_recorded
def test_bad_inputs_are_one_line_exit_2_and_write_nothing(tmp_path: Path, evicted: tuple[Path, Path],
                                                          cache: Path) -> None:
    dag, store = evicted
    work = dag.parent.parent
    plain = work / "test.dag"
    before = files_under(tmp_path)
    for command in ("status", "report"):
        refused(command, str(plain), expect=f"{plain}: not an instrumented DAG")
        refused(command, str(work / "nope.dag"), expect="no such DAG file")
    refused("status", str(work), expect="is a directory")

    # instrumented, never submitted
    (work / "fresh.dag").write_text('JOB A A.sub\nVARS A rlrep_estimate="5"\n')
    assert rlrep("instrument", str(work / "fresh.dag"), "-o", str(work / "fresh.rlrep.dag"),
                 "--policy", "fixed:1").returncode == 0
    before = files_under(tmp_path)
    for command in ("status", "report"):
        refused(command, str(work / "fresh.rlrep.dag"), expect="the run never started")

    log = Path(str(dag) + ".nodes.log")
    whole = log.read_bytes()
    log.write_bytes(whole[:-40])  # the last event cut short, DAGMan has exited
    for command in ("status", "report"):
        refused(command, str(dag), expect="truncated node log: the last event")
    middle = len(whole) // 2
    log.write_bytes(whole[:middle] + b"not an event\n" + whole[middle:])
    refused("status", str(dag), expect=f"{log}: cannot parse the event at byte")
    log.write_bytes(whole)

    moved = store.parent / "moved.sqlite"
    store.rename(moved)
    for command in ("status", "report"):
        refused(command, str(dag), expect=f"the agent store {store}")
    assert files_under(tmp_path) == (before - {"store/agent.sqlite"}) | {"store/moved.sqlite"}
    assert not cache.exists()


def test_report_of_a_folder_is_the_sweep_report_and_refuses_dag_options(tmp_path: Path) -> None:
    done = rlrep("report", str(tmp_path), "--run", "x")
    assert done.returncode == 2 and "apply to a DAG run" in done.stderr


# -- the table, --watch, --schedd --------------------------------------------------------

@needs_recorded
def test_status_table_totals_and_rows(evicted: tuple[Path, Path], cache: Path) -> None:
    dag, _ = evicted
    done = rlrep("status", str(dag))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == str(dag)
    # the time DAGMan exited, not the time of this call (issue 23 item 16)
    assert "DAGMan 14 exited 0 at 11:12:25  (status at " in lines[1], lines[1]
    # s(W) 11:11:39 (PRE) to ".. 11:12:25 .. EXITING WITH STATUS 0"; deadline s(W) + 2·30 s;
    # slack: the deadline less A's end (its POST's 016 at 11:12:20)
    assert "started 11:11:39  elapsed 46s  deadline 11:12:39" in lines[2] and "slack +19s" in lines[2]
    assert "nodes 1: done 1" in lines[3]
    assert "replicas: 1 decided, 0 running, 0 idle, 0 held, 0 removed, 1 evictions" in lines[4]
    row = next(line for line in lines if line.startswith("A "))
    # RUN IDLE HELD REMOVED EVICT (HELD is its own column: issue 23 item 16)
    assert row.split()[:10] == ["A", "done", "greedy", "1", "0", "0", "0", "0", "1", "16.0"]
    assert cache.exists()  # a successful status keeps its checkpoint
    again = rlrep("status", str(dag))  # resumed from it: the same answer
    assert again.stdout.splitlines()[2:] == lines[2:]


@needs_recorded
def test_watch_stops_by_itself_once_dagman_has_exited(evicted: tuple[Path, Path]) -> None:
    dag, _ = evicted
    done = rlrep("status", str(dag), "--watch", "0.2", "--json")
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 1 and json.loads(done.stdout)["dagman"] == "exited 0"


@needs_recorded
def test_schedd_state_overlays_the_node_log_through_one_seam(evicted: tuple[Path, Path]) -> None:
    from condor_rlrep.runreport.clusters import CompactEvents
    from condor_rlrep.runreport.load import RunReader
    from condor_rlrep.runreport.queue import QueueError, schedd_queue
    from condor_rlrep.runreport.status import run_status

    dag, _ = evicted
    data = RunReader(dag).read()
    entry = data.nodelog.clusters[16]
    entry.events = CompactEvents([e for e in entry.events if e[0] not in (5,)])  # as if the job had not ended yet
    entry._history = entry._summary = None

    class FakeSchedd:
        def __init__(self) -> None:
            self.asked: list[str] = []

        def query(self, constraint: str, projection: list[str]) -> list[dict[str, int]]:
            self.asked.append(constraint)
            return [{"ClusterId": 16, "ProcId": 0, "JobStatus": 5}]

    fake = FakeSchedd()
    queue = schedd_queue(data, connect=lambda name: fake)
    assert fake.asked == ["ClusterId == 16"] and queue == {(16, 0): 5}
    data.attempts["A"][-1].history = entry.history()
    data.attempts["A"][-1].cluster_summary = entry.summary()
    data.attempts["A"][-1].post_code = None
    (node,) = run_status(data, queue=queue).nodes
    assert (node.state, node.held, node.running) == ("held", 1, 0)

    def broken(name: str | None) -> object:
        raise RuntimeError("Failed to connect to schedd")

    with pytest.raises(QueueError, match="cannot query the local schedd: Failed to connect"):
        schedd_queue(data, connect=broken)


# -- the HTML, rendered ------------------------------------------------------------------

def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@needs_recorded
@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium (chromium, chromium-browser, google-chrome)")
def test_html_report_renders_in_headless_chromium(evicted: tuple[Path, Path], tmp_path: Path) -> None:
    dag, _ = evicted
    out = tmp_path / "report"
    assert rlrep("report", str(dag), "-o", str(out)).returncode == 0
    browser = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={tmp_path / 'profile'}"]
    page = (out / "report.html").as_uri()
    dom = subprocess.run([*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True)
    text = dom.stdout
    for expected in ("Replicas of test.rlrep.dag", "p(W) = makespan / CR(W) − 1 (eq. 1)", "deadline met",
                     "<td>A</td>", "vm (slot1_1@vm)", "Replicas on their slots",
                     "Agent policy in the states this run visited"):
        assert expected in text, expected
    images = [name for name in os.listdir(out) if name.endswith(".svg")]
    assert len(images) == 2 and all(f"src=\"{name}\"" in text or f"src='{name}'" in text for name in images)
    shot = tmp_path / "shot.png"
    subprocess.run([*browser, "--window-size=1200,2400", f"--screenshot={shot}", page], capture_output=True,
                   timeout=120, check=True)
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] == 2400
    # the figures drew: many distinct colours (a page of text alone has a few grey levels)
    colours = {tuple(p) for p in (pixels[::7, ::7, :3] * 255).astype(int).reshape(-1, 3)}
    assert len(colours) > 200


@needs_recorded
def test_checkpoint_follows_appended_events_and_a_new_dagman(evicted: tuple[Path, Path], cache: Path) -> None:
    from condor_rlrep.condor.eventlog_writer import EventLogWriter

    dag, _ = evicted
    log = Path(str(dag) + ".nodes.log")
    first = json.loads(rlrep("status", str(dag), "--json").stdout)
    assert first["nodes"][0]["state"] == "done"
    # an event for the finished (and so compacted) cluster 16, and a new cluster of A appended
    writer = EventLogWriter(str(log))
    writer.execute(16, 0, first["now"], "late")
    writer.submit(17, 0, first["now"], "A")
    writer.execute(17, 0, first["now"] + 1, "other", slot=3)
    again = json.loads(rlrep("status", str(dag), "--json").stdout)
    (node,) = again["nodes"]
    assert node["cluster"] == 17 and node["state"] == "running" and node["running"] == 1
    # a new DAGMan truncates the node log: the checkpoint starts over
    whole = log.read_bytes()
    log.write_bytes(whole[: whole.index(b"...\n") + 4])  # just cluster 16's submit
    fresh = json.loads(rlrep("status", str(dag), "--json", "--all").stdout)
    assert fresh["nodes"][0]["cluster"] == 16 and fresh["nodes"][0]["procs"] == 1
