"""Charts of a run: the radar of 004 Figure 4 and the distance-vs-ℓ scatter of Figure 2 (top).

Figures are drawn on bare ``matplotlib.figure.Figure`` objects (Agg rendering, no pyplot
state), so plotting is safe in parallel sweep jobs and never opens a window.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure
from scipy import stats

from reports.reference_rows import is_reference
from reports.tables import QUALITY_MEASURES, format_score, metric_labels, similarities

#: Axis labels for the radar chart, in the paper's notation.
AXIS_LABELS = {"A": "A", "Aw": "Aʷ", "rho": "ρ", "omega2": "ω²", "L": "L", "S": "S", "I": "I"}
_SVG_METADATA = {"Date": None}  # keeps SVG output byte-stable between runs


def _safe_name(metric: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(metric)).strip("_") or "metric"


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    is_svg = path.suffix == ".svg"
    with rc_context({"svg.fonttype": "none"}):  # SVG text stays text: searchable and editable
        fig.savefig(path, dpi=100, bbox_inches="tight", metadata=_SVG_METADATA if is_svg else None)
    return path


def radar_chart(summary: pd.DataFrame, out_stem: Path, *, title: str | None = None) -> list[Path]:
    """One polygon per metric over the quality measures present (004 Figure 4); PNG and SVG.

    Time is left out to keep the 0..1 scale, as in the paper; negative or missing means
    are drawn at 0 and the caption says so.
    """
    means = summary.pivot(index="metric", columns="measure", values="mean")
    if means.empty:
        raise ValueError("radar chart needs at least one metric in the summary; every metric failed?")
    axes_used = [m for m in QUALITY_MEASURES if m in means.columns and means[m].notna().any()]
    if len(axes_used) < 3:
        raise ValueError(
            f"radar chart needs at least 3 quality measures among {', '.join(QUALITY_MEASURES)}; "
            f"the summary has {axes_used or 'none'}. Use the table instead for fewer measures."
        )
    values = means[axes_used]
    clipped = bool((values < 0).any().any() or values.isna().any().any())
    values = values.fillna(0.0).clip(lower=0.0, upper=1.0)
    labels = metric_labels(summary)

    angles = np.linspace(0, 2 * np.pi, len(axes_used), endpoint=False)
    closed = np.append(angles, angles[0])
    fig = Figure(figsize=(6.5, 5.5))
    ax = fig.add_subplot(projection="polar")
    ax.set_theta_offset(np.pi / 2)
    ax.set_theta_direction(-1)
    for metric, row in values.iterrows():
        radii = np.append(row.to_numpy(), row.to_numpy()[0])
        style, width = ("--", 1.0) if is_reference(metric) else ("-", 1.5)
        (line,) = ax.plot(closed, radii, linewidth=width, linestyle=style, label=labels.get(metric, str(metric)))
        ax.fill(closed, radii, alpha=0.1, color=line.get_color())
    ax.set_xticks(angles)
    ax.set_xticklabels([AXIS_LABELS[m] for m in axes_used])
    ax.set_ylim(0, 1)
    ax.set_yticks([0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_rlabel_position(180 / len(axes_used))  # radial labels between two axes, not on one
    ax.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0), title="metric", fontsize="small")
    ax.set_title(title or "Metric robustness (mean over repetitions)", pad=20)
    caption = "Scale 0..1, higher is better; time excluded (004 Figure 4)."
    if clipped:
        caption += " Negative or missing means drawn at 0."
    if any(map(is_reference, values.index)):
        caption += " Dashed: reference results, not computed in this run."
    fig.text(0.02, 0.01, caption, fontsize="small")
    out_stem = Path(out_stem)
    return [_save(fig, out_stem.with_name(out_stem.name + ext)) for ext in (".png", ".svg")]


def _ols_band(x: np.ndarray, y: np.ndarray, grid: np.ndarray, confidence: float = 0.95):
    """OLS fit of y on x evaluated on ``grid``, with the t-band of the mean prediction; None if degenerate."""
    n = x.size
    sxx = float(((x - x.mean()) ** 2).sum())
    if n < 3 or sxx == 0.0:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    residuals = y - (intercept + slope * x)
    s = math.sqrt(float((residuals**2).sum()) / (n - 2))
    fit = intercept + slope * grid
    half = stats.t.ppf(0.5 + confidence / 2, n - 2) * s * np.sqrt(1.0 / n + (grid - x.mean()) ** 2 / sxx)
    return fit, fit - half, fit + half


def _draw_scatter(ax, ell: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> float:
    """Jittered points, OLS line and 95% band on ``ax``; returns the pooled Spearman ρ."""
    jitter = rng.uniform(-0.15, 0.15, size=ell.size)
    ax.scatter(ell + jitter, y, s=10, alpha=0.5, color="tab:gray", edgecolors="none")
    grid = np.linspace(ell.min(), ell.max(), 50)
    band = _ols_band(ell, y, grid)
    if band is not None:
        fit, low, high = band
        ax.plot(grid, fit, color="tab:blue", linewidth=1.5)
        ax.fill_between(grid, low, high, color="tab:blue", alpha=0.25, linewidth=0)
    if np.unique(ell).size < 2 or np.unique(y).size < 2:
        return float("nan")
    return float(stats.spearmanr(ell, y).statistic)


def _finite_rows(distances: pd.DataFrame, column: str) -> pd.DataFrame:
    frame = distances[["metric", "ell", column]].copy()
    frame["ell"] = pd.to_numeric(frame["ell"], errors="coerce")
    frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame[np.isfinite(frame["ell"]) & np.isfinite(frame[column])]


def _with_z(distances: pd.DataFrame) -> pd.DataFrame:
    """Distances with a ``z`` column, computed within (metric, repetition) when the runner gave none
    (of a similarity's negation, as the runner does)."""
    if "z" in distances.columns:
        return distances
    frame = distances.copy()
    keys = ["metric", "repetition"] if "repetition" in frame.columns else ["metric"]
    value = frame["distance"].where(~frame["metric"].astype(str).isin(similarities(frame)), -frame["distance"])
    grouped = value.groupby([frame[k] for k in keys])
    frame["z"] = (value - grouped.transform("mean")) / grouped.transform("std")
    return frame


def distance_scatter(distances: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Raw distance against ℓ per metric, pooled over repetitions (004 Figure 2 top), plus a z-scored grid.

    Writes ``scatter_<metric>.png`` for every metric with at least one finite distance and
    ``scatter_all.png`` with one panel per such metric. A similarity's raw values fall with ℓ when
    it works; its z (computed on the negation, as every measure) rises like a distance's.
    """
    out_dir = Path(out_dir)
    raw = _finite_rows(distances, "distance")
    metrics = sorted(raw["metric"].unique(), key=str)
    labels, similar = metric_labels(distances), similarities(distances)
    paths: list[Path] = []
    for metric in metrics:
        rows = raw[raw["metric"] == metric]
        fig = Figure(figsize=(5, 3.8))
        ax = fig.add_subplot()
        rho = _draw_scatter(ax, rows["ell"].to_numpy(), rows["distance"].to_numpy(), np.random.default_rng(0))
        ax.set_xlabel("ℓ (separation j − i)")
        if metric in similar:  # ρ of the negation, as in the measures
            rho = -rho
        ax.set_ylabel("similarity (raw; measures use its negation)" if metric in similar else "distance (raw)")
        ax.set_title(f"{labels.get(metric, metric)}: pooled ρ = {format_score(rho)}")
        paths.append(_save(fig, out_dir / f"scatter_{_safe_name(metric)}.png"))
    if not metrics:
        return paths

    zrows = _finite_rows(_with_z(distances), "z")
    ncols = min(4, len(metrics))
    nrows = math.ceil(len(metrics) / ncols)
    fig = Figure(figsize=(max(3.2 * ncols, 5.5), 2.8 * nrows + 0.5), layout="constrained")
    grid = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    for ax, metric in zip(grid.flat, metrics):
        rows = zrows[zrows["metric"] == metric]
        rho = float("nan")
        if len(rows):
            rho = _draw_scatter(ax, rows["ell"].to_numpy(), rows["z"].to_numpy(), np.random.default_rng(0))
        ax.set_title(f"{labels.get(metric, metric)} (ρ = {format_score(rho)})", fontsize="medium")
    for index in range(len(metrics), nrows * ncols):
        grid.flat[index].set_visible(False)
    for col in range(ncols):  # the lowest visible panel of each column carries the ℓ axis
        bottom = grid[(len(metrics) - 1 - col) // ncols, col]
        bottom.xaxis.set_tick_params(labelbottom=True)
        bottom.set_xlabel("ℓ")
    for ax in grid[:, 0]:
        ax.set_ylabel("distance (z)")
    fig.suptitle("Distance vs ℓ, z-scored within repetition (004 Figure 2 top)")
    paths.append(_save(fig, out_dir / "scatter_all.png"))
    return paths
