"""Size and imbalance robustness S and I (004 §4.6-4.7, eq. 8).

A metric's distance between samples a_s of A and b_s of B should approach the
asymptotic distance d(A, B) quickly as s grows (size robustness S), and should not
drift when the two samples differ in size, a_s against b_{N-s} (imbalance robustness I).
Both scores are 1 minus the mean absolute error of the curve against d(A, B),
normalised by d(A, B) (004 eq. 8). The samples are drawn by ``textmetric_bench.collections.size_imbalance``.
"""

from __future__ import annotations

import numpy as np


def asymptotic_distance(distances) -> float:
    """d(A, B): the mean of the repeated distances between samples of n_ref texts (004 §4.6)."""
    d = np.asarray(distances, float)
    return float(d.mean()) if d.size and np.isfinite(d).all() else float("nan")


def robustness_score(distances, asymptotic: float) -> float:
    """1 - mean_s |d_s - d(A, B)| / |d(A, B)| over the points of one curve (004 eq. 8).

    Eq. 8 writes a sum over s while its text says "mean absolute error"; the mean is used,
    so the score does not depend on the number of grid points. 1 means every sample
    distance equals d(A, B); the score is unbounded below. NaN when d(A, B) is 0 or
    any distance is missing.
    """
    d = np.asarray(distances, float)
    if not d.size or not np.isfinite(d).all() or not np.isfinite(asymptotic) or asymptotic == 0:
        return float("nan")
    return float(1.0 - np.mean(np.abs(d - asymptotic)) / abs(asymptotic))


def size_robustness(distances, asymptotic: float) -> float:
    """S(d) from the size curve d(a_s, b_s), s in the grid (004 eq. 8)."""
    return robustness_score(distances, asymptotic)


def imbalance_robustness(distances, asymptotic: float) -> float:
    """I(d) from the imbalance curve d(a_s, b_{N-s}), normalised by d(A, B) like S (004 §4.7;
    the authors' code left I unnormalised)."""
    return robustness_score(distances, asymptotic)
