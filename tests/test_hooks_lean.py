"""Hooks start thousands of times per DAG: the warm PRE and POST must import
neither scipy nor matplotlib (nor numpy, networkx, click, the DAG parser)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _hookutil import FIGURE1, post_macros, pre_macros, script_argv, substitute
from condor_rlrep.agent.config import AgentConfig
from condor_rlrep.store.location import create_store
from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.instrument import InstrumentOptions, instrument

# condor_rlrep.dag.graph (with .csr and .nxgraph) is allowed: the PRE computes φ′ with
# condor_rlrep.criticality (one implementation), which imports their names; they import none of these.
FORBIDDEN = ("scipy", "matplotlib", "numpy", "networkx", "click", "condor_rlrep.dag.parser", "condor_rlrep.dag.model", "condor_rlrep.bottlemod",
             "condor_rlrep.estimates", "tomllib",
             "zoneinfo")  # the default zone is UTC: no tz database needed (agent.state)


def _imported(argv: list[str], cwd: str) -> set[str]:
    """Modules a real hook executable imports (``python -X importtime``)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=cwd, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, check=False)
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "condor_rlrep.hooks.entry" in names, done.stderr[-2000:]
    return names


def test_warm_hooks_import_no_heavy_modules(tmp_path: Path) -> None:
    out = tmp_path / "o" / "fig.dag"
    # no exploration: a fresh store's greedy choice is one replica (with the
    # live epsilon the agent sometimes explores 2, and then needs the parser)
    create_store(str(tmp_path / "s.sqlite"), AgentConfig(max_replicas=3, epsilon_high=0.0, epsilon_low=0.0)).close()
    instrument(FIGURE1, out, InstrumentOptions(store=str(tmp_path / "s.sqlite"), policy="agent"))  # builds the cache
    argv, cwd = script_argv(out, "A", "PRE")
    pre_modules = _imported(substitute(argv, {"$JOB": "A", **pre_macros()}), cwd)
    assert "condor_rlrep.store.sqlite" in pre_modules and "condor_rlrep.criticality" in pre_modules
    # one replica (the greedy choice): the user's description plus
    # tags, no submit parser to load (htcondor2 is half of a PRE's CPU)
    assert "a=1 " in (Path(str(out) + ".rlrep") / "hooks.log").read_text()
    assert "htcondor2" not in pre_modules and "classad2" not in pre_modules
    w = EventLogWriter(str(out) + ".nodes.log")
    w.submit(5, 0, 1e9, "A")
    w.execute(5, 0, 1e9 + 1, "h")
    w.terminate(5, 0, 1e9 + 9, exit_code=0)
    argv, cwd = script_argv(out, "A", "POST")
    post_modules = _imported(substitute(argv, {"$JOB": "A", **post_macros(5, 1, 0)}), cwd)
    assert "condor_rlrep.outcome" in post_modules
    for modules in (pre_modules, post_modules):
        heavy = {m for m in modules if m.split(".")[0] in FORBIDDEN or m in FORBIDDEN}
        assert not heavy, heavy


def test_a_replicated_pre_checks_its_description_with_htcondor2(tmp_path: Path) -> None:
    out = tmp_path / "o" / "fig.dag"
    instrument(FIGURE1, out, InstrumentOptions(policy="fixed:2", always_pre=True))
    argv, cwd = script_argv(out, "A", "PRE")
    modules = _imported(substitute(argv, {"$JOB": "A", **pre_macros()}), cwd)
    assert "a=2 (fixed)" in (Path(str(out) + ".rlrep") / "hooks.log").read_text()
    assert "htcondor2" in modules and "condor_rlrep.store.sqlite" not in modules


def test_a_single_replica_post_of_a_fixed_policy_loads_no_bindings(tmp_path: Path) -> None:
    out = tmp_path / "o" / "fig.dag"
    instrument(FIGURE1, out, InstrumentOptions(policy="fixed:1", always_pre=True))
    argv, cwd = script_argv(out, "A", "PRE")
    assert "htcondor2" not in _imported(substitute(argv, {"$JOB": "A", **pre_macros()}), cwd)
    argv, cwd = script_argv(out, "A", "POST")
    modules = _imported(substitute(argv, {"$JOB": "A", **post_macros(5, 1, 0)}), cwd)
    assert "htcondor2" not in modules and "condor_rlrep.store.sqlite" not in modules


def test_a_model_post_that_flushes_the_spool_stays_lean(tmp_path: Path) -> None:
    from _hookutil import call_script
    from condor_rlrep.hooks.spool import spool_model

    out = tmp_path / "o" / "fig.dag"
    store = str(tmp_path / "s.sqlite")
    result = instrument(FIGURE1, out, InstrumentOptions(store=store, policy="model:3"))
    assert call_script(out, "A", "PRE", pre_macros()).returncode == 0
    spool_model(result.context, store, "d|r|X|0|1", [{"replica": 0, "start": 1e9, "end": 1e9 + 60, "ended_by":
                                                        "evicted", "keyboard_idle": 30.0}], "test")
    w = EventLogWriter(str(out) + ".nodes.log")
    w.submit(5, 0, 1e9, "A")
    w.execute(5, 0, 1e9 + 1, "h")
    w.terminate(5, 0, 1e9 + 9, exit_code=0)
    argv, cwd = script_argv(out, "A", "POST")
    modules = _imported(substitute(argv, {"$JOB": "A", **post_macros(5, 1, 0)}), cwd)
    assert "1 spooled update(s) flushed" in (Path(result.context) / "hooks.log").read_text().splitlines()[-1]
    assert "condor_rlrep.survival.model" in modules
    heavy = {m for m in modules if m.split(".")[0] in FORBIDDEN or m in FORBIDDEN}
    assert not heavy, heavy
