"""Machine-written text: a corpus the harness's language model writes from a human corpus, for a card whose
origin kind is ``generated`` (docs/data.md, "Machine-written text").

Prompted continuation. The human texts in part ``select`` of the human corpus (by a hash of each text) are
the prompt pool; those longer than ``prompt_tokens`` tokens are taken in an order drawn from ``seed``. Each
row passes ``BOS`` and the first ``prompt_tokens`` tokens of its text (one length for all rows, so a batch
needs no padding) and is continued by nucleus sampling (``textmetric_bench.features.lm.sampling.sample_rows``)
until EOS or until it is as long as its own human text (at most ``max_new_tokens`` new tokens): the generated
corpus follows the human texts' token lengths. The generated text includes its prompt, so it begins as human
text does; the pair's human side must then be another part of the split (`prompts_held_out` checks pair cards).
Texts are normalised as the human card says; a continuation that is empty, repeats a text kept already or
equals a human text is dropped and the next prompts refill, up to ``MAX_ROUNDS`` rounds.

Cache. The texts are written once into ``<cache_dir>/generated/<card>/<key>.jsonl`` with ``<key>.json``
(settings, statistics), atomically and under a file lock, so two jobs never generate twice or see half a file;
the key digests everything that changes the texts (`generation_settings`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from textmetric_bench.features.lm.sampling import SAMPLER
from textmetric_bench.features.lm.training import BATCHING, EMBEDDING_GRADIENT, LOSS_HEAD, fine_tune_step
from textmetric_bench.collections.seeds import repetition_seed
from textmetric_bench.console import progress_bar
from textmetric_bench.data.card_schema import CorpusCard, GeneratedOrigin, Normalisation
from textmetric_bench.data.corpora import Generate, GeneratedTexts, Source, SourceFile, normalise_texts
from textmetric_bench.data.generated_origin import in_part
from textmetric_bench.errors import DataError
from textmetric_bench.features.lm.model import model_id
from textmetric_bench.features.lm.settings import LMConfig, LMSettings
from textmetric_bench.features.shard_cache import slug
from textmetric_bench.files import atomic_write, held_lock, make_dirs, remove_stale_temporaries

log = logging.getLogger(__name__)

#: How a generated corpus is written: a corpus written otherwise is not reused.
GENERATOR = "prompted-continuation/1"
#: Rounds of prompts (each as many as texts still missing) before giving up with fewer texts and a warning.
MAX_ROUNDS = 4
TRAIN_STREAM, PROMPT_STREAM = 5, 6  # seed streams beside KSC's (0, 1) and IFC's (3, 4)


def corpus_generator(lm_cfg: LMConfig, *, progress: bool = True) -> Generate:
    """The generator the data layer's loaders take (``generate=``): writes a generated card's texts with the
    language model of ``lm_cfg`` (the run's `lm` config, conf/lm/smollm2.yaml; the card's ``lm`` overrides keys)."""

    def generate(card: CorpusCard, human: Source, cache_dir: Path) -> GeneratedTexts:
        return generated_texts(card, human, cache_dir, lm_cfg=lm_cfg, progress=progress)

    return generate


def prompt_pool(origin: GeneratedOrigin, human: Source) -> list[str]:
    """The human texts in the part the card selects for prompts, in the human corpus's order."""
    return [t for t in human.texts if in_part(t, origin.select)]


def generation_settings(card: CorpusCard, human: Source, lm_cfg: LMConfig) -> dict:
    """Everything that changes a generated corpus's texts; its digest is the corpus's cache key."""
    origin = card.generated
    assert origin is not None
    settings = {
        "generator": GENERATOR,
        "sampler": SAMPLER,
        "torch": importlib.metadata.version("torch"),
        "model": model_id(model_config(origin, lm_cfg)),
        "options": asdict(origin),
        "human": {
            "name": human.name,
            "texts": len(human.texts),
            "normalise": asdict(human.normalise),
            "texts_sha256": hashlib.sha256(json.dumps(list(human.texts)).encode("utf-8")).hexdigest(),
            "files": [f.sha256 for f in human.files],
        },
    }
    if origin.fine_tune_steps:
        settings["fine_tuning"] = {
            "batching": BATCHING,
            "embedding_gradient": EMBEDDING_GRADIENT,
            "loss_head": LOSS_HEAD,
        }
    return settings


def model_config(origin: GeneratedOrigin, lm_cfg: LMConfig) -> LMSettings:
    """The run's `lm` settings with the card's ``lm`` keys over them (a card naming a package drops the path)."""
    changes: dict[str, Any] = dict(origin.lm)
    if "path" not in origin.lm and "package" in origin.lm:
        changes["path"] = None
    return LMSettings.of(lm_cfg).changed(**changes)


