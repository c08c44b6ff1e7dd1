"""The KSC task: build collections, evaluate every metric on every corpus pair, score it (004 §3-4).

Everything is checked before the long part starts (names, k and n, corpus sizes). The
evaluations run in ``bench.engine`` (resumable, isolated, optionally parallel), and all
tables and figures are written to the run directory.
"""

from __future__ import annotations

import json
import logging
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from bench import __version__
from bench.api.registry import MetricInfo
from bench.collections.ksc import (
    corpus_pairs,
    known_similarity_corpora,
    validate_ksc_parameters,
)
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
from bench.errors import ConfigError
from bench.features.embedding import Embedder, custom_embedder, sentence_transformer
from bench.measures.failures import write_failures_csv
from bench.measures.ksc import collection_measures, per_repetition, zscore
from bench.tasks.config import data_locations, selected_metrics

log = logging.getLogger(__name__)

DISTANCE_COLUMNS = ["metric", "repetition", "i", "j", "ell", "distance", "z", "seconds", "error", "attempts"]
MEASURE_COLUMNS = ["metric", "repetition", "rho", "omega2", "L", "A", "Aw", "T"]


@dataclass
class KSCResult:
    """What one KSC run produced."""

    distances: pd.DataFrame
    measures: pd.DataFrame
    failures: dict[str, str] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    info: dict = field(default_factory=dict)


def build_embedder(cfg: DictConfig) -> Embedder:
    """The configured embedder with its cache under ``data.cache_dir``; ``embedder.factory``
    ("package.module:function", options in ``embedder.options``) plugs in a user's own."""
    cache_dir, _ = data_locations(cfg)
    e = cfg.embedder
    if e.get("factory"):
        options = OmegaConf.to_container(e.options, resolve=True) if e.get("options") is not None else {}
        return custom_embedder(str(e.factory), options=options, cache_dir=cache_dir)  # type: ignore[arg-type]
    return sentence_transformer(
        model=e.model, package=e.get("package"), path=e.get("path"), device=e.get("device", "auto"),
        batch_size=int(e.get("batch_size", 64)), cache_dir=cache_dir,
    )


def check_run_config(cfg: DictConfig) -> list[tuple[MetricInfo, dict]]:
    """Validate k, n, repetitions and metric names before anything is loaded."""
    try:
        k, n, reps = int(cfg.k), int(cfg.n), int(cfg.repetitions)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"k, n and repetitions must be integers: {exc}") from exc
    validate_ksc_parameters(k, n)
    if reps < 1:
        raise ConfigError(f"repetitions must be >= 1, got {reps}")
    return selected_metrics(cfg)


def run_ksc(cfg: DictConfig, out_dir: Path | str) -> KSCResult:
    """Run the KSC benchmark described by ``cfg`` and write its outputs to ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics = check_run_config(cfg)
    k, n, reps, seed = int(cfg.k), int(cfg.n), int(cfg.repetitions), int(cfg.seed)
    cache_dir, mirror = data_locations(cfg)

    source_a, source_b = load_pair(cfg.pair.name, cache_dir=cache_dir, mirror=mirror)
    collections = [  # raises, naming the source and the count needed, if a source is too small
        known_similarity_corpora(source_a.texts, source_b.texts, k=k, n=n,
                                 seed=repetition_seed(seed, r, 0), names=(source_a.name, source_b.name))
        for r in range(reps)
    ]

    corpora = {f"r{r}c{c.index}": c.texts for r, coll in enumerate(collections) for c in coll}
    embedder = build_embedder(cfg)  # cheap: the model loads only if something must be embedded
    needs_embeddings = any(m.inputs == "embeddings" for m, _ in metrics)
    start = time.perf_counter()
    store = CorpusStore.from_corpora(corpora, embed=embedder.embed if needs_embeddings else None)
    embed_seconds = time.perf_counter() - start

    pairs = corpus_pairs(k)
    jobs = [Job(key=(m.name, params_digest(params), r, i, j), metric=m.name, p=f"r{r}c{i}", q=f"r{r}c{j}",
                seed=metric_seed(seed, r))
            for r in range(reps) for m, params in metrics for i, j in pairs]
    fingerprint = {"task": "ksc", "pair": str(cfg.pair.name), "k": k, "n": n, "seed": seed}
    outcomes = run_jobs(jobs, store, {m.name: (m, params) for m, params in metrics}, embedder_id=embedder.model_id,
                        result_log=result_log_for(cfg, out_dir, fingerprint), **engine_options(cfg))
    rows = [(job.metric, job.key[2], job.key[3], job.key[4], job.key[4] - job.key[3], o.distance,
             o.seconds, o.error, o.attempts) for job in jobs for o in [outcomes[job.key]]]

    distances = pd.DataFrame(rows, columns=[c for c in DISTANCE_COLUMNS if c != "z"])
    distances["z"] = distances.groupby(["metric", "repetition"])["distance"].transform(zscore)
    distances = distances[DISTANCE_COLUMNS]
    measures, failures = _measures(distances, k)

    info = {
        "task": "ksc", "pair": cfg.pair.name, "k": k, "n": n, "repetitions": reps, "seed": seed,
        "sources": {source_a.name: len(source_a.texts), source_b.name: len(source_b.texts)},
        "metrics": [m.name for m, _ in metrics], "failures": failures,
        "embedding": {"model": embedder.model_id if embedder else None,
                      "seconds": round(embed_seconds, 3), **(embedder.stats if embedder else {})},
        "mirror": str(mirror) if mirror else None, "version": __version__,
        "python": platform.python_version(),
    }
    files = write_outputs(distances, measures, failures, info, out_dir, title=_title(cfg))
    return KSCResult(distances, measures, failures, files, info)


def _measures(distances: pd.DataFrame, k: int) -> tuple[pd.DataFrame, dict[str, str]]:
    """Measures per (metric, repetition); a repetition with any failed pair gets none."""
    return per_repetition(
        distances, lambda g: collection_measures(g["i"], g["j"], g["distance"], g["seconds"], k), MEASURE_COLUMNS)


def _title(cfg: DictConfig) -> str:
    return f"KSC on {cfg.pair.name}: k={cfg.k}, n={cfg.n}, {cfg.repetitions} repetitions, seed {cfg.seed}"


def write_outputs(distances, measures, failures, info, out_dir: Path, *, title: str) -> dict[str, Path]:
    """Distance and measure tables, Table 3, radar chart and scatter plots."""
    from reports.figures import distance_scatter, radar_chart
    from reports.tables import summarise_measures, write_tables

    files = {"distances": out_dir / "distances.csv", "measures": out_dir / "measures.csv",
             "run": out_dir / "run.json"}
    distances.to_csv(files["distances"], index=False)
    if (failed := write_failures_csv(distances, out_dir)) is not None:
        files["failures"] = failed
    measures.to_csv(files["measures"], index=False)
    files["run"].write_text(json.dumps(info, indent=2, default=str))
    if measures.empty:
        log.error("no metric produced measures; see %s", files["distances"])
        return files
    files.update(write_tables(measures, out_dir, title=title, failures=failures,
                              repetitions=info.get("repetitions")))
    summary = summarise_measures(measures)
    try:
        for path in radar_chart(summary, out_dir / "radar", title=title):
            files[f"radar{path.suffix}"] = path
    except ValueError as exc:
        log.warning("no radar chart: %s", exc)
    for path in distance_scatter(distances, out_dir):
        files[path.stem] = path
    return files

