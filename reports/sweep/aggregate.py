"""Collect the measures of every job of a Hydra multirun sweep into one table.

Each job directory holding a ``measures.csv`` is summarised like a single run (mean and 95%
percentile bootstrap interval over repetitions per metric and measure, bench/measures/intervals.py) and
tagged with its config (pair, task, k, n, ...), so resolutions and corpus pairs can be compared as in
004 Table 3. Jobs are never pooled. A job with fewer than 5 repetitions is flagged in the ``warning``
column and above the markdown table; paired comparisons of its metrics go to
``significance_<measure>.csv`` (reports/tables/significance.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import pandas as pd
import yaml
from omegaconf import DictConfig, OmegaConf

from textmetric_bench.measures.chance import below_chance
from textmetric_bench.measures.intervals import INTERVAL_NAME, few_repetitions_warning
from textmetric_bench.measures.paired import all_comparisons
from textmetric_bench.measures.summaries import RAW_MEASURES, labelled, summarise_measures
from textmetric_bench.reports.bounds import bound_label, bound_of
from textmetric_bench.reports.labels import TABLE3_ORDER, format_score, metric_labels
from textmetric_bench.reports.sweep.jobs import apart, job_name, left_out_lines, read_jobs, set_apart
from textmetric_bench.reports.tables.markdown import markdown_table, terminal_text
from textmetric_bench.reports.tables.table3 import (
    BELOW_MARK,
    BELOW_NOTE,
    BOLD_TOLERANCE,
    FEWER_REPETITIONS_NOTE,
    best_mask,
    fewer_repetitions,
)

CONFIG_KEYS = ("pair", "task", "k", "n", "repetitions", "seed")
#: ``n`` is the KSC corpus size from the config; ``n_reps`` counts the repetitions behind a mean.
SWEEP_COLUMNS = [
    *CONFIG_KEYS,
    "metric",
    "orientation",
    "measure",
    "mean",
    "std",
    "n_reps",
    "ci_low",
    "ci_high",
    "warning",
    "overrides",
    "run_dir",
]


def find_run_dirs(sweep_dir: Path) -> list[Path]:
    """Every directory at or below ``sweep_dir`` that holds a ``measures.csv``, sorted."""
    return sorted({p.parent for p in Path(sweep_dir).rglob("measures.csv")})


def _config_value(cfg: DictConfig, key: str):
    """A config entry as a plain value; a group such as ``pair`` gives its ``name``."""
    value = OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)
    if isinstance(value, DictConfig):
        value = OmegaConf.select(cfg, f"{key}.name", default=None, throw_on_resolution_failure=False)
    return value


def read_run_config(run_dir: Path) -> dict:
    """The keys of interest from ``.hydra/config.yaml`` (the pair as ``run.json`` names it) and the overrides line,
    or None where missing."""
    hydra_dir = Path(run_dir) / ".hydra"
    info = dict.fromkeys(CONFIG_KEYS)
    config_path = hydra_dir / "config.yaml"
    if config_path.is_file():
        cfg = OmegaConf.load(config_path)
        if isinstance(cfg, DictConfig):
            info.update({key: _config_value(cfg, key) for key in CONFIG_KEYS})
            info["source"] = _config_value(cfg, "ifc.source")
    try:  # the pair as the run names it: two files given without a card (`pair=files`) are named by their paths
        manifest = json.loads((Path(run_dir) / "run.json").read_text())
        info["pair"] = manifest.get("pair") or info["pair"]
    except (OSError, ValueError, AttributeError):
        manifest = {}
    overrides_path = hydra_dir / "overrides.yaml"
    overrides = yaml.safe_load(overrides_path.read_text()) if overrides_path.is_file() else None
    info["overrides"] = " ".join(map(str, overrides)) if overrides else ""
    if isinstance(manifest, dict) and manifest.get("task") == info.get("task") == "ksc":
        # the run that wrote the results says what they are: a job refused here later (a sweep started again with
        # other values, from a launcher whose jobs run in processes of their own) leaves its config in .hydra/
        recorded = {key: manifest[key] for key in ("k", "n", "repetitions", "seed") if manifest.get(key) is not None}
        if any(info.get(key) != value for key, value in recorded.items()):
            info.update(recorded, overrides="")  # the overrides in .hydra/ are the refused job's
    return info


def aggregate_sweep(sweep_dir: Path) -> pd.DataFrame:
    """One long table of (config keys, metric, measure, mean, std, n_reps, CI, run_dir) over all jobs.

    Returns an empty table with the same columns when no job has finished.
    """
    sweep_dir = Path(sweep_dir)
    frames = []
    for run_dir in find_run_dirs(sweep_dir):
        try:
            measures = pd.read_csv(run_dir / "measures.csv")
        except pd.errors.EmptyDataError:
            warnings.warn(f"skipping {run_dir}: measures.csv is empty", stacklevel=2)
            continue
        summary = summarise_measures(measures).rename(columns={"n": "n_reps"})
        summary["warning"] = few_repetitions_warning(int(summary["n_reps"].max())) if not summary.empty else ""
        for key, value in read_run_config(run_dir).items():
            summary[key] = value
        summary["run_dir"] = str(run_dir)
        frames.append(summary)
    if not frames:
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    return pd.concat(frames, ignore_index=True).reindex(columns=SWEEP_COLUMNS)  # older runs lack orientation


def below_chance_rows(long: pd.DataFrame) -> pd.Series:
    """Per row of the sweep's long table: an A or A^w significantly below chance in its own job (bounds not
    tested; textmetric_bench.measures.chance)."""
    flagged = set()
    if not {"std", "n_reps"} <= set(long.columns):  # a table without spreads tests nothing
        return pd.Series(False, index=long.index)
    for run_dir, block in long.groupby("run_dir", sort=False):
        summary = block.drop(columns="n").rename(columns={"n_reps": "n"})  # n: the corpus size; n_reps: repetitions
        bounds = [m for m in summary["metric"].unique() if bound_of(m) is not None]
        found = below_chance(summary, excluded=bounds)
        flagged |= {(run_dir, m, measure) for m, measure in zip(found["metric"], found["measure"])}
    return pd.Series(
        [(r, m, x) in flagged for r, m, x in zip(long["run_dir"], long["metric"], long["measure"])], index=long.index
    )


#: The column that keeps apart jobs of one (pair, k, n) that differ in something else (a metric's parameter, say).
RUN_COLUMN = "run: set apart by"


def run_labels(frame: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Per row, its job (the ``run`` column) and the overrides that set it apart from the other jobs of its
    ``keys`` block (``0: metric.chi.top=50``); the job alone where its overrides are not recorded."""
    labels: dict[str, str] = {}
    for _, block in frame.groupby(keys, dropna=False, sort=False):
        jobs = block.drop_duplicates("run_dir").set_index("run_dir")
        recorded = jobs["overrides"] if "overrides" in jobs else pd.Series(dtype=object)
        given = {d: o.split() for d, o in recorded.items() if isinstance(o, str) and o.strip()}
        told = apart(given) if len(given) == len(jobs) > 1 else {}
        labels.update({d: f"{jobs.at[d, 'run']}: {told[d]}" if d in told else jobs.at[d, "run"] for d in jobs.index})
    return frame["run_dir"].map(labels)


