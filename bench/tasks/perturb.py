"""The perturbation-sensitivity task: how far each perturbation of 000 §6.2 moves a metric, on the
scale of a domain change.

Per repetition r, from the pair's source A a reference sample R and a disjoint sample S, from
source B a sample O, n texts each. Every metric gives (a) d(R, S), (b) d(R, p(S)) for each
perturbation p, (c) d(R, O), all with the repetition's one metric seed, and

    shift_p = (d(R, p(S)) − d(R, S)) / (d(R, O) − d(R, S))

0: p(S) is no farther from R than another sample of A; 1: as far as a sample of B, the other
domain (000 Figure 4 plots the raw d; the ratio makes metrics comparable). A repetition whose
gap (c) − (a) is not positive has no shift: the metric did not separate the domains, and the
table flags it, as it flags a gap that varies across repetitions by more than half its mean.
Evaluations run in ``bench.engine`` (resume, isolation, workers, time limits).
"""

from __future__ import annotations

import json
import logging
import math
import platform
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig, ListConfig

from bench import __version__
from bench.collections.perturbations import get_perturbation
from bench.collections.seeds import metric_seed, repetition_seed
from bench.data.corpora import load_pair
from bench.engine import (
    CorpusStore,
    Job,
    engine_options,
    params_digest,
    result_log_for,
    run_jobs,
)
from bench.errors import ConfigError, DataError
from bench.measures.failures import failure_summary, write_failures_csv
from bench.tasks.config import data_locations, selected_metrics
from bench.tasks.ksc import build_embedder

log = logging.getLogger(__name__)

SAME, OTHER = "same", "other"  # conditions (a) and (c); (b) is named by its perturbation
PERTURB_STREAM = 2  # seed stream of the perturbations (0: samples, 1: metrics)
DISTANCE_COLUMNS = ["metric", "repetition", "condition", "distance", "seconds", "error", "attempts"]
MEASURE_COLUMNS = ["metric", "perturbation", "repetition", "d_same", "d_perturbed", "d_other", "gap", "shift"]
SUMMARY_COLUMNS = ["metric", "perturbation", "mean", "std", "n", "ci_low", "ci_high", "repetitions",
                   "gap_not_positive", "gap_cv", "d_same", "d_perturbed", "d_other"]


@dataclass
class PerturbResult:
    """What one perturbation run produced."""

    distances: pd.DataFrame
    measures: pd.DataFrame
    summary: pd.DataFrame
    failures: dict[str, str] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    info: dict = field(default_factory=dict)


def validate_perturb_parameters(n, repetitions, perturbations) -> tuple[int, int, list[str]]:
    """(n, repetitions, perturbation names), checked before anything is loaded."""
    try:
        n, repetitions = int(n), int(repetitions)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"n and repetitions must be integers: {exc}") from exc
    if n < 2 or repetitions < 1:
        raise ConfigError(f"task=perturb needs n >= 2 texts per sample and repetitions >= 1, got n={n}, "
                          f"repetitions={repetitions}")
    if isinstance(perturbations, str):
        perturbations = [p.strip() for p in perturbations.split(",")]
    if not isinstance(perturbations, (list, tuple, ListConfig)) or not perturbations:
        raise ConfigError(f"`perturbations` must list at least one perturbation, got {perturbations!r}")
    names = list(dict.fromkeys(str(p) for p in perturbations))
    for name in names:
        get_perturbation(name)  # raises, suggesting the closest name
    return n, repetitions, names


