"""A full or read-only filesystem under one directory, for one process.

Faults are injected at the seam every hook write goes through: ``os.open``
and the built-in ``open`` with a writing mode fail with ``ENOSPC`` (disk
full) or ``EROFS`` (read-only) for paths under ``root``; with ``EROFS``
also every rename, unlink, link, symlink, mkdir and chmod there. A real full
disk also lets renames and unlinks through, as this does with ``ENOSPC``.

In-process: ``undo = install(root, errno.ENOSPC)``. For the real hook
executables: :func:`subprocess_env` puts a ``sitecustomize`` on
``PYTHONPATH`` that installs the same seam at interpreter start.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
from collections.abc import Callable
from pathlib import Path

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def install(root: str | os.PathLike[str], code: int) -> Callable[[], None]:
    base = os.path.realpath(os.fspath(root)) + os.sep
    real = {name: getattr(os, name) for name in ("open", "replace", "rename", "unlink", "remove", "link",
                                                  "symlink", "mkdir", "chmod")}
    real_open = builtins.open

    def inside(path: object) -> bool:
        if isinstance(path, int):
            return False
        try:
            text = os.fsdecode(path)  # type: ignore[arg-type]
        except TypeError:
            return False
        full = os.path.abspath(text)
        return (full + os.sep).startswith(base) or full.startswith(base)

    def fail(path: object) -> None:
        raise OSError(code, os.strerror(code), os.fsdecode(path))  # type: ignore[arg-type]

    def fake_os_open(path, flags, mode=0o777, *, dir_fd=None):  # noqa: ANN001
        if flags & _WRITE_FLAGS and inside(path):
            fail(path)
        return real["open"](path, flags, mode, dir_fd=dir_fd)

    def fake_open(file, mode="r", *args, **kwargs):  # noqa: ANN001
        if any(c in mode for c in "wax+") and inside(file):
            fail(file)
        return real_open(file, mode, *args, **kwargs)

    def guard(name: str, *, paths: int = 1) -> Callable[..., object]:
        def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003
            if any(inside(a) for a in args[:paths]):
                fail(args[0])
            return real[name](*args, **kwargs)
        return wrapper

    os.open = fake_os_open  # type: ignore[assignment]
    builtins.open = fake_open  # type: ignore[assignment]
    io.open = fake_open  # type: ignore[assignment]
    os.mkdir = guard("mkdir")  # type: ignore[assignment]
    if code == errno.EROFS:
        for name in ("replace", "rename", "link", "symlink"):
            setattr(os, name, guard(name, paths=2))
        for name in ("unlink", "remove", "chmod"):
            setattr(os, name, guard(name))

    def undo() -> None:
        for name, function in real.items():
            setattr(os, name, function)
        builtins.open = real_open
        io.open = real_open

    return undo


def subprocess_env(tmp: Path, root: str | os.PathLike[str], code: int) -> dict[str, str]:
    """Environment for a hook process whose ``root`` is full or read-only."""
    site = tmp / "faultfs-site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import _faultfs\n"
        "_faultfs.install(os.environ['RLREP_FAULT_ROOT'], int(os.environ['RLREP_FAULT_ERRNO']))\n"
    )
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "RLREP_FAULT_ROOT": os.fspath(root), "RLREP_FAULT_ERRNO": str(code)}
