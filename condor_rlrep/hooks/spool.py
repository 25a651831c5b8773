"""The run's spool: outcomes and model updates the store could not take yet.

When POST cannot reach the store (locked past the run's timeout, a server
away), what it would have recorded goes to ``<ctx>/spool/`` instead, one
JSON file an entry, and a later POST (or the reaper, at the DAG's end)
flushes it into the same store: nothing recorded is lost, and nothing is
counted twice.

* An *outcome* (``<decision id>.json``) carries the store it was decided in
  and the decision's identity (DAG, node, run, attempt): it is flushed only
  into that store, and only when the decision of that id there says the
  same, so that a store replaced since (ids restart) never has an unrelated
  decision closed by it.
* A *model update* (``model-<hash>.json``, ``kind`` :data:`MODEL_ENTRY`)
  carries the runs of one node attempt under ``model:R``, and a key naming
  that attempt, which makes a second flush of it a no-op in the store.

Both are written with a fixed temporary name (a POST rerun while the store
is still away rewrites the same entry) and mode 0600, like the run's state.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from condor_rlrep.hooks.failopen import describe

__all__ = ["MODEL_ENTRY", "spool_directory", "spool_outcome", "spool_model", "flush_spool"]

IDENTITY_KEYS = frozenset({"dag", "node", "run", "retry"})
"""What :func:`condor_rlrep.hooks.record.decision_identity` writes: an outcome entry needs all of them."""

MODEL_ENTRY = "model"
"""``kind`` of a spooled model update (an outcome's entry has no kind)."""


def spool_directory(context: str) -> str:
    return os.path.join(context, "spool")


def spool_model(context: str, store_spec: str, key: str, runs: list[dict[str, Any]], why: str) -> str:
    """Keep a model update the store could not take; the entry's file name.

    The entry holds the runs (start, end, how each ended, its machine's
    ``KeyboardIdle``), not their cells: a cell's hour of the week depends
    on the store's time zone, which a POST that cannot reach the store
    cannot read. The flush bins them with the config of the store it
    writes to, exactly as a direct record would have, so that every cell
    of a store is binned one way (a store's config changes only with a
    reset, which empties the model too). The entry belongs to ``store_spec``
    only; ``key`` makes a second flush of it a no-op in that store.
    """
    import hashlib

    from condor_rlrep.atomic import write_atomic
    from condor_rlrep.rundir.runstate import PRIVATE

    directory = spool_directory(context)
    _private_dir(directory)
    # one file per node attempt: a POST rerun while the store is still away rewrites the same entry
    name = f"model-{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"
    document = {"kind": MODEL_ENTRY, "store": store_spec, "key": key, "runs": runs, "spooled_at": time.time(),
                "why": why}
    write_atomic(os.path.join(directory, name), json.dumps(document, sort_keys=True), mode=PRIVATE, fixed_tmp=True)
    return name


def spool_outcome(context: str, decision_id: int, store_path: str, identity: dict[str, Any],
                  outcome: dict[str, Any]) -> None:
    """Keep the outcome of decision ``decision_id`` of store ``store_path``,
    with the decision's ``identity`` (:func:`condor_rlrep.hooks.record.decision_identity`)."""
    from condor_rlrep.atomic import write_atomic
    from condor_rlrep.rundir.runstate import PRIVATE

    directory = spool_directory(context)
    _private_dir(directory)
    document = {"decision_id": decision_id, "store": store_path, "identity": identity, "outcome": outcome,
                "spooled_at": time.time()}
    write_atomic(os.path.join(directory, f"{decision_id}.json"), json.dumps(document, sort_keys=True),
                 mode=PRIVATE, fixed_tmp=True)


def _private_dir(directory: str) -> None:
    from condor_rlrep.fileguard import make_private_dir

    make_private_dir(directory)


def flush_spool(context: str, store: Any, store_spec: str) -> tuple[int, list[str]]:
    """Record spooled outcomes and model updates that belong to ``store``
    (opened from ``store_spec``); returns how many were flushed and why
    others stayed. Never raises.

    An entry belongs to the store it was spooled for (same spec). An
    outcome belongs, moreover, to the decision that store holds under its
    id (same DAG, node, run and attempt); a model update to no decision (its
    key names the node attempt, and makes a repeat a no-op). An entry the
    store already holds (identically) is just removed; one it refuses, or
    that belongs elsewhere, or that cannot be read, stays in the spool for
    a human to look at — it never closes an unrelated decision.
    """
    directory = spool_directory(context)
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json") and not n.startswith("."))
    except FileNotFoundError:
        return 0, []
    except OSError as err:
        return 0, [f"spool unreadable ({describe(err)})"]
    done = 0
    kept: list[str] = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            from condor_rlrep.fileguard import read_bytes

            document = json.loads(read_bytes(path))  # never a FIFO (it would hang every POST)
            if not isinstance(document, dict):
                raise ValueError("not a JSON object")
            if document.get("kind") == MODEL_ENTRY:
                left = _flush_model(store, store_spec, path, document)
            else:  # an outcome (entries written before model updates were spooled have no kind)
                left = _flush_outcome(store, store_spec, path, document)
        except Exception as err:
            kept.append(f"spool/{name} not flushed ({describe(err)})")
            continue
        if left is not None:
            kept.append(left)
            continue
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue  # a concurrent POST flushed it too (the store counted it once) and removed it first
        except OSError as err:
            kept.append(f"spool/{name} recorded but not removed ({describe(err)}); a later flush is a no-op")
            continue
        done += 1
    return done, kept


def _flush_outcome(store: Any, store_spec: str, path: str, document: dict[str, Any]) -> str | None:
    """Record one spooled outcome; None when done, else why it stays."""
    name = os.path.basename(path)
    decision_id, outcome = int(document["decision_id"]), document["outcome"]
    identity = document.get("identity")
    if str(document.get("store")) != str(store_spec) or not isinstance(identity, dict):
        return f"spool/{name} is for store {document.get('store')!r}: left there"
    missing = sorted(IDENTITY_KEYS - identity.keys())
    if missing:  # an empty identity would match any decision: never close one on it
        return f"spool/{name}: identity lacks {', '.join(missing)}: left there"
    record = store.decision(decision_id)
    if any(record.context.get(key) != value for key, value in identity.items()):
        return f"spool/{name}: decision {decision_id} of this store is another node's or run's: left there"
    store.record(decision_id, float(outcome["reward"]), outcome)
    return None


def _flush_model(store: Any, store_spec: str, path: str, document: dict[str, Any]) -> str | None:
    """Record one spooled model update; None when done (or already counted), else why it stays."""
    from condor_rlrep.errors import InputError
    from condor_rlrep.survival.live import check_runs, record_runs

    if str(document.get("store")) != str(store_spec):
        return f"spool/{os.path.basename(path)} is for store {document.get('store')!r}: left there"
    key = document.get("key")
    if not isinstance(key, str) or not key:
        raise InputError(f"key: must be a non-empty string; got {key!r}", path=path)
    record_runs(store, key, check_runs(document.get("runs"), path))
    return None
