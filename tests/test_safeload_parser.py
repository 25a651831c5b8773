"""safeload's TOML parser: compiled tomli when installed, else tomllib, with
the same results and the same errors either way (issue 28: the pure-Python
parser was half of loading a small BottleMod model)."""

from __future__ import annotations

import sys

import pytest

from condor_rlrep import safeload

TEXTS = [
    'name = "m"\n[tasks.a]\nmax_progress = 1137486559\nreq = { points = [[0, 0], [1e3, 2.5]] }\n',
    "a = 1\na = 2\n",
    "a = {b = 1}\na.c = 2\n",
    "[x]\n[x]\n",
    'a = "\\e"\n',  # an escape TOML 1.1 adds: still refused
    "a = {b = 1,\n}\n",  # a newline in an inline table (TOML 1.1): still refused
    "a = 1979-05-27T07:32\n",  # a time without seconds (TOML 1.1): still refused
    "a = [1, 2,]\nb = nan\nc = 1_000\nd = 0x1f\n",
    "a = --1\n",
    "a = " + "[" * 600 + "]" * 600 + "\n",
    "big = " + "9" * 400 + "\n",
    "huge = " + "9" * 5000 + "\n",
]


def _outcome(text: str) -> tuple:
    try:
        return ("ok", repr(safeload.load_toml(text)))
    except safeload.LoadError as err:
        # the nesting depth at which either parser gives up differs (both refuse)
        return ("error", err.message, err.line if "nested" not in err.message else None)


@pytest.fixture
def parser(monkeypatch: pytest.MonkeyPatch):
    def use(hide_tomli: bool) -> str:
        monkeypatch.setattr(safeload, "_TOML", None)
        if hide_tomli:
            monkeypatch.setitem(sys.modules, "tomli", None)  # import tomli raises ImportError
        return safeload._toml().__name__

    return use


def test_tomli_and_tomllib_give_the_same_data_and_errors(parser) -> None:
    pytest.importorskip("tomli")
    fast = parser(False)
    with_fast = [_outcome(t) for t in TEXTS]
    slow = parser(True)
    with_slow = [_outcome(t) for t in TEXTS]
    assert (fast, slow) == ("tomli", "tomllib")
    assert with_fast == with_slow
    assert [o[0] for o in with_fast] == ["ok", "error", "error", "error", "error", "error", "error", "ok", "error",
                                         "error", "ok", "error"]


def test_the_compiled_tomli_is_the_one_used_when_installed(parser) -> None:
    tomli = pytest.importorskip("tomli")
    import tomli._parser

    if not tomli._parser.__file__.endswith(".so"):
        pytest.skip("a pure-Python tomli: tomllib is used")
    assert parser(False) == "tomli"


def test_tamed_copy_gives_load_tomls_values_and_leaves_its_input_alone() -> None:
    big = 10**400
    raw = safeload.load_toml(f"a = {big}\nb = [[1, -{big}], {{ c = {big} }}]\nd = 5\ne = true\n", keep_huge_ints=True)
    assert raw["a"] == big and raw["b"][0][1] == -big  # kept, as asked
    copy = safeload.tamed_copy(raw)
    assert copy == {"a": float("inf"), "b": [[1, float("-inf")], {"c": float("inf")}], "d": 5, "e": True}
    assert repr(copy) == repr(safeload.load_toml(f"a = {big}\nb = [[1, -{big}], {{ c = {big} }}]\nd = 5\ne = true\n"))
    assert raw["a"] == big and raw["b"][1]["c"] == big  # the input is not touched
    assert type(copy["d"]) is int and type(copy["e"]) is bool
    deep: list = [big]
    for _ in range(100_000):  # any depth: no recursion
        deep = [deep]
    out = safeload.tamed_copy(deep)
    for _ in range(100_000):
        out = out[0]
    assert out == [float("inf")]
