"""Figures over many repetitions or many runs: 004 Figure 6 boxplots and sweep trends."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from reports.figures import _save
from reports.tables import MEASURE_LABELS, QUALITY_MEASURES, metric_labels


def measure_boxplots(measures: pd.DataFrame, out_path: Path) -> Path | None:
    """004 Figure 6: per quality measure, one box per metric over repetitions."""
    present = [m for m in QUALITY_MEASURES if m in measures and measures[m].notna().any()]
    if not present or measures.empty:
        return None
    metrics = sorted(measures["metric"].unique())
    labels = metric_labels(measures)
    ncols = min(3, len(present))
    nrows = math.ceil(len(present) / ncols)
    fig = Figure(figsize=(max(3.4 * ncols, 5.5), 0.35 * len(metrics) * nrows + 1.6 * nrows),
                 layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, measure in zip(axes.flat, present):
        data = [measures.loc[measures["metric"] == m, measure].dropna().to_numpy() for m in metrics]
        ax.boxplot(data, orientation="horizontal", tick_labels=[labels[m] for m in metrics], widths=0.6)
        ax.set_title(MEASURE_LABELS.get(measure, measure).split(":")[0], fontsize="medium")
        ax.grid(axis="x", alpha=0.3)
    for ax in list(axes.flat)[len(present):]:
        ax.set_visible(False)
    fig.suptitle("Measures across repetitions (004 Figure 6); further right is better")
    return _save(fig, out_path)


def sweep_trends(long: pd.DataFrame, out_path: Path) -> Path | None:
    """How each measure moves with the swept KSC parameter (k or n), one line per metric."""
    varying = [c for c in ("k", "n") if c in long and long[c].nunique() > 1]
    if not varying:
        return None
    axis = varying[0]
    fixed = [c for c in varying[1:]]
    present = [m for m in QUALITY_MEASURES if m in set(long["measure"])]
    if not present:
        return None
    ncols = min(3, len(present))
    nrows = math.ceil(len(present) / ncols)
    fig = Figure(figsize=(max(3.6 * ncols, 6), 2.8 * nrows + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    groups = ["pair", "metric", *fixed]
    for ax, measure in zip(axes.flat, present):
        rows = long[long["measure"] == measure]
        for key, grp in rows.groupby(groups):
            grp = grp.sort_values(axis)
            label = " ".join(f"{v}" if g == "metric" else f"{g}={v}" for g, v in zip(groups, key)
                             if g != "pair" or rows["pair"].nunique() > 1)
            x = grp[axis].to_numpy(float)
            ax.plot(x, grp["mean"], marker="o", label=label)
            lo, hi = grp["ci_low"].to_numpy(float), grp["ci_high"].to_numpy(float)
            if np.isfinite(lo).any():
                ax.fill_between(x, lo, hi, alpha=0.15)
        ax.set_title(MEASURE_LABELS.get(measure, measure).split(":")[0], fontsize="medium")
        ax.set_xlabel(axis)
    for ax in list(axes.flat)[len(present):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    fig.suptitle(f"Measures against {axis} (mean and 95% CI over repetitions); higher is better")
    return _save(fig, out_path)
