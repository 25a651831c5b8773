"""The workflow plan cached per DAG file content, so PRE parses the DAG once.

Key: SHA-256 of the instrumented DAG's bytes plus the sidecar estimates file
(the instrumented DAG is written flat, INCLUDEs and SPLICEs inlined, so these
are all its inputs). The digest itself is memoised against the files'
``(size, mtime_ns, inode)`` so a warm PRE does not even reread a 10,000-node
DAG. Value: ``{node: (e_t, L′_t, max_{j∈C_t} L′_j, earliest start)}`` and CR(W) (eq. 5 of the
replication paper, computed by :mod:`condor_rlrep.criticality` on the first
call), stored with :mod:`marshal` in ``<ctx>/cache/plan-<digest>/``: CR(W) and
the byte range of each of ``BUCKETS`` buckets in ``meta.marshal``, the nodes,
bucketed by a hash of the name (FNV-1a), in ``nodes.marshal``, so a warm PRE
loads ~40 entries of a 10,000-node DAG, not all.
Concurrent first calls build it once under an exclusive ``flock``; the
directory appears atomically (``os.rename``). The build is the simulator's:
:func:`condor_rlrep.estimates.resolve_estimates` →
:func:`condor_rlrep.dag.graph.dependency_graph` →
:func:`condor_rlrep.workflowplan.plan_workflow`; the cache keeps what PRE needs
of that :class:`~condor_rlrep.workflowplan.WorkflowPlan`. BottleMod model files
(VARS ``rlrep_bottlemod``) are inputs too: their ``(size, mtime_ns)`` is kept
in ``meta.marshal`` (with ctime) and a change rebuilds the plan. A build that fails with a
library error (a bad model) is recorded in ``failed-<digest>.json`` so the
next PREs fail open at once instead of parsing the DAG again.

φ′ (balanced) or φ″ (current-task) then come from
:func:`condor_rlrep.criticality.phi_prime` / ``phi_double_prime`` with the
deadline d = (φ+1)·CR(W) + s(W) (eq. 2): the same functions the simulator uses.
"""

from __future__ import annotations

import json
import marshal
import os
from collections.abc import Sequence
from typing import Any

from condor_rlrep.atomic import write_atomic

__all__ = [
    "CACHE_VERSION", "BUCKETS", "PlanCache", "PlanBuildError", "bucket_of", "dag_digest", "plan_inputs",
    "load_plan", "build_plan", "peek_plan",
]

CACHE_VERSION = 6
BUCKETS = 256


def bucket_of(name: str) -> int:
    """Bucket of a node name: 32-bit FNV-1a of its UTF-8 bytes (stable across
    processes, unlike ``hash``; no zlib import on the hook path)."""
    value = 0x811C9DC5
    for byte in name.encode("utf-8", "surrogateescape"):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value % BUCKETS