def sweep_markdown(long: pd.DataFrame, sweep_dir: Path) -> str:
    """One row per metric × (pair, k, n): means to 3 decimals, best per block in bold."""
    frame = long.copy()
    frame["below"] = below_chance_rows(long)
    frame["metric"] = frame["metric"].map(metric_labels(frame))
    keys = ["pair", "k", "n"] + (["task"] if frame["task"].nunique(dropna=False) > 1 else [])
    frame["run"] = [
        str(Path(p).relative_to(sweep_dir)) if Path(p).is_relative_to(sweep_dir) else p for p in frame["run_dir"]
    ]
    if frame.duplicated(keys + ["metric", "measure"]).any():  # jobs differing in something else: keep them apart
        frame[RUN_COLUMN] = run_labels(frame, keys)
        keys.append(RUN_COLUMN)
    frame["bound"] = frame["metric"].map(lambda m: {"ceiling": 0, "floor": 2}.get(bound_of(m), 1))
    frame = frame.sort_values(keys + ["bound", "metric"], na_position="last", kind="stable")
    frame["metric"] = frame["metric"].map(bound_label)  # ceiling first, floor last, neither bold
    for key in keys:  # shown as text, after sorting so that k=7 comes before k=12
        frame[key] = frame[key].astype(object).where(frame[key].notna(), "–").astype(str)
    order = pd.MultiIndex.from_frame(frame[keys + ["metric"]].drop_duplicates())
    wide = frame.pivot(index=keys + ["metric"], columns="measure", values="mean").reindex(order)
    wide = wide[[m for m in TABLE3_ORDER if m in wide.columns]]
    counts = None
    if "n_reps" in frame.columns and frame["n_reps"].notna().all():  # a partly failing metric's fewer repetitions
        counts = frame.pivot(index=keys + ["metric"], columns="measure", values="n_reps").reindex(order)[wide.columns]
    blocks = wide.groupby(level=keys, sort=False)
    bold = pd.concat(
        [best_mask(block, counts=None if counts is None else counts.loc[block.index]) for _, block in blocks]
    ).loc[wide.index]
    fewer = counts is not None and fewer_repetitions(frame, by=[*keys, "measure"], count="n_reps")
    cells = wide.apply(lambda col: col.map(format_score)).astype(object)
    cells = cells.mask(bold, "**" + cells + "**")
    below = frame.pivot(index=keys + ["metric"], columns="measure", values="below").reindex(order)[wide.columns]
    below = below.fillna(False).astype(bool)
    cells = cells.mask(below, cells + f" {BELOW_MARK}")
    table = markdown_table(cells.reset_index()) + (f"\n\n{BELOW_NOTE}" if below.to_numpy().any() else "")
    header = (
        f"# Sweep summary: {sweep_dir}\n\nMeans over the repetitions of each job (T in [100 op/s]); higher is "
        f"better; bold = best within each ({', '.join('run' if k == RUN_COLUMN else k for k in keys)}) block and those within {BOLD_TOLERANCE:g} of it"
        f"{', ' + FEWER_REPETITIONS_NOTE if fewer else ''} (004 Table "
        f"3). Intervals ({INTERVAL_NAME}) are in sweep_summary.csv.\n\n"
    )
    return header + sweep_warnings(frame) + table + "\n" + not_in_the_table(sweep_dir)


