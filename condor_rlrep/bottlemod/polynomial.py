"""One polynomial piece: its value and its real roots, and the tolerances
every comparison in BottleMod uses.

A piece of a :class:`~condor_rlrep.bottlemod.functions.PFunc` is a
polynomial in the local coordinate ``s = x - x[i]``; everything that needs
the piece's value at a point or where it reaches a value (first reach,
crossings, monotonicity, the progress solver) comes here, so that the
root-finding rules — closed form up to degree 2, ``numpy.roots`` above, and
which near-roots count — are written once.

Tolerances (explicit, used by every comparison below):

* :data:`REL_TOL` — two values ``a`` and ``b`` are considered equal when
  ``|a - b| <= REL_TOL * scale``, ``scale`` being the function's value range
  (or 1).  Used for monotonicity checks and for accepting roots.
* Roots of polynomial pieces are accepted when they lie in the piece's
  interval widened by ``REL_TOL`` times its length; imaginary parts (degree > 2)
  below ``IMAG_TOL`` times the root's magnitude are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["REL_TOL", "IMAG_TOL", "poly_at", "poly_roots", "roots_desc"]

REL_TOL = 1e-9
IMAG_TOL = 1e-7


def poly_at(c_desc: Sequence[float], s: float) -> float:
    """Value at ``s`` of the polynomial with descending coefficients ``c_desc`` (Horner)."""
    acc = 0.0
    for coef in c_desc:
        acc = acc * s + coef
    return float(acc)


def poly_roots(asc: Sequence[float]) -> list[float]:
    """Real roots of ``a0 + a1 s + a2 s² + …`` (ascending coefficients).

    Closed form up to degree 2 (numerically stable quadratic formula; a
    negative discriminant within ``REL_TOL`` of zero counts as a double root),
    ``numpy.roots`` above, keeping roots whose imaginary part is below
    ``IMAG_TOL`` times their magnitude.  An identically zero polynomial has no
    roots by convention.
    """
    k = len(asc) - 1
    while k > 0 and asc[k] == 0.0:
        k -= 1
    if k == 0:
        return []
    if k == 1:
        return [-asc[0] / asc[1]]
    if k == 2:
        a0, a1, a2 = asc[0], asc[1], asc[2]
        disc = a1 * a1 - 4.0 * a2 * a0
        if disc < 0.0:
            if disc >= -REL_TOL * max(a1 * a1, abs(4.0 * a2 * a0)):
                return [-a1 / (2.0 * a2)]
            return []
        q = -0.5 * (a1 + math.copysign(math.sqrt(disc), a1))
        if q == 0.0:
            return [0.0]
        return sorted({q / a2, a0 / q})
    roots = np.roots(np.asarray(asc[: k + 1], dtype=float)[::-1])
    return sorted(float(r.real) for r in roots if abs(r.imag) <= IMAG_TOL * max(1.0, abs(r)))


def roots_desc(c_desc: Sequence[float]) -> list[float]:
    """:func:`poly_roots` of descending coefficients (a piece's column of ``c``)."""
    return poly_roots(list(c_desc)[::-1])
