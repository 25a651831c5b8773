"""One vocabulary across every command (issue 16, "Consistent interface").

The first tests walk every command's ``--help`` and its click parameters, so a
new command or option that strays from the vocabulary fails here; the rest
run each behaviour the issue lists through the real CLI.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from condor_rlrep.cli.main import cli
from condor_rlrep.cli.params import Phi, Seconds
from condor_rlrep.criticality import DEFAULT_PHI, PHI_MODES

ROOT = Path(__file__).resolve().parents[1]
FIG1 = ROOT / "examples" / "figure1" / "figure1.dag"
BOTTLEMOD = ROOT / "examples" / "bottlemod" / "paper_50_50.toml"

# Commands that inspect or report: each has --json.
REPORTING = {
    "inspect", "export", "instrument", "simulate", "train", "sweep", "report", "status", "submit",
    "agent init", "agent show", "agent stats", "agent import", "agent migrate", "agent prune", "agent retention",
    "agent decide", "agent record", "agent flush", "trace generate", "trace load", "trace info",
    "bottlemod analyze", "bottlemod gain", "replay",
}
# Old spellings: hidden, still accepted.
RETIRED = {"--output", "--out-dir", "--phi-mode", "--replicas"}


def _walk(command, path=()):
    import click

    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            yield from _walk(command.get_command(ctx, name), (*path, name))
    else:
        yield " ".join(path), command


COMMANDS = dict(_walk(cli))


def run(*args, input=None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, prog_name="condor-rlrep")


def _options(command):
    import click

    return [p for p in command.params if isinstance(p, click.Option)]


def test_the_walk_finds_every_command():
    assert set(COMMANDS) >= REPORTING | {"hook pre", "hook post", "hook reaper", "agent reset", "agent export"}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_of_every_command(name):
    result = run(*name.split(), "--help")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Usage: condor-rlrep {name} ")
    short = run(*name.split(), "-h")
    assert short.exit_code == 0 and short.stdout == result.stdout


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_vocabulary_of_every_command(name):
    import click

    command = COMMANDS[name]
    shown = run(*name.split(), "--help").stdout
    for option in _options(command):
        flags = set(option.opts) | set(option.secondary_opts)
        if option.hidden:
            assert flags <= RETIRED, f"{name}: hidden option {flags} is not a retired spelling"
            continue
        assert not flags & RETIRED, f"{name}: {flags & RETIRED} is a retired spelling"
        assert option.help, f"{name} {option.opts}: no help text"
        # a default in prose ("(default 0.5)") is the other way of showing it: one way only
        assert not re.search(r"\(default\b", option.help), f"{name} {option.opts}: default in prose: {option.help}"
        if "--phi" in flags:
            assert isinstance(option.type, Phi) and option.type.minimum == 0.0 and option.default == DEFAULT_PHI
        if "--criticality" in flags:
            assert tuple(option.type.choices) == PHI_MODES
        if "--default-estimate" in flags:
            assert isinstance(option.type, Seconds)
        if "--out" in flags or "-o" in flags:
            assert option.opts[:2] == ["-o", "--out"] and option.metavar in ("FILE", "DIR"), name
        if "--json" in flags:
            assert option.is_flag and option.help.startswith("Print")
        if option.is_flag or option.count or option.multiple or option.required:
            continue
        default = option.get_default(click.Context(command), call=False)
        if default is not None and type(default).__name__ != "Sentinel":  # shown one way: [default: …]
            assert option.show_default or "[default:" in option.help, f"{name} {option.opts}: default not shown"
    if re.search(r"--phi\s", shown):
        assert f"[default: {DEFAULT_PHI:g}]" in shown
    has_json = any("--json" in o.opts for o in _options(command))
    assert has_json == (name in REPORTING), f"{name}: --json {'missing' if name in REPORTING else 'unexpected'}"


def test_phi_is_refused_the_same_way_everywhere(tmp_path):
    for bad in ("-0.5", "nan", "inf", "x"):
        for args in (["inspect", FIG1], ["instrument", FIG1, "-o", tmp_path / "o.dag"],
                     ["simulate", "--preset", "poisson"], ["train", "--preset", "poisson", "--store", tmp_path / "s"]):
            result = run(*args, "--phi", bad)
            assert result.exit_code == 2, (args, bad, result.output)
            assert result.stderr.startswith("condor-rlrep: error: Invalid value for '--phi'"), result.stderr
    assert not (tmp_path / "o.dag").exists() and not (tmp_path / "s").exists()


def test_default_estimate_takes_a_duration_wherever_estimates_are_taken(tmp_path):
    dag = tmp_path / "bare.dag"
    dag.write_text("JOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\n")
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    table = run("inspect", dag, "--default-estimate", "10m", "--json")
    assert table.exit_code == 0, table.output
    assert json.loads(table.stdout)["critical_path_seconds"] == 1200.0
    made = run("instrument", dag, "-o", tmp_path / "out.dag", "--default-estimate", "1.5h", "--policy", "fixed:2")
    assert made.exit_code == 0, made.output
    settings = json.loads((tmp_path / "out.dag.rlrep" / "hooks.json").read_text())
    assert settings["default_estimate"] == 5400.0 and settings["phi"] == DEFAULT_PHI
    bad = run("instrument", dag, "-o", tmp_path / "o2.dag", "--default-estimate", "10 minutes")
    assert bad.exit_code == 2 and "'--default-estimate'" in bad.stderr


def test_missing_estimates_hint_names_the_flags(tmp_path):
    dag = tmp_path / "bare.dag"
    dag.write_text("JOB A a.sub\n")
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    result = run("instrument", dag, "-o", tmp_path / "o.dag", "--policy", "fixed:1")
    assert result.exit_code == 2
    assert "--estimates FILE" in result.stderr and "--default-estimate DURATION" in result.stderr


def test_criticality_is_one_flag_and_the_old_name_still_works():
    new = run("inspect", FIG1, "--criticality", "current")
    old = run("inspect", FIG1, "--phi-mode", "current")
    assert new.exit_code == old.exit_code == 0
    assert new.stdout == old.stdout and "φ″ decides" in new.stdout
    assert "--phi-mode is deprecated; use --criticality" in old.stderr and not new.stderr
    both = run("inspect", FIG1, "--phi-mode", "current", "--criticality", "balanced")
    assert both.exit_code == 2 and "not both" in both.stderr


def _settings(path: Path) -> dict:
    return json.loads((path.parent / (path.name + ".rlrep") / "hooks.json").read_text())


def test_instrument_takes_rl_R_like_simulate(tmp_path):
    store = tmp_path / "agent.sqlite"
    out = tmp_path / "o.dag"
    result = run("instrument", FIG1, "-o", out, "--policy", "rl:3", "--store", store, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["dag"] == str(out) and report["store_created"] and "epsilon-greedy, 1..3 replicas" in report["store_note"]
    assert _settings(out)["max_replicas"] == 3 and _settings(out)["policy"] == "agent"
    ucb = run("instrument", FIG1, "-o", tmp_path / "u.dag", "--policy", "rl-ucb1:4", "--store", tmp_path / "u.sqlite")
    assert ucb.exit_code == 0 and "created now (ucb1, 1..4 replicas" in ucb.stdout
    for args, words in ((["--policy", "rl:3", "--max-replicas", "2"], ("rl:3", "--max-replicas is 2")),
                        (["--policy", "fixed:3", "--max-replicas", "2"], ("fixed:3", "--max-replicas 2")),
                        (["--policy", "oracle:3"], ("clairvoyant",)),
                        (["--policy", "rl:0"], ("1..100",))):
        refused = run("instrument", FIG1, "-o", tmp_path / "x.dag", "--store", store, *args)
        assert refused.exit_code == 2, (args, refused.output)
        assert refused.stderr.startswith("condor-rlrep: error: ") and all(w in refused.stderr for w in words)
    assert not (tmp_path / "x.dag").exists()


def test_instrument_command_line_wins_over_config_file_over_defaults(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('phi = 0.9\ncriticality = "current"\npolicy = "fixed:2"\n')
    run("instrument", FIG1, "-o", tmp_path / "a.dag", "--config", config)
    assert (_settings(tmp_path / "a.dag")["phi"], _settings(tmp_path / "a.dag")["criticality"]) == (0.9, "current")
    run("instrument", FIG1, "-o", tmp_path / "b.dag", "--config", config, "--phi", "0.2", "--criticality", "balanced")
    assert (_settings(tmp_path / "b.dag")["phi"], _settings(tmp_path / "b.dag")["criticality"]) == (0.2, "balanced")
    run("instrument", FIG1, "-o", tmp_path / "c.dag", "--policy", "fixed:2")
    assert _settings(tmp_path / "c.dag")["phi"] == DEFAULT_PHI == 0.5


def test_old_output_spellings_are_kept_and_warn(tmp_path):
    dax = ROOT / "tests" / "data"
    source = next(iter(sorted(dax.glob("*.json"))), None) or next(iter(sorted(dax.rglob("*.dax"))))
    old = run("export", source, "--out-dir", tmp_path / "e1")
    new = run("export", source, "-o", tmp_path / "e2")
    assert old.exit_code == new.exit_code == 0, old.output
    assert "--out-dir is deprecated; use -o/--out" in old.stderr
    assert sorted(p.name for p in (tmp_path / "e1").iterdir()) == sorted(p.name for p in (tmp_path / "e2").iterdir())
    made = run("instrument", FIG1, "--output", tmp_path / "i.dag", "--policy", "single")
    assert made.exit_code == 0 and (tmp_path / "i.dag").is_file() and "--output is deprecated" in made.stderr
    missing = run("export", source)
    assert missing.exit_code == 2 and "Missing option '-o' / '--out'" in missing.stderr
    quiet = CliRunner().invoke(cli, ["-q", "export", str(source), "--out-dir", str(tmp_path / "e3")])
    assert quiet.exit_code == 0 and not quiet.stderr


def test_train_max_replicas_and_its_old_name(tmp_path):
    from _simutil import poisson_trace
    from condor_rlrep.store.sqlite import load_agent
    from condor_rlrep.sim.trace_io import write_trace

    trace = poisson_trace(np.random.default_rng(3), machines=10, rate=1 / 5000, length=1e5, session=1200, jobs=10,
                          job_length=900, job_window=(0, 5e4))
    write_trace(trace, tmp_path / "t")
    base = ["train", "--trace", tmp_path / "t", "--fraction", "0.5"]
    assert run(*base, "--store", tmp_path / "a.sqlite", "--max-replicas", "4").exit_code == 0
    old = run(*base, "--store", tmp_path / "b.sqlite", "--replicas", "2")
    assert old.exit_code == 0 and "--replicas is deprecated; use --max-replicas" in old.stderr
    assert load_agent(str(tmp_path / "a.sqlite")).config.max_replicas == 4
    assert load_agent(str(tmp_path / "b.sqlite")).config.max_replicas == 2
    both = run(*base, "--store", tmp_path / "c.sqlite", "--replicas", "2", "--max-replicas", "3")
    assert both.exit_code == 2 and not (tmp_path / "c.sqlite").exists()


def test_json_outputs_are_one_object(tmp_path):
    trace = tmp_path / "tr"
    generated = run("trace", "generate", "--preset", "poisson", "--days", "0.2", "-o", trace, "--json")
    assert generated.exit_code == 0, generated.output
    doc = json.loads(generated.stdout)
    assert doc["trace"] == str(trace) and doc["machines"] > 0 and doc["days"] == pytest.approx(0.2)
    gain = run("bottlemod", "gain", BOTTLEMOD, "whole", "resource:cpu", "--factor", "2", "--json")
    assert gain.exit_code == 0, gain.output
    gained = json.loads(gain.stdout)
    assert gained["makespan_before"] - gained["makespan_after"] == pytest.approx(gained["gain"])
    infinite = json.loads(run("bottlemod", "gain", BOTTLEMOD, "whole", "resource:cpu", "--json").stdout)
    assert infinite["fully_relieved"] is True and "factor" not in infinite  # JSON has no inf
    for text in (generated.stdout, gain.stdout):
        assert text.count("\n") == 1


def test_one_error_style():
    usage = run("inspect", FIG1, "--bogus")
    assert usage.exit_code == 2 and usage.stderr.splitlines()[0].startswith("condor-rlrep: error: No such option")
    assert "Usage:" not in usage.stderr and "(see 'condor-rlrep inspect --help')" in usage.stderr
    missing = run("inspect", "/nonexistent.dag")
    assert missing.exit_code == 2 and missing.stderr.startswith("condor-rlrep: error: ")
    library = run("inspect", ROOT / "pyproject.toml")
    assert library.exit_code == 2 and library.stderr.startswith("condor-rlrep: error: ")
    assert library.stderr.count("\n") == 1 and "Traceback" not in library.stderr
    unknown = run("frobnicate")
    assert unknown.exit_code == 2 and unknown.stderr.startswith("condor-rlrep: error: No such command")


def test_error_style_of_the_installed_executable(tmp_path):
    exe = shutil.which("condor-rlrep") or str(Path(sys.executable).with_name("condor-rlrep"))
    if not Path(exe).exists():
        pytest.skip("condor-rlrep executable not installed")
    done = subprocess.run([exe, "export", str(FIG1)], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("condor-rlrep: error: Missing option '-o' / '--out'")
    piped = subprocess.run(f"'{exe}' inspect '{FIG1}' --json --indent 2 | head -c 10", shell=True,
                           capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stdout == '{\n  "criti' and "Traceback" not in piped.stderr
    ok = subprocess.run([exe, "--version"], capture_output=True, text=True)
    assert ok.returncode == 0 and "condor-rlrep" in ok.stdout


def test_hook_help_prints_help():
    for hook in ("pre", "post", "reaper"):
        result = run("hook", hook, "--help")
        assert result.exit_code == 0 and f"Usage: condor-rlrep hook {hook}" in result.stdout
        assert "--ctx=DIR" in result.stdout  # the form the hooks take (issue 24 item 17: not "--ctx DIR")
        if hook != "reaper":
            assert "--macros=" in result.stdout


def test_agent_reset_answered_no_changes_nothing(tmp_path):
    store = tmp_path / "s.sqlite"
    assert run("agent", "init", "--store", store).exit_code == 0
    decided = run("agent", "decide", "--store", store, "--hour", "3", "--phi-prime", "0.2", "--json")
    decision = json.loads(decided.stdout)["decision_id"]
    no = run("agent", "reset", "--store", store, input="n\n")
    assert no.exit_code == 0 and "nothing changed" in no.stdout
    eof = run("agent", "reset", "--store", store, input="")  # stdin at its end: say -y, not "Aborted."
    assert eof.exit_code == 2 and "Aborted" not in eof.stderr
    assert eof.stderr.startswith("condor-rlrep: error: no answer on stdin; nothing changed (pass -y to reset")
    assert json.loads(run("agent", "stats", "--store", store, "--json").stdout)["decisions"] == 1
    default = run("agent", "reset", "--store", store, input="\n")  # the default answer is no
    assert default.exit_code == 0 and "nothing changed" in default.stdout
    yes = run("agent", "reset", "--store", store, input="y\n")
    assert yes.exit_code == 0 and "reset agent store" in yes.stdout
    assert json.loads(run("agent", "stats", "--store", store, "--json").stdout)["decisions"] == 0
    assert run("agent", "reset", "--store", store, "--yes").exit_code == 0
    assert decision == 1


def test_agent_hints_name_the_flag(tmp_path):
    store = tmp_path / "s.sqlite"
    run("agent", "init", "--store", store)
    again = run("agent", "init", "--store", store)
    assert again.exit_code == 2 and "pass --force" in again.stderr
    assert run("agent", "init", "--store", store, "--force").exit_code == 0
    run("agent", "decide", "--store", store, "--hour", "3", "--phi-prime", "0.2")
    dump = tmp_path / "d.json"
    old = run("agent", "export", "--store", store, "--output", dump)
    assert old.exit_code == 0 and dump.is_file() and "--output is deprecated" in old.stderr
    full = run("agent", "import", "--store", store, dump)
    assert full.exit_code == 2 and "pass --replace" in full.stderr
    replaced = run("agent", "import", "--store", store, dump, "--replace", "--json")
    assert replaced.exit_code == 0 and json.loads(replaced.stdout)["imported"] == 1
    for bad in ("nan", "inf"):
        refused = run("agent", "decide", "--store", store, "--hour", "3", "--phi-prime", bad)
        assert refused.exit_code == 2 and "'--phi-prime'" in refused.stderr


def test_verbose_and_quiet_set_the_log_level(tmp_path):
    logger = logging.getLogger("condor_rlrep")
    dag = tmp_path / "bare.dag"
    dag.write_text("JOB A a.sub\n")
    try:
        loud = run("-v", "inspect", dag)
        assert loud.exit_code == 0 and logger.level == logging.INFO
        assert "condor-rlrep: warning: 1 node has no runtime estimate" in loud.stderr
        quiet = run("-q", "inspect", dag)
        assert quiet.exit_code == 0 and logger.level == logging.ERROR and quiet.stderr == ""
        assert "A" in quiet.stdout
        run("-vv", "inspect", dag)
        assert logger.level == logging.DEBUG
    finally:
        run("inspect", FIG1)
    assert logger.level == logging.WARNING


def test_an_unreachable_postgresql_store_is_named_once(tmp_path):
    url = "postgresql://rlrep:secret@127.0.0.1:1/rlrep"  # nothing listens on port 1
    shown = "postgresql://rlrep@127.0.0.1:1/rlrep"
    pytest.importorskip("psycopg")
    for args in (["instrument", FIG1, "-o", tmp_path / "o.dag", "--store", url, "--dagman-version", "25.14.0"],
                 ["agent", "stats", "--store", url]):
        result = run(*args)
        assert result.exit_code == 2, result.output
        line = result.stderr.splitlines()[0]
        assert line.count(shown) == 1 and "secret" not in result.stderr, line
