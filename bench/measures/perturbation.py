"""How far a perturbation moves a metric, on the scale of a domain change (000 §6.2).

    shift_p = (d(R, p(S)) − d(R, S)) / (d(R, O) − d(R, S))

0: p(S) is no farther from R than another sample of A; 1: as far as a sample of B.
"""

from __future__ import annotations

import math

import pandas as pd

from textmetric_bench.collections.perturbation_samples import OTHER, SAME
from textmetric_bench.measures.failures import failure_summary

MEASURE_COLUMNS = ["metric", "perturbation", "repetition", "d_same", "d_perturbed", "d_other", "gap", "shift"]


def relative_shift(d_same: float, d_perturbed: float, d_other: float) -> float:
    """(d_b − d_a) / (d_c − d_a); NaN when a distance is missing or the gap d_c − d_a is not positive."""
    gap = d_other - d_same
    if not all(map(math.isfinite, (d_same, d_perturbed, d_other))) or gap <= 0:
        return math.nan
    return (d_perturbed - d_same) / gap


def perturbation_measures(distances: pd.DataFrame, perturbations: list[str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """One row per (metric, perturbation, repetition) with the three distances, the gap and the shift."""
    rows, failures = [], failure_summary(distances)
    for name, grp in distances.groupby("metric", sort=False):
        for _, rep in grp.groupby("repetition", sort=True):
            d = rep.set_index("condition")["distance"]
            a, c = float(d.get(SAME, math.nan)), float(d.get(OTHER, math.nan))
            for p in perturbations:
                b = float(d.get(p, math.nan))
                rows.append(
                    {
                        "metric": name,
                        "perturbation": p,
                        "repetition": int(rep["repetition"].iloc[0]),
                        "d_same": a,
                        "d_perturbed": b,
                        "d_other": c,
                        "gap": c - a,
                        "shift": relative_shift(a, b, c),
                    }
                )
    return pd.DataFrame(rows, columns=MEASURE_COLUMNS), failures
