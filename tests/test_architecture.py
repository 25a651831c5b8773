"""The package's rooms and the one direction of imports between them
(docs/architecture.md): a room imports only rooms of a lower layer, so no
import circle can form between rooms, and no module outgrows one sitting."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "condor_rlrep"

# Lower layers first; a room may import its own modules and any room of a
# lower layer. Keep in step with the table in docs/architecture.md.
LAYERS: list[set[str]] = [
    {"errors", "fileguard", "memlimit"},
    {"atomic", "safeload", "document"},
    {"energy", "policyspec"},
    {"outcome"},
    {"dag", "agent", "condor"},
    {"criticality", "bottlemod", "survival"},
    {"workflowplan"},
    {"estimates", "store"},
    {"rundir", "sim"},
    {"hooks", "runreport", "sweep"},
    {"instrument", "sweepreport"},
    {"replay"},
    {"api", "cli"},
]
RANK = {room: rank for rank, rooms in enumerate(LAYERS) for room in rooms}

MAX_LINES = 500
WHOLE_ON_PURPOSE = {"sim/engine.py"}  # one hot loop: see its docstring


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _room(relative: Path) -> str:
    return relative.parts[0].removesuffix(".py") if relative.parts[0] != "__init__.py" else ""


def _imported_rooms(path: Path) -> set[str]:
    """Rooms named by the module's imports (at any depth: lazy imports count)."""
    relative = path.relative_to(PACKAGE)
    package = ["condor_rlrep", *relative.parts[:-1]]
    rooms: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                names = [".".join(base + ([node.module] if node.module else []))]
            else:
                names = [node.module or ""]
            if names[0] == "condor_rlrep":  # from condor_rlrep import room
                names = [f"condor_rlrep.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "condor_rlrep" and len(parts) > 1:
                rooms.add(parts[1])
    return rooms


def test_every_room_has_a_layer():
    rooms = {_room(p.relative_to(PACKAGE)) for p in _modules()} - {""}
    assert rooms <= set(RANK), f"rooms missing from LAYERS (and docs/architecture.md): {sorted(rooms - set(RANK))}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_layers(path: Path):
    room = _room(path.relative_to(PACKAGE))
    if not room:
        return  # the package's own __init__: the public surface may name any room
    upward = sorted(r for r in _imported_rooms(path) - {room, "__version__"} if RANK.get(r, -1) >= RANK[room])
    assert not upward, f"{room} (layer {RANK[room]}) imports {upward} (same or higher layer)"


def test_no_module_outgrows_one_sitting():
    long = {}
    for path in _modules():
        relative = path.relative_to(PACKAGE).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES and relative not in WHOLE_ON_PURPOSE:
            long[relative] = lines
    assert not long, f"modules over {MAX_LINES} lines: {long}"
