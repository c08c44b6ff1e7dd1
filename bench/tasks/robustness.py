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

import json
import logging
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from bench import __version__
from bench.collections.seeds import metric_seed
from bench.collections.size_imbalance import (
    CURVES,
    RobustnessGrid,
    draw_sample_pair,
    feasible_grid,
    sample_seed,
    validate_robustness_parameters,
)
from bench.data.corpora import load_pair
from bench.engine import (
    CorpusStore,
    Job,
    engine_options,
    params_digest,
    result_log_for,
    run_jobs,
)
from bench.measures.failures import failure_summary, write_failures_csv
from bench.measures.robustness import (
    asymptotic_distance,
    imbalance_robustness,
    size_robustness,
)
from bench.tasks.config import data_locations, selected_metrics
from bench.tasks.ksc import build_embedder

log = logging.getLogger(__name__)

CURVE_COLUMNS = ["metric", "curve", "s", "repetition", "distance", "seconds", "error", "attempts"]
MEASURE_COLUMNS = ["metric", "repetition", "S", "I"]


@dataclass
class RobustnessResult:
    """What one robustness run produced."""

    curves: pd.DataFrame
    measures: pd.DataFrame
    failures: dict[str, str] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    info: dict = field(default_factory=dict)


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
                plan.append(SamplePair(curve, s, r, a, b))
    return plan


