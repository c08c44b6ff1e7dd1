"""The KSC task's own-noise evaluations: each stochastic metric again on fixed corpora with other seeds.

On repetition 0's collection, the pairs (c_1, c_k) and (c_1, c_m), m = 1 + (k - 1) // 2 (the widest and a
middle gap), are evaluated by every stochastic metric of the run (``stochastic=True`` on ``@metric``)
with ``own_noise.seeds`` seeds of their own (0 disables). They run on the engine like every
evaluation, logged in the run's ``evaluations.jsonl`` (so resumed and cached), under keys whose
repetition is -1 - s for seed s, which the distance table never reads. This runs in the task's
scoring step, after the main evaluation (the skeleton plans one list of evaluations for every
metric; these are only for the stochastic ones). ``textmetric_bench.measures.own_noise`` turns them into
``own_noise.csv``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from textmetric_bench.collections.seeds import repetition_seed
from textmetric_bench.engine import (
    CorpusStore,
    Job,
    engine_options,
    params_digest,
    result_log_for,
    run_jobs,
)
from textmetric_bench.errors import ConfigError
from textmetric_bench.tasks.config import build_embedder, selected_metrics
from textmetric_bench.tasks.skeleton import Collections, pair_digest

OWN_NOISE_STREAM = 5  # seed stream of the metric seeds (0 collections, 1 metric seeds, 2-4 robustness curves)


def own_noise_seeds(cfg: DictConfig) -> int:
    """``own_noise.seeds`` of the config (0 when absent or disabled)."""
    value = (cfg.get("own_noise") or {}).get("seeds", 0)
    seeds = int(value or 0)
    if seeds < 0 or seeds == 1:
        raise ConfigError(f"own_noise.seeds must be 0 (off) or at least 2 (a spread needs two values), got {value}")
    return seeds


def own_noise_pairs(k: int) -> list[tuple[int, int]]:
    """(1, k) and (1, 1 + (k - 1) // 2): the widest gap and a middle one."""
    return sorted({(1, k), (1, 1 + (k - 1) // 2)})


def own_seed(seed: int, s: int) -> int:
    """The s-th own-noise metric seed of a run: a stream of its own, apart from the repetitions'."""
    return int(repetition_seed(seed, s, OWN_NOISE_STREAM).generate_state(1)[0])


def own_noise_distances(cfg: DictConfig, out_dir: Path, collections: Collections) -> pd.DataFrame:
    """metric, seed, i, j, distance of every stochastic metric of the run on repetition 0's pairs."""
    seeds, k = own_noise_seeds(cfg), collections.extra["k"]
    metrics = [(m, params) for m, params in selected_metrics(cfg) if m.stochastic]
    if not seeds or not metrics:
        return pd.DataFrame(columns=["metric", "seed", "i", "j", "distance"])
    pairs = own_noise_pairs(k)
    corpora = {f"r0c{c}": collections.corpora[f"r0c{c}"] for pair in pairs for c in pair}
    embedder = build_embedder(cfg) if any(m.inputs == "embeddings" for m, _ in metrics) else None
    store = CorpusStore.from_corpora(corpora, embed=embedder.embed if embedder else None)
    jobs = {Job(key=(m.name, params_digest(params), -1 - s, i, j, pair_digest(corpora[f"r0c{i}"], corpora[f"r0c{j}"])),
                metric=m.name, p=f"r0c{i}", q=f"r0c{j}", seed=own_seed(int(cfg.seed), s)): s
            for m, params in metrics for s in range(seeds) for i, j in pairs}
    outcomes = run_jobs(list(jobs), store, {m.name: (m, params) for m, params in metrics},
                        result_log=result_log_for(cfg, out_dir, collections.fingerprint),
                        embedder_id=embedder.model_id if embedder else None, desc="own-noise evaluations",
                        **engine_options(cfg))
    rows = [(job.metric, s, job.key[3], job.key[4], outcomes[job.key].distance if job.key in outcomes else np.nan)
            for job, s in jobs.items()]
    return pd.DataFrame(rows, columns=["metric", "seed", "i", "j", "distance"])
