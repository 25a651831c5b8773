"""Every command the README shows, run as a user would (a few in a small
variant, each saying why), in a scratch folder with its own HOME; and a
check that the README shows no command this file does not know, so a new
one cannot go untested.

The main job runs verbatim in a fresh copy of the checkout with a fresh
virtual environment (``pip install .``), as the README's first command.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLI = str(Path(sys.executable).parent / "condor-rlrep")


def fenced() -> list[str]:
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S):
        lines += [re.split(r"\s+# ", line)[0].strip() for line in block.strip().splitlines() if line.strip()]
    return lines


def inline() -> list[str]:
    prose = re.sub(r"```.*?```", "", README, flags=re.S)
    return sorted({" ".join(m.split()) for m in re.findall(r"`(condor-rlrep [^`]*)`", prose)})


def is_template(command: str) -> bool:
    """A syntax line (``FILE``, ``[--json]``, ``a\\|b``, ``…``), not a command to run."""
    return bool(re.search(r"\[|…|\\\||\b[A-Z][A-Z_.]+\b", command.replace("CR(W)", "")))


# README command -> what this file runs for it, and why when it differs
SETUP = "python3 -m venv .venv && . .venv/bin/activate && pip install . && "
MAIN = SETUP + "condor-rlrep sweep paper-figure1 --quick --jobs 2 --out results/quick"
TESTS = "python3 -m venv .venv && . .venv/bin/activate && pip install '.[test]' && python -m pytest -n 4 --dist loadscope"
ELSEWHERE = {
    TESTS: "tests/test_readme.py: .ci/run runs it verbatim (running the suite inside the suite would recurse)",
    "condor-rlrep sweep paper-figure1 --jobs 2": "the full grid (~40 min): run as the main job's --quick, which resumes",
    "python sim/calibration/fidelity.py": "tests/test_fidelity_script.py",
}
NO_SUBMIT = "no schedd here: -no_submit writes the .condor.sub only (tests/test_pool_submit.py submits on a pool)"


def scratch(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A user's folder with figure1 as my.dag, a HOME of its own and a
    condor_dagman on PATH (instrument reads its version stamp)."""
    work = tmp_path / "user"
    shutil.copytree(ROOT / "examples" / "figure1", work)
    (work / "figure1.dag").rename(work / "my.dag")
    fake = tmp_path / "bin" / "condor_dagman"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho '$CondorVersion: 25.14.0 2026-01-01 BuildID: test $'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONDOR_RLREP_", "XDG_"))}
    env.update(HOME=str(tmp_path / "home"), PATH=f"{Path(CLI).parent}:{fake.parent}:{env['PATH']}",
               RLREP_PROGRESS_INTERVAL="3600")
    (tmp_path / "home").mkdir()
    return work, env


