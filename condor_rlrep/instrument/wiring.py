"""What the copy's nodes get from ``instrument``: the hook SCRIPT lines, the
reaper's SERVICE node, and the DAG's CONFIG knobs.

* ``SCRIPT PRE``/``SCRIPT POST`` call the installed ``rlrep-pre`` /
  ``rlrep-post`` by absolute path (DAGMan does no PATH lookup), in the argv
  layout of :mod:`condor_rlrep.hooks.argv`, with only the whole-token macros
  valid for that script type and this DAGMan; a user's own PRE/POST is kept
  after a ``--`` and run by our hook (its DEFER/DEBUG kept on our line).
* The reaper (:data:`~condor_rlrep.rundir.layout.REAPER_NODE`) is a local
  universe SERVICE node whose submit file is written into the context.
* The CONFIG is the user's (absolute) unless we need knobs (the log scan
  interval, ``DAGMAN_NODE_JOB_FAILURE_TOLERANCE``, any node-name
  characters for spliced names); then a merged copy in the context.

Every path written into a submit file goes through :func:`submit_literal`,
so that no ``$(...)`` in a path is ever expanded.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping

from condor_rlrep.dag.model import Node, Script, Workflow
from condor_rlrep.errors import InputError
from condor_rlrep.rundir.layout import REAPER_NODE

__all__ = [
    "HOOK_NAMES",
    "hook_executables",
    "add_scripts",
    "add_reaper",
    "dagman_config",
    "submit_literal",
]

HOOK_NAMES = ("rlrep-pre", "rlrep-post", "rlrep-reaper")
"""The executables the copy's SCRIPT lines and reaper run."""


def hook_executables(hooks_bin: str | None = None) -> dict[str, str]:
    """Absolute paths of ``rlrep-pre``, ``rlrep-post``, ``rlrep-reaper``:
    from ``hooks_bin``, else beside the running Python, else on PATH."""
    found: dict[str, str] = {}
    for name in HOOK_NAMES:
        candidates = []
        if hooks_bin:
            candidates.append(os.path.join(hooks_bin, name))
        candidates.append(os.path.join(os.path.dirname(sys.executable), name))
        on_path = shutil.which(name)
        if on_path:
            candidates.append(on_path)
        for candidate in candidates:
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                found[name.split("-", 1)[1]] = os.path.abspath(candidate)
                break
        else:
            raise InputError(f"hook executable {name} not found (install condor-rlrep, or pass --hooks-bin)")
    return found


def _macro_positions(argv: list[str], macro: str) -> str | None:
    hits = [str(i) for i, token in enumerate(argv) if token.upper() == macro]
    return ",".join(hits) if hits else None


def add_scripts(
    node: Node, hooks: Mapping[str, str], context: str, original: str, with_dagid: bool, with_success: bool,
    *, pre: bool = True, post: bool = True,
) -> None:
    """SCRIPT lines in the layout of :mod:`condor_rlrep.hooks.argv`: our
    values as ``--name=value``, DAGMan's macros positionally after ``--``,
    the user's script after a second ``--``. (The node's submit file is not
    passed: PRE derives it from ``--ctx`` and ``--node``.)
    ``pre``: False for a node whose description instrument wrote; ``post``:
    False for one replica a node (DAGMan's own verdict is the node's), where
    the user's POST line, if any, stays as it was."""
    from condor_rlrep.hooks.argv import hook_argv

    user_pre = node.scripts.get("PRE")
    user_post = node.scripts.get("POST")
    common = [("ctx", context), ("node", node.name)]
    pre_macros = [("job", "$JOB"), ("retry", "$RETRY"), ("max-retries", "$MAX_RETRIES")]
    post_macros = [("job", "$JOB"), ("retry", "$RETRY"), ("jobid", "$JOBID"), ("return", "$RETURN")]
    if with_dagid:
        pre_macros.append(("dagid", "$DAGID"))
        post_macros += [("dagid", "$DAGID"), ("cluster", "$CLUSTERID")]
    if with_success:
        post_macros.append(("success", "$SUCCESS"))
    post_options = list(common)
    if user_post is not None:
        for option, macro in (("user-return-at", "$RETURN"), ("user-success-at", "$SUCCESS")):
            positions = _macro_positions(user_post.argv, macro)
            if positions:
                post_options.append((option, positions))
    pre_argv = hook_argv([*common, ("submit", original)], pre_macros, user_pre.argv if user_pre is not None else ())
    post_argv = hook_argv(post_options, post_macros, user_post.argv if user_post is not None else ())
    if pre:
        node.scripts["PRE"] = _script("PRE", hooks["pre"], pre_argv, user_pre)
    if post:
        node.scripts["POST"] = _script("POST", hooks["post"], post_argv, user_post)


