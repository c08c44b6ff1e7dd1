"""Generating Increasingly Fine-tuned Corpora (004 §5): fine-tune a causal LM on the source step by step
and sample a corpus g_i after each step. This module holds the plan, the corpora on disk and the resume; the
fine-tuning step and the sampler are the LM package's (``textmetric_bench.features.lm.training``, ``.sampling``).

Format. Each source text is one training sequence ``BOS text EOS`` (loss on every token of it) and
every g_i is sampled from ``BOS`` alone, so g_0 is what the model says unprompted and each step
pulls it toward the source; the instruct model's chat prompt is not used, so nothing but the
fine-tuning tells the model what to write. A step is one epoch over m texts drawn afresh from the
training pool, with a fresh AdamW optimiser (each step is an independent fine-tuning call, as when
004's authors re-ran a fine-tuning script), so the weights alone carry the state between steps.

Lengths. A sample ends at EOS or after the source's ``length_quantile`` token length; a sample cut
there without EOS (an untuned model rambles) is truncated to a length drawn from the source's
token lengths, so every g_i has source-like lengths. Texts are normalised like the source corpus
(strip, collapse whitespace, drop empties, de-duplicate) and sampling refills what was dropped.

Resume. g_i is saved as ``iter_<i>.jsonl`` with ``iter_<i>.json`` (its settings, seeds, loss,
timings); the weights after the furthest step are kept in ``checkpoint/`` with ``ifc_step.json``
(the step, the settings and every step's training loss). A re-run skips every g_i on disk and
re-derives a model state it lacks by replaying the seeded steps from the nearest state not past it (the saved
weights when they are, else the base model); a g_i sampled from the saved
weights records the loss its step had when it was trained. Files get the usual permissions.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from textmetric_bench.collections.seeds import repetition_seed
from textmetric_bench.console import adopt_library_loggers, progress_bar
from textmetric_bench.data.card_schema import Normalisation
from textmetric_bench.errors import ConfigError
from textmetric_bench.features.lm.model import return_freed_memory, save_causal_lm
from textmetric_bench.features.lm.sampling import SAMPLER, sample_corpus
from textmetric_bench.features.lm.training import BATCHING, EMBEDDING_GRADIENT, LOSS_HEAD, fine_tune_step
from textmetric_bench.files import atomic_write, make_dirs, remove_stale_temporaries

log = logging.getLogger(__name__)

TRAIN_STREAM, SAMPLE_STREAM = 3, 4  # seed streams beside KSC's 0 (collections) and 1 (metrics)


@dataclass(frozen=True)
class GenerationPlan:
    """Every setting that shapes the corpora g_i; ``iterations`` may grow between runs."""

    source: str
    lm: str
    seed: int
    iterations: int
    train_per_step: int
    corpus_size: int
    learning_rate: float
    train_batch_size: int
    top_p: float
    temperature: float
    sample_batch_size: int
    length_quantile: float
    max_sample_rounds: int
    sampler: str = SAMPLER
    batching: str = BATCHING
    embedding_gradient: str = EMBEDDING_GRADIENT
    loss_head: str = LOSS_HEAD
    #: memory against time only: the weights, and so the corpora, are the same either way (tested)
    recompute_activations: bool = True

    def fingerprint(self) -> dict:
        """The settings a saved g_i must share with this plan to be reused."""
        return {k: v for k, v in asdict(self).items() if k not in ("iterations", "recompute_activations")}


def _int_seed(seed: int, index: int, stream: int) -> int:
    return int(repetition_seed(seed, index, stream).generate_state(1)[0])


# --- the corpora on disk -----------------------------------------------------------------------------


def corpus_file(gen_dir: Path, i: int) -> Path:
    return Path(gen_dir) / f"iter_{i}.jsonl"


def read_corpus(gen_dir: Path, i: int) -> list[str]:
    """The texts of g_i."""
    with open(corpus_file(gen_dir, i), encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()]


def finished_iterations(gen_dir: Path, plan: GenerationPlan | None = None) -> list[int]:
    """Iterations whose corpus and metadata are both on disk; raise if they were made otherwise."""
    done = []
    for meta_path in sorted(Path(gen_dir).glob("iter_*.json")):
        i = int(meta_path.stem.split("_")[1])
        if not corpus_file(gen_dir, i).is_file():
            continue
        if plan is not None:
            saved = json.loads(meta_path.read_text())["config"]
            diff = {k: (saved.get(k), v) for k, v in plan.fingerprint().items() if saved.get(k) != v}
            if diff:
                changes = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in diff.items())
                raise ConfigError(
                    f"{meta_path} was generated with other settings ({changes}); run in a new "
                    f"directory or delete {gen_dir} to regenerate"
                )
        done.append(i)
    return sorted(done)


def _save_corpus(gen_dir: Path, i: int, texts: list[str], meta: dict) -> None:
    atomic_write(
        corpus_file(gen_dir, i), "".join(json.dumps({"text": t}) + "\n" for t in texts), what=f"the IFC corpus g_{i}"
    )
    atomic_write(gen_dir / f"iter_{i}.json", json.dumps(meta, indent=2), what=f"the metadata of g_{i}")


CHECKPOINT_STATE = "ifc_step.json"


def _checkpoint_state(gen_dir: Path, plan: GenerationPlan) -> dict | None:
    """The record of the saved weights (``step``, ``losses`` by step), if they were made by this plan."""
    state = gen_dir / "checkpoint" / CHECKPOINT_STATE
    if not state.is_file():
        return None
    saved = json.loads(state.read_text())
    if saved.get("config") != plan.fingerprint():
        log.warning("ignoring %s: made with other settings", state.parent)
        return None
    return {"step": int(saved["step"]), "losses": dict(saved.get("losses") or {})}


def generate_ifc(
    plan: GenerationPlan,
    gen_dir: Path | str,
    *,
    training_pool: Sequence[str],
    token_lengths: Sequence[int],
    normalisation: Normalisation,
    load_model: Callable[[Path | None], tuple],
    progress: bool = True,
) -> list[int]:
    """Make every missing g_0..g_T in ``gen_dir``; returns the iterations generated now.

    ``load_model(path)`` gives (model, tokenizer): the base model for None, else saved weights.
    """
    gen_dir = make_dirs(gen_dir, "the IFC corpora")
    remove_stale_temporaries(gen_dir)  # e.g. half a checkpoint of a run that was killed while saving it
    done = set(finished_iterations(gen_dir, plan))
    todo = [i for i in range(plan.iterations + 1) if i not in done]
    if todo:
        log.info("IFC: generating g_%s in %s (found %d on disk)", todo, gen_dir, len(done))
    return_freed_memory()  # what loading the libraries and the corpora left free: ~30 MiB off every step's peak
    model = tokenizer = None
    saved = _checkpoint_state(gen_dir, plan)
    saved_step = saved["step"] if saved else None
    losses: dict[str, float] = saved["losses"] if saved else {}  # training loss of each step, by step
    step = saved_step
    training: dict[str, dict] = {}  # tokens and padding of each step trained by this run
    bar = progress_bar(len(todo), desc="IFC iterations", unit="corpus", enabled=progress)
    for i in todo:
        train_seconds = 0.0
        # (re)start from the nearest state not past step i: the saved weights when they are ahead of the model in
        # memory (loading them is faster than replaying the steps between), else the base model
        behind_saved = model is not None and saved_step is not None and step < saved_step <= i
        if model is None or step > i or behind_saved:
            use_saved = saved_step is not None and saved_step <= i
            model, tokenizer = load_model(gen_dir / "checkpoint" if use_saved else None)
            adopt_library_loggers()
            step = saved_step if use_saved else 0
        while step < i:
            step += 1
            train_seed = _int_seed(plan.seed, step, TRAIN_STREAM)
            pick = np.random.default_rng(train_seed).choice(len(training_pool), plan.train_per_step, replace=False)
            trained = fine_tune_step(
                model,
                tokenizer,
                [training_pool[j] for j in pick],
                learning_rate=plan.learning_rate,
                batch_size=plan.train_batch_size,
                seed=train_seed,
                recompute_activations=plan.recompute_activations,
                progress=progress,
                desc=f"fine-tuning step {step}",
            )
            losses[str(step)] = trained.loss
            training[str(step)] = {
                "token_loss": trained.token_loss,
                "tokens": trained.tokens,
                "positions": trained.positions,
                "padding_share": round(trained.padding_share, 4),
            }
            train_seconds += trained.seconds
            if saved_step is None or step > saved_step:
                record = {
                    "step": step,
                    "config": plan.fingerprint(),
                    "losses": {s: v for s, v in losses.items() if int(s) <= step},
                }
                save_causal_lm(
                    model,
                    tokenizer,
                    gen_dir / "checkpoint",
                    what=f"the IFC weights after step {step}",
                    extra={CHECKPOINT_STATE: json.dumps(record, indent=2)},
                )
                saved_step = step
        # g_i comes from the weights after step i: trained now, or saved by an earlier run
        train_seed = _int_seed(plan.seed, i, TRAIN_STREAM) if i > 0 else None
        loss = losses.get(str(i)) if i > 0 else None
        sample_seed = _int_seed(plan.seed, i, SAMPLE_STREAM)
        start = time.perf_counter()
        texts, stats = sample_corpus(
            model,
            tokenizer,
            plan.corpus_size,
            token_lengths=token_lengths,
            top_p=plan.top_p,
            temperature=plan.temperature,
            batch_size=plan.sample_batch_size,
            seed=sample_seed,
            normalisation=normalisation,
            length_quantile=plan.length_quantile,
            max_rounds=plan.max_sample_rounds,
            progress=progress,
            desc=f"sampling g_{i}",
        )
        meta = {
            "iteration": i,
            "texts": len(texts),
            "sample_seed": sample_seed,
            "train_seed": train_seed,
            "train_loss": loss,
            "training": training.get(str(i)),
            "seconds": {"train": round(train_seconds, 2), "sample": round(time.perf_counter() - start, 2)},
            **stats,
            "config": plan.fingerprint(),
        }
        _save_corpus(gen_dir, i, texts, meta)
        log.info("IFC: g_%d has %d texts (loss %s)", i, len(texts), loss)
        bar.update()
    bar.close()
    model = tokenizer = None
    return_freed_memory()  # scoring comes next, in worker processes of its own
    return todo
