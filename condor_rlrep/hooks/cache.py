"""The workflow plan cached per DAG file content, so PRE parses the DAG once.

Key: SHA-256 of the instrumented DAG's bytes plus the sidecar estimates file
(the instrumented DAG is written flat, INCLUDEs and SPLICEs inlined, so these
are all its inputs). The digest itself is memoised against the files'
``(size, mtime_ns, inode)`` so a warm PRE does not even reread a 10,000-node
DAG. Value: ``{node: (e_t, L′_t, max_{j∈C_t} L′_j)}`` and CR(W) (eq. 5 of the
replication paper, computed by :mod:`condor_rlrep.criticality` on the first
call), stored with :mod:`marshal` in ``<ctx>/cache/plan-<digest>/``: CR(W) in
``meta.marshal`` and the nodes spread over ``BUCKETS`` small files by CRC-32
of the name, so a warm PRE loads ~40 entries of a 10,000-node DAG, not all.
Concurrent first calls build it once under an exclusive ``flock``; the
directory appears atomically (``os.rename``).

φ′ (balanced) or φ″ (current-task) then come from
:func:`condor_rlrep.criticality.phi_prime` / ``phi_double_prime`` with the
deadline d = (φ+1)·CR(W) + s(W) (eq. 2): the same functions the simulator uses.
"""

from __future__ import annotations

import json
import marshal
import math
import os
import zlib
from collections.abc import Sequence
from typing import Any

from condor_rlrep.condor.submit import write_atomic

__all__ = ["CACHE_VERSION", "BUCKETS", "PlanCache", "bucket_of", "dag_digest", "plan_inputs", "load_plan", "build_plan"]

CACHE_VERSION = 2
BUCKETS = 256


def bucket_of(name: str) -> int:
    return zlib.crc32(name.encode("utf-8", "surrogateescape")) % BUCKETS


class PlanCache:
    """CR(W) and per-node ``(e_t, L′_t, max child L′)`` of one DAG version.

    ``directory`` set: nodes are read lazily from their bucket files.
    """

    def __init__(
        self,
        key: str,
        critical_path_seconds: float,
        nodes: dict[str, tuple[float, float, float]] | None = None,
        directory: str | None = None,
    ):
        self.key = key
        self.critical_path_seconds = critical_path_seconds
        self._nodes = nodes
        self._directory = directory
        self._buckets: dict[int, dict[str, tuple[float, float, float]]] = {}

    @property
    def nodes(self) -> dict[str, tuple[float, float, float]]:
        """Every node (loads all buckets of a cached plan)."""
        if self._nodes is None:
            merged: dict[str, tuple[float, float, float]] = {}
            for index in range(BUCKETS):
                merged.update(self._bucket(index))
            self._nodes = merged
        return self._nodes

    def _bucket(self, index: int) -> dict[str, tuple[float, float, float]]:
        if index not in self._buckets:
            assert self._directory is not None
            try:
                with open(os.path.join(self._directory, f"b{index:03d}.marshal"), "rb") as handle:
                    self._buckets[index] = marshal.load(handle)
            except FileNotFoundError:
                self._buckets[index] = {}
        return self._buckets[index]

    def node(self, name: str) -> tuple[float, float, float]:
        table = self._nodes if self._nodes is not None else self._bucket(bucket_of(name))
        try:
            return tuple(table[name])  # type: ignore[return-value]
        except KeyError:
            raise KeyError(f"node {name!r} is not in the cached plan of this DAG (DAG changed since instrument?)") from None

    def criticality(self, name: str, *, phi: float, start: float, submit_time: float, mode: str = "balanced") -> float:
        """φ′ (``balanced``) or φ″ (``current``) of ``name`` submitted at ``submit_time``.

        Same definitions and zero-denominator rule as
        :class:`condor_rlrep.criticality.WorkflowPlan` (a test holds them
        equal); restated here because importing :mod:`condor_rlrep.criticality`
        pulls in the DAG parser package, which the warm PRE cannot afford.
        """
        estimate, remaining, max_child = self.node(name)
        deadline = (phi + 1.0) * self.critical_path_seconds + start  # eq. 2
        if mode == "balanced":
            return _ratio_minus_one(deadline - submit_time, remaining)
        if mode == "current":
            return _ratio_minus_one(deadline - submit_time - max_child, estimate)
        raise ValueError(f"unknown criticality mode {mode!r} (balanced or current)")


