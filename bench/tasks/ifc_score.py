"""Scoring Increasingly Fine-tuned Corpora (004 §5, Figure 5).

For every metric, iteration i and repetition r: d_r(i) = d(reference sample r, g_i), the
reference samples drawn from source texts the model never trained on. The self-distance
d(A, A) = E[d(r_1, r_2)] (004 §5) is the mean distance between two disjoint samples of the
same size. A metric that sees the model improve has d(i) falling toward d(A, A), so

- **IFC** = −Spearman(i, d_r(i)) per repetition: 1 when the distance falls at every step;
- **gap closed** = (d(0) − d(T)) / (d(0) − d(A, A)) on the means over repetitions: the share
  of the initial gap to the self-distance that the last iteration closed (1: all of it).

TTR (unique tokens / tokens, 004 §5) is reported for every corpus as a lexical-diversity check.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from bench.api.registry import MetricInfo
from bench.api.tokens import tokenize
from bench.collections.seeds import metric_seed, repetition_seed
from bench.engine import CorpusStore, Job, ResultLog, params_digest, run_jobs
from bench.errors import DataError
from bench.measures.ksc import per_repetition

DISTANCE_COLUMNS = ["metric", "kind", "iteration", "repetition", "distance", "seconds", "error", "attempts"]
MEASURE_COLUMNS = ["metric", "repetition", "IFC"]


def type_token_ratio(texts: Sequence[str]) -> float:
    """TTR: distinct word tokens over all word tokens of a corpus (004 §5), with ``bench.api.tokens``."""
    tokens = [tok for text in texts for tok in tokenize(text)]
    return len(set(tokens)) / len(tokens) if tokens else float("nan")


def ifc_score(iterations, distances) -> float:
    """−Spearman ρ of distance on iteration: higher is better, 1 for a distance falling at every step."""
    x, d = np.asarray(iterations, float), np.asarray(distances, float)
    if len(x) < 2 or not np.isfinite(d).all() or np.ptp(d) == 0 or np.ptp(x) == 0:
        return float("nan")
    return float(-stats.spearmanr(x, d).statistic)


def gap_closed(first: float, last: float, self_distance: float) -> float:
    """Share of the gap d(0) − d(A, A) that d(T) closed; NaN when g_0 was no farther than A from itself."""
    gap = first - self_distance
    if not all(map(math.isfinite, (first, last, self_distance))) or gap <= 0:
        return float("nan")
    return float((first - last) / gap)


def reference_samples(pool_size: int, size: int, repetitions: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per repetition, two disjoint samples of ``size`` indices into the reference pool.

    The first is the reference sample scored against every g_i, both give the self-distance.
    """
    if 2 * size > pool_size:
        raise DataError(
            f"IFC needs 2 x {size} held-out source texts per repetition (reference sample and its "
            f"self-distance partner) but the reference pool has {pool_size}; lower ifc.corpus_size "
            "or raise ifc.reference_share"
        )
    out = []
    for r in range(repetitions):
        pick = np.random.default_rng(repetition_seed(seed, r, 0)).choice(pool_size, 2 * size, replace=False)
        out.append((pick[:size], pick[size:]))
    return out


def score_corpora(metrics: Sequence[tuple[MetricInfo, dict]], generated: Mapping[int, Sequence[str]],
                  reference_pool: Sequence[str], samples: Sequence[tuple[np.ndarray, np.ndarray]], *,
                  seed: int, embed: Callable[[list[str]], np.ndarray] | None = None,
                  progress: bool = True, result_log: ResultLog | None = None, embedder_id: str | None = None,
                  **engine) -> pd.DataFrame:
    """Every d(reference_r, g_i) and self-distance d(reference_r, other_r) as rows of DISTANCE_COLUMNS.

    A g_i smaller than the reference sample is compared with the same number of reference texts,
    keeping the two sides of every distance the same size (004 §5). The evaluations run on the
    engine (``bench.engine.run_jobs``: isolated workers, time limits, resume from ``result_log``);
    ``engine`` holds its other options (workers, timeout, ...).
    """
    corpora: dict[str, list[str]] = {}
    for i, texts in generated.items():
        corpora[f"g{i}"] = list(texts)
    plan = []
    for r, (ref_idx, other_idx) in enumerate(samples):
        reference = [reference_pool[j] for j in ref_idx]
        corpora[f"ref{r}"] = reference
        corpora[f"other{r}"] = [reference_pool[j] for j in other_idx]
        plan.append(("self", -1, r, f"ref{r}", f"other{r}"))
        for i, texts in sorted(generated.items()):
            ref = f"ref{r}" if len(texts) >= len(reference) else f"ref{r}[:{len(texts)}]"
            corpora[ref] = reference[:len(texts)]
            plan.append(("generated", i, r, ref, f"g{i}"))
    need_vectors = embed is not None and any(m.inputs == "embeddings" for m, _ in metrics)
    store = CorpusStore.from_corpora(corpora, embed=embed if need_vectors else None)
    jobs = [Job(key=(m.name, params_digest(params), kind, i, r), metric=m.name, p=p, q=q, seed=metric_seed(seed, r))
            for kind, i, r, p, q in plan for m, params in metrics]
    outcomes = run_jobs(jobs, store, {m.name: (m, params) for m, params in metrics}, result_log=result_log,
                        embedder_id=embedder_id, progress=progress, desc="IFC distances", **engine)
    rows = [(job.metric, *job.key[2:], o.distance, o.seconds, o.error, o.attempts)
            for job in jobs for o in [outcomes[job.key]]]
    return pd.DataFrame(rows, columns=DISTANCE_COLUMNS)


def ifc_measures(distances: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """IFC per (metric, repetition); a repetition with a failed evaluation gets none and is reported."""
    gen = distances[distances["kind"] == "generated"]
    measures, failures = per_repetition(
        gen, lambda g: {"IFC": ifc_score(g["iteration"], g["distance"])}, MEASURE_COLUMNS)
    for name, grp in distances[distances["kind"] == "self"].groupby("metric"):
        errors = grp.loc[grp["error"] != "", "error"]
        if len(errors):
            failures.setdefault(name, f"self-distance failed: {errors.iloc[0]}")
    return measures, failures


def ifc_summary(distances: pd.DataFrame, measures: pd.DataFrame) -> pd.DataFrame:
    """Per metric: mean IFC with its 95% CI, d(A, A), d(0), d(T) and the share of the gap closed."""
    from reports.tables import mean_ci

    rows = []
    for name, grp in distances.groupby("metric", sort=True):
        self_d = grp.loc[grp["kind"] == "self", "distance"].mean()
        per_iter = grp[grp["kind"] == "generated"].groupby("iteration")["distance"].mean()
        first = per_iter.iloc[0] if len(per_iter) else math.nan
        last = per_iter.iloc[-1] if len(per_iter) else math.nan
        mean, std, n, low, high = mean_ci(measures.loc[measures["metric"] == name, "IFC"].to_numpy())
        rows.append({"metric": name, "IFC": mean, "IFC_ci_low": low, "IFC_ci_high": high, "repetitions": n,
                     "self_distance": self_d, "first_distance": first, "last_distance": last,
                     "gap_closed": gap_closed(first, last, self_d)})
    return pd.DataFrame(rows)
