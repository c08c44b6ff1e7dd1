"""Which way a metric points: the one orientation rule every measure follows.

A metric declares ``higher_is_more_different`` (``textmetric_bench.api.metric``). A *distance* (True, the
default) grows as corpora grow apart; a *similarity* (False) grows as they grow alike. The
distance tables keep each metric's own value (column ``distance``) and say which way it points
(column ``orientation``); every measure, summary and z-score is computed on the **oriented value**,
the value for a distance and its negation −s for a similarity. Negation is exact in floating
point, so a similarity scores exactly as its negation registered as a distance. Measure by measure:

- ρ (004 §4.1) and IFC (004 §5) are Spearman correlations: on −s they change sign, so a similarity
  that falls with the mixing gap ℓ (or rises over fine-tuning) scores like a distance that rises
  (or falls). ω² and L (R²) do not change when every value changes sign.
- A and A^w (004 eq. 6-7): "d(inner) < d(outer)" on −s reads s(inner) > s(outer), the inner pair
  is more alike, which is the correct judgement for a similarity.
- S and I (004 eq. 8): |(−s_s) − (−s_∞)| / |−s_∞| = |s_s − s_∞| / |s_∞|, so they equal those of s
  itself. Like any metric whose value on identical corpora is not 0 (CLASSIFIER's accuracy, say),
  the error is relative to the value's own zero, not to the value on identical corpora.
- The perturbation shift (d_b − d_a) / (d_c − d_a) and IFC's gap closed are ratios of two
  differences that both change sign, so they equal those of s; their checks that the denominator
  is positive read, on −s, s(R, S) > s(R, O) and s(A, A) > s(g_0): the same-source pair is the
  more alike, as it must be for the ratio to mean anything. On the raw s those checks would fail.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd

from textmetric_bench.api.registry import MetricInfo

DISTANCE, SIMILARITY = "distance", "similarity"
#: A metric whose mean ρ over the repetitions of a KSC study is at most this looks upside down.
#: ρ of a metric blind to the mix is 0 on average; a metric that works has ρ near 1 (the built-ins
#: score .8 to 1 on the fortune pair) and, read upside down, near −1. −0.5 lies halfway: at k = 7
#: (21 pairs) it is more than two standard deviations (≈ 0.22) of a blind metric's ρ from 0.
UPSIDE_DOWN_RHO = -0.5


def orientation_of(info: MetricInfo) -> str:
    """``"distance"`` or ``"similarity"``, from the metric's ``higher_is_more_different``."""
    return DISTANCE if info.higher_is_more_different else SIMILARITY


def oriented(table: pd.DataFrame, orientation: Mapping[str, str]) -> pd.DataFrame:
    """``table`` with each similarity's ``distance`` negated (a copy); applied twice it gives ``table`` back."""
    table = table.copy()
    flip = table["metric"].map(orientation).eq(SIMILARITY)
    table.loc[flip, "distance"] = -table.loc[flip, "distance"]
    return table


def with_orientation(table: pd.DataFrame, orientation: Mapping[str, str]) -> pd.DataFrame:
    """``table`` with the column ``orientation`` after ``metric`` (replaced if present)."""
    table = table.drop(columns="orientation", errors="ignore")
    table.insert(
        list(table.columns).index("metric") + 1,
        "orientation",
        table["metric"].map(lambda m: orientation.get(m, DISTANCE)),
    )
    return table


def orientation_warnings(
    measures: pd.DataFrame, orientation: Mapping[str, str], built_in: Collection[str] = ()
) -> dict[str, str]:
    """Metric -> why its declared orientation looks reversed: mean oriented ρ <= ``UPSIDE_DOWN_RHO``.

    Only tables with a ``rho`` column (KSC) are checked; other tasks give no warning. A metric of ``built_in`` (whose
    orientation its user cannot change) is said to move against the mixture on these corpora, not to be declared
    the wrong way round.
    """
    if measures.empty or "rho" not in measures.columns:
        return {}
    out: dict[str, str] = {}
    for key, rho in measures.groupby("metric", sort=True)["rho"]:
        name = str(key)
        values = pd.to_numeric(rho, errors="coerce").to_numpy(float)
        values = values[np.isfinite(values)]
        mean = float(values.mean()) if values.size else math.nan
        if not mean <= UPSIDE_DOWN_RHO:
            continue
        seen = f"mean ρ = {mean:.2f} over {values.size} repetition{'s' if values.size != 1 else ''}"
        if name in built_in:
            kind = "distance" if orientation.get(name, DISTANCE) == DISTANCE else "similarity"
            out[name] = (
                f"built-in metric {name!r} (a {kind}) moves against the mixture on these corpora ({seen}): its "
                f"{'values fall' if kind == 'distance' else 'values rise'} as the mixing gap grows, so its ρ, ω², L "
                "and A count against it here"
            )
        elif orientation.get(name, DISTANCE) == DISTANCE:
            out[name] = (
                f"metric {name!r} is declared a distance but its values fall as the mixing gap "
                f"grows ({seen}); if larger values mean more alike, register it with "
                "higher_is_more_different=False"
            )
        else:
            out[name] = (
                f"metric {name!r} is declared a similarity (higher_is_more_different=False) but its "
                f"values rise as the mixing gap grows (negated: {seen}); if larger values mean more "
                "different, drop higher_is_more_different=False"
            )
    return out