def run_robustness(cfg: DictConfig, out_dir: Path | str) -> RobustnessResult:
    """Run the size and imbalance robustness task described by ``cfg``; write its outputs to ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n_ref, sizes, total, reps = validate_robustness_parameters(
        cfg.n_ref, cfg.sizes, cfg.imbalance_total, cfg.repetitions)
    metrics = selected_metrics(cfg)
    seed = int(cfg.seed)
    cache_dir, mirror = data_locations(cfg)
    source_a, source_b = load_pair(cfg.pair.name, cache_dir=cache_dir, mirror=mirror)
    n_a, n_b = len(source_a.texts), len(source_b.texts)
    grid = feasible_grid(n_ref, sizes, total, n_a, n_b, names=(source_a.name, source_b.name))
    for note in grid.truncated:
        log.warning("grid truncated: %s", note)
    plan = sample_plan(grid, n_a, n_b, reps, seed)

    # Embed the union of all sampled texts in one call (one cache shard), then slice rows.
    embedder, embed_seconds, rows_a, rows_b = None, 0.0, None, None
    if any(m.inputs == "embeddings" for m, _ in metrics):
        embedder = build_embedder(cfg)
        used_a = np.unique(np.concatenate([p.a for p in plan]))
        used_b = np.unique(np.concatenate([p.b for p in plan]))
        start = time.perf_counter()
        flat = embedder.embed([source_a.texts[i] for i in used_a] + [source_b.texts[i] for i in used_b])
        embed_seconds = time.perf_counter() - start
        rows_a = np.zeros((n_a, flat.shape[1]), dtype=flat.dtype)
        rows_b = np.zeros((n_b, flat.shape[1]), dtype=flat.dtype)
        rows_a[used_a], rows_b[used_b] = flat[:len(used_a)], flat[len(used_a):]

    # Corpora are rows of A then B; evaluations run in the engine (resumable, isolated, parallel).
    vectors = np.concatenate([rows_a, rows_b]) if rows_a is not None else None
    members = {}
    for pair in plan:
        members[f"{pair.curve}/{pair.s}/{pair.repetition}/a"] = pair.a
        members[f"{pair.curve}/{pair.s}/{pair.repetition}/b"] = n_a + pair.b
    store = CorpusStore(list(source_a.texts) + list(source_b.texts), vectors, members)
    jobs = [Job(key=(m.name, params_digest(params), pair.curve, pair.s, pair.repetition), metric=m.name,
                p=f"{pair.curve}/{pair.s}/{pair.repetition}/a", q=f"{pair.curve}/{pair.s}/{pair.repetition}/b",
                seed=metric_seed(seed, pair.repetition))
            for pair in plan for m, params in metrics]  # per sample, so PR and DC share radii
    fingerprint = {"task": "robustness", "pair": str(cfg.pair.name), "seed": seed, "n_ref": grid.n_ref,
                   "imbalance_total": grid.imbalance_total}
    outcomes = run_jobs(jobs, store, {m.name: (m, params) for m, params in metrics}, desc="evaluations",
                        embedder_id=embedder.model_id if embedder else None,
                        result_log=result_log_for(cfg, out_dir, fingerprint), **engine_options(cfg))
    rows = [(job.metric, *job.key[2:], o.distance, o.seconds, o.error, o.attempts)
            for job in jobs for o in [outcomes[job.key]]]

    curves = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    measures, asymptotic, failures = robustness_measures(curves)
    info = {
        "task": "robustness", "pair": cfg.pair.name, "repetitions": reps, "seed": seed,
        "grid": {"n_ref": grid.n_ref, "sizes": list(grid.sizes), "imbalance_sizes": list(grid.imbalance_sizes),
                 "imbalance_total": grid.imbalance_total, "truncated": grid.truncated},
        "sources": {source_a.name: n_a, source_b.name: n_b},
        "metrics": [m.name for m, _ in metrics], "asymptotic_distance": asymptotic, "failures": failures,
        "seconds_per_metric": curves.groupby("metric")["seconds"].sum().round(3).to_dict(),
        "embedding": {"model": embedder.model_id if embedder else None,
                      "seconds": round(embed_seconds, 3), **(embedder.stats if embedder else {})},
        "mirror": str(mirror) if mirror else None, "version": __version__,
        "python": platform.python_version(),
    }
    title = (f"Size and imbalance robustness on {cfg.pair.name}: n_ref={grid.n_ref}, "
             f"{len(grid.sizes)} sizes, N={total}, {reps} repetitions, seed {seed}")
    files = write_outputs(curves, measures, failures, info, out_dir, title=title)
    return RobustnessResult(curves, measures, failures, files, info)


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
            rows.append({"metric": name, "repetition": int(r), "S": size_robustness(size, d_inf),
                         "I": imbalance_robustness(imbalance, d_inf)})
    return pd.DataFrame(rows, columns=MEASURE_COLUMNS), asymptotic, failures


def write_outputs(curves, measures, failures, info, out_dir: Path, *, title: str) -> dict[str, Path]:
    """curves.csv, measures.csv, run.json, Table 3 with S and I, and one figure per metric.

    No radar chart: S and I alone are two axes; merge with a KSC run of the same pair for one.
    """
    from reports.robustness_figures import robustness_figures
    from reports.tables import write_tables

    files = {"curves": out_dir / "curves.csv", "measures": out_dir / "measures.csv", "run": out_dir / "run.json"}
    curves.to_csv(files["curves"], index=False)
    if (failed := write_failures_csv(curves, out_dir)) is not None:
        files["failures"] = failed
    measures.to_csv(files["measures"], index=False)
    files["run"].write_text(json.dumps(info, indent=2, default=str))
    if not measures.empty:
        files.update(write_tables(measures, out_dir, title=title, failures=failures,
                                  repetitions=info["repetitions"]))
        with files["table3_md"].open("a", encoding="utf-8") as md:
            md.write(_grid_section(info))
    else:
        log.error("no metric produced S or I; see %s", files["curves"])
    for path in robustness_figures(curves, measures, out_dir, imbalance_total=info["grid"]["imbalance_total"]):
        files[path.stem] = path
    return files


def _grid_section(info: dict) -> str:
    grid = info["grid"]
    lines = ["", "## Grid", "",
             f"- d(A, B): mean over {info['repetitions']} pairs of samples of n_ref = {grid['n_ref']} texts",
             f"- size curve d(a_s, b_s), s = {grid['sizes']}",
             f"- imbalance curve d(a_s, b_(N-s)), N = {grid['imbalance_total']}, s = {grid['imbalance_sizes']}"]
    lines += [f"- truncated: {note}" for note in grid["truncated"]]
    lines += ["", "## Asymptotic distance d(A, B)", ""]
    lines += [f"- `{m}`: {d:.6g}" for m, d in info["asymptotic_distance"].items()]
    return "\n".join(lines) + "\n"
