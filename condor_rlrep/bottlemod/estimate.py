"""BottleMod as a source of runtime estimates ``e_t`` (for φ′).

A DAG node names a model with ``VARS node rlrep_bottlemod="path[#task]"``;
its predicted finish (model time units: seconds) becomes the node's
estimate.  Without ``#task`` the model's makespan is used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from condor_rlrep.bottlemod.analysis import Analysis, analyze
from condor_rlrep.bottlemod.modelfile import load_model
from condor_rlrep.dag.model import BOTTLEMOD_MACRO, Node
from condor_rlrep.errors import ModelError

__all__ = ["split_spec", "estimate_source"]


def split_spec(spec: str) -> tuple[str, str | None]:
    """``"models/x.toml#merge"`` → ``("models/x.toml", "merge")``."""
    path, sep, task = spec.strip().rpartition("#")
    if not sep:
        return spec.strip(), None
    return path, (task or None)


def estimate_source(base_dir: str | Path | None = None) -> Callable[[Node], float | None]:
    """An estimate source (``node -> seconds | None``) for
    :func:`condor_rlrep.estimates.resolve_estimates`.

    Relative model paths are resolved against ``base_dir``, else against the
    directory of the DAG file the node came from, else the working directory.
    Each model file is analysed once.  A model that is invalid, or whose task
    never finishes, raises :class:`ModelError` naming the node.
    """
    cache: dict[Path, Analysis] = {}

    def source(node: Node) -> float | None:
        spec = node.var(BOTTLEMOD_MACRO)
        if spec is None or not spec.strip():
            return None
        path_text, task = split_spec(spec)
        path = Path(path_text)
        if not path.is_absolute():
            if base_dir is not None:
                path = Path(base_dir) / path
            elif node.source_path:
                path = Path(node.source_path).resolve().parent / path
        where = dict(path=node.source_path, line=node.source_line)
        try:
            result = cache.get(path)
            if result is None:
                result = cache[path] = analyze(load_model(path))
        except ModelError as err:
            raise ModelError(f"node {node.name}: {BOTTLEMOD_MACRO}: {err}", **where) from err
        if task is None:
            span = result.makespan
            if span is None:
                raise ModelError(f"node {node.name}: model {path} has a task that never finishes", **where)
            return float(span)
        if task not in result.tasks:
            raise ModelError(f"node {node.name}: model {path} has no task {task!r}", **where)
        fin = result.tasks[task].finish
        if fin is None:
            raise ModelError(f"node {node.name}: task {task!r} of model {path} never finishes", **where)
        return float(fin)

    return source
