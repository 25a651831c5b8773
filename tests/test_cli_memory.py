"""The CLI under a memory limit: one error line, never a traceback or a hang.

The limits are real (``RLIMIT_AS`` through ``prlimit`` or ``resource.setrlimit``
in a child process): a test process of its own would be starved by them.
"""

from __future__ import annotations

import dis
import os
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from condor_rlrep.memlimit import RESERVE

CLI = str(Path(sys.executable).with_name("condor-rlrep"))
# One BLAS thread: OpenBLAS reserves per-thread buffers at import.
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
needs_prlimit = pytest.mark.skipif(shutil.which("prlimit") is None, reason="no prlimit")


def _python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                              timeout=timeout, env=ENV)
    except subprocess.TimeoutExpired:
        pytest.fail(f"child python hung (killed after {timeout} s)")


def _limited(limit: int, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["prlimit", f"--as={limit}", CLI, *args], capture_output=True, text=True,
                              timeout=timeout, env=ENV)
    except subprocess.TimeoutExpired:
        pytest.fail(f"condor-rlrep {' '.join(args)} hung under prlimit --as={limit} (killed after {timeout} s)")


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("condor-rlrep: error: "), lines
    return lines[0]


@pytest.fixture
def small_dag(tmp_path: Path) -> Path:
    dag = tmp_path / "small.dag"
    dag.write_text('JOB a n.sub\nJOB b n.sub\nVARS a rlrep_estimate="60"\nVARS b rlrep_estimate="30"\nPARENT a CHILD b\n')
    (tmp_path / "n.sub").write_text("executable = /bin/true\nqueue\n")
    return dag


# -- memlimit.check_headroom ----------------------------------------------------

_HEADROOM = """
    import mmap, resource, sys
    from condor_rlrep.memlimit import RESERVE, _address_space, check_headroom

    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
    assert _address_space() == int(status["VmSize"].split()[0]) * 1024, (_address_space(), status["VmSize"])
    check_headroom("x.dag")  # no limit: nothing to check
    # 300 MiB of address space that is never touched: counts for RLIMIT_AS, costs no memory
    block = mmap.mmap(-1, 300 << 20)
    used = _address_space()
    for spare, fails in ((RESERVE * 2, False), (RESERVE // 2, True)):
        resource.setrlimit(resource.RLIMIT_AS, (used + spare, resource.RLIM_INFINITY))
        try:
            check_headroom("x.dag")
            print(spare, "passed")
        except MemoryError as err:
            print(spare, "raised", err)
"""


