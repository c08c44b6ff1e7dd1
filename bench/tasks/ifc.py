"""The IFC task: generate Increasingly Fine-tuned Corpora from a source corpus and score every metric on them (004 §5).

The source is split once (seeded) into a training pool, from which each fine-tuning step draws
its m texts, and a disjoint reference pool, from which the reference samples are drawn; so no
reference text was ever trained on. Generation (``bench.collections.ifc_generate``) resumes from what is on
disk in ``<out_dir>/generated``; scoring (``bench.tasks.ifc_score``) always re-reads the corpora from
there, so a re-run with new metrics and ``ifc.generate=false`` never loads the language model.
"""

from __future__ import annotations

import json
import logging
import math
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from bench import __version__
from bench.collections.ifc_generate import (
    GenerationPlan,
    finished_iterations,
    generate_ifc,
    read_corpus,
)
from bench.collections.seeds import repetition_seed
from bench.data.cards import corpus_card
from bench.data.corpora import load_corpus
from bench.engine import engine_options, result_log_for
from bench.errors import ConfigError, DataError
from bench.measures.failures import write_failures_csv
from bench.tasks.config import data_locations, selected_metrics
from bench.tasks.ifc_score import (
    ifc_measures,
    ifc_summary,
    reference_samples,
    score_corpora,
    type_token_ratio,
)

log = logging.getLogger(__name__)

SPLIT_STREAM = 2  # seed stream of the training/reference split (0: samples, 1: metrics, 3-4: generation)


@dataclass
class IFCResult:
    """What one IFC run produced."""

    distances: pd.DataFrame
    measures: pd.DataFrame
    summary: pd.DataFrame
    failures: dict[str, str] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    info: dict = field(default_factory=dict)


def split_source(texts, reference_share: float, seed: int) -> tuple[list[str], list[str]]:
    """(training pool, reference pool): a seeded split of the source into two disjoint parts."""
    if not 0 < reference_share < 1:
        raise ConfigError(f"ifc.reference_share must lie strictly between 0 and 1, got {reference_share}")
    order = np.random.default_rng(repetition_seed(seed, 0, SPLIT_STREAM)).permutation(len(texts))
    n_ref = int(round(reference_share * len(texts)))
    return [texts[i] for i in order[n_ref:]], [texts[i] for i in order[:n_ref]]


def generation_plan(cfg: DictConfig) -> GenerationPlan:
    """The generation settings of ``cfg.ifc`` and ``cfg.lm``, validated."""
    from bench.features.lm import model_id

    g, s = cfg.ifc, cfg.ifc.sampling
    plan = GenerationPlan(
        source=str(g.source), lm=model_id(cfg.lm), seed=int(cfg.seed), iterations=int(g.iterations),
        train_per_step=int(g.train_per_step), corpus_size=int(g.corpus_size),
        learning_rate=float(g.learning_rate), train_batch_size=int(g.batch_size), top_p=float(s.top_p),
        temperature=float(s.temperature), sample_batch_size=int(s.batch_size),
        length_quantile=float(s.length_quantile), max_sample_rounds=int(s.max_rounds),
    )
    for name in ("iterations", "train_per_step", "corpus_size", "train_batch_size", "sample_batch_size",
                 "max_sample_rounds"):
        if getattr(plan, name) < (0 if name == "iterations" else 1):
            raise ConfigError(f"IFC setting {name} must be positive, got {getattr(plan, name)}")
    if not (0 < plan.top_p <= 1 and plan.temperature > 0 and 0 < plan.length_quantile <= 1):
        raise ConfigError("ifc.sampling needs 0 < top_p <= 1, temperature > 0 and 0 < length_quantile <= 1")
    return plan


