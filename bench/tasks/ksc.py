"""The KSC task: every metric on every corpus pair of Known-Similarity Corpora, scored by ρ, ω², L, A, A^w and T (004 §3-4)."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from textmetric_bench.api.registry import MetricInfo
from textmetric_bench.collections.ksc import corpus_pairs, known_similarity_corpora, validate_ksc_parameters
from textmetric_bench.collections.seeds import repetition_seed
from textmetric_bench.errors import ConfigError
from textmetric_bench.measures.failures import per_repetition
from textmetric_bench.measures.ksc import collection_measures, zscore
from textmetric_bench.measures.own_noise import COLUMNS as OWN_NOISE_COLUMNS
from textmetric_bench.measures.own_noise import own_noise_table
from textmetric_bench.tasks.config import selected_metrics
from textmetric_bench.tasks.own_noise import own_noise_distances, own_noise_seeds
from textmetric_bench.tasks.positions import KnownPositions, runner_with_positions
from textmetric_bench.tasks.reference import merge_reference
from textmetric_bench.tasks.skeleton import Collections, Evaluation, Scores, Task, TaskResult
from textmetric_bench.tasks.sources import pair_sources

log = logging.getLogger(__name__)

DISTANCE_COLUMNS = ["metric", "repetition", "i", "j", "ell", "distance", "z", "seconds", "error", "attempts"]
MEASURE_COLUMNS = ["metric", "repetition", "rho", "omega2", "L", "A", "Aw", "T"]


def check_run_config(cfg: DictConfig) -> list[tuple[MetricInfo, dict]]:
    """Validate k, n, repetitions and metric names before anything is loaded."""
    try:
        k, n, reps = int(cfg.k), int(cfg.n), int(cfg.repetitions)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"k, n and repetitions must be integers: {exc}") from exc
    validate_ksc_parameters(k, n)
    if reps < 1:
        raise ConfigError(f"repetitions must be >= 1, got {reps}")
    own_noise_seeds(cfg)
    return selected_metrics(cfg)


class KSCTask(KnownPositions, Task, name="ksc", fields=("repetition", "i", "j")):

    def build(self, cfg: DictConfig, out_dir: Path) -> Collections:
        check_run_config(cfg)
        k, n, reps, seed = int(cfg.k), int(cfg.n), int(cfg.repetitions), int(cfg.seed)
        sources = pair_sources(cfg)
        a, b = sources.a, sources.b
        collections = [  # raises, naming the source and the count needed, if a source is too small
            known_similarity_corpora(a.texts, b.texts, k=k, n=n, seed=repetition_seed(seed, r, 0),
                                     names=(a.name, b.name))
            for r in range(reps)]
        corpora = {f"r{r}c{c.index}": c.texts for r, coll in enumerate(collections) for c in coll}
        self.publish_positions(corpora, {f"r{r}c{c.index}": c.known_position  # for the oracle: mixing proportions
                                         for r, coll in enumerate(collections) for c in coll})
        evaluations = [Evaluation((r, i, j), f"r{r}c{i}", f"r{r}c{j}", r) for r in range(reps)
                       for i, j in corpus_pairs(k)]
        return Collections(corpora, evaluations,
                           fingerprint={"task": "ksc", "pair": sources.label, "k": k, "n": n, "seed": seed},
                           info={"pair": sources.label, "k": k, "n": n, "repetitions": reps,
                                 "sources": sources.record()},
                           extra={"k": k, "cfg": cfg, "out_dir": out_dir})

    def score(self, distances: pd.DataFrame, collections: Collections) -> Scores:
        k = collections.extra["k"]
        distances = distances.assign(ell=distances["j"] - distances["i"])
        distances["z"] = distances.groupby(["metric", "repetition"])["distance"].transform(zscore)
        measures, failures = per_repetition(
            distances, lambda g: collection_measures(g["i"], g["j"], g["distance"], g["seconds"], k), MEASURE_COLUMNS)
        own = own_noise_distances(collections.extra["cfg"], collections.extra["out_dir"], collections)
        info = {"own_noise": own_noise_table(own, distances).to_dict("records")} if len(own) else {}
        return Scores(measures, failures, distances=distances[DISTANCE_COLUMNS], info=info)

    def merge_reference(self, cfg: DictConfig, collections: Collections, measures: pd.DataFrame,
                        computed: set[str]) -> tuple[pd.DataFrame, dict]:
        """The shipped reference rows of metrics not computed here (``reference: auto``; textmetric_bench.tasks.reference)."""
        return merge_reference(cfg, collections, measures, computed)

    def title(self, cfg: DictConfig, collections: Collections) -> str:
        pair = collections.info["pair"]
        return f"KSC on {pair}: k={cfg.k}, n={cfg.n}, {cfg.repetitions} repetitions, seed {cfg.seed}"

    def write(self, result: TaskResult, out_dir: Path) -> dict[str, Path]:
        """Table 3, radar chart, scatter plots, and the stochastic metrics' own noise (``own_noise.csv``)."""
        from textmetric_bench.measures.summaries import summarise_measures
        from textmetric_bench.reports.figures.ksc import distance_scatter
        from textmetric_bench.reports.figures.radar import radar_chart
        from textmetric_bench.reports.tables.files import write_tables

        if result.measures.empty:
            log.error("no metric produced measures; see %s", out_dir / self.distances_file)
            return {}
        title = result.info["title"]
        own_noise = {}
        if result.info.get("own_noise"):
            own_noise["own_noise"] = out_dir / "own_noise.csv"
            pd.DataFrame(result.info["own_noise"], columns=OWN_NOISE_COLUMNS).to_csv(own_noise["own_noise"], index=False)
        files = own_noise | write_tables(result.measures, out_dir, title=title, failures=result.failures,
                             repetitions=result.info.get("repetitions"))
        try:
            for path in radar_chart(summarise_measures(result.measures), out_dir / "radar", title=title):
                files[f"radar{path.suffix}"] = path
        except ValueError as exc:
            log.warning("no radar chart: %s", exc)
        for path in distance_scatter(result.distances, out_dir):
            files[path.stem] = path
        return files


run_ksc = runner_with_positions(KSCTask())
