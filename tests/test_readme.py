"""The README's set-up commands are the ones CI and users actually run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fenced_commands(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S)]


def test_ci_runs_the_readme_test_command_verbatim():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_commands = [c for c in _fenced_commands(readme) if "pytest" in c]
    assert test_commands, "README has no test command"
    assert test_commands[0] in ci.splitlines()


def test_readme_main_job_names_a_shipped_experiment():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    main_job = _fenced_commands(readme)[0]
    match = re.search(r"condor-rlrep sweep (\S+)", main_job)
    assert match, main_job
    assert (ROOT / "condor_rlrep" / "data" / "experiments" / f"{match.group(1)}.toml").exists()