def test_check_headroom_gives_up_within_the_reserve_of_the_limit():
    """Limit = in use + 2·RESERVE: passes; in use + RESERVE/2: MemoryError naming the file and the sizes."""
    done = _python(_HEADROOM)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == f"{RESERVE * 2} passed"
    assert second.startswith(f"{RESERVE // 2} raised reading x.dag: ")
    assert second.endswith("address-space limit in use")
    in_use, limit = (int(word) for word in second.split("x.dag: ")[1].split() if word.isdigit())
    assert abs(limit - in_use - (RESERVE // 2 >> 20)) <= 1  # 32 MiB, ± rounding to MiB


def test_check_headroom_keeps_at_most_a_quarter_of_a_small_limit():
    """Limit 40 MiB above what is in use: the reserve is 1/4 of the limit, not RESERVE (64 MiB)."""
    done = _python("""
        import resource
        from condor_rlrep.memlimit import _address_space, check_headroom
        used = _address_space()
        resource.setrlimit(resource.RLIMIT_AS, (used + (40 << 20), resource.RLIM_INFINITY))
        check_headroom("x.dag")  # reserve (used + 40 MiB) // 4 < 40 MiB while used < 120 MiB
        print("passed", used >> 20)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("passed")


# -- the CLI -----------------------------------------------------------------------


@needs_prlimit
def test_inspect_big_dag_is_one_line_at_every_limit(tmp_path: Path):
    """A DAG far too big for the limit, at limits where the error lands at
    different places of the parse: every time one line naming the file (the
    reader gave up with memory to spare), exit 2, within the timeout.

    Before the fix, the MemoryError came from malloc with no memory left and
    CPython could spin forever unwinding it (4 of 122 runs of a 1-M-node DAG
    at limits of 400–990 MB). A hang here is a failure, by the timeout.
    """
    dag = tmp_path / "big.dag"
    with dag.open("w") as out:
        for i in range(600_000):
            out.write(f"JOB N{i} n.sub\nVARS N{i} rlrep_estimate=\"60\"\n")
        for i in range(1, 600_000):
            out.write(f"PARENT N{i - 1} CHILD N{i}\n")
    (tmp_path / "n.sub").write_text("executable = /bin/true\nqueue\n")
    for limit in (250_000_000, 330_000_000, 400_000_000):
        line = _one_error_line(_limited(limit, "inspect", str(dag)))
        assert line.startswith(f"condor-rlrep: error: out of memory running 'condor-rlrep inspect' (reading {dag}: "), line


@needs_prlimit
def test_numpy_that_cannot_be_mapped_is_one_out_of_memory_line(small_dag: Path):
    """Under prlimit --as=40 MB the DAG fits but numpy's C extension cannot be
    mapped: ImportError inside numpy. One out-of-memory line, exit 2 (was a
    40-line traceback)."""
    line = _one_error_line(_limited(40_000_000, "inspect", str(small_dag)))
    assert line.startswith("condor-rlrep: error: out of memory running 'condor-rlrep inspect' ("), line


_FAILING_IMPORT = """
    import sys
    from importlib.abc import MetaPathFinder

    class Refuse(MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "numpy._core._multiarray_umath":
                # what the dynamic loader says when mmap fails for want of memory
                raise ImportError("libscipy_openblas64_.so: failed to map segment from shared object", name=name)
            return None

    for name in [m for m in sys.modules if m == "numpy" or m.startswith("numpy.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, Refuse())
    from condor_rlrep.cli.main import main
    main(["inspect", sys.argv[1]])
"""


def test_import_error_from_a_failed_mapping_names_the_package(small_dag: Path):
    """numpy re-raises its extension's failure as an ImportError of its own,
    many lines long: the line names numpy and the loader's reason."""
    line = _one_error_line(_python(_FAILING_IMPORT, str(small_dag)))
    assert line == (
        "condor-rlrep: error: out of memory running 'condor-rlrep inspect' (cannot load 'numpy' "
        "(libscipy_openblas64_.so: failed to map segment from shared object)): the input is too large for "
        "the memory this process may use (raise the limit, or split the input)"
    )


def test_missing_module_is_one_line_naming_it(small_dag: Path):
    """A broken install (numpy missing) is not called out of memory: one line
    naming the module, exit 2."""
    line = _one_error_line(_python("""
        import sys
        sys.modules["numpy"] = None  # what an uninstalled package looks like to `import numpy`
        from condor_rlrep.cli.main import main
        main(["inspect", sys.argv[1]])
    """, str(small_dag)))
    assert line == ("condor-rlrep: error: cannot import 'numpy' (import of numpy halted; None in sys.modules): "
                    "the installation is incomplete (reinstall condor-rlrep with its dependencies)")


def test_memory_error_in_a_command_is_freed_before_click_unwinds():
    """The callback guard re-raises a MemoryError without the command's frames:
    what the command held is gone when the error reaches click."""
    done = _python("""
        import gc, weakref
        import click
        from condor_rlrep.cli.main import _guard

        class Big:
            pass

        held = []

        @click.command()
        def command():
            data = Big()
            held.append(weakref.ref(data))
            raise MemoryError("reading x.dag: 1 MiB of the 2 MiB address-space limit in use")

        _guard(command)
        _guard(command)  # idempotent: loading a command twice wraps it once
        try:
            command.main([], standalone_mode=False)
        except MemoryError as err:
            print(held[0]() is None, err.args[0], err.__context__ is None)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True reading x.dag: 1 MiB of the 2 MiB address-space limit in use True"


@pytest.mark.skipif(not hasattr(dis, "_parse_exception_table"), reason="no exception table (CPython < 3.11)")
def test_inspect_has_no_handler_that_allocates_to_unwind():
    """CPython 3.11 pushes the offset of the failing instruction as an int when
    it enters a ``with``/``finally`` handler (``lasti``); past offset 256 that
    int is allocated, and with no memory left it retries the same handler
    forever. ``inspect`` (the command whose frames a MemoryError crosses before
    the callback guard) keeps every such handler short of 256.
    """
    import condor_rlrep.cli.inspect_cmd as module

    def codes(code: types.CodeType):
        yield code
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                yield from codes(const)

    top = compile(Path(module.__file__).read_text(encoding="utf-8"), module.__file__, "exec")
    late = [
        (code.co_qualname, entry.end // 2)
        for code in codes(top) for entry in dis._parse_exception_table(code)
        if entry.lasti and entry.end // 2 > 256  # offsets in code units of 2 bytes
    ]
    assert late == []


@needs_prlimit
def test_inspect_is_one_line_where_the_parse_fits_but_numpy_would_not(tmp_path: Path):
    """A 100k-node DAG under 180–200 MB: the parse fits, numpy (imported by the
    graph after it) did not, and OpenBLAS, mapping its buffers at that import,
    gave up from C: "OpenBLAS error: Memory allocation still failed after 10
    retries, giving up.", exit 1, every time (4 of 4 limits 175–190 MB, and
    200 MB). ``inspect`` now loads numpy before the input, so the reader's
    check gives up with the usual line."""
    dag = tmp_path / "n100k.dag"
    with dag.open("w") as out:
        for i in range(100_000):
            out.write(f"JOB N{i} n.sub\nVARS N{i} rlrep_estimate=\"60\"\n")
        for i in range(1, 100_000):
            out.write(f"PARENT N{i - 1} CHILD N{i}\n")
    (tmp_path / "n.sub").write_text("executable = /bin/true\nqueue\n")
    for limit in (180_000_000, 190_000_000, 200_000_000):
        line = _one_error_line(_limited(limit, "inspect", str(dag), timeout=180))
        assert line.startswith(f"condor-rlrep: error: out of memory running 'condor-rlrep inspect' (reading {dag}: "), line


def test_numpy_memory_error_keeps_its_message_through_the_guard():
    """numpy's MemoryError carries the shape and dtype as its args and builds
    its message from them: re-raised by the callback guard it stays numpy's
    (before, a plain MemoryError with those args: the line said only
    "((35184372088832,))")."""
    done = _python("""
        import resource, sys, types
        import click
        import numpy as np
        from condor_rlrep.cli import main as cli_main

        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY))
        module = types.ModuleType("rlrep_test_boom")

        @click.command("boom")
        def boom():
            np.empty(1 << 45)  # 256 TiB: numpy's own MemoryError, at once

        module.boom = boom
        sys.modules[module.__name__] = module
        cli_main._COMMANDS["boom"] = (f"{module.__name__}:boom", "Allocate too much.")
        cli_main.main(["boom"])
    """)
    line = _one_error_line(done)
    assert line == ("condor-rlrep: error: out of memory running 'condor-rlrep boom' (Unable to allocate 256. TiB for "
                    "an array with shape (35184372088832,) and data type float64): the input is too large for the "
                    "memory this process may use (raise the limit, or split the input)")
