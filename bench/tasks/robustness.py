"""The robustness task: size and imbalance robustness S and I of every metric on one pair (004 §4.6-4.7).

Per repetition r (default 10) it draws, from sources A and B, one pair of n_ref-text
samples for the asymptotic distance d(A, B), a pair (a_s, b_s) for every s of the size
curve and a pair (a_s, b_{N-s}) for every s of the imbalance curve. Every sample is
drawn independently from its own seed (``sample_seed``), as in 004's experiments.
The union of all sampled texts is embedded once; every metric then sees the same
samples (texts or embedding rows). A failing metric is recorded, never fatal.
Sources too small for the grid truncate it; the truncation is logged and reported.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from textmetric_bench.collections.size_imbalance import (
    CURVES,
    SOURCE_POSITIONS,
    RobustnessGrid,
    draw_sample_pair,
    feasible_grid,
    sample_seed,
    validate_robustness_parameters,
)
from textmetric_bench.data.lengths import pair_regime
from textmetric_bench.measures.failures import failure_summary
from textmetric_bench.measures.robustness import asymptotic_distance, imbalance_robustness, size_robustness
from textmetric_bench.reports.labels import plural
from textmetric_bench.tasks.settings import TaskSettings, option
from textmetric_bench.tasks.skeleton import Collections, Evaluation, RunInputs, Scores, Task, TaskResult, task_runner
from textmetric_bench.tasks.sources import pair_sources

log = logging.getLogger(__name__)

CURVE_COLUMNS = ["metric", "curve", "s", "repetition", "distance", "seconds", "error", "attempts"]
MEASURE_COLUMNS = ["metric", "repetition", "S", "I"]


@dataclass(frozen=True)
class SamplePair:
    """One evaluation's inputs: indices into source A and source B."""

    curve: str
    s: int
    repetition: int
    a: np.ndarray
    b: np.ndarray


def sample_plan(grid: RobustnessGrid, n_a: int, n_b: int, repetitions: int, seed: int) -> list[SamplePair]:
    """Every sample pair of the run, in (repetition, curve, s) order."""
    plan = []
    for r in range(repetitions):
        for curve in CURVES:
            for s, size_a, size_b in grid.sample_sizes(curve):
                a, b = draw_sample_pair(n_a, n_b, size_a, size_b, sample_seed(seed, r, curve, s))
                plan.append(SamplePair(curve, int(s), r, a, b))
    return plan


@dataclass(frozen=True)
class RobustnessSettings(TaskSettings):
    n_ref: int = option(
        3000, "texts per side of the samples whose mean distance estimates d(A, B); capped by the smaller source"
    )
    sizes: list[int] = option(
        [50, 250, 450, 650, 850, 1050, 1250, 1450, 1650, 1850, 2050, 2250, 2450, 2650, 2850],
        "s of both curves",
        example=[50, 250, 450],
    )
    imbalance_total: int = option(2900, "N: the imbalance curve compares a_s with b_(N-s); must exceed every size")
    repetitions: int = option(10, "independent samples per point, each from its own seed")
    run_label: str = option(
        "${pair_label:}", "names the output folder outputs/<task>/<run_label>/<time>", example="mine"
    )

    def check(self) -> None:
        validate_robustness_parameters(self.n_ref, self.sizes, self.imbalance_total, self.repetitions)


FIGURE = (
    "Distance against sample size s (004 Figure 2 middle and bottom). Size panel: both corpora have s texts; "
    "imbalance panel: s and N − s texts. The horizontal line is the asymptotic distance d(A, B). Good: the "
    "curve reaches the line early and stays on it (S and I near 1)."
)