class PlanCache:
    """What the PRE needs of one DAG version's :class:`~condor_rlrep.workflowplan.WorkflowPlan`:
    CR(W) and per node ``(e_t, L′_t, max_{j∈C_t} L′_j, earliest start)`` (the
    planned start offset from s(W): 0 for the nodes that start the workflow).

    ``directory`` set: nodes are read lazily, one bucket at a time, from
    ``nodes.marshal`` at the ``(offset, length)`` that ``offsets`` gives.
    """

    def __init__(
        self,
        key: str,
        critical_path_seconds: float,
        nodes: dict[str, tuple[float, ...]] | None = None,
        directory: str | None = None,
        offsets: list[tuple[int, int]] | None = None,
    ):
        self.key = key
        self.critical_path_seconds = critical_path_seconds
        self._nodes = nodes
        self._directory = directory
        self._offsets = offsets
        self._buckets: dict[int, dict[str, tuple[float, ...]]] = {}

    @classmethod
    def from_workflow_plan(cls, plan: Any, key: str = "") -> PlanCache:
        """The PRE's part of a :class:`~condor_rlrep.workflowplan.WorkflowPlan`."""
        data = plan.to_dict()
        nodes = dict(zip(data["names"], zip(data["estimate"], data["remaining"], data["max_child_remaining"],
                                            data["earliest_start"])))
        return cls(key, float(data["critical_path_seconds"]), nodes)

    @property
    def nodes(self) -> dict[str, tuple[float, ...]]:
        """Every node (loads all buckets of a cached plan)."""
        if self._nodes is None:
            merged: dict[str, tuple[float, ...]] = {}
            for index in range(BUCKETS):
                merged.update(self._bucket(index))
            self._nodes = merged
        return self._nodes

    def _bucket(self, index: int) -> dict[str, tuple[float, ...]]:
        if index not in self._buckets:
            assert self._directory is not None and self._offsets is not None
            start, length = self._offsets[index]
            if not length:
                self._buckets[index] = {}
            else:
                with _open_guarded(os.path.join(self._directory, "nodes.marshal")) as handle:
                    handle.seek(start)
                    data = handle.read(length)
                if len(data) != length:
                    raise ValueError(f"{self._directory}: truncated plan cache")
                self._buckets[index] = marshal.loads(data)
        return self._buckets[index]

    def node(self, name: str) -> tuple[float, ...]:
        table = self._nodes if self._nodes is not None else self._bucket(bucket_of(name))
        try:
            return tuple(table[name])  # type: ignore[return-value]
        except KeyError:
            raise KeyError(f"node {name!r} is not in the cached plan of this DAG (DAG changed since instrument?)") from None

    def criticality(self, name: str, *, phi: float, start: float, submit_time: float, mode: str = "balanced") -> float:
        """φ′ (``balanced``) or φ″ (``current``) of ``name`` submitted at ``submit_time``,
        s(W) = ``start``: :func:`condor_rlrep.criticality.deadline` (eq. 2) and
        :func:`~condor_rlrep.criticality.phi_prime` /
        :func:`~condor_rlrep.criticality.phi_double_prime`, the simulator's functions."""
        from condor_rlrep import criticality

        estimate, remaining, max_child = self.node(name)[:3]
        deadline = criticality.deadline(phi, self.critical_path_seconds, start)
        if mode == "balanced":
            return criticality.phi_prime(deadline, submit_time, remaining)
        if mode == "current":
            return criticality.phi_double_prime(deadline, submit_time, estimate, max_child)
        raise ValueError(f"unknown criticality mode {mode!r} (balanced or current)")


def _stat_key(paths: Sequence[str]) -> list[list[int]]:
    key = []
    for path in paths:
        st = os.stat(path)
        key.append([st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev])
    return key


def _open_guarded(path: str) -> Any:
    """A cache file for reading (binary): never a FIFO or through a symlink."""
    from condor_rlrep.fileguard import open_read

    return os.fdopen(open_read(path), "rb")


def dag_digest(paths: Sequence[str], memo_path: str | None = None) -> str:
    """SHA-256 over the bytes of ``paths`` (in order), memoised on their stat."""
    stat_key = _stat_key(paths)
    if memo_path is not None:
        try:
            with _open_guarded(memo_path) as handle:
                memo = json.load(handle)
            if memo.get("paths") == list(paths) and memo.get("stat") == stat_key:
                return str(memo["digest"])
        except (OSError, ValueError, KeyError, AttributeError):
            pass
    import hashlib  # only when the files changed

    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())
    value = digest.hexdigest()
    if memo_path is not None:
        try:
            write_atomic(memo_path, json.dumps({"paths": list(paths), "stat": stat_key, "digest": value}),
                         mode=0o600)
        except OSError:
            pass
    return value


def plan_inputs(settings: Any) -> list[str]:
    """The files the plan depends on (the DAG, the sidecar estimates)."""
    paths = [str(settings.dag)]
    if settings.estimates:
        paths.append(str(settings.estimates))
    return paths


