"""Parser of HTCondor DAGMan DAG files (the language of HTCondor 25.x).

``parse_dag(lines)`` is pure apart from the ``include_loader`` it is given
(INCLUDE and SPLICE read other files); ``read_dag(path)`` reads a file.

Like DAGMan, a DAG file is processed in two passes: node-defining commands
(JOB, FINAL, SERVICE, PROVISIONER, SUBDAG, SPLICE, SUBMIT-DESCRIPTION, and
INCLUDE, which is textual) first, then every other command in file order, so
``PARENT`` may precede the ``JOB`` lines it names. ``ALL_NODES`` expands to the
nodes of the DAG file being parsed (INCLUDEd files count, splices do not),
never to FINAL or SERVICE nodes.

Splices are inlined: their nodes are named ``splice+node`` (nested:
``a+b+node``), a node DIR inside a splice becomes relative to the splice DIR,
and an edge to a splice attaches to its initial nodes (no parents inside the
splice) as children and to its terminal nodes (no children) as parents.
CONNECT/PIN_IN/PIN_OUT become plain edges.

A dependency with more than one parent and more than one child (after
splices are resolved and repeats dropped) becomes a :class:`~.model.Join`,
as DAGMan makes it a join node: m + n edges instead of m·n.

Cost is linear in the input, in any line order, and INCLUDE/SPLICE nesting
is followed without recursion (any depth, like DAGMan); a file that names
itself, directly or not, is an error.

The parser's parts, each depending only on those before it: :mod:`.lexer`
(lines and tokens), :mod:`.syntax` (keywords, forms), :mod:`.parsestate`
(what a parse builds: scopes, splices, edges), :mod:`.bulk` (fast paths for
plain lines), :mod:`.mixed` (JOB and PARENT lines in random order),
:mod:`.commands` (pass 2), :mod:`.firstpass` (pass 1, files), :mod:`.cycles`
(the cycle check), and this module (the entry points).

Where this parser knowingly differs from DAGMan 25.x:

* DAGMan's working directory is taken to be the top DAG file's directory
  (``base_dir``), as when ``condor_submit_dag`` runs there or with
  ``-usedagdir``. INCLUDE and SPLICE files are relative to it (joined with the
  DIR of each enclosing splice, as DAGMan changes into it), as in DAGMan.
* Node names containing a quote or a blank are rejected (DAGMan keeps the
  quote characters in the name); splice names follow the node-name rules.
* CONFIG, SET_JOB_ATTR, ENV, DOT, NODE_STATUS_FILE and JOBSTATE_LOG inside a
  splice are ignored (DAGMan ignores the first four); CONFIG is kept as written
  (DAGMan makes it absolute). SUBMIT-DESCRIPTION names are global.
* A FINAL node inside a splice is an error.
"""

from __future__ import annotations

import gc
import os
import posixpath
from collections.abc import Iterable

from ..errors import DagError
from .commands import run_deferred
from .cycles import cycle_error, find_cycle
from .firstpass import Loader, Parser
from .lexer import FileLines, checked_lines
from .model import Workflow
from .parsestate import Scope

__all__ = ["parse_dag", "read_dag"]

# Parses that leave at least this many new GC-tracked objects promote them (parse_dag).
_PROMOTE_MIN = 50_000


def parse_dag(
    lines: Iterable[str],
    *,
    path: str | os.PathLike[str] | None = None,
    include_loader: Loader | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    allow_any_node_name_characters: bool = False,
) -> Workflow:
    """Parse the lines of a DAG file into a :class:`Workflow`.

    ``path`` names the file in error messages and in ``source_path``.
    ``include_loader(path) -> lines`` reads INCLUDE and SPLICE files; paths
    given to it are resolved as DAGMan resolves them, relative to its working
    directory ``base_dir`` (default: the directory of ``path``, else the
    current directory) joined with the DIR of each enclosing SPLICE — not
    relative to the directory of the file naming them. Without a loader, files are read from disk.
    ``allow_any_node_name_characters`` accepts ``+`` in node names, as
    DAGMan's ``DAGMAN_ALLOW_ANY_NODE_NAME_CHARACTERS = True`` does (needed to
    read back a flattened spliced workflow written by :func:`write_dag_lines`).

    Raises DagSyntaxError, DagError or CycleError naming file, line and culprit.
    """
    return _parse(lines, path, include_loader, base_dir, allow_any_node_name_characters, nul_checked=False)


def _parse(
    lines: Iterable[str],
    path: str | os.PathLike[str] | None,
    include_loader: Loader | None,
    base_dir: str | os.PathLike[str] | None,
    allow_any_node_name_characters: bool,
    nul_checked: bool,
) -> Workflow:
    spath = os.fspath(path) if path is not None else None
    if base_dir is not None:
        bdir = os.fspath(base_dir)
    elif spath is not None:
        bdir = posixpath.dirname(spath)
    else:
        bdir = ""
    p = Parser(include_loader or FileLines, allow_any_node_name_characters)
    top = Scope(prefix="", node_dir=None, is_splice=False)
    # Parsing allocates millions of small containers that all stay alive; the
    # cyclic GC would rescan them again and again for nothing.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        lines = lines if isinstance(lines, (list, FileLines)) else list(lines)
        p.run_file(top, lines if nul_checked else checked_lines(lines, spath), spath, bdir)
        run_deferred(p, top)
        wf = p.wf
        wf.source_path = spath
        # Most DAG files define parents before children (or, less often, all
        # children first): then file order is a topological order and no graph
        # search is needed.
        cycle_edges = find_cycle(wf, p.index, p.edge_keys) if p.forward and p.backward else None
        if cycle_edges is None and gc_was_enabled and gc.get_count()[0] >= _PROMOTE_MIN and not gc.get_freeze_count():
            # What the parse made is the workflow: long-lived. Move it (with the
            # rest of the young objects) straight to the oldest generation, where
            # surviving two young collections would take it anyway: the collector
            # then scans it in full collections only, instead of twice more on the
            # next allocations (~0.3 s at 10^5 nodes). freeze() + unfreeze() is
            # that move; a freeze someone else made is left alone.
            gc.freeze()
            gc.unfreeze()
    finally:
        if gc_was_enabled:
            gc.enable()
    if cycle_edges is not None:
        raise cycle_error(p, cycle_edges, spath)
    _check_join_names(wf)
    return wf


def _check_join_names(wf: Workflow) -> None:
    """DAGMan refuses a DAG whose join node would take a node's name."""
    nodes = wf.nodes
    for join in wf.joins:
        node = nodes.get(join.name)
        if node is not None:
            raise DagError(
                f"node name '{join.name}' is the name DAGMan gives the join node of this many-to-many "
                f"PARENT/CHILD line (line {join.source_line}); rename the node",
                path=node.source_path, line=node.source_line,
            )


def read_dag(path: str | os.PathLike[str], *, allow_any_node_name_characters: bool = False) -> Workflow:
    """Read and parse the DAG file at ``path`` (INCLUDE/SPLICE files relative to it)."""
    spath = os.fspath(path)
    try:
        lines = FileLines(spath)
    except FileNotFoundError as err:
        raise DagError("DAG file not found", path=spath) from err
    except OSError as err:
        raise DagError(f"DAG file cannot be read: {err.strerror or err}", path=spath) from err
    return _parse(lines, spath, None, None, allow_any_node_name_characters, nul_checked=True)