def generation_key(settings: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def generated_texts(
    card: CorpusCard, human: Source, cache_dir: Path, *, lm_cfg: LMConfig, progress: bool = True
) -> GeneratedTexts:
    """The texts of generated ``card``: read from the cache, else written once (one job at a time) and cached."""
    origin = card.generated
    assert origin is not None
    pool = prompt_pool(origin, human)
    if len(pool) < origin.texts:
        raise DataError(
            f"corpus {card.name!r} asks for {origin.texts} texts but part {origin.select.part} of "
            f"{origin.select.parts} of {human.name!r} holds {len(pool)} to prompt with; lower "
            f"origin.texts in {card.path}, or select a larger part (fewer parts)"
        )
    settings = generation_settings(card, human, lm_cfg)
    key = generation_key(settings)
    directory = make_dirs(Path(cache_dir) / "generated" / slug(card.name), f"the generated corpus {card.name}")
    texts_file, meta_file = directory / f"{key}.jsonl", directory / f"{key}.json"

    def written() -> bool:  # the record is written after the texts
        return meta_file.is_file() and texts_file.is_file()

    if not written():
        with held_lock(directory / f".{key}.lock", f"writing the generated corpus {card.name}"):
            if not written():  # another job wrote it while this one waited
                remove_stale_temporaries(directory)
                write_corpus(card, human, pool, settings, lm_cfg, Path(cache_dir), texts_file, meta_file, progress)
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    data = texts_file.read_bytes()
    texts = tuple(json.loads(line)["text"] for line in data.decode("utf-8").splitlines() if line.strip())
    record = {
        "key": key,
        "model": settings["model"],
        "options": settings["options"],
        "generator": GENERATOR,
        "sampler": settings["sampler"],
        "torch": settings["torch"],
        "human": {
            "card": human.card,
            "name": human.name,
            "texts_sha256": settings["human"]["texts_sha256"],
            "files": [{"path": f.path, "sha256": f.sha256} for f in human.files],
        },
        "statistics": meta["statistics"],
    }
    log.info(
        "corpus %s: %d texts written by %s from %s (%s)",
        card.name,
        len(texts),
        settings["model"],
        human.name,
        texts_file,
    )
    return GeneratedTexts(texts, SourceFile(str(texts_file), hashlib.sha256(data).hexdigest(), len(texts)), record)


def write_corpus(
    card: CorpusCard,
    human: Source,
    pool: list[str],
    settings: dict,
    lm_cfg: LMConfig,
    cache_dir: Path,
    texts_file: Path,
    meta_file: Path,
    progress: bool,
) -> None:
    """Load the model, fine-tune it if the card says so, write the continuations and their statistics."""
    import torch

    from textmetric_bench.features.embedding_process import close_helper
    from textmetric_bench.features.lm.model import generation_threads, load_causal_lm, return_freed_memory

    origin = card.generated
    assert origin is not None
    # A run on an empty cache starts the embedder's model loading in its helper process while the corpora are built
    # (`Embedder.warm_up_if_uncached`): beside the language model it would hold its ~800 MB for the minutes of
    # writing. End it; the first text to embed starts a new one.
    close_helper()
    lm = model_config(origin, lm_cfg)
    threads = torch.get_num_threads()
    start = time.perf_counter()
    model, tokenizer = load_causal_lm(lm.changed(threads=generation_threads(lm)), cache_dir)
    try:
        trained = fine_tune(model, tokenizer, origin, pool, progress) if origin.fine_tune_steps else []
        texts, stats = continuations(
            model,
            tokenizer,
            origin,
            pool,
            set(human.texts),
            human.normalise,
            progress=progress,
            desc=f"writing corpus {card.name!r}",
        )
    finally:
        model = tokenizer = None
        return_freed_memory()
        torch.set_num_threads(threads)
    if len(texts) < origin.texts:
        log.warning(
            "corpus %s: only %d distinct texts of %d after %d prompts",
            card.name,
            len(texts),
            origin.texts,
            stats["prompts"],
        )
    words = [len(t.split()) for t in texts]
    stats.update(
        texts=len(texts),
        seconds=round(time.perf_counter() - start, 1),
        fine_tuning=trained,
        median_words=float(np.median(words)) if words else 0.0,
    )
    atomic_write(
        texts_file, "".join(json.dumps({"text": t}) + "\n" for t in texts), what=f"the generated corpus {card.name}"
    )
    atomic_write(
        meta_file,
        json.dumps({"settings": settings, "statistics": stats}, indent=2),
        what=f"the record of the generated corpus {card.name}",
    )


def fine_tune(model, tokenizer, origin: GeneratedOrigin, pool: Sequence[str], progress: bool) -> list[dict]:
    """``fine_tune_steps`` epochs, each over ``train_per_step`` texts of the prompt pool drawn afresh (IFC's step)."""
    steps = []
    for step in range(1, origin.fine_tune_steps + 1):
        seed = int(repetition_seed(origin.seed, step, TRAIN_STREAM).generate_state(1)[0])
        pick = np.random.default_rng(seed).choice(len(pool), min(origin.train_per_step, len(pool)), replace=False)
        done = fine_tune_step(
            model,
            tokenizer,
            [pool[i] for i in pick],
            learning_rate=origin.learning_rate,
            batch_size=16,
            seed=seed,
            recompute_activations=True,
            progress=progress,
            desc=f"fine-tuning step {step}",
        )
        steps.append({"step": step, "loss": done.loss, "tokens": done.tokens, "seconds": round(done.seconds, 1)})
    return steps


def continuations(
    model,
    tokenizer,
    origin: GeneratedOrigin,
    pool: Sequence[str],
    human: set[str],
    normalisation: Normalisation,
    *,
    progress: bool = True,
    desc: str = "writing",
) -> tuple[list[str], dict]:
    """Up to ``origin.texts`` distinct normalised texts, each a pool text's first ``prompt_tokens`` tokens and their
    continuation (module docstring), in the order of their prompts; and what it took."""
    import torch

    from textmetric_bench.features.lm.model import text_token_ids
    from textmetric_bench.features.lm.sampling import sample_rows

    head = 1 if tokenizer.bos_token_id is not None else 0
    size = origin.prompt_tokens
    ids = [text_token_ids(tokenizer, text, add_eos=False) for text in pool]
    eligible = [i for i, seq in enumerate(ids) if len(seq) - head > size]
    if len(eligible) < origin.texts:
        raise DataError(
            f"{desc}: {len(eligible)} texts of the {len(pool)} in its prompt pool are longer than "
            f"origin.prompt_tokens={size} tokens, fewer than the {origin.texts} asked for; lower "
            f"origin.texts or origin.prompt_tokens, or select a larger part"
        )
    seed = int(repetition_seed(origin.seed, 0, PROMPT_STREAM).generate_state(1)[0])
    order = [eligible[j] for j in np.random.default_rng(seed).permutation(len(eligible))]
    generator = torch.Generator().manual_seed(seed)
    kept: dict[int, str] = {}
    taken = empty = repeated = cut = tokens = computed = 0
    bar = progress_bar(origin.texts, desc=desc, unit="text", enabled=progress, leave=False)
    for _ in range(MAX_ROUNDS):
        batch = order[taken : taken + origin.texts - len(kept)]
        if not batch:
            break
        taken += len(batch)
        limits = {i: min(len(ids[i]) - head - size, origin.max_new_tokens) for i in batch}
        rows = sorted(batch, key=lambda i: -limits[i])  # rows of like length share a batch
        sampled = sample_rows(
            model,
            n=len(rows),
            end_token=tokenizer.eos_token_id,
            max_new_tokens=origin.max_new_tokens,
            top_p=origin.top_p,
            temperature=origin.temperature,
            batch_size=origin.batch_size,
            generator=generator,
            prompts=[ids[i][: head + size] for i in rows],
            row_limits=[limits[i] for i in rows],
        )
        computed += sampled.computed_tokens
        before = len(kept)
        for i, new, ended in zip(rows, sampled.tokens, sampled.ended):
            tokens += len(new) + ended
            cut += not ended
            text = normalise_texts(
                [tokenizer.decode(ids[i][head : head + size] + new, skip_special_tokens=True)], normalisation
            )
            if not new or not text:
                empty += 1
            elif text[0] in human or text[0] in kept.values():
                repeated += 1
            else:
                kept[i] = text[0]
        bar.update(len(kept) - before)
        if len(kept) == origin.texts:
            break
    bar.close()
    position = {i: j for j, i in enumerate(order)}
    texts = [kept[i] for i in sorted(kept, key=position.__getitem__)]
    return texts, {
        "prompts": taken,
        "empty": empty,
        "repeated": repeated,
        "ended_without_eos": cut,
        "sampled_tokens": tokens,
        "computed_tokens": computed,
        "device": str(next(model.parameters()).device),
        "threads": torch.get_num_threads(),
    }