def not_in_the_table(sweep_dir: Path) -> str:
    """Below the sweep's table, what it leaves out: each job with no measures (refused, failed or stopped), and each
    metric that failed in a job, named by the overrides that set the job apart; "" when nothing is left out."""
    jobs = read_jobs(sweep_dir)
    apart = set_apart(jobs)
    left_out = left_out_lines(sweep_dir, jobs)
    failed = []
    for job in jobs:
        try:
            failures = json.loads((job.directory / "run.json").read_text()).get("failures") or {}
        except (OSError, ValueError, AttributeError):
            continue
        failed += [
            f"job {job_name(sweep_dir, job.directory)} ({apart[job.directory]}): metric {m} failed: "
            f"{' '.join(str(e).split())[:300]}"
            for m, e in failures.items()
        ]
    parts = []
    if left_out:
        parts.append(f"**Not in the table: {len(left_out)} of {len(jobs)} jobs left no measures.**\n\n")
        parts += [f"- {line}\n" for line in left_out]
    if failed:
        parts.append(
            "\n**Metrics that failed in a job** (their rows hold only complete repetitions, or are missing):\n\n"
        )
        parts += [f"- {line}\n" for line in failed]
    return ("\n" + "".join(parts)) if parts else ""


def sweep_warnings(frame: pd.DataFrame) -> str:
    """Each distinct warning once, with how many of the sweep's jobs it applies to and which (``frame``'s ``run``)."""
    jobs = frame[["run_dir", "run"]].drop_duplicates("run_dir")
    flagged = frame.loc[frame["warning"].fillna("") != "", ["run_dir", "run", "warning"]].drop_duplicates("run_dir")
    lines = []
    for warning, group in flagged.groupby("warning", sort=False):
        which = (
            ("the one job in the table" if len(jobs) == 1 else f"all {len(jobs)} jobs in the table")
            if len(group) == len(jobs)
            else f"{len(group)} of {len(jobs)} jobs: {', '.join(group['run'])}"
        )
        lines.append(f"**Warning ({which}): {warning}.**\n\n")
    return "".join(lines)