def build_plan(settings: Any, key: str = "") -> PlanCache:
    """Parse the DAG, resolve estimates, compute the plan (the slow path).

    The one model: :func:`condor_rlrep.estimates.resolve_estimates` (sidecar,
    VARS, BottleMod models …), :func:`condor_rlrep.dag.graph.dependency_graph`
    and :func:`condor_rlrep.workflowplan.plan_workflow`, as in the simulator.
    """
    return _build(settings, key, [])


def _build(settings: Any, key: str, models: list[str]) -> PlanCache:
    """The plan; ``models`` receives the model files its estimates come from
    (before they are read, so that a failing build names them too)."""
    from condor_rlrep.workflowplan import plan_workflow
    from condor_rlrep.dag.parser import parse_dag
    from condor_rlrep.estimates import bottlemod_models, read_estimates, resolve_estimates
    from condor_rlrep.dag.graph import dependency_graph

    with open(settings.dag, encoding="utf-8", errors="surrogateescape") as handle:
        # SCRIPT lines (two per node, the longest ones) change neither the graph
        # nor the estimates: skipping them halves the parse of a 10,000-node DAG.
        lines = [line for line in handle.read().splitlines() if not _is_script_line(line)]
    workflow = parse_dag(
        lines, path=str(settings.dag),
        allow_any_node_name_characters=bool(settings.allow_any_node_name_characters),
    )
    sidecar = read_estimates(settings.estimates) if settings.estimates else None
    models.extend(bottlemod_models(workflow, sidecar))
    estimates = resolve_estimates(workflow, sidecar=sidecar, default_estimate=settings.default_estimate)
    plan = plan_workflow(dependency_graph(workflow, estimates), float(settings.phi))
    return PlanCache.from_workflow_plan(plan, key)


def _is_script_line(line: str) -> bool:
    head = line.lstrip()[:7]
    return head.upper() == "SCRIPT " or head.upper() == "SCRIPT\t"


def _file_stamp(path: str) -> list[Any]:
    try:
        st = os.stat(path)
    except OSError:
        return [path, None, None, None]
    return [path, st.st_size, st.st_mtime_ns, st.st_ctime_ns]  # ctime: a chmod that makes it readable


def _deps_unchanged(deps: Any) -> bool:
    """The BottleMod model files are not hashed into the key; their stat is checked."""
    return all(_file_stamp(dep[0]) == list(dep) for dep in deps)


def _read(directory: str, key: str) -> PlanCache | None:
    try:
        with _open_guarded(os.path.join(directory, "meta.marshal")) as handle:
            meta = marshal.load(handle)
        if meta.get("version") != CACHE_VERSION or meta.get("key") != key or meta.get("buckets") != BUCKETS:
            return None
        if not _deps_unchanged(meta.get("deps", ())):
            return None
        offsets = meta["offsets"]
        if len(offsets) != BUCKETS:
            return None
        return PlanCache(key, float(meta["cr"]), directory=directory, offsets=offsets)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, TypeError, KeyError, AttributeError, IndexError):
        return None  # a corrupt cache is rebuilt, never trusted


class PlanBuildError(RuntimeError):
    """The plan of this DAG version could not be built (cached: PREs fail open fast)."""


def _raise_recorded_failure(path: str, key: str) -> None:
    """Re-raise a failure an earlier build recorded, while its inputs are unchanged."""
    try:
        with _open_guarded(path) as handle:
            failure = json.load(handle)
        if failure.get("version") != CACHE_VERSION or failure.get("key") != key:
            return
        if not _deps_unchanged(failure.get("deps", ())):
            return
        message = str(failure["message"])
    except (OSError, ValueError, EOFError, TypeError, KeyError, AttributeError, IndexError):
        return
    raise PlanBuildError(f"{message} (plan build failed earlier for this DAG version)")