def _script(kind: str, executable: str, arguments: list[str], user: Script | None) -> Script:
    if user is None:
        return Script(kind, executable, arguments)  # type: ignore[arg-type]
    return Script(
        kind, executable, arguments,  # type: ignore[arg-type]
        defer_status=user.defer_status, defer_seconds=user.defer_seconds,
        debug_file=user.debug_file, debug_type=user.debug_type,
    )


def dagman_config(
    workflow: Workflow, src_dir: str, context: str, tolerance: str | None, max_replicas: int, spliced: bool,
    scan_interval: int | None = None,
) -> str | None:
    """The DAG's CONFIG: the user's (absolute), or a merged copy when we need knobs."""
    from condor_rlrep.atomic import write_atomic

    user = None
    user_text = ""
    if workflow.config:
        user = os.path.join(src_dir, workflow.config)
        try:
            with open(user, encoding="utf-8") as handle:
                user_text = handle.read()
        except OSError as err:
            raise InputError(f"CONFIG file cannot be read: {err.strerror or err}", path=user) from err
    knobs = []
    if scan_interval is not None and "DAGMAN_USER_LOG_SCAN_INTERVAL" not in user_text.upper():
        knobs += [
            "# condor-rlrep: a POST script's end reaches DAGMan through its node-log scan; scan every second",
            f"DAGMAN_USER_LOG_SCAN_INTERVAL = {int(scan_interval)}",
        ]
    if tolerance == "config" and max_replicas > 1:
        knobs += [
            "# condor-rlrep: tolerate a - 1 failing replicas of a node (R - 1 at most)",
            f"DAGMAN_NODE_JOB_FAILURE_TOLERANCE = {max(0, max_replicas - 1)}",
        ]
    if spliced:
        knobs += [
            "# condor-rlrep: the copy is flat; spliced nodes keep their 'splice+node' names",
            "DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS = True",
        ]
    if not knobs:
        workflow.config = user
        return user
    merged = user_text.rstrip("\n") + "\n" if user_text else ""
    merged += "\n".join(knobs) + "\n"
    path = os.path.join(context, "dagman.config")
    write_atomic(path, merged, mode=0o600)  # DAGMan's knobs for the user's run: the user's alone
    workflow.config = path
    return path


def _quote_argument(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def submit_literal(text: str) -> str:
    """``text`` as a submit-file value that means exactly ``text``: ``$``
    becomes ``$(DOLLAR)`` (so a ``$(...)`` in a path is never expanded) and
    a line break, which would start another submit command, is refused."""
    if "\n" in text or "\r" in text:
        raise InputError(f"path {text!r} holds a line break: it cannot be written into a submit file")
    if "$$" in text:
        # $(DOLLAR)$(DOLLAR) reads back as the match-time macro $$(DOLLAR): HTCondor cannot hold "$$" literally
        raise InputError(f"path {text!r} holds '$$', which an HTCondor submit file cannot hold literally; "
                         "choose a path without it")
    return text.replace("$", "$(DOLLAR)")


def add_reaper(workflow: Workflow, executable: str, context: str, interval: float, *, server_store: bool = False) -> str:
    """The reaper's SERVICE node and its submit file (``<ctx>/reaper.sub``); the node's name."""
    from condor_rlrep.atomic import write_atomic

    name = REAPER_NODE
    while name in workflow.nodes:
        name += "_"
    args = " ".join(_quote_argument(submit_literal(a)) for a in (f"--ctx={context}", f"--interval={interval:g}"))
    # getenv: the reaper needs CONDOR_CONFIG (and only what DAGMan's own job has) to reach the schedd
    submit = os.path.join(context, "reaper.sub")
    write_atomic(
        submit,
        "# condor-rlrep reaper: removes surplus replicas once one has succeeded\n"
        "universe = local\n"
        f"executable = {submit_literal(executable)}\n"
        f'arguments = "{args}"\n'
        f"output = {submit_literal(os.path.join(context, 'reaper.out'))}\n"
        f"error = {submit_literal(os.path.join(context, 'reaper.err'))}\n"
        "getenv = true\n"
        # The reaper serves a server store to the hooks (store/broker.py) and so
        # needs the password they find in $HOME/.pgpass; but HTCondor's local
        # universe starter resets HOME to the passwd entry's, so name libpq's
        # files from DAGMan's HOME, expanded when DAGMan submits this.
        + ("environment = \"PGPASSFILE='$ENV(HOME)/.pgpass' PGSERVICEFILE='$ENV(HOME)/.pg_service.conf'\"\n"
           if server_store else "")
        + "queue\n",
        mode=0o600,  # what DAGMan runs as the user: the user's alone, whatever the umask
    )
    workflow.nodes[name] = Node(name=name, kind="SERVICE", submit=submit, directory=context)
    return name
