"""The idle-ranked policies give the same run on every CPU: numpy's SIMD
level must not pick among machines of equal idle time (docs/simulator.md §6)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


CLI = str(Path(sys.executable).with_name("condor-rlrep"))


def _has_x86_v3() -> bool:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # numpy's layout changed: cannot tell
        return False
    return bool(__cpu_features__.get("X86_V3"))


@pytest.mark.skipif(not _has_x86_v3(), reason="needs a CPU with numpy's X86_V3 (AVX2) paths to switch off")
def test_model_policy_runs_the_same_with_and_without_avx2(tmp_path):
    # 7 days of the Newcastle year: the nightly 17:00/18:00 room closings end
    # many sessions at one second, so equal idle times straddle the replicas'
    # last place; numpy's argpartition (the old rule) chose differently here
    tasks = []
    for name, disabled in (("native", None), ("baseline", "X86_V3")):
        env = dict(os.environ)
        env.pop("NPY_DISABLE_CPU_FEATURES", None)
        if disabled:
            env["NPY_DISABLE_CPU_FEATURES"] = disabled
        out = tmp_path / name
        subprocess.run([CLI, "simulate", "--preset", "newcastle-2010",
                        "--trace-seed", "2010", "--days", "7", "--policy", "model:3", "--seed", "1", "-o", str(out)],
                       check=True, env=env, capture_output=True)
        tasks.append((out / "tasks.csv").read_bytes())
    assert tasks[0] == tasks[1]
