"""What the real ``condor_dagman`` makes of a DAG file, without running it.

``condor_submit_dag -f -no_submit DAG`` writes ``DAG.condor.sub`` (and
refuses what it cannot submit: a missing CONFIG, an unknown keyword); the
``arguments`` and ``environment`` of that file are exactly how the schedd
would start DAGMan — they carry ``_CONDOR_DAGMAN_CONFIG_FILE`` when the DAG
has a CONFIG line. DAGMan is then started by hand with those, plus
``-Dot``: it parses the DAG (splices lifted, edges adjusted, DONE nodes
marked, REJECT honoured), writes its DOT file and exits before it touches
the schedd. The DOT file is DAGMan's own graph: every node (with its state:
``Done`` for a DONE node) and every edge, including the ``_condor_join_nodeN``
nodes a many-to-many PARENT/CHILD line makes, which :func:`collapse_joins`
folds back into direct edges so that two DAGs that say the same thing in
different PARENT lines compare equal. (SERVICE nodes are not in it.)

DAGMan writes a DOT file only when the DAG has a ``DOT`` line, and of
several the last one it reads wins. The DAG file itself is never changed:
DAGMan is pointed at a copy beside it (so that every relative path means
the same), which is the DAG's text followed by ``DOT <abs> OVERWRITE``.
(A wrapper that INCLUDEs the DAG would not do: DAGMan reads DOT lines in a
first pass and INCLUDE in a second, so a DOT line of the DAG would win.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

JOIN_PREFIX = "_condor_join_node"
"""DAGMan's join nodes; in a splice they are ``S+_condor_join_nodeN``."""
_NOISE = re.compile(r"Queue manager not initialized|DagmanClassad object is invalid|condor_rm -const DAGManJobId==-1")
_DOT_NODE = re.compile(r'^\s*"([^"]+)" \[shape=\w+ label="[^"]*\((\w+)\)"')
_DOT_EDGE = re.compile(r'^\s*"([^"]+)" -> "([^"]+)";')
_ERROR_LINE = re.compile(r"\b(ERROR|Error|error)\b|Exiting because of REJECT|Failed to parse|prohibited|Aborting")

Runner = Callable[..., CompletedProcess]


def split_condor_args(text: str) -> list[str]:
    """HTCondor's new argument syntax (the text inside the double quotes):
    blanks split, single quotes group, ``''`` inside them is one quote."""
    out: list[str] = []
    word: list[str] = []
    in_word = quoted = False
    i = 0
    while i < len(text):
        char = text[i]
        if quoted:
            if char == "'":
                if text[i + 1:i + 2] == "'":
                    word.append("'")
                    i += 1
                else:
                    quoted = False
            else:
                word.append(char)
        elif char == "'":
            quoted = in_word = True
        elif char.isspace():
            if in_word:
                out.append("".join(word))
                word, in_word = [], False
        else:
            word.append(char)
            in_word = True
        i += 1
    if in_word:
        out.append("".join(word))
    return out


def read_condor_sub(path: Path) -> tuple[list[str], dict[str, str]]:
    """DAGMan's command line and environment from a ``.condor.sub``."""
    arguments: list[str] = []
    environment: dict[str, str] = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        if key == "arguments":
            arguments = split_condor_args(value)
        elif key == "environment":
            for item in split_condor_args(value):
                name, _, text = item.partition("=")
                environment[name] = text
    return arguments, environment


@dataclass
class DagmanView:
    """DAGMan's verdict on a DAG file and, when it accepts it, its graph."""

    accepted: bool
    reason: str = ""
    """Why DAGMan (or condor_submit_dag) refused it: their error lines."""
    nodes: dict[str, str] = field(default_factory=dict)
    """Node → the state DAGMan gave it at start (``I``, or ``Done`` for DONE)."""
    edges: set[tuple[str, str]] = field(default_factory=set)


def read_dot(text: str) -> tuple[dict[str, str], set[tuple[str, str]]]:
    nodes: dict[str, str] = {}
    edges: set[tuple[str, str]] = set()
    for line in text.splitlines():
        edge = _DOT_EDGE.match(line)
        if edge:
            edges.add((edge.group(1), edge.group(2)))
            continue
        node = _DOT_NODE.match(line)
        if node:
            nodes[node.group(1)] = node.group(2)
    return nodes, edges


def collapse_joins(nodes: Mapping[str, str], edges: set[tuple[str, str]],
                   is_join: Callable[[str], bool] = lambda name: name.rpartition("+")[2].startswith(JOIN_PREFIX),
                   ) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """The graph without join nodes: each join's parents become parents of its children."""
    joins = {name for name in nodes if is_join(name)} | {n for e in edges for n in e if is_join(n)}
    parents: dict[str, set[str]] = {j: set() for j in joins}
    children: dict[str, set[str]] = {j: set() for j in joins}
    for parent, child in edges:
        if child in joins:
            parents[child].add(parent)
        if parent in joins:
            children[parent].add(child)

    def ends(join: str, table: dict[str, set[str]], seen: frozenset[str] = frozenset()) -> set[str]:
        found: set[str] = set()
        for name in table[join]:
            if name in joins:
                if name not in seen:
                    found |= ends(name, table, seen | {join})
            else:
                found.add(name)
        return found

    flat = {(p, c) for p, c in edges if p not in joins and c not in joins}
    for join in joins:
        flat |= {(p, c) for p in ends(join, parents) for c in ends(join, children)}
    return {n: s for n, s in nodes.items() if n not in joins}, flat


