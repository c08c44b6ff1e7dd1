"""A metric's own noise beside the data's: whether its seed moves it as much as new data does.

A stochastic metric (k-means in MAUVE and the cluster divergences, the classifier's folds) gives
another value on the very same corpora with another seed. Evaluated with S metric seeds on fixed
corpora (repetition 0's collection), its own spread is set beside the spread across the data
repetitions of the same pairs (each repetition a new collection and a new metric seed):

- ``own_sd``: per pair, the standard deviation over the metric seeds; averaged over the pairs;
- ``data_sd``: per pair, the standard deviation over the repetitions; averaged over the same pairs;
- ``ratio`` = own_sd / data_sd: near 1, the metric's seed explains as much spread as new data; near
  0, its own noise is negligible.

Both standard deviations use the n - 1 divisor; a pair with fewer than two finite values is left
out, and a metric with no such pair gets NaN.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["metric", "seeds", "own_sd", "data_sd", "ratio"]


def mean_pair_sd(table: pd.DataFrame, over: str) -> pd.Series:
    """Per metric, the mean over (i, j) pairs of the standard deviation of ``distance`` across ``over``."""
    finite = table[np.isfinite(table["distance"])]
    per_pair = finite.groupby(["metric", "i", "j"])["distance"].agg(["std", "count"])
    return per_pair.loc[per_pair["count"] >= 2, "std"].groupby(level="metric").mean()


def own_noise_table(own: pd.DataFrame, data: pd.DataFrame) -> pd.DataFrame:
    """One row per metric of ``own`` (columns metric, seed, i, j, distance), beside ``data`` (columns
    metric, repetition, i, j, distance) restricted to the same metrics and pairs."""
    metrics = list(dict.fromkeys(own["metric"]))
    pairs = own[["metric", "i", "j"]].drop_duplicates()
    data = data.merge(pairs, on=["metric", "i", "j"])
    own_sd, data_sd = mean_pair_sd(own, "seed"), mean_pair_sd(data, "repetition")
    out = pd.DataFrame(
        {
            "metric": metrics,
            "seeds": [int(own.loc[own["metric"] == m, "seed"].nunique()) for m in metrics],
            "own_sd": [own_sd.get(m, np.nan) for m in metrics],
            "data_sd": [data_sd.get(m, np.nan) for m in metrics],
        }
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = np.where(out["data_sd"] > 0, out["own_sd"] / out["data_sd"], np.nan)
    return out[COLUMNS]
