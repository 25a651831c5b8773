"""One way in for randomness: normalise an ``rng`` argument to ``uniform()``.

Accepted: a ``numpy.random.Generator``, an ``int`` seed (→
``numpy.random.default_rng(seed)``), a ``random.Random``, or ``None``. For
``None`` the in-memory agent draws a fresh numpy generator; the store (whose
hooks must not import numpy) uses ``random.Random()`` seeded by the OS.

Standard normals (Thompson sampling) are Box–Muller transforms of
consecutive uniform pairs of that one stream: :class:`BufferedNormal` makes
them in blocks, bit-identical to ``policy._standard_normal`` drawing them
one at a time.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

__all__ = ["uniform_source", "BufferedUniform", "BufferedNormal"]

_BLOCK = 4096


def uniform_source(rng: Any, *, prefer_numpy: bool) -> Callable[[], float]:
    """A callable returning floats in [0, 1) drawn from ``rng``."""
    if isinstance(rng, random.Random):
        return rng.random
    if rng is None and not prefer_numpy:
        return random.Random().random
    if rng is None or isinstance(rng, int) and not isinstance(rng, bool):
        import numpy as np

        rng = np.random.default_rng(rng)
    if hasattr(rng, "random") and hasattr(rng, "bit_generator"):
        return BufferedUniform(rng) if prefer_numpy else rng.random
    raise TypeError(f"rng must be a numpy Generator, an int seed, a random.Random or None; got {rng!r}")


class BufferedUniform:
    """Draws a numpy Generator's uniforms in blocks: same values, same order as
    one ``rng.random()`` call each, at a fraction of the per-call cost."""

    __slots__ = ("_rng", "_buffer", "_next")

    def __init__(self, rng: Any):
        self._rng = rng
        self._buffer: list[float] = []
        self._next = 0

    def __call__(self) -> float:
        index = self._next
        if index >= len(self._buffer):
            self._buffer = self._rng.random(_BLOCK).tolist()
            index = 0
        self._next = index + 1
        return self._buffer[index]

    def take(self, count: int) -> Any:
        """The next ``count`` values of the stream as a numpy array."""
        import numpy as np

        rest = self._buffer[self._next :]
        self._buffer, self._next = [], 0
        if count <= len(rest):
            self._buffer, self._next = rest, count
            return np.asarray(rest[:count], dtype=np.float64)
        return np.concatenate([np.asarray(rest, dtype=np.float64), self._rng.random(count - len(rest))])


class BufferedNormal:
    """Standard normals from a uniform source, made in blocks.

    Normal ``k`` is ``sqrt(−2 ln(1 − u₂ₖ))·cos(2π u₂ₖ₊₁)`` over the uniform
    stream, exactly as :func:`condor_rlrep.agent.policy._standard_normal`
    computes it one call at a time: ``math.log`` and ``math.cos`` stay the
    per-element functions (numpy's vectorised ``log`` may differ in the last
    bit), the rest is IEEE-exact arithmetic done by numpy. Only valid when
    nothing else draws from ``uniform`` in between, as in a Thompson agent.
    """

    __slots__ = ("_uniform", "_buffer", "_next")

    def __init__(self, uniform: Callable[[], float]):
        self._uniform = uniform
        self._buffer: list[float] = []
        self._next = 0

    def take(self, count: int) -> list[float]:
        """The next ``count`` normals of the stream."""
        index = self._next
        end = index + count
        if end > len(self._buffer):
            self._buffer = self._buffer[index:] + self._block(max(_BLOCK, count))
            index, end = 0, count
        self._next = end
        return self._buffer[index:end]

    def _block(self, count: int) -> list[float]:
        import numpy as np

        take = getattr(self._uniform, "take", None)
        if take is not None:
            u = take(2 * count)
        else:
            u = np.array([self._uniform() for _ in range(2 * count)], dtype=np.float64)
        log = np.fromiter(map(math.log, (1.0 - u[0::2]).tolist()), dtype=np.float64, count=count)
        cos = np.fromiter(map(math.cos, ((2.0 * math.pi) * u[1::2]).tolist()), dtype=np.float64, count=count)
        return (np.sqrt(-2.0 * log) * cos).tolist()
