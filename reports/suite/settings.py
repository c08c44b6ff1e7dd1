"""The settings of a suite and each metric's value in each: the unit every cross-setting statistic rests on.

A setting is one run directory (a KSC run at one pair, k and n; a robustness run of one pair; ...). Its
repetitions are summarised inside it first, exactly as its own Table 3 does (mean and 95% percentile bootstrap
interval over repetitions, ``textmetric_bench.measures.summaries``); settings are never pooled. A metric taken
from shipped reference results (``source`` = reference) keeps its name here, with ``source`` saying so, so that
the same metric is one row across settings whether it was computed or taken.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from textmetric_bench.measures import registry
from textmetric_bench.measures.summaries import REFERENCE_MARK
from textmetric_bench.reports.sweep.aggregate import find_run_dirs
from textmetric_bench.reports.sweep.runs import Run, load_run

#: The per-setting table: one row per (setting, metric, measure).
SETTING_COLUMNS = [
    "setting",
    "task",
    "pair",
    "k",
    "n",
    "seed",
    "repetitions",
    "metric",
    "source",
    "orientation",
    "measure",
    "mean",
    "ci_low",
    "ci_high",
    "n_reps",
    "regime",
    "run_dir",
]
#: The per-repetition table: one row per (setting, metric, repetition, measure).
REPETITION_COLUMNS = ["setting", "metric", "repetition", "measure", "value"]
#: Measures a suite ranks, as measures.csv names them; T100 is T in another unit and is left out.
SUITE_MEASURES = registry.quality_then_others()
#: The file a suite's launcher writes beside its settings: each metric's catalogue facts (failure modes, ...).
CATALOGUE_FILE = "metric_catalogue.csv"


def load_settings(root: Path) -> list[Run]:
    """Every finished run at or below ``root`` (a directory holding ``measures.csv`` with rows), in setting order."""
    runs = []
    for path in find_run_dirs(Path(root)):
        try:
            run = load_run(path)
        except (pd.errors.EmptyDataError, ValueError, OSError):
            continue
        if not run.measures.empty:
            runs.append(run)
    return sorted(runs, key=_order)


def _order(run: Run) -> tuple:
    def number(key):
        value = run.config.get(key)
        return (0, float(value)) if isinstance(value, int | float) else (1, str(value))

    return run.task != "ksc", run.task, run.pair, number("k"), number("n"), number("seed"), str(run.path)


def setting_label(run: Run) -> str:
    """How a setting is named in tables and figures: ``atis_news k=7 n=100`` (KSC) or ``atis_news robustness``."""
    if run.task == "ksc":
        return f"{run.pair} k={run.config.get('k')} n={run.config.get('n')}"
    return f"{run.pair} {run.task}"


def setting_labels(runs: list[Run], root: Path | None = None) -> list[str]:
    """Each run's setting label, told apart by its seed, or else its directory, where two runs share one."""
    base = [setting_label(r) for r in runs]
    labels = []
    for label, run in zip(base, runs):
        same = [r for b, r in zip(base, runs) if b == label]
        if len(same) > 1 and len({str(r.config.get("seed")) for r in same}) == len(same):
            label = f"{label} seed={run.config.get('seed')}"
        elif len(same) > 1:
            inside = root is not None and run.path.is_relative_to(root)
            label = f"{label} ({run.path.relative_to(root) if inside else run.path})"
        labels.append(label)
    return labels


def setting_table(runs: list[Run], root: Path | None = None) -> pd.DataFrame:
    """One row per (setting, metric, measure) of ``SUITE_MEASURES``: each run summarised alone."""
    frames = []
    for label, run in zip(setting_labels(runs, root), runs):
        summary = run.summary()
        summary = summary[summary["measure"].isin(SUITE_MEASURES)].rename(columns={"n": "n_reps"})
        names = summary["metric"].astype(str)
        summary["source"] = names.str.endswith(REFERENCE_MARK).map({True: "reference", False: "run"})
        summary["metric"] = names.str.removesuffix(REFERENCE_MARK)
        frames.append(
            summary.assign(
                setting=label,
                task=run.task,
                pair=run.pair,
                k=run.config.get("k"),
                n=run.config.get("n"),
                seed=run.config.get("seed"),
                repetitions=run.repetitions,
                regime=run.manifest.get("regime"),
                run_dir=str(run.path),
            )
        )
    if not frames:
        return pd.DataFrame(columns=SETTING_COLUMNS)
    return pd.concat(frames, ignore_index=True).reindex(columns=SETTING_COLUMNS)


def repetition_table(runs: list[Run], root: Path | None = None) -> pd.DataFrame:
    """One row per (setting, metric, repetition, measure of ``SUITE_MEASURES``): each run's ``measures.csv`` as it
    is, one row per metric and repetition (KSC: A, A^w, rho, omega2, L, T; robustness: S, I). Repetition r of a
    setting is one collection (and metric seed) for every metric, so the values pair by (setting, repetition)."""
    frames = []
    for label, run in zip(setting_labels(runs, root), runs):
        measures = run.measures
        present = [m for m in SUITE_MEASURES if m in measures.columns]
        if "repetition" not in measures.columns or not present:
            continue
        long = measures.melt(id_vars=["metric", "repetition"], value_vars=present, var_name="measure")
        long["value"] = pd.to_numeric(long["value"], errors="coerce")
        frames.append(long.dropna(subset=["value"]).assign(setting=label, metric=lambda f: f["metric"].astype(str)))
    if not frames:
        return pd.DataFrame(columns=REPETITION_COLUMNS)
    return pd.concat(frames, ignore_index=True)[REPETITION_COLUMNS]


def own_noise(runs: list[Run], root: Path | None = None) -> pd.DataFrame:
    """Every KSC setting's ``own_noise.csv`` (a stochastic metric's spread over its own seeds beside the data's)."""
    frames = []
    for run, label in zip(runs, setting_labels(runs, root)):
        path = run.path / "own_noise.csv"
        if path.is_file():
            try:
                frames.append(pd.read_csv(path).assign(setting=label))
            except pd.errors.EmptyDataError:
                continue
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["metric", "seeds", "own_sd", "data_sd", "ratio", "setting"])
    )


def read_catalogue(root: Path) -> pd.DataFrame:
    """The catalogue facts the suite's launcher recorded (``metric_catalogue.csv``), or an empty table."""
    path = Path(root) / CATALOGUE_FILE
    if not path.is_file():
        return pd.DataFrame(columns=["metric", "orientation", "range", "stochastic", "source", "failure_modes"])
    return pd.read_csv(path, keep_default_na=False)