def draw_samples(n_a: int, n_b: int, n: int, seed: int, repetition: int,
                 names: tuple[str, str] = ("A", "B")) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R, S, O) row indices of one repetition: R and S disjoint in source A, O in source B."""
    if 2 * n > n_a or n > n_b:
        raise DataError(f"task=perturb with n={n} needs {2 * n} texts of {names[0]} (has {n_a}) and {n} of "
                        f"{names[1]} (has {n_b}); lower n")
    rng = np.random.default_rng(repetition_seed(seed, repetition, 0))
    both = rng.choice(n_a, size=2 * n, replace=False)
    return both[:n], both[n:], rng.choice(n_b, size=n, replace=False)


def perturbation_rng(seed: int, repetition: int, name: str) -> np.random.Generator:
    """The generator of one perturbation in one repetition: independent of which others run."""
    return np.random.default_rng([int(seed), int(repetition), PERTURB_STREAM, zlib.crc32(name.encode())])


def relative_shift(d_same: float, d_perturbed: float, d_other: float) -> float:
    """(d_b − d_a) / (d_c − d_a); NaN when a distance is missing or the gap d_c − d_a is not positive."""
    gap = d_other - d_same
    if not all(map(math.isfinite, (d_same, d_perturbed, d_other))) or gap <= 0:
        return math.nan
    return (d_perturbed - d_same) / gap


def perturbation_measures(distances: pd.DataFrame,
                          perturbations: list[str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """One row per (metric, perturbation, repetition) with the three distances, the gap and the shift."""
    rows, failures = [], failure_summary(distances)
    for name, grp in distances.groupby("metric", sort=False):
        for r, rep in grp.groupby("repetition", sort=True):
            d = rep.set_index("condition")["distance"]
            a, c = float(d.get(SAME, math.nan)), float(d.get(OTHER, math.nan))
            for p in perturbations:
                b = float(d.get(p, math.nan))
                rows.append({"metric": name, "perturbation": p, "repetition": int(r), "d_same": a,
                             "d_perturbed": b, "d_other": c, "gap": c - a, "shift": relative_shift(a, b, c)})
    return pd.DataFrame(rows, columns=MEASURE_COLUMNS), failures


def summarise_shifts(measures: pd.DataFrame) -> pd.DataFrame:
    """Per (metric, perturbation): mean, std and 95% t-interval of the shift over repetitions, how
    many repetitions had a gap that is not positive, the gap's coefficient of variation (sd / mean
    over repetitions: a noisy denominator makes the shifts unreliable), and the mean raw distances."""
    from reports.tables import mean_ci

    rows = []
    for (name, p), grp in measures.groupby(["metric", "perturbation"], sort=False):
        gap = grp["gap"].to_numpy(float)
        gap_mean, gap_sd = mean_ci(gap)[:2]
        rows.append((name, p, *mean_ci(grp["shift"].to_numpy(float)), len(grp),
                     int((np.isfinite(gap) & (gap <= 0)).sum()), gap_sd / gap_mean if gap_mean > 0 else math.nan,
                     *(grp[c].mean() for c in ("d_same", "d_perturbed", "d_other"))))
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def perturbation_stats(original: list[str], perturbed: list[str]) -> dict[str, float]:
    """How much a perturbation changed a sample: share of texts changed, words kept per word."""
    before = sum(len(t.split()) for t in original)
    return {"changed": float(np.mean([a != b for a, b in zip(original, perturbed)])),
            "words_ratio": sum(len(t.split()) for t in perturbed) / before if before else math.nan}


def run_perturb(cfg: DictConfig, out_dir: Path | str) -> PerturbResult:
    """Run the perturbation-sensitivity task described by ``cfg``; write its outputs to ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n, reps, perturbations = validate_perturb_parameters(cfg.n, cfg.repetitions, cfg.perturbations)
    metrics = selected_metrics(cfg)
    seed = int(cfg.seed)
    cache_dir, mirror = data_locations(cfg)
    source_a, source_b = load_pair(cfg.pair.name, cache_dir=cache_dir, mirror=mirror)

    corpora: dict[str, list[str]] = {}
    stats: dict[str, list[dict]] = {p: [] for p in perturbations}
    for r in range(reps):
        ref, same, other = draw_samples(len(source_a.texts), len(source_b.texts), n, seed, r,
                                        (source_a.name, source_b.name))
        corpora[f"r{r}/reference"] = [source_a.texts[i] for i in ref]
        corpora[f"r{r}/{SAME}"] = [source_a.texts[i] for i in same]
        corpora[f"r{r}/{OTHER}"] = [source_b.texts[i] for i in other]
        for p in perturbations:
            texts = get_perturbation(p).apply(corpora[f"r{r}/{SAME}"], perturbation_rng(seed, r, p))
            corpora[f"r{r}/{p}"] = texts
            stats[p].append(perturbation_stats(corpora[f"r{r}/{SAME}"], texts))

    embedder = build_embedder(cfg)  # the model loads only if a text is not in the embedding cache
    needs_embeddings = any(m.inputs == "embeddings" for m, _ in metrics)
    start = time.perf_counter()
    store = CorpusStore.from_corpora(corpora, embed=embedder.embed if needs_embeddings else None)
    embed_seconds = time.perf_counter() - start

    conditions = [SAME, *perturbations, OTHER]
    jobs = [Job(key=(m.name, params_digest(params), r, c), metric=m.name, p=f"r{r}/reference", q=f"r{r}/{c}",
                seed=metric_seed(seed, r))
            for r in range(reps) for m, params in metrics for c in conditions]
    fingerprint = {"task": "perturb", "pair": str(cfg.pair.name), "n": n, "seed": seed}
    outcomes = run_jobs(jobs, store, {m.name: (m, params) for m, params in metrics}, desc="evaluations",
                        embedder_id=embedder.model_id,
                        result_log=result_log_for(cfg, out_dir, fingerprint), **engine_options(cfg))
    distances = pd.DataFrame([(job.metric, job.key[2], job.key[3], o.distance, o.seconds, o.error, o.attempts)
                              for job in jobs for o in [outcomes[job.key]]], columns=DISTANCE_COLUMNS)
    measures, failures = perturbation_measures(distances, perturbations)
    summary = summarise_shifts(measures)

    info = {
        "task": "perturb", "pair": cfg.pair.name, "n": n, "repetitions": reps, "seed": seed,
        "perturbations": {p: {"paper": get_perturbation(p).paper, "description": get_perturbation(p).description,
                              **{k: round(float(np.mean([s[k] for s in stats[p]])), 4) for k in stats[p][0]}}
                          for p in perturbations},
        "sources": {source_a.name: len(source_a.texts), source_b.name: len(source_b.texts)},
        "reference_source": source_a.name, "other_source": source_b.name,
        "metrics": [m.name for m, _ in metrics], "failures": failures,
        "seconds_per_metric": distances.groupby("metric")["seconds"].sum().round(3).to_dict(),
        "embedding": {"model": embedder.model_id, "seconds": round(embed_seconds, 3), **embedder.stats},
        "mirror": str(mirror) if mirror else None, "version": __version__, "python": platform.python_version(),
    }
    title = (f"Perturbation sensitivity on {cfg.pair.name}: reference {source_a.name}, other {source_b.name}, "
             f"n={n}, {reps} repetitions, seed {seed}")
    files = write_outputs(distances, measures, summary, failures, info, out_dir, title=title)
    return PerturbResult(distances, measures, summary, failures, files, info)


def write_outputs(distances, measures, summary, failures, info, out_dir: Path, *, title: str) -> dict[str, Path]:
    """distances.csv, measures.csv (per repetition), perturbation.csv (summary), run.json,
    perturbation.md and the heatmap perturb_heatmap.png."""
    from reports.perturb_figures import perturbation_heatmap, perturbation_markdown

    files = {"distances": out_dir / "distances.csv", "measures": out_dir / "measures.csv",
             "perturbation": out_dir / "perturbation.csv", "run": out_dir / "run.json",
             "perturbation_md": out_dir / "perturbation.md"}
    distances.to_csv(files["distances"], index=False)
    if (failed := write_failures_csv(distances, out_dir)) is not None:
        files["failures"] = failed
    measures.to_csv(files["measures"], index=False)
    summary.to_csv(files["perturbation"], index=False)
    files["run"].write_text(json.dumps(info, indent=2, default=str))
    files["perturbation_md"].write_text(perturbation_markdown(summary, info, title=title, failures=failures),
                                        encoding="utf-8")
    heatmap = perturbation_heatmap(summary, out_dir / "perturb_heatmap.png", title=title)
    if heatmap is not None:
        files["perturb_heatmap"] = heatmap
    return files
