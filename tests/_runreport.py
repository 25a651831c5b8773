"""Replay a recorded real DAGMan run through the real hooks, as if it had been instrumented.

``../shared/data/eventlogs/real-dagman/<scenario>`` holds what HTCondor 25.14
wrote for a plain DAG. :func:`replay` copies the scenario, instruments its
DAG with the real ``condor-rlrep instrument``, and then, node by node in the
order DAGMan ran them, grows the instrumented DAG's node log from the
recorded one and calls the real PRE hook (at the recorded PRE time, with
the node log as it stood then) and the real POST hook (once the node's
cluster had left the queue) — so the context, the journal and the store
hold exactly what a live run would have left. The recorded ``.dagman.out``
becomes the instrumented DAG's.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO.parent / "shared" / "data" / "eventlogs" / "real-dagman"
CLI = str(Path(sys.executable).parent / "condor-rlrep")

_EVENT = re.compile(rb"^(\d{3}) \((\d+)\.(\d+)\.\d+\) (\S+ \S+) ", re.MULTILINE)


def rlrep(*args: str, env: dict[str, str] | None = None, cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, env=full, cwd=cwd, check=False)


def events(log: bytes) -> list[tuple[int, int, int, int, float]]:
    """(start byte, end byte, type, cluster, time) of each recorded event."""
    starts = list(_EVENT.finditer(log))
    out = []
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(log)
        at = datetime.strptime(match.group(4).decode(), "%Y-%m-%d %H:%M:%S").timestamp()
        out.append((match.start(), end, int(match.group(1)), int(match.group(2)), at))
    return out


def trained_store(path: Path, prefer: int, max_replicas: int = 3) -> Path:
    """A store whose agent prefers ``prefer`` replicas in every state, with no exploration."""
    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.agent.config import AgentConfig
    from condor_rlrep.store.sqlite import SqliteStore

    agent = Agent(AgentConfig(max_replicas=max_replicas, schedule="fixed", epsilon_low=0.0), rng=0)
    for state in range(agent.n_states):
        agent.learn(state, prefer, 1.0)
    path.parent.mkdir(parents=True, exist_ok=True)
    SqliteStore.save_agent(str(path), agent)
    return path


def _script_argv(dag_text: str, kind: str, node: str) -> list[str] | None:
    """The hook's argv of the instrumented DAG's SCRIPT line (None: a node instrument left alone)."""
    for line in dag_text.splitlines():
        parts = shlex.split(line)
        if len(parts) > 3 and parts[0] == "SCRIPT" and parts[1] == kind and parts[2] == node:
            return parts[4:]
    return None


def _recorded_calls(scenario: Path, first_day: str) -> list[tuple[str, str, float, list[str]]]:
    """(PRE|POST, node, time, DAGMan's argv values) from scripts.out."""
    calls = []
    for line in (scenario / "scripts.out").read_text().splitlines():
        stamp, _, rest = line.partition(" ")
        values = re.findall(r"\[([^\]]*)\]", rest)
        label = values[1]
        kind, node = label.split("_", 1)
        at = datetime.strptime(f"{first_day} {stamp}", "%Y-%m-%d %H:%M:%S").timestamp()
        calls.append((kind, node, at, values[2:]))
    return calls


def replay(name: str, work: Path, *, estimate: float = 10.0, phi: float = 1.0, store: Path | None = None,
           policy: str | None = None) -> Path:
    """The instrumented copy of recorded scenario ``name``, replayed (see the module doc)."""
    from condor_rlrep.hooks.post import run_post
    from condor_rlrep.hooks.pre import run_pre

    source = RECORDED / name
    work.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.is_file() and item.suffix in (".sub", ".sh") or item.name == "scripts.out":
            shutil.copy(item, work / item.name)
    text = [line for line in (source / "test.dag").read_text().splitlines() if not line.startswith("SCRIPT")]
    text.append(f'VARS ALL_NODES rlrep_estimate="{estimate:g}"')
    (work / "test.dag").write_text("\n".join(text) + "\n")
    args = ["instrument", str(work / "test.dag"), "-o", str(work / "run" / "test.rlrep.dag"), "--phi", f"{phi:g}"]
    if store is not None:
        args += ["--store", str(store)]
    if policy is not None:
        args += ["--policy", policy]
    done = rlrep(*args, cwd=work)
    assert done.returncode == 0, done.stderr
    dag = work / "run" / "test.rlrep.dag"
    dag_text = dag.read_text()
    recorded = (source / "test.dag.nodes.log").read_bytes()
    marks = events(recorded)
    first_day = datetime.fromtimestamp(marks[0][4]).strftime("%Y-%m-%d")
    log = Path(str(dag) + ".nodes.log")
    node_of: dict[int, str] = {}
    for start, end, _kind, cluster, _at in marks:
        found = re.search(rb'DAGNodeName = "([^"]+)"', recorded[start:end])
        if found and cluster not in node_of:
            node_of[cluster] = found.group(1).decode()

    def grow_to(byte: int) -> None:
        log.write_bytes(recorded[:byte])

    cwd = os.getcwd()
    os.chdir(work)
    try:
        for kind, node, at, values in _recorded_calls(work, first_day):
            clusters = [c for c, n in node_of.items() if n == node]
            script = _script_argv(dag_text, kind, node)
            if script is None:
                continue
            if kind == "PRE":
                # the node log as it stood when DAGMan ran this PRE: up to the node's first submit
                firsts = [s for s, _e, k, c, _a in marks if c in clusters and k == 0]
                grow_to(firsts[0] if firsts else len(recorded))
                retry, max_retries, dagid = values[1], values[2], values[3]
                argv = [v.replace("$JOB", node).replace("$RETRY", retry).replace("$MAX_RETRIES", max_retries)
                        .replace("$DAGID", dagid) for v in script]
                assert run_pre(argv, now=at) == 0
            else:
                # up to the node's 016 (DAGMan writes it after POST ends)
                posts = [s for s, _e, k, c, _a in marks if c in clusters and k == 16]
                grow_to(posts[0] if posts else len(recorded))
                retry, dagid, jobid, cluster, ret, success = values[1], values[3], values[6], values[7], values[8], values[9]
                subst = {"$JOB": node, "$RETRY": retry, "$JOBID": jobid, "$RETURN": ret, "$DAGID": dagid,
                         "$CLUSTERID": cluster, "$SUCCESS": success}
                argv = []
                for value in script:
                    for key, replacement in subst.items():
                        value = value.replace(key, replacement)
                    argv.append(value)
                run_post(argv)
                grow_to(posts[0] + (marks[[m[0] for m in marks].index(posts[0])][1] - posts[0]) if posts else len(recorded))
    finally:
        os.chdir(cwd)
    log.write_bytes(recorded)
    shutil.copy(source / "test.dag.dagman.out", str(dag) + ".dagman.out")
    return dag


def journal(dag: Path) -> list[dict]:
    path = Path(str(dag) + ".rlrep") / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
