"""Copy HTCondor's own test DAGs (and the files DAGMan and condor-rlrep read to
parse them) from a git clone of https://github.com/htcondor/htcondor into
``htcondor/`` beside this script.

    python tests/data/compat/collect_htcondor.py GIT_DIR [COMMIT]

Every ``src/condor_tests/**/*.dag`` is taken; of the other files only those a
DAG names where a parser reads them: the submit file of a JOB/FINAL/SERVICE/
PROVISIONER node (after DIR), the file of a SPLICE, SUBDAG EXTERNAL, INCLUDE
and CONFIG line, and a DOT ... INCLUDE header. Scripts are not taken: nothing
runs here. A named file that the repository does not hold (written by the
test's own driver at run time) is listed in ``MISSING.txt``.
"""

from __future__ import annotations

import posixpath
import subprocess
import sys
from pathlib import Path

ROOT = "src/condor_tests/"
HERE = Path(__file__).resolve().parent / "htcondor"
NODE_KEYWORDS = {"JOB", "FINAL", "SERVICE", "PROVISIONER"}


def git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True).stdout


def logical_lines(text: str) -> list[list[str]]:
    lines: list[list[str]] = []
    pending = ""
    inline = False
    for raw in text.splitlines():
        line = raw.strip()
        if inline:  # an inline description's body: not DAG commands
            if line == "}" or line.startswith("} ") or line.startswith("@"):
                inline = False
            continue
        if not line or line.startswith("#") or line.startswith("//"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        tokens = line.split()
        if tokens[-1] == "{" or tokens[-1].startswith("@="):
            inline = True
        lines.append(tokens)
    return lines


def references(text: str) -> list[str]:
    """Paths (relative to the DAG's working directory) this DAG's lines name."""
    out: list[str] = []
    for tokens in logical_lines(text):
        keyword = tokens[0].upper().replace("-", "_")
        upper = [t.upper() for t in tokens]
        directory = tokens[upper.index("DIR") + 1] if "DIR" in upper[3:] and upper.index("DIR") + 1 < len(tokens) else ""
        if keyword in NODE_KEYWORDS and len(tokens) > 2 and tokens[2] not in ("{",) and not tokens[2].startswith("@="):
            out.append(posixpath.join(directory, tokens[2].strip("\"'")))
        elif keyword == "SUBDAG" and len(tokens) > 3:
            out.append(posixpath.join(directory, tokens[3].strip("\"'")))
        elif keyword == "SPLICE" and len(tokens) > 2:
            out.append(posixpath.join(directory, tokens[2].strip("\"'")))
        elif keyword in ("INCLUDE", "CONFIG") and len(tokens) > 1:
            out.append(tokens[1].strip("\"'"))
        elif keyword == "DOT" and "INCLUDE" in upper[2:]:
            at = upper.index("INCLUDE", 2)
            if at + 1 < len(tokens):
                out.append(tokens[at + 1])
    return [posixpath.normpath(p) for p in out if p]


def main(git_dir: str, commit: str = "HEAD") -> None:
    listing = git(git_dir, "ls-tree", "-r", "--name-only", commit, ROOT).decode().splitlines()
    present = set(listing)
    wanted = {p for p in listing if p.endswith(".dag")}
    missing: set[str] = set()
    queue = sorted(wanted)
    while queue:
        path = queue.pop()
        text = git(git_dir, "show", f"{commit}:{path}").decode("utf-8", "replace")
        # DAGMan resolves a DAG's paths against its working directory, which the
        # test drivers set to src/condor_tests (spliced files name paths from there)
        for ref in references(text):
            candidates = [posixpath.normpath(ROOT + ref), posixpath.normpath(posixpath.join(posixpath.dirname(path), ref))]
            hit = next((c for c in candidates if c in present), None)
            if hit is None:
                missing.add(f"{path}: {ref}")
            elif hit not in wanted:
                wanted.add(hit)
                queue.append(hit)
    for path in sorted(wanted):
        target = HERE / path[len(ROOT):]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(git(git_dir, "show", f"{commit}:{path}"))
    (HERE / "MISSING.txt").write_text("".join(f"{line}\n" for line in sorted(missing)))
    print(f"{len([p for p in wanted if p.endswith('.dag')])} DAG files, {len(wanted)} files, {len(missing)} missing references")


if __name__ == "__main__":
    main(*sys.argv[1:])
