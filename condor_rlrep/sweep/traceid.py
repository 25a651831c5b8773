"""Which trace a sweep's runs were simulated on: the trace's identity.

A run id digests the run's parameters only (so that the committed results
keep their ids), so ``single at φ = 0.1`` has the same id on every trace.
What tells one trace from another is this identity, recorded in the sweep
folder and in every run file written since (:mod:`condor_rlrep.sweep.store`)::

    a preset trace   {"preset": NAME, "profile_sha256": …, "seed": S, "days": D}
    a trace folder   {"files_sha256": …}

``profile_sha256`` digests the profile's *values* (its sources and comments
dropped: they do not change the trace), so a re-tuned profile is another
trace and a re-worded source is not. ``days`` is the number of days
generated (the profile's own when the experiment names none), so spelling
out the default does not make another trace. A trace folder is identified
by the bytes of its files, not by its path: a copy is the same trace, an
edited file is not. The generator's code is in neither: it is meant to
reproduce a trace bit for bit, and a change that does not is a bug to fix
there, not a new trace.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from condor_rlrep.errors import InputError

__all__ = ["TraceIdentity", "trace_identity", "declared_identity", "describe", "generated_source"]

TraceIdentity = dict[str, Any]

# What a trace folder is made of (trace_io's format); anything else in it
# (notes, our own stamp) does not change the trace.
_TRACE_FILES = ("trace.toml", "machines.csv", "logins.csv", "jobs.csv")


def trace_identity(trace: Mapping[str, Any]) -> TraceIdentity:
    """The identity of the trace an experiment's ``[trace]`` table names
    (``dir`` already absolute, as :func:`~condor_rlrep.sweep.experiment.load_experiment`
    leaves it). Hashes a trace folder's files: a year's trace takes a
    fraction of a second."""
    if "dir" in trace:
        return {"files_sha256": _folder_digest(Path(trace["dir"]))}
    from condor_rlrep.sim.profile import load_profile, resolve_profile

    preset = str(trace["preset"])
    profile = resolve_profile(load_profile(preset))
    days = trace.get("days")
    if days is None:
        days = profile["calendar"]["days"]
    days = float(days)
    canonical = json.dumps(profile, sort_keys=True, separators=(",", ":"), default=str)
    return {
        "preset": preset,
        "profile_sha256": hashlib.sha256(canonical.encode()).hexdigest(),
        "seed": int(trace.get("seed", 0)),
        "days": int(days) if days.is_integer() else days,
    }


def declared_identity(trace: Mapping[str, Any]) -> TraceIdentity:
    """What a ``[trace]`` table says when the trace it names cannot be
    identified any more (a trace folder gone, a preset renamed): only a
    folder written before identities, which a report still reads, needs it.
    Never equal to a :func:`trace_identity`, so no sweep adds to such a folder."""
    if "dir" in trace:
        return {"dir": str(trace["dir"])}
    return {"preset": str(trace.get("preset")), "seed": trace.get("seed", 0), "days": trace.get("days")}


def describe(identity: Mapping[str, Any] | None) -> str:
    """One phrase for an error message: what differs is visible in it."""
    if identity is None:
        return "no recorded trace"
    if "files_sha256" in identity:
        return f"trace folder with files sha256 {str(identity['files_sha256'])[:12]}"
    if "dir" in identity:
        return f"trace folder {identity['dir']} (unreadable now)"
    profile = identity.get("profile_sha256")
    profile_text = f"profile sha256 {str(profile)[:12]}" if profile else "profile unknown now"
    return f"preset {identity.get('preset')} ({profile_text}), seed {identity.get('seed')}, {identity.get('days')} days"


def generated_source(identity: Mapping[str, Any]) -> str:
    """The ``source`` line of trace.toml the generator writes for a preset
    identity (see :func:`condor_rlrep.sim.generator.generated_source`)."""
    from condor_rlrep.sim.generator import generated_source as source_line
    from condor_rlrep.sim.profile import load_profile, prof_name

    return source_line(prof_name(load_profile(str(identity["preset"]))), int(identity["seed"]), float(identity["days"]))


def _folder_digest(folder: Path) -> str:
    if not (folder / "trace.toml").is_file():
        raise InputError("not a trace folder (no trace.toml)", path=str(folder))
    digest = hashlib.sha256()
    for name in _TRACE_FILES:
        for candidate in (folder / name, folder / (name + ".gz")):
            if candidate.is_file():
                try:
                    with candidate.open("rb") as handle:
                        # name and size first: no two folders hash alike by shifting bytes between files
                        digest.update(f"{candidate.name}\0{candidate.stat().st_size}\0".encode())
                        for block in iter(lambda: handle.read(1 << 20), b""):
                            digest.update(block)
                except OSError as err:
                    raise InputError(f"cannot read the trace to identify it: {err.strerror}",
                                     path=str(candidate)) from err
    return digest.hexdigest()