def write_sweep_tables(sweep_dir: Path, out_dir: Path | None = None) -> dict[str, Path]:
    """Write ``sweep_summary.csv`` and ``sweep_table.md`` (into ``sweep_dir`` unless ``out_dir``)."""
    sweep_dir = Path(sweep_dir)
    long = aggregate_sweep(sweep_dir)
    if long.empty:
        raise FileNotFoundError(f"no run directory with a measures.csv under {sweep_dir}")
    out_dir = Path(out_dir) if out_dir is not None else sweep_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"sweep_summary": out_dir / "sweep_summary.csv", "sweep_table": out_dir / "sweep_table.md"}
    long.to_csv(paths["sweep_summary"], index=False)
    paths.update(write_sweep_significance(sweep_dir, out_dir))
    paths["sweep_table"].write_text(sweep_markdown(long, sweep_dir), encoding="utf-8")
    return paths


def write_sweep_significance(sweep_dir: Path, out_dir: Path) -> dict[str, Path]:
    """``significance_<measure>.csv``: every job's paired comparisons, one long table per measure."""
    per_measure: dict[str, list[pd.DataFrame]] = {}
    for run_dir in find_run_dirs(sweep_dir):
        try:
            measures = labelled(pd.read_csv(run_dir / "measures.csv"))
        except pd.errors.EmptyDataError:
            continue
        config = read_run_config(run_dir)
        for measure, frame in all_comparisons(measures, RAW_MEASURES).items():
            tags = {key: config.get(key) for key in ("pair", "task", "k", "n", "seed")}
            per_measure.setdefault(measure, []).append(frame.assign(**tags, run_dir=str(run_dir)))
    paths = {}
    for measure, frames in per_measure.items():
        paths[f"significance_{measure}"] = out_dir / f"significance_{measure}.csv"
        pd.concat(frames, ignore_index=True).to_csv(paths[f"significance_{measure}"], index=False)
    return paths


def main(argv: list[str] | None = None) -> int:
    """``textmetric-bench-aggregate SWEEP_DIR [--out DIR]``: print the sweep table and the files written."""
    parser = argparse.ArgumentParser(
        prog="textmetric-bench-aggregate",
        description="Summarise every job of a multirun sweep into sweep_summary.csv and sweep_table.md.",
    )
    parser.add_argument("sweep_dir", type=Path, help="multirun directory holding numbered job directories")
    parser.add_argument("--out", type=Path, default=None, help="where to write the tables (default: SWEEP_DIR)")
    args = parser.parse_args(argv)
    if not args.sweep_dir.is_dir():
        raise SystemExit(f"textmetric-bench-aggregate: {args.sweep_dir} is not a directory")
    try:
        paths = write_sweep_tables(args.sweep_dir, args.out)
    except FileNotFoundError as err:
        raise SystemExit(f"textmetric-bench-aggregate: {err}; has the sweep finished any job?") from None
    print(terminal_text(paths["sweep_table"].read_text(encoding="utf-8")))
    for path in paths.values():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
