"""Generate, write and read a Newcastle-scale year; print medians and counts.

    /work/venv/bin/python benchmarks/bench_trace.py [--days 365] [--repeat 3] [--preset newcastle-2010]

Targets (issue 5): a generated year in ≲ 20 s (ideally a few s); reading a
year (≈1.23 M logins, ≈562 k jobs) in a few seconds; issue 28: ≤ 0.3 s per
read after the first (the binary copy beside the trace, trace_cache.py).
Read times are CPU seconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from condor_rlrep.sim import logins, trace_cache
from condor_rlrep.sim.generator import generate_trace
from condor_rlrep.sim.trace_io import read_trace, write_trace


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median CPU seconds of ``fn`` (the machine is shared: wall time is noise)."""
    times, result = [], None
    for _ in range(repeat):
        began = time.process_time()
        result = fn()
        times.append(time.process_time() - began)
    return statistics.median(times), result


def _parsed(folder: Path) -> Any:
    """A read that parses the CSV: the binary copy is removed first."""
    (folder / trace_cache.CACHE_NAME).unlink(missing_ok=True)
    return read_trace(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="newcastle-2010")
    parser.add_argument("--days", type=float, default=365.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    began = time.perf_counter()
    first = generate_trace(args.preset, days=args.days, seed=0)
    cold = time.perf_counter() - began  # includes the one-off login-rate calibration
    gen, trace = timed(lambda: generate_trace(args.preset, days=args.days, seed=1), args.repeat)
    print(f"preset {args.preset}, {args.days:g} days")
    print(f"  machines {trace.machine_count:,}  logins {trace.login_count:,}  jobs {trace.job_count:,}")
    print(f"  (seed 0: logins {first.login_count:,}, jobs {first.job_count:,})")
    print(f"generate: first call {cold:.2f} s wall (with calibration), then median {gen:.2f} CPU-s")
    with tempfile.TemporaryDirectory() as tmp:
        for compress in (False, True):
            out = Path(tmp) / ("gz" if compress else "plain")
            write_s, _ = timed(lambda: write_trace(trace, out, compress=compress), args.repeat)
            size = sum(p.stat().st_size for p in out.iterdir())
            parse_s, back = timed(lambda: _parsed(out), args.repeat)
            assert back.login_count == trace.login_count and back.job_count == trace.job_count
            cached_s, again = timed(lambda: read_trace(out), args.repeat)  # the copy the first read left
            assert (again.job_duration == trace.job_duration).all() and list(again.job_names) == list(back.job_names)
            label = "csv.gz" if compress else "csv   "
            print(f"{label}: write median {write_s:.2f} s, {size / 1e6:.1f} MB; read: parse (first read, writes "
                  f"the copy) median {parse_s:.2f} CPU-s, later reads median {cached_s:.2f} CPU-s "
                  f"(×{parse_s / cached_s:.1f})")
    print(f"calibration cache: {logins._calibrated_scale.cache_info()}")


if __name__ == "__main__":
    main()
