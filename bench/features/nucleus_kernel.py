"""The nucleus of every row and one token drawn from it, compiled with numba: O(vocabulary) a row, no sort of it.

The nucleus of a row is that of ``lm_sampling.nucleus_edge``: its tokens in descending probability (ties by
token id), kept while the mass of those before is below ``top_p``. Instead of sorting the vocabulary this finds
the token where that mass crosses ``top_p`` from a histogram of the probabilities by the top bits of their
float32 pattern (for non-negative floats the bit order is the value order: 1/8 octave a bin), then sorts only
the bin it crosses in. The draw walks the nucleus in token-id order, as ``lm_sampling.draw_in_nucleus`` does.

No fast-math and no parallel loops: every sum runs in one fixed order in float64, so the result does not depend
on the CPU's vector width (AVX2 or AVX-512) or on the thread count.
"""

from __future__ import annotations

import numba
import numpy as np

SHIFT = 20  # bits of the float32 pattern below a bin: 8 bins an octave
BINS = 1 << (32 - SHIFT)
FIRST_NOT_FINITE = 0x7F800000 >> SHIFT  # the bins of inf and NaN (and of negative patterns, above)


def _compiled(function):
    """Compiled once and cached beside this file or in the user's cache (numba's own choice); where neither can be
    written, compiled in every process that uses it (about 2 s)."""
    try:
        return numba.njit(nogil=True, cache=True)(function)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return numba.njit(nogil=True)(function)


@_compiled
def draw_rows(probs, bits, u, top_p, out):  # pragma: no cover - compiled; tested through sample_nucleus
    """Fill ``out`` (rows) with one token a row; returns the first row with a non-finite or negative probability,
    or -1. ``probs`` (rows x vocabulary, float32, C order) and ``bits`` (the same memory as uint32), ``u``
    (rows, float64, in [0, 1)): each row's uniform draw."""
    rows, n = probs.shape
    hist = np.empty(BINS, np.float64)
    values = np.empty(n, np.float32)
    ids = np.empty(n, np.int64)
    for r in range(rows):
        hist[:] = 0.0
        for j in range(n):
            hist[bits[r, j] >> SHIFT] += probs[r, j]
        for b in range(FIRST_NOT_FINITE, BINS):
            if hist[b] != 0.0:  # NaN, inf or a negative float: not a distribution
                return r
        # the highest bin whose tokens take the mass before them to top_p: the nucleus ends in it
        mass = 0.0
        b = FIRST_NOT_FINITE - 1
        while b >= 0 and mass + hist[b] < top_p:
            mass += hist[b]
            b -= 1
        last_value = np.float32(0.0)
        last_id = n - 1  # if the whole row's mass stays below top_p: every token
        done = False
        while b >= 0 and not done:
            m = 0
            for j in range(n):
                if bits[r, j] >> SHIFT == b:
                    values[m] = probs[r, j]
                    ids[m] = j
                    m += 1
            order = np.argsort(-values[:m], kind="mergesort")  # stable: ties keep token-id order
            for t in order:
                if mass >= top_p:
                    done = True
                    break
                last_value, last_id = values[t], ids[t]
                mass += values[t]
            b -= 1
        # the draw: the first nucleus token, in token-id order, whose cumulative mass exceeds u * mass
        target = u[r] * mass
        cumulative = 0.0
        chosen = -1
        for j in range(n):
            v = probs[r, j]
            if v > last_value or (v == last_value and j <= last_id):
                cumulative += v
                chosen = j
                if cumulative > target:
                    break
        out[r] = chosen
    return -1
