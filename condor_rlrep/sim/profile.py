"""Profile files of the trace generator: presets, ``--set`` overrides, sources.

A profile (TOML; presets ``newcastle-2010``, ``newcastle-2010-cal`` and
``poisson`` ship in ``condor_rlrep/data/profiles/``) describes rooms of
machines with opening hours and power figures, interactive logins and HTC
jobs with their rhythms (the model: :mod:`condor_rlrep.sim.generator`).
Every value carries its source (``{ value = ..., source = ... }`` or a
table-level ``source``): a profile is read *raw*, with the sources, so that
``--set`` can address any value and a sweep can digest the values alone
(:mod:`condor_rlrep.sweep.traceid`); :func:`resolve_profile` then drops
the sources for the generator.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from condor_rlrep.errors import TraceError

__all__ = ["PRESETS", "preset_path", "load_profile", "apply_overrides", "resolve_profile", "prof_name"]

PRESETS = ("newcastle-2010", "newcastle-2010-cal", "poisson")


def preset_path(name: str) -> Path:
    """Path of a shipped preset profile (package data)."""
    if name not in PRESETS:
        raise TraceError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return Path(str(resources.files("condor_rlrep") / "data" / "profiles" / f"{name}.toml"))


def load_profile(profile: str | Path | Mapping[str, Any], overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Raw profile (values still wrapped with their sources), with ``key=value`` overrides applied.

    ``profile`` is a preset name, a path to a TOML file, or an already loaded dict.
    """
    if isinstance(profile, Mapping):
        raw = copy.deepcopy(dict(profile))
    else:
        path = preset_path(str(profile)) if str(profile) in PRESETS else Path(profile)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as err:
            raise TraceError(f"no such profile (presets: {', '.join(PRESETS)})", path=str(path)) from err
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            raise TraceError(f"cannot parse profile: {err}", path=str(path)) from err
    apply_overrides(raw, overrides)
    return raw


def apply_overrides(raw: dict[str, Any], overrides: Iterable[str]) -> None:
    """Apply ``dotted.key=value`` settings in place (value parsed as TOML, else a string).

    A key naming a ``{value, source}`` parameter sets its value; list items
    are addressed by index (``rooms.0.machines=100``).
    """
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise TraceError(f"--set {item!r}: expected key=value")
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text
        parts = key.strip().split(".")
        node: Any = raw
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            if isinstance(node, list):
                try:
                    idx = int(part)
                    node[idx]  # noqa: B018 - bounds check
                except (ValueError, IndexError) as err:
                    raise TraceError(f"--set {key}: {part!r} is not an index of a {len(node)}-item list") from err
                if last:
                    node[idx] = value
                else:
                    node = node[idx]
                continue
            if not isinstance(node, dict) or part not in node:
                raise TraceError(f"--set {key}: the profile has no {'.'.join(parts[: depth + 1])!r}")
            if last:
                if _is_wrapped(node[part]):
                    node[part]["value"] = value
                else:
                    node[part] = value
            else:
                node = node[part]
                if _is_wrapped(node):
                    node = node["value"]


def _is_wrapped(node: Any) -> bool:
    return isinstance(node, dict) and "value" in node and "source" in node and set(node) <= {"value", "source", "note"}


def resolve_profile(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Drop sources: ``{value, source}`` becomes its value, ``source`` keys go."""

    def strip(node: Any) -> Any:
        if _is_wrapped(node):
            return strip(node["value"])
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "source"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(raw)


def prof_name(raw: Mapping[str, Any]) -> str:
    name = raw.get("name", "custom")
    return str(name["value"]) if _is_wrapped(name) else str(name)
