"""``--version`` names what a bug report needs (ours, Python, the HTCondor
bindings, the condor_dagman on PATH); a misspelled command gets a suggestion;
shell completion, as the README documents it, completes commands."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import htcondor2

from condor_rlrep import __version__

CLI = str(Path(sys.executable).parent / "condor-rlrep")


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60, env={**os.environ, **env})


def test_version_names_ours_the_bindings_and_dagman(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "condor_dagman"
    fake.parent.mkdir()
    fake.write_bytes(b"\x7fELF...$CondorVersion: 25.14.0 2026-01-01 BuildID: 1 $...")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    done = run("--version", PATH=f"{fake.parent}:{os.environ['PATH']}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"condor-rlrep {__version__}"
    assert lines[1].startswith("Python 3.")
    bindings = htcondor2.version().split()[1]
    assert lines[2] == f"htcondor2 bindings {bindings}"
    assert lines[3] == f"condor_dagman 25.14.0 (the version stamp in {fake})"


def test_version_without_dagman_says_what_instrument_needs(tmp_path: Path) -> None:
    done = run("--version", PATH=str(tmp_path))
    assert done.returncode == 0
    assert done.stdout.splitlines()[-1] == "condor_dagman: not found on PATH (instrument then needs --dagman-version)"


def test_misspelled_commands_get_a_suggestion() -> None:
    done = run("simualte")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "condor-rlrep: error: No such command 'simualte'. Did you mean 'simulate'?"
    sub = run("agent", "shwo")
    assert "Did you mean 'show'?" in sub.stderr
    unknown = run("zzz")
    assert "Did you mean" not in unknown.stderr and unknown.returncode == 2


def test_bash_completion_completes_commands_and_options() -> None:
    script = run(_CONDOR_RLREP_COMPLETE="bash_source")
    assert script.returncode == 0 and "complete -o nosort -F _condor_rlrep_completion condor-rlrep" in script.stdout
    words = run(_CONDOR_RLREP_COMPLETE="bash_complete", COMP_WORDS="condor-rlrep sim", COMP_CWORD="1")
    assert words.stdout.split() == ["plain,simulate"]
    options = run(_CONDOR_RLREP_COMPLETE="bash_complete", COMP_WORDS="condor-rlrep sweep --jo", COMP_CWORD="2")
    assert "plain,--jobs" in options.stdout.split()