def sh(command: str, cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def test_the_readme_shows_no_command_this_file_does_not_run() -> None:
    known = set(RUN) | set(ELSEWHERE) | {MAIN} | set(POSTGRES)
    concrete = [c for c in fenced() + inline() if not is_template(c)]
    assert concrete, "no commands found in the README"
    unknown = [c for c in concrete if c not in known]
    assert not unknown, f"README commands no test runs (add them to tests/test_readme_commands.py): {unknown}"


def test_every_syntax_line_names_real_commands() -> None:
    for line in [c for c in inline() if is_template(c)]:
        words = line.split()[1:]
        if not words or words[0].startswith("-") or words[0] == "CMD":
            continue
        for name in words[0].replace("\\", "").split("|"):
            path = [name]
            if len(words) > 1 and re.fullmatch(r"[a-z]+(\\?\|[a-z]+)*", words[1]) and name in ("agent", "trace", "bottlemod", "hook"):
                for sub in words[1].replace("\\", "").split("|"):
                    done = subprocess.run([CLI, name, sub, "--help"], capture_output=True, text=True, timeout=60)
                    assert done.returncode == 0, f"{line}: {name} {sub}: {done.stderr}"
                continue
            done = subprocess.run([CLI, *path, "--help"], capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, f"{line}: {done.stderr}"


# In the README's order within each section; each entry: (what to run, why it differs or "").
RUN: dict[str, tuple[str, str]] = {
    "condor-rlrep --version": ("condor-rlrep --version", ""),
    "condor-rlrep trace generate --preset newcastle-2010 --days 28 --seed 1 -o trace/": (
        "condor-rlrep trace generate --preset newcastle-2010 --days 28 --seed 1 -o trace/", ""),
    "condor-rlrep simulate --trace trace/ --workflow figure1 --fraction 0.1 --policy fixed:3 --phi 0.1 --json": (
        "condor-rlrep simulate --trace trace/ --workflow figure1 --fraction 0.1 --policy fixed:3 --phi 0.1 --json", ""),
    "condor-rlrep train --trace trace/ --max-replicas 3 --phi 0.1 --store agent.sqlite": (
        "condor-rlrep train --trace trace/ --max-replicas 3 --phi 0.1 --store agent.sqlite", ""),
    "condor-rlrep train --trace trace/ --max-replicas 3 --phi 0.5 --store ~/agent.sqlite": (
        "condor-rlrep train --trace trace/ --max-replicas 3 --phi 0.5 --store ~/agent.sqlite", ""),
    "condor-rlrep instrument my.dag -o run/my.rlrep.dag --phi 0.5 --store ~/agent.sqlite": (
        "condor-rlrep instrument my.dag -o run/my.rlrep.dag --phi 0.5 --store ~/agent.sqlite", ""),
    "condor-rlrep submit run/my.rlrep.dag -maxjobs 50": (
        "condor-rlrep submit run/my.rlrep.dag -maxjobs 50 -no_submit", NO_SUBMIT),
    "condor-rlrep instrument my.dag -o run/my.rlrep.dag --submit --submit-args '-maxjobs 50'": (
        "condor-rlrep instrument my.dag -o run2/my.rlrep.dag --submit --submit-args '-maxjobs 50 -no_submit'",
        NO_SUBMIT + "; another -o, the first copy exists"),
    "condor-rlrep status run/my.rlrep.dag --watch": (
        "condor-rlrep status replayed/run/test.rlrep.dag --watch",
        "a run DAGMan has finished (a recorded real run replayed through the hooks): --watch stops by itself"),
    "condor-rlrep report run/my.rlrep.dag -o my-report": (
        "condor-rlrep report replayed/run/test.rlrep.dag -o my-report", "the same recorded run"),
    "condor-rlrep report sim/results/beyond --tuning-seed 1": (
        "condor-rlrep report beyond --tuning-seed 1", "a copy: the committed report stays as it is"),
}
POSTGRES = {
    "condor-rlrep agent init --store postgresql://rlrep@db.example/rlrep",
    "condor-rlrep agent migrate --from ~/.local/share/condor-rlrep/agent.sqlite --to postgresql://rlrep@db.example/rlrep",
    "condor-rlrep train --trace trace/ --max-replicas 3 --store postgresql://rlrep@db.example/rlrep --replace",
}


@pytest.mark.slow
def test_the_readme_commands_run(tmp_path: Path) -> None:
    from _runreport import RECORDED, replay

    work, env = scratch(tmp_path)
    if RECORDED.is_dir():
        dag = replay("eviction", work / "replayed", estimate=30)
        assert dag == work / "replayed" / "run" / "test.rlrep.dag", dag
    shutil.copytree(ROOT / "sim" / "results" / "beyond", work / "beyond")
    for readme, (command, why) in RUN.items():
        if "replayed/" in command and not RECORDED.is_dir():
            continue
        done = sh(command, work, env)
        if readme.startswith("condor-rlrep simulate"):
            assert json.loads(done.stdout)["policy"] == "fixed:3"
    assert (tmp_path / "home" / "agent.sqlite").exists()
    assert (work / "run" / "my.rlrep.dag.condor.sub").exists() and (work / "run2" / "my.rlrep.dag.condor.sub").exists()
    assert (work / "beyond" / "report.md").exists()


@pytest.mark.postgres
def test_the_readme_postgresql_commands_run(tmp_path: Path, pg_url: str) -> None:
    work, env = scratch(tmp_path)
    sh("condor-rlrep trace generate --preset poisson --days 2 --seed 1 -o trace/", work, env)
    sh("condor-rlrep agent init", work, env)  # the default store migrate reads from
    for command in sorted(POSTGRES, key=lambda c: 0 if "agent init" in c else 1 if "migrate" in c else 2):
        # the README's example server is a placeholder: the tests' own throw-away one instead
        variant = command.replace("postgresql://rlrep@db.example/rlrep", shlex.quote(pg_url))
        if "agent init" in command:
            variant += " --force"  # migrate creates the schema too; init first, as the README
        sh(variant, work, env)


@pytest.mark.slow
def test_the_main_job_runs_verbatim_in_a_fresh_clone_and_venv(tmp_path: Path) -> None:
    """The README's first command, as written, in a copy of the checkout's
    tracked files with a new virtual environment."""
    clone = tmp_path / "clone"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file():
            target = clone / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = ":".join(p for p in env["PATH"].split(":") if not p.startswith(str(ROOT)))
    done = sh(MAIN, clone, env, timeout=1800)
    assert "27 runs: 27 ran (17 simulations)" in done.stdout
    report = (clone / "results" / "quick" / "report.md").read_text()
    assert "Table 1" in report and "The paper's findings against ours" in report
