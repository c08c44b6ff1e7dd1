"""The IFC task: generate Increasingly Fine-tuned Corpora from a source corpus and score every metric on them (004 §5).

The source is split once (seeded) into a training pool, from which each fine-tuning step draws
its m texts, and a disjoint reference pool, from which the reference samples are drawn; so no
reference text was ever trained on. Generation (``textmetric_bench.collections.ifc_generate``) resumes from what is on
disk in ``<out_dir>/generated``; scoring always re-reads the corpora from
there, so a re-run with new metrics and ``ifc.generate=false`` never loads the language model.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from textmetric_bench.collections.ifc import ifc_pairs, ifc_positions, reference_samples, split_source
from textmetric_bench.collections.ifc_generate import GenerationPlan, finished_iterations, generate_ifc, read_corpus
from textmetric_bench.errors import ConfigError, DataError
from textmetric_bench.measures.ifc import gap_closed, ifc_measures, type_token_ratio
from textmetric_bench.tasks.config import data_locations
from textmetric_bench.tasks.positions import KnownPositions, runner_with_positions
from textmetric_bench.tasks.skeleton import Collections, Evaluation, Scores, Task, TaskResult
from textmetric_bench.tasks.sources import ifc_source

log = logging.getLogger(__name__)


def generation_plan(cfg: DictConfig) -> GenerationPlan:
    """The generation settings of ``cfg.ifc`` and ``cfg.lm``, validated."""
    from textmetric_bench.features.lm import model_id

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


class IFCTask(KnownPositions, Task, name="ifc", fields=("kind", "iteration", "repetition"),
              distances_file="ifc_distances.csv"):

    def build(self, cfg: DictConfig, out_dir: Path) -> Collections:
        """Generate (or resume) g_0..g_T from ``cfg.ifc.source``; score them against held-out reference samples."""
        plan = generation_plan(cfg)
        seed, reps = int(cfg.seed), int(cfg.ifc.repetitions)
        if reps < 1:
            raise ConfigError(f"ifc.repetitions must be >= 1, got {reps}")
        cache_dir, _ = data_locations(cfg)
        loaded = ifc_source(cfg)
        source = list(loaded.texts)
        training_pool, reference_pool = split_source(source, float(cfg.ifc.reference_share), seed)
        if plan.train_per_step > len(training_pool):
            raise DataError(f"ifc.train_per_step={plan.train_per_step} exceeds the training pool of "
                            f"{len(training_pool)} {plan.source} texts; lower it or ifc.reference_share")
        samples = reference_samples(len(reference_pool), plan.corpus_size, reps, seed)

        gen_dir = out_dir / "generated"
        start = time.perf_counter()
        generate = bool(cfg.ifc.get("generate", True))
        generated_now = _generate(cfg, plan, gen_dir, training_pool, cache_dir, loaded.normalise) if generate else []
        generation_seconds = time.perf_counter() - start
        on_disk = finished_iterations(gen_dir, plan) if gen_dir.is_dir() else []
        iterations = [i for i in on_disk if i <= plan.iterations] if generate else on_disk
        if not iterations:
            raise DataError(f"no generated corpora in {gen_dir}; run with ifc.generate=true first "
                            "(or point hydra.run.dir at the directory of an earlier IFC run)")
        generated = {i: read_corpus(gen_dir, i) for i in iterations}
        corpora, pairs = ifc_pairs(generated, reference_pool, samples)
        self.publish_positions(corpora, ifc_positions(corpora))  # for the oracle: iterations
        return Collections(
            corpora, [Evaluation((kind, i, r), p, q, r) for kind, i, r, p, q in pairs],
            fingerprint={"task": "ifc", "source": plan.source, "plan": plan.fingerprint(), "seed": seed,
                         "reference_share": float(cfg.ifc.reference_share)},
            info={"source": plan.source, "source_texts": len(source), "sources": {loaded.name: loaded.record()},
                  "training_pool": len(training_pool), "reference_pool": len(reference_pool), "iterations": iterations,
                  "generated_now": generated_now, "repetitions": reps, "lm": plan.lm, "plan": plan.fingerprint(),
                  "seconds": {"generation": round(generation_seconds, 1)}},
            extra={"ttr": corpus_ttr(source, reference_pool, samples, generated)})

    def score(self, distances: pd.DataFrame, collections: Collections) -> Scores:
        measures, failures = ifc_measures(distances)
        return Scores(measures, failures, summary=ifc_summary(distances, measures),
                      info={"ttr": collections.extra["ttr"]})

    def title(self, cfg: DictConfig, collections: Collections) -> str:
        info = collections.info
        return (f"IFC on {info['source']}: g_0..g_{max(info['iterations'])}, {cfg.ifc.train_per_step} texts a step, "
                f"{cfg.ifc.corpus_size} per corpus, {info['repetitions']} repetitions, seed {cfg.seed}")

    def write(self, result: TaskResult, out_dir: Path) -> dict[str, Path]:
        """The summary and TTR tables, the IFC table and the Figure 5 plots."""
        from textmetric_bench.reports.ifc_figures import ifc_figures, ifc_markdown

        ttr = result.info.pop("ttr")
        files = {"ifc_summary": out_dir / "ifc_summary.csv", "ifc_ttr": out_dir / "ifc_ttr.csv",
                 "table3_md": out_dir / "table3.md"}
        result.summary.to_csv(files["ifc_summary"], index=False)
        ttr.to_csv(files["ifc_ttr"], index=False)
        files["table3_md"].write_text(ifc_markdown(result.summary, ttr, title=result.info["title"],
                                                   failures=result.failures), encoding="utf-8")
        for path in ifc_figures(result.distances, result.summary, out_dir):
            files[path.stem] = path
        return files


def _generate(cfg, plan: GenerationPlan, gen_dir: Path, training_pool, cache_dir, normalisation) -> list[int]:
    """Generate what is missing, loading the language model only when something is."""
    from textmetric_bench.features.lm import checkpoint_path, generation_threads, load_causal_lm, text_token_ids

    done = finished_iterations(gen_dir, plan) if gen_dir.is_dir() else []
    if set(range(plan.iterations + 1)) <= set(done):
        return []
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint_path(cfg.lm, cache_dir)))
    lengths = [max(1, len(text_token_ids(tokenizer, t, add_eos=False)) - 1) for t in training_pool]
    lm_cfg = OmegaConf.to_container(cfg.lm, resolve=True)
    generating = {**lm_cfg, "threads": generation_threads(lm_cfg)}
    return generate_ifc(plan, gen_dir, training_pool=training_pool, token_lengths=lengths,
                        normalisation=normalisation,
                        load_model=lambda path: load_causal_lm(generating, cache_dir, path=path),
                        progress=bool(cfg.get("progress", True)))


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


def ifc_summary(distances: pd.DataFrame, measures: pd.DataFrame) -> pd.DataFrame:
    """Per metric: mean IFC with its 95% CI, d(A, A), d(0), d(T) and the share of the gap closed."""
    from textmetric_bench.reports.tables import mean_ci

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


run_ifc = runner_with_positions(IFCTask())
