"""Progress without a terminal: log lines every interval with done/total,
rate and ETA (hand-computed against a fake clock)."""

from __future__ import annotations

import io

from condor_rlrep.cli.progress import Progress, duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_log_lines_every_interval_with_rate_and_eta() -> None:
    stream, clock = io.StringIO(), Clock()
    with Progress("sweep x", 20, "runs", stream=stream, interval=30, clock=clock) as progress:
        progress.skip(5)  # found finished: counted, not in the rate
        progress.announce("20 runs: 5 already finished, 15 to run")
        clock.now += 10
        progress.update(1)  # 10 s < 30 s: no line yet
        clock.now += 50  # 60 s elapsed, 3 runs done now -> 3 runs/min, 12 left -> 240 s
        progress.update(2)
        clock.now += 60
    lines = stream.getvalue().splitlines()
    assert lines == [
        "condor-rlrep: sweep x: 20 runs: 5 already finished, 15 to run",
        "condor-rlrep: sweep x: 8/20 runs (40 %), 3 runs/min, ETA 4 min",
        "condor-rlrep: sweep x: 8/20 runs (40 %) in 2 min",
    ]


def test_percent_work_and_no_line_on_failure() -> None:
    stream, clock = io.StringIO(), Clock()
    try:
        with Progress("simulate", 100.0, "%", stream=stream, interval=0, clock=clock) as progress:
            clock.now += 30
            progress.update(25.0)  # 25 % in 30 s: 50 %/min, 75 % left -> 90 s, said as 2 min
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert stream.getvalue().splitlines() == ["condor-rlrep: simulate: 25 % done, 50 %/min, ETA 2 min"]


def test_duration_precision() -> None:
    assert [duration(s) for s in (12.4, 89, 600, 5399, 9000)] == ["12 s", "89 s", "10 min", "90 min", "2.5 h"]


def test_on_a_terminal_a_bar_and_the_announcement_on_a_line_of_its_own() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    with Progress("sweep x", 5, "runs", stream=stream) as progress:
        progress.skip(1)  # the bar is drawn before the plan is known
        progress.announce("5 runs: 1 already finished, 4 to run")
        progress.update(4)
    text = stream.getvalue()
    assert "\r\x1b[Kcondor-rlrep: sweep x: 5 runs: 1 already finished, 4 to run\n" in text  # the bar's line cleared first
    assert text.rstrip().endswith("100%\x1b[?25h")