def dagman_parse(run: Runner, dag: Path, *, dot: Path | None = None, env: Mapping[str, str] | None = None,
                 timeout: float = 60) -> tuple[bool, str]:
    """DAGMan's verdict on ``dag`` (parsed from the DAG's directory, as
    ``condor_submit_dag`` there would start it, plus ``-Dot``) and what it
    said: ``.dagman.out``'s text when DAGMan ran, the errors otherwise.

    With ``dot``, DAGMan reads a copy of the DAG beside it that ends in
    ``DOT <dot> OVERWRITE``; without, the DAG itself (whatever files its
    DOT, NODE_STATUS_FILE and JOBSTATE_LOG lines name are then written:
    DAGMan writes all three before ``-Dot`` makes it exit).

    ``env`` is added to DAGMan's environment (``_CONDOR_DAGMAN_*`` knobs).
    ``run(argv, cwd=…, env=…)`` runs a command as the pool user with the
    pool's configuration (:meth:`_pool.Pool.run`, :func:`pool_runner`).
    """
    cwd = dag.parent
    submitted = run(["condor_submit_dag", "-f", "-no_submit", dag.name], cwd=cwd, timeout=timeout)
    if submitted.returncode != 0:
        return False, "condor_submit_dag: " + _errors(submitted.stdout + submitted.stderr)
    arguments, environment = read_condor_sub(cwd / f"{dag.name}.condor.sub")
    target = dag
    if dot is not None:
        target = cwd / f"{dag.name}.compat-dot.dag"
        text = dag.read_text(errors="surrogateescape")
        target.write_text(text + ("" if text.endswith("\n") or not text else "\n") + f'\nDOT "{dot}" OVERWRITE\n',
                          errors="surrogateescape")
        target.chmod(0o644)
    out = Path(f"{target}.dagman.out")
    for old in (out, Path(f"{target}.lock"), *([dot] if dot is not None else [])):
        old.unlink(missing_ok=True)
    argv = _retarget(arguments, target.name)
    environment = {**environment, **(env or {}), "_CONDOR_DAGMAN_LOG": out.name, "_CONDOR_MAX_DAGMAN_LOG": "0"}
    done = run(["condor_dagman", *argv, "-Dot"], cwd=cwd, env=environment, timeout=timeout)
    log = out.read_text(errors="replace") if out.exists() else ""
    if done.returncode != 0 or (dot is not None and not dot.exists()):
        reason = _errors(log or done.stdout + done.stderr).replace(target.name, dag.name)
        return False, reason or f"condor_dagman exited {done.returncode}"
    return True, log


def dagman_view(run: Runner, dag: Path, *, env: Mapping[str, str] | None = None, timeout: float = 60) -> DagmanView:
    """DAGMan's verdict on ``dag`` and, when it accepts it, its graph (its DOT file)."""
    dot = dag.parent / f"{dag.name}.compat.dot"
    accepted, said = dagman_parse(run, dag, dot=dot, env=env, timeout=timeout)
    if not accepted:
        return DagmanView(False, said)
    nodes, edges = read_dot(dot.read_text())
    return DagmanView(True, "", nodes, edges)


def _retarget(arguments: Sequence[str], dag: str) -> list[str]:
    argv = list(arguments)
    for flag, value in (("-Dag", dag), ("-Lockfile", f"{dag}.lock")):
        for index, token in enumerate(argv[:-1]):
            if token.lower() == flag.lower():
                argv[index + 1] = value
    return argv


def _errors(text: str) -> str:
    lines = [re.sub(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d(\.\d+)? ", "", line).strip()
             for line in text.splitlines() if _ERROR_LINE.search(line) and not _NOISE.search(line)]
    seen = dict.fromkeys(line for line in lines if line)
    return " | ".join(list(seen)[:4])


def pool_runner(pool: Any) -> Runner:
    """``pool.run`` without its shell wrapper: the command as the pool user
    (when root), with the pool's configuration first on PATH, as ``pool run``
    sets them. About 7 ms a call instead of 45: the compat suite makes
    more than a thousand."""
    import os
    import pwd
    import subprocess

    base = dict(os.environ)
    base["CONDOR_CONFIG"] = str(pool.dir / "etc" / "condor_config")
    base["PATH"] = f"{pool.dir / 'release' / 'bin'}:{pool.dir / 'release' / 'sbin'}:{base.get('PATH', '')}"
    switch: dict[str, Any] = {}
    if os.geteuid() == 0:
        entry = pwd.getpwnam(pool.user)
        switch = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        base.update(HOME=entry.pw_dir, USER=entry.pw_name, LOGNAME=entry.pw_name)

    def run(argv: Sequence[str], *, cwd: Path | str, timeout: float = 300,
            env: Mapping[str, str] | None = None) -> CompletedProcess:
        return subprocess.run(list(map(str, argv)), cwd=str(cwd), env={**base, **(env or {})}, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False, **switch)

    return run
