"""Generating Increasingly Fine-tuned Corpora (004 §5): fine-tune a causal LM on the source step by step
and sample a corpus g_i after each step.

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
timings); the weights after the furthest step are kept in ``checkpoint/``. A re-run skips every
g_i on disk and re-derives a model state it lacks by replaying the seeded steps.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from tqdm.auto import tqdm

from bench.cards import Normalisation
from bench.config import repetition_seed
from bench.corpora import normalise_texts
from bench.errors import ConfigError
from bench.lm import padded_batch, save_causal_lm, text_token_ids

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

    def fingerprint(self) -> dict:
        """The settings a saved g_i must share with this plan to be reused."""
        return {k: v for k, v in asdict(self).items() if k != "iterations"}


def _int_seed(seed: int, index: int, stream: int) -> int:
    return int(repetition_seed(seed, index, stream).generate_state(1)[0])


def fine_tune_step(model, tokenizer, texts: Sequence[str], *, learning_rate: float, batch_size: int,
                   seed: int, max_tokens: int = 256, progress: bool = True, desc: str = "fine-tuning") -> float:
    """One epoch of causal-LM training over ``texts`` (each ``BOS text EOS``); returns the mean loss."""
    import torch

    torch.manual_seed(seed)
    order = np.random.default_rng(seed).permutation(len(texts))
    seqs = [text_token_ids(tokenizer, texts[i], add_eos=True)[:max_tokens] for i in order]
    device = next(model.parameters()).device
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    model.train()
    losses = []
    bar = tqdm(total=len(seqs), desc=desc, unit="text", disable=not progress, leave=False)
    for start in range(0, len(seqs), batch_size):
        ids, mask, labels = padded_batch(seqs[start:start + batch_size], tokenizer.pad_token_id)
        loss = model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        optimiser.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
        bar.update(len(ids))
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
    bar.close()
    model.eval()
    return float(np.mean(losses)) if losses else float("nan")


def sample_corpus(model, tokenizer, n: int, *, token_lengths: Sequence[int], top_p: float, temperature: float,
                  batch_size: int, seed: int, normalisation: Normalisation, length_quantile: float = 0.99,
                  max_rounds: int = 4, progress: bool = True, desc: str = "sampling") -> tuple[list[str], dict]:
    """``n`` distinct normalised texts sampled from BOS by nucleus sampling, lengths like the source's.

    Returns (texts, statistics). Stops with fewer texts (and a warning) once ``max_rounds * n``
    samples were drawn, e.g. when a collapsed model keeps repeating itself.
    """
    import torch

    lengths = np.asarray(token_lengths, dtype=int)
    cap = max(1, int(np.ceil(np.quantile(lengths, length_quantile))))
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    device = next(model.parameters()).device
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    eos = tokenizer.eos_token_id
    kept: dict[str, None] = {}
    drawn = cut = 0
    bar = tqdm(total=n, desc=desc, unit="text", disable=not progress, leave=False)
    while len(kept) < n and drawn < max_rounds * n:
        size = min(batch_size, n - len(kept), max_rounds * n - drawn)
        prompt = torch.full((size, 1), bos, dtype=torch.long, device=device)
        with torch.no_grad():
            out = model.generate(
                input_ids=prompt, attention_mask=torch.ones_like(prompt), do_sample=True, top_p=top_p,
                top_k=0, temperature=temperature, max_new_tokens=cap + 1, pad_token_id=tokenizer.pad_token_id,
                eos_token_id=eos,
            )[:, 1:].cpu().tolist()
        raw = []
        for row in out:
            if eos in row:
                row = row[:row.index(eos)]
            else:  # no EOS within the cap: cut to a source-like length
                row = row[:int(rng.choice(lengths))]
                cut += 1
            raw.append(tokenizer.decode(row, skip_special_tokens=True))
        drawn += size
        before = len(kept)
        for text in normalise_texts(raw, normalisation):
            if len(kept) < n:
                kept.setdefault(text, None)
        bar.update(len(kept) - before)
    bar.close()
    if len(kept) < n:
        log.warning("sampling gave only %d distinct texts of %d after %d draws", len(kept), n, drawn)
    return list(kept), {"drawn": drawn, "cut_without_eos": cut, "max_new_tokens": cap + 1}


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


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _save_corpus(gen_dir: Path, i: int, texts: list[str], meta: dict) -> None:
    _write_atomic(corpus_file(gen_dir, i), "".join(json.dumps({"text": t}) + "\n" for t in texts))
    _write_atomic(gen_dir / f"iter_{i}.json", json.dumps(meta, indent=2))


def _checkpoint_step(gen_dir: Path, plan: GenerationPlan) -> int | None:
    """The fine-tuning step of the saved weights, if they were made by this plan."""
    state = gen_dir / "checkpoint" / "ifc_step.json"
    if not state.is_file():
        return None
    saved = json.loads(state.read_text())
    if saved.get("config") != plan.fingerprint():
        log.warning("ignoring %s: made with other settings", state.parent)
        return None
    return int(saved["step"])


def generate_ifc(plan: GenerationPlan, gen_dir: Path | str, *, training_pool: Sequence[str],
                 token_lengths: Sequence[int], normalisation: Normalisation,
                 load_model: Callable[[Path | None], tuple], progress: bool = True) -> list[int]:
    """Make every missing g_0..g_T in ``gen_dir``; returns the iterations generated now.

    ``load_model(path)`` gives (model, tokenizer): the base model for None, else saved weights.
    """
    gen_dir = Path(gen_dir)
    gen_dir.mkdir(parents=True, exist_ok=True)
    done = set(finished_iterations(gen_dir, plan))
    todo = [i for i in range(plan.iterations + 1) if i not in done]
    if todo:
        log.info("IFC: generating g_%s in %s (found %d on disk)", todo, gen_dir, len(done))
    model = tokenizer = None
    step = saved_step = _checkpoint_step(gen_dir, plan)
    bar = tqdm(total=len(todo), desc="IFC iterations", unit="corpus", disable=not progress)
    for i in todo:
        loss, train_seconds, train_seed = None, 0.0, None
        if model is None or step > i:  # (re)start from the nearest saved state not past step i
            use_saved = saved_step is not None and saved_step <= i
            model, tokenizer = load_model(gen_dir / "checkpoint" if use_saved else None)
            step = saved_step if use_saved else 0
        while step < i:
            step += 1
            train_seed = _int_seed(plan.seed, step, TRAIN_STREAM)
            pick = np.random.default_rng(train_seed).choice(len(training_pool), plan.train_per_step, replace=False)
            start = time.perf_counter()
            loss = fine_tune_step(model, tokenizer, [training_pool[j] for j in pick],
                                  learning_rate=plan.learning_rate, batch_size=plan.train_batch_size,
                                  seed=train_seed, progress=progress, desc=f"fine-tuning step {step}")
            train_seconds += time.perf_counter() - start
            if saved_step is None or step > saved_step:
                save_causal_lm(model, tokenizer, gen_dir / "checkpoint")
                _write_atomic(gen_dir / "checkpoint" / "ifc_step.json", json.dumps({"step": step, "config": plan.fingerprint()}))
                saved_step = step
        sample_seed = _int_seed(plan.seed, i, SAMPLE_STREAM)
        start = time.perf_counter()
        texts, stats = sample_corpus(
            model, tokenizer, plan.corpus_size, token_lengths=token_lengths, top_p=plan.top_p,
            temperature=plan.temperature, batch_size=plan.sample_batch_size, seed=sample_seed,
            normalisation=normalisation, length_quantile=plan.length_quantile,
            max_rounds=plan.max_sample_rounds, progress=progress, desc=f"sampling g_{i}")
        meta = {"iteration": i, "texts": len(texts), "sample_seed": sample_seed, "train_seed": train_seed,
                "train_loss": loss, "seconds": {"train": round(train_seconds, 2),
                                                "sample": round(time.perf_counter() - start, 2)},
                **stats, "config": plan.fingerprint()}
        _save_corpus(gen_dir, i, texts, meta)
        log.info("IFC: g_%d has %d texts (loss %s)", i, len(texts), loss)
        bar.update()
    bar.close()
    return todo