class RobustnessTask(
    Task,
    name="robustness",
    settings=RobustnessSettings,
    fields=("curve", "s", "repetition"),
    distances_file="curves.csv",
    figures={"robustness_": FIGURE},
    joins_ksc=True,
):
    """Size and imbalance robustness (004 §4.6-4.7, Figure 2 middle and bottom): how fast d(a_s, b_s) reaches
    the asymptotic distance d(A, B), and how far d(a_s, b_(N-s)) drifts from it."""

    def build(self, run: RunInputs) -> Collections:
        s: RobustnessSettings = run.settings  # type: ignore[assignment]
        n_ref, sizes, total, reps = validate_robustness_parameters(s.n_ref, s.sizes, s.imbalance_total, s.repetitions)
        seed = run.seed
        sources = pair_sources(run)
        a, b = sources.a, sources.b
        grid = feasible_grid(n_ref, sizes, total, len(a.texts), len(b.texts), names=(a.name, b.name))
        for note in grid.truncated:
            log.warning("grid truncated: %s", note)
        corpora, evaluations = {}, []
        for pair in sample_plan(grid, len(a.texts), len(b.texts), reps, seed):
            cid = f"{pair.curve}/{pair.s}/{pair.repetition}"
            corpora[f"{cid}/a"] = [a.texts[i] for i in pair.a]
            corpora[f"{cid}/b"] = [b.texts[i] for i in pair.b]
            evaluations.append(
                Evaluation((pair.curve, pair.s, pair.repetition), f"{cid}/a", f"{cid}/b", pair.repetition)
            )
        grid_info = {
            "n_ref": grid.n_ref,
            "sizes": list(grid.sizes),
            "imbalance_sizes": list(grid.imbalance_sizes),
            "imbalance_total": grid.imbalance_total,
            "truncated": grid.truncated,
        }
        return Collections(
            corpora,
            evaluations,
            fingerprint={
                "task": "robustness",
                "pair": sources.identity,
                "seed": seed,
                "n_ref": grid.n_ref,
                "imbalance_total": grid.imbalance_total,
            },
            info={
                "pair": sources.label,
                "repetitions": reps,
                "grid": grid_info,
                "sources": sources.record(),
                "regime": pair_regime(a.texts, b.texts),
            },
            positions={cid: SOURCE_POSITIONS[cid[-1]] for cid in corpora},  # for the oracle
            sides={a.name: a.texts, b.name: b.texts},
        )

    def score(self, distances: pd.DataFrame, collections: Collections) -> Scores:
        measures, asymptotic, failures = robustness_measures(distances)
        return Scores(measures, failures, info={"asymptotic_distance": asymptotic})

    def title(self, run: RunInputs, collections: Collections) -> str:
        grid = collections.info["grid"]
        return (
            f"Size and imbalance robustness on {collections.info['pair']}: n_ref={grid['n_ref']}, "
            f"{len(grid['sizes'])} sizes, N={grid['imbalance_total']}, "
            f"{plural(collections.info['repetitions'], 'repetition')}, seed {run.seed}"
        )

    def write(self, result: TaskResult, out_dir: Path) -> dict[str, Path]:
        """Table 3 with S and I and one figure per metric.

        No radar chart: S and I alone are two axes; merge with a KSC run of the same pair for one.
        """
        from textmetric_bench.measures.run_warnings import run_warnings, warnings_by_metric
        from textmetric_bench.measures.summaries import most_repetitions
        from textmetric_bench.reports.figures.robustness import robustness_figures
        from textmetric_bench.reports.tables.files import write_tables

        info, files = result.info, {}
        repetitions = most_repetitions(result.measures)
        if not result.measures.empty:
            files.update(
                write_tables(
                    result.measures,
                    out_dir,
                    title=info["title"],
                    failures=result.failures,
                    repetitions=info["repetitions"],
                    orientation=info.get("orientation"),
                )
            )
            with files["table3_md"].open("a", encoding="utf-8") as md:
                md.write(_grid_section(info))
        else:
            log.error("no metric produced S or I; see %s", out_dir / self.distances_file)
        for path in robustness_figures(
            result.distances,
            result.measures,
            out_dir,
            imbalance_total=info["grid"]["imbalance_total"],
            setting=info["title"],
            warnings=run_warnings(info, repetitions),
            metric_warnings=warnings_by_metric(info, set(result.distances["metric"]), repetitions),
        ):
            files[path.stem] = path
        return files


def robustness_measures(curves: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float], dict[str, str]]:
    """(measures, d(A, B) per metric, failures) from the evaluations of one run.

    S and I are computed per repetition, each against the one d(A, B) of the metric (the
    mean over all repetitions of its asymptotic distances): the absolute error is taken on
    every single d(a_s, b_s) as in 004 eq. 8, and only then averaged over s and, in the
    table, over repetitions. A repetition with a failed evaluation gets NaN for that curve.
    """
    rows, asymptotic, failures = [], {}, failure_summary(curves)
    for name, grp in curves.groupby("metric", sort=False):
        d_inf = asymptotic_distance(grp.loc[grp["curve"] == "asymptotic", "distance"])
        if not np.isfinite(d_inf) or d_inf == 0:
            failures.setdefault(name, f"asymptotic distance d(A, B) is {d_inf}; S and I are undefined")
            continue
        asymptotic[name] = d_inf
        for r, rep in grp.groupby("repetition", sort=True):
            size = rep.loc[rep["curve"] == "size", "distance"]
            imbalance = rep.loc[rep["curve"] == "imbalance", "distance"]
            rows.append(
                {
                    "metric": name,
                    "repetition": int(r),
                    "S": size_robustness(size, d_inf),
                    "I": imbalance_robustness(imbalance, d_inf),
                }
            )
    return pd.DataFrame(rows, columns=MEASURE_COLUMNS), asymptotic, failures


def _grid_section(info: dict) -> str:
    from textmetric_bench.reports.labels import SIMILARITY_MARK

    grid, similar = info["grid"], {m for m, kind in info["orientation"].items() if kind == "similarity"}
    lines = [
        "",
        "## Grid",
        "",
        f"- d(A, B): mean over {info['repetitions']} pairs of samples of n_ref = {grid['n_ref']} texts",
        f"- size curve d(a_s, b_s), s = {grid['sizes']}",
        f"- imbalance curve d(a_s, b_(N-s)), N = {grid['imbalance_total']}, s = {grid['imbalance_sizes']}",
    ]
    lines += [f"- truncated: {note}" for note in grid["truncated"]]
    lines += ["", "## Asymptotic distance d(A, B)", ""]
    lines += [
        f"- `{m}`{SIMILARITY_MARK if m in similar else ''}: {d:.6g}" for m, d in info["asymptotic_distance"].items()
    ]
    return "\n".join(lines) + "\n"


run_robustness = task_runner(RobustnessTask)