def _ratio_minus_one(time_left: float, denominator: float) -> float:
    if denominator > 0:
        return time_left / denominator - 1.0
    return math.inf if time_left >= 0 else -math.inf


def _stat_key(paths: Sequence[str]) -> list[list[int]]:
    key = []
    for path in paths:
        st = os.stat(path)
        key.append([st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev])
    return key


def dag_digest(paths: Sequence[str], memo_path: str | None = None) -> str:
    """SHA-256 over the bytes of ``paths`` (in order), memoised on their stat."""
    stat_key = _stat_key(paths)
    if memo_path is not None:
        try:
            with open(memo_path, encoding="utf-8") as handle:
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
            write_atomic(memo_path, json.dumps({"paths": list(paths), "stat": stat_key, "digest": value}))
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
    """Parse the DAG, resolve estimates, build the graph and compute L′ (slow path)."""
    from condor_rlrep.criticality import plan_workflow
    from condor_rlrep.dag.parser import parse_dag
    from condor_rlrep.estimates import read_estimates, resolve_estimates
    from condor_rlrep.graph import build_graph

    with open(settings.dag, encoding="utf-8", errors="surrogateescape") as handle:
        # SCRIPT lines (two per node, the longest ones) change neither the graph
        # nor the estimates: skipping them halves the parse of a 10,000-node DAG.
        lines = [line for line in handle.read().splitlines() if not _is_script_line(line)]
    workflow = parse_dag(
        lines, path=str(settings.dag),
        allow_any_node_name_characters=bool(settings.allow_any_node_name_characters),
    )
    sidecar = read_estimates(settings.estimates) if settings.estimates else None
    estimates = resolve_estimates(workflow, sidecar=sidecar, default_estimate=settings.default_estimate)
    plan = plan_workflow(build_graph(workflow, estimates), 0.0)
    nodes = {
        str(name): (float(plan.estimate[name]), float(plan.remaining[name]), float(plan.max_child_remaining[name]))
        for name in plan.remaining
    }
    return PlanCache(key, float(plan.critical_path_seconds), nodes)


def _is_script_line(line: str) -> bool:
    head = line.lstrip()[:7]
    return head.upper() == "SCRIPT " or head.upper() == "SCRIPT\t"


def _read(directory: str, key: str) -> PlanCache | None:
    try:
        with open(os.path.join(directory, "meta.marshal"), "rb") as handle:
            meta = marshal.load(handle)
        if meta.get("version") != CACHE_VERSION or meta.get("key") != key or meta.get("buckets") != BUCKETS:
            return None
        return PlanCache(key, float(meta["cr"]), directory=directory)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, TypeError, KeyError, AttributeError):
        return None  # a corrupt cache is rebuilt, never trusted


def _write(directory: str, plan: PlanCache) -> None:
    buckets: list[dict[str, tuple[float, float, float]]] = [{} for _ in range(BUCKETS)]
    for name, values in plan.nodes.items():
        buckets[bucket_of(name)][name] = values
    tmp = f"{directory}.tmp-{os.getpid()}"
    os.makedirs(tmp, exist_ok=True)
    for index, bucket in enumerate(buckets):
        if bucket:
            with open(os.path.join(tmp, f"b{index:03d}.marshal"), "wb") as handle:
                marshal.dump(bucket, handle)
    meta = {"version": CACHE_VERSION, "key": plan.key, "cr": plan.critical_path_seconds, "buckets": BUCKETS}
    with open(os.path.join(tmp, "meta.marshal"), "wb") as handle:
        marshal.dump(meta, handle)  # written last: its presence marks a complete plan
    import shutil

    if os.path.exists(directory):
        shutil.rmtree(directory)  # a corrupt earlier plan (we hold the build lock)
    os.rename(tmp, directory)


def load_plan(context: str, settings: Any) -> PlanCache:
    """The cached plan of the DAG's current content, building it if needed."""
    cache_dir = os.path.join(context, "cache")
    key = dag_digest(plan_inputs(settings), os.path.join(cache_dir, "digest.json"))
    directory = os.path.join(cache_dir, f"plan-{key}")
    cached = _read(directory, key)
    if cached is not None:
        return cached
    import fcntl

    os.makedirs(cache_dir, exist_ok=True)
    with open(os.path.join(cache_dir, "build.lock"), "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        cached = _read(directory, key)  # another PRE may have built it meanwhile
        if cached is not None:
            return cached
        plan = build_plan(settings, key)
        _write(directory, plan)
        return plan
