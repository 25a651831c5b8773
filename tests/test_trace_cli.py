"""``condor-rlrep trace generate|load|info`` through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from condor_rlrep.cli.main import main
from condor_rlrep.sim.trace_io import read_trace

DATA = Path(__file__).resolve().parent / "data" / "traces"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_generate_then_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "p"
    code, out, err = run(
        capsys, "trace", "generate", "--preset", "poisson", "--days", "2", "--seed", "4",
        "--set", "rooms.0.machines=20", "-o", str(out_dir),
    )  # fmt: skip
    assert code == 0, err
    assert "20 machines" in out
    trace = read_trace(out_dir)
    assert trace.machine_count == 20 and trace.length == 2 * 86400
    assert "seed 4" in trace.source

    code, out, err = run(capsys, "trace", "info", str(out_dir))
    assert code == 0, err
    assert f"logins     {trace.login_count}" in out and "Mon" in out

    code, out, _ = run(capsys, "trace", "info", "--json", str(out_dir))
    summary = json.loads(out)
    assert summary["machines"] == 20 and summary["logins"] == trace.login_count
    assert len(summary["logins_by_hour"]) == 24 and len(summary["jobs_by_weekday"]) == 7
    # Poisson preset, Monday start: per-hour rates over two days add up to the count per day.
    assert abs(sum(summary["logins_by_hour"]) - trace.login_count / 2) < 1e-6 * trace.login_count + 0.01


def test_generate_compressed_from_profile_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = Path(__file__).resolve().parents[1] / "condor_rlrep" / "data" / "profiles" / "poisson.toml"
    code, _, err = run(capsys, "trace", "generate", "--profile", str(profile), "--days", "1", "--compress", "-o", str(tmp_path / "g"))
    assert code == 0, err
    assert (tmp_path / "g" / "logins.csv.gz").is_file()


def test_load_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "trace", "load", "--format", "fta", str(DATA / "event_trace.tab"), "-o", str(tmp_path / "fta")
    )
    assert code == 0, err
    assert "3 machines, 3 logins, 0 jobs" in out
    code, out, err = run(
        capsys, "trace", "load", "--format", "condor-long", str(DATA / "condor_history.long"),
        "--machines", str(DATA / "machines.csv"), "--timezone", "Europe/London", "-o", str(tmp_path / "long"),
    )  # fmt: skip
    assert code == 0, err
    trace = read_trace(tmp_path / "long")
    assert trace.machine_count == 3 and trace.job_count == 3
    assert trace.start.tzinfo.key == "Europe/London"


def test_errors_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.swf"
    bad.write_text("1 2 3\n")
    code, out, err = run(capsys, "trace", "load", "--format", "swf", str(bad), "-o", str(tmp_path / "o"))
    assert code == 2 and f"{bad}:1: expected 18 SWF fields" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()

    code, _, err = run(capsys, "trace", "info", str(tmp_path / "nothing"))
    assert code == 2 and "not a trace folder" in err

    code, _, err = run(capsys, "trace", "generate", "--preset", "poisson", "--set", "nope=1", "-o", str(tmp_path / "x"))
    assert code == 2 and "no 'nope'" in err

    code, _, err = run(capsys, "trace", "generate", "-o", str(tmp_path / "x"))
    assert code == 2 and "exactly one of --preset or --profile" in err



def test_summary_rates_by_hand() -> None:
    from datetime import datetime, timezone

    import numpy as np

    from condor_rlrep.sim.trace import Trace
    from condor_rlrep.sim.trace_stats import summarize

    trace = Trace(
        start=datetime(2010, 1, 4, tzinfo=timezone.utc),  # a Monday
        length=2 * 86400.0,
        source="hand",
        machine_names=["a", "b"],
        machine_rooms=["r", "r"],
        active_watts=np.array([100.0, 100.0]),
        idle_watts=np.array([60.0, 60.0]),
        login_machine=np.array([0, 1, 0], dtype=np.int32),
        login_start=np.array([4 * 3600.0, 14 * 3600.0 + 5, 86400 + 14 * 3600.0]),
        login_end=np.array([5 * 3600.0, 15 * 3600.0 + 5, 86400 + 16 * 3600.0]),
        job_names=["1.0"],
        job_submit=np.array([86400 + 23 * 3600.0]),
        job_duration=np.array([120.0]),
    )
    summary = summarize(trace)
    assert summary["logins_by_hour"][14] == 1.0 and summary["logins_by_hour"][4] == 0.5
    assert sum(summary["logins_by_hour"]) == 1.5
    assert summary["logins_by_weekday"] == [2.0, 1.0, 0, 0, 0, 0, 0]
    assert summary["jobs_by_hour"][23] == 0.5 and summary["jobs_by_weekday"][1] == 1.0
    assert summary["occupancy"] == 4 * 3600 / (2 * 2 * 86400)
    assert summary["mean_session_minutes"] == 80.0 and summary["rooms"] == {"r": 2}


def test_an_existing_trace_is_replaced_only_with_force(tmp_path):
    """`trace generate -o DIR` used to replace a trace silently; other commands ask for --force."""
    import subprocess
    import sys
    from pathlib import Path

    cli = str(Path(sys.executable).parent / "condor-rlrep")
    args = [cli, "trace", "generate", "--preset", "poisson", "--days", "0.5", "-o", str(tmp_path / "t")]
    assert subprocess.run(args, capture_output=True, text=True).returncode == 0
    before = (tmp_path / "t" / "jobs.csv").read_bytes()
    again = subprocess.run([*args[:-4], "--seed", "7", *args[-4:]], capture_output=True, text=True)
    assert again.returncode == 2
    assert again.stderr == f"condor-rlrep: error: {tmp_path / 't'} holds a trace already: pass --force to replace it (or choose another -o)\n"
    assert (tmp_path / "t" / "jobs.csv").read_bytes() == before
    forced = subprocess.run([*args, "--seed", "7", "--force"], capture_output=True, text=True)
    assert forced.returncode == 0 and (tmp_path / "t" / "jobs.csv").read_bytes() != before
