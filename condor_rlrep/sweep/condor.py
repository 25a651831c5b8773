"""The ``condor`` sweep backend: a DAG that fans the runs out over a pool.

The DAG (written with HTCondor's own ``htcondor2.dags``) has one ``prepare``
node that builds the shared trace, one node per unfinished simulation (a
:class:`~condor_rlrep.sweep.experiment.RunGroup`: a φ-independent policy is
simulated once for all its φ), and a ``merge`` node that renders the
report. Every path in the DAG and its submit files is absolute, so
``condor_submit_dag`` works from any directory. Every node calls our own CLI on the
sweep folder, so the pool writes exactly the result files the local backend
writes and ``condor-rlrep report`` reads them the same way. The folder must
be on a file system the execute points share with the access point (the
usual set-up for a campus pool); jobs run in the ``vanilla`` universe.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from condor_rlrep.sweep.experiment import Experiment, group_runs
from condor_rlrep.sweep.store import SweepDir

__all__ = ["write_condor_sweep", "cli_executable"]

DAG_FILE_NAME = "sweep.dag"


def cli_executable() -> str:
    """Absolute path of the ``condor-rlrep`` script of this installation."""
    beside_python = Path(sys.executable).with_name("condor-rlrep")
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("condor-rlrep")
    return str(Path(found).resolve()) if found else str(beside_python)


def write_condor_sweep(
    experiment: Experiment,
    out: SweepDir,
    *,
    experiment_file: Path,
    request_memory_mb: int = 3072,
    executable: str | None = None,
) -> Path:
    """Write ``OUT/condor/sweep.dag`` and its submit files; return the DAG path.

    Runs already finished in ``OUT`` get no node, so re-submitting after a
    partial sweep only does the rest. A folder of another trace is refused
    here, before anything is written; every node's own call checks again.
    """
    import htcondor2
    import htcondor2.dags as dags

    from condor_rlrep.sweep.execute import open_sweep

    # The trace is the prepare node's job (on the pool), not the submit host's.
    open_sweep(experiment, out, trace=False)
    root = out.root.resolve()
    exe = executable or cli_executable()
    quick = ["--quick"] if experiment.quick else []
    common = ["sweep", str(Path(experiment_file).resolve()), "--backend", "local", "--out", str(root), *quick]
    logs = root / "condor" / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    def description(name: str, arguments: list[str], memory_mb: int) -> htcondor2.Submit:
        return htcondor2.Submit(
            {
                "universe": "vanilla",
                "executable": exe,
                "arguments": _condor_arguments(arguments),
                "initialdir": str(root),
                "getenv": "PATH,PYTHONPATH,HOME,LANG,TZ",
                "should_transfer_files": "NO",
                "request_cpus": "1",
                "request_memory": str(memory_mb),
                "log": str(logs / f"{name}.log"),
                "output": str(logs / f"{name}.$(Cluster).$(Process).out"),
                "error": str(logs / f"{name}.$(Cluster).$(Process).err"),
            }
        )

    condor_dir = root / "condor"

    def submit_file(name: str, arguments: list[str], memory_mb: int) -> Path:
        # Written by us and named by absolute path in the DAG: the DAG
        # writer would name it relative to the DAG's folder.
        path = condor_dir / f"{name}.sub"
        path.write_text(str(description(name, arguments, memory_mb)), encoding="utf-8")
        return path

    dag = dags.DAG()
    prepare = dag.layer(name="prepare", submit_description=submit_file("prepare", [*common, "--prepare-only"], request_memory_mb))
    todo = group_runs([spec for spec in experiment.runs() if not out.is_done(spec)])
    merge_parent = prepare
    if todo:
        merge_parent = prepare.child_layer(
            name="run",
            submit_description=submit_file("run", [*common, "--only", "$(run_ids)"], request_memory_mb),
            vars=[{"run_ids": ",".join(group.run_ids)} for group in todo],
            retries=2,
        )
    merge_parent.child_layer(name="merge", submit_description=submit_file("merge", ["report", str(root)], 1024))
    return dags.write_dag(dag, condor_dir, dag_file_name=DAG_FILE_NAME)


def _condor_arguments(arguments: list[str]) -> str:
    """The new-style (double-quoted) ``arguments`` syntax of submit files."""
    quoted = []
    for arg in arguments:
        escaped = arg.replace('"', '""').replace("'", "''")
        quoted.append(f"'{escaped}'" if any(c in arg for c in " \t'") else escaped)
    return '"' + " ".join(quoted) + '"'


def describe_submit(dag_path: Path) -> str:
    """The command a user runs to start the sweep on a pool."""
    return f"condor_submit_dag {shlex.quote(str(dag_path))}"