def run_ifc(cfg: DictConfig, out_dir: Path | str) -> IFCResult:
    """Generate (or resume) g_0..g_T from ``cfg.ifc.source`` and score every selected metric on them."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics = selected_metrics(cfg)
    plan = generation_plan(cfg)
    seed, reps, progress = int(cfg.seed), int(cfg.ifc.repetitions), bool(cfg.get("progress", True))
    if reps < 1:
        raise ConfigError(f"ifc.repetitions must be >= 1, got {reps}")
    cache_dir, mirror = data_locations(cfg)
    source = load_corpus(plan.source, cache_dir=cache_dir, mirror=mirror)
    training_pool, reference_pool = split_source(source, float(cfg.ifc.reference_share), seed)
    if plan.train_per_step > len(training_pool):
        raise DataError(f"ifc.train_per_step={plan.train_per_step} exceeds the training pool of "
                        f"{len(training_pool)} {plan.source} texts; lower it or ifc.reference_share")
    samples = reference_samples(len(reference_pool), plan.corpus_size, reps, seed)

    gen_dir = out_dir / "generated"
    start = time.perf_counter()
    generated_now: list[int] = []
    if cfg.ifc.get("generate", True):
        generated_now = _generate(cfg, plan, gen_dir, training_pool, cache_dir, progress)
    generation_seconds = time.perf_counter() - start
    on_disk = finished_iterations(gen_dir, plan) if gen_dir.is_dir() else []
    iterations = [i for i in on_disk if i <= plan.iterations] if cfg.ifc.get("generate", True) else on_disk
    if not iterations:
        raise DataError(f"no generated corpora in {gen_dir}; run with ifc.generate=true first "
                        "(or point hydra.run.dir at the directory of an earlier IFC run)")
    generated = {i: read_corpus(gen_dir, i) for i in iterations}

    embedder = None
    if any(m.inputs == "embeddings" for m, _ in metrics):
        from bench.tasks.ksc import build_embedder

        embedder = build_embedder(cfg)
    start = time.perf_counter()
    fingerprint = {"task": "ifc", "source": plan.source, "plan": plan.fingerprint(), "seed": seed,
                   "reference_share": float(cfg.ifc.reference_share)}
    distances = score_corpora(metrics, generated, reference_pool, samples, seed=seed,
                              embed=embedder.embed if embedder else None,
                              embedder_id=embedder.model_id if embedder else None,
                              result_log=result_log_for(cfg, out_dir, fingerprint), **engine_options(cfg))
    scoring_seconds = time.perf_counter() - start
    measures, failures = ifc_measures(distances)
    summary = ifc_summary(distances, measures)
    ttr = corpus_ttr(source, reference_pool, samples, generated)

    info = {
        "task": "ifc", "source": plan.source, "source_texts": len(source), "training_pool": len(training_pool),
        "reference_pool": len(reference_pool), "iterations": iterations, "generated_now": generated_now,
        "repetitions": reps, "seed": seed, "lm": plan.lm, "plan": plan.fingerprint(),
        "metrics": [m.name for m, _ in metrics], "failures": failures,
        "seconds": {"generation": round(generation_seconds, 1), "scoring": round(scoring_seconds, 1)},
        "embedding": {"model": embedder.model_id if embedder else None, **(embedder.stats if embedder else {})},
        "version": __version__, "python": platform.python_version(),
    }
    files = write_ifc_outputs(distances, measures, summary, ttr, failures, info, out_dir,
                              title=f"IFC on {plan.source}: g_0..g_{max(iterations)}, {plan.train_per_step} "
                                    f"texts a step, {plan.corpus_size} per corpus, {reps} repetitions, seed {seed}")
    return IFCResult(distances, measures, summary, failures, files, info)


def _generate(cfg, plan: GenerationPlan, gen_dir: Path, training_pool, cache_dir, progress) -> list[int]:
    """Generate what is missing, loading the language model only when something is."""
    from bench.features.lm import checkpoint_path, load_causal_lm, text_token_ids

    done = finished_iterations(gen_dir, plan) if gen_dir.is_dir() else []
    if set(range(plan.iterations + 1)) <= set(done):
        return []
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint_path(cfg.lm, cache_dir)))
    lengths = [max(1, len(text_token_ids(tokenizer, t, add_eos=False)) - 1) for t in training_pool]
    lm_cfg = OmegaConf.to_container(cfg.lm, resolve=True)
    return generate_ifc(plan, gen_dir, training_pool=training_pool, token_lengths=lengths,
                        normalisation=corpus_card(plan.source).normalise,
                        load_model=lambda path: load_causal_lm(lm_cfg, cache_dir, path=path), progress=progress)


def corpus_ttr(source, reference_pool, samples, generated) -> pd.DataFrame:
    """TTR of the whole source, of each reference sample and of every g_i (004 §5).

    TTR falls with corpus size, so g_i compares with the reference samples (same size), not the source.
    """
    rows = [{"corpus": "source", "iteration": math.nan, "repetition": math.nan, "texts": len(source),
             "TTR": type_token_ratio(source)}]
    for r, (ref_idx, _) in enumerate(samples):
        rows.append({"corpus": "reference", "iteration": math.nan, "repetition": r, "texts": len(ref_idx),
                     "TTR": type_token_ratio([reference_pool[j] for j in ref_idx])})
    for i, texts in sorted(generated.items()):
        rows.append({"corpus": f"g_{i}", "iteration": i, "repetition": math.nan, "texts": len(texts),
                     "TTR": type_token_ratio(texts)})
    return pd.DataFrame(rows)


def write_ifc_outputs(distances, measures, summary, ttr, failures, info, out_dir: Path, *,
                      title: str) -> dict[str, Path]:
    """The distance, measure, summary and TTR tables, the IFC table and the Figure 5 plots."""
    from reports.ifc_figures import ifc_figures, ifc_markdown

    files = {"ifc_distances": out_dir / "ifc_distances.csv", "measures": out_dir / "measures.csv",
             "ifc_summary": out_dir / "ifc_summary.csv", "ifc_ttr": out_dir / "ifc_ttr.csv",
             "run": out_dir / "run.json", "table3_md": out_dir / "table3.md"}
    distances.to_csv(files["ifc_distances"], index=False)
    if (failed := write_failures_csv(distances, out_dir)) is not None:
        files["failures"] = failed
    measures.to_csv(files["measures"], index=False)
    summary.to_csv(files["ifc_summary"], index=False)
    ttr.to_csv(files["ifc_ttr"], index=False)
    files["run"].write_text(json.dumps(info, indent=2, default=str))
    files["table3_md"].write_text(ifc_markdown(summary, ttr, title=title, failures=failures), encoding="utf-8")
    for path in ifc_figures(distances, summary, out_dir):
        files[path.stem] = path
    return files