def _write(directory: str, plan: PlanCache, deps: Sequence[Sequence[Any]] = ()) -> None:
    buckets: list[dict[str, tuple[float, ...]]] = [{} for _ in range(BUCKETS)]
    for name, values in plan.nodes.items():
        buckets[bucket_of(name)][name] = values
    import shutil

    from condor_rlrep.fileguard import open_exclusive

    tmp = f"{directory}.tmp-{os.getpid()}"
    if os.path.lexists(tmp):
        shutil.rmtree(tmp)  # a killed builder's left-over (rmtree never follows a symlink)
    os.mkdir(tmp, 0o700)
    os.chmod(tmp, 0o700)  # the run's private state, whatever the umask
    offsets: list[tuple[int, int]] = []
    position = 0
    # one data file (creating 256 small files costs more than the whole plan)
    with os.fdopen(open_exclusive(os.path.join(tmp, "nodes.marshal"), 0o600), "wb") as handle:
        for bucket in buckets:
            data = marshal.dumps(bucket) if bucket else b""
            handle.write(data)
            offsets.append((position, len(data)))
            position += len(data)
    meta = {"version": CACHE_VERSION, "key": plan.key, "cr": plan.critical_path_seconds, "buckets": BUCKETS,
            "offsets": offsets, "deps": [list(dep) for dep in deps]}
    with os.fdopen(open_exclusive(os.path.join(tmp, "meta.marshal"), 0o600), "wb") as handle:
        marshal.dump(meta, handle)  # written last: its presence marks a complete plan
    if os.path.exists(directory):
        shutil.rmtree(directory)  # a corrupt or outdated earlier plan (we hold the build lock)
    os.rename(tmp, directory)


def load_plan(context: str, settings: Any) -> PlanCache:
    """The cached plan of the DAG's current content, building it if needed.

    A build that fails (say, a BottleMod model that cannot be read) raises,
    and is remembered for this DAG version until the model files change, so
    that the following PREs fail open without parsing the DAG again.
    """
    cache_dir = os.path.join(context, "cache")
    key = dag_digest(plan_inputs(settings), os.path.join(cache_dir, "digest.json"))
    directory = os.path.join(cache_dir, f"plan-{key}")
    cached = _read(directory, key)
    if cached is not None:
        return cached
    failure = os.path.join(cache_dir, f"failed-{key}.json")
    _raise_recorded_failure(failure, key)
    import fcntl

    from condor_rlrep.fileguard import make_private_dir, open_append

    make_private_dir(cache_dir)
    with os.fdopen(open_append(os.path.join(cache_dir, "build.lock"), 0o600), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        cached = _read(directory, key)  # another PRE may have built it meanwhile
        if cached is not None:
            return cached
        _raise_recorded_failure(failure, key)
        models: list[str] = []
        try:
            plan = _build(settings, key, models)
        except Exception as err:
            _record_failure(failure, key, models, err)
            raise
        _write(directory, plan, [_file_stamp(path) for path in models])
        try:
            os.unlink(failure)
        except OSError:
            pass
        return plan


def peek_plan(context: str, settings: Any) -> PlanCache:
    """The plan of the DAG's current content as :func:`load_plan` gives it,
    without writing anything (no memo, no cache, no lock): for readers such
    as ``condor-rlrep status`` that may not own the context."""
    key = dag_digest(plan_inputs(settings))
    cached = _read(os.path.join(context, "cache", f"plan-{key}"), key)
    return cached if cached is not None else build_plan(settings, key)


def _record_failure(path: str, key: str, models: list[str], err: Exception) -> None:
    from condor_rlrep.errors import RlrepError

    if not isinstance(err, RlrepError):
        return  # unexpected (a bug, a full disk …): try again next time
    record = {"version": CACHE_VERSION, "key": key, "message": str(err), "deps": [_file_stamp(m) for m in models]}
    try:
        write_atomic(path, json.dumps(record), mode=0o600)
    except OSError:
        pass  # recording is an optimisation only
