"""Per-text scores from the run's causal LM, batched and cached like embeddings.

Metrics that read a language model (FACE's cross-entropy spectra, the infilling score) ask
the ``LMScorer`` of the current run context (``bench.api.context``) for per-text arrays. Each
kind of score lives in its own shard cache under ``<cache_dir>/lm_scores/<model + device + kind>/``,
keyed by the text, so a run scores every distinct text once, later runs and parallel jobs
reuse it, and a KSC run costs one LM pass over its texts, not one per pair. Sequences are
sorted by length before batching, so padding is small.

The LM pass is per-text preparation, charged to every evaluation that uses it (T, 004 §4.4;
``bench.api.sharing``): each shard records the seconds its texts took to score (model loading
left out), and an evaluation that reads scores from the cache is charged the cache's mean seconds
per text for each distinct text it reads, once per evaluation. A cache written before shards
recorded their cost charges nothing for those texts: their cost is unknown.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bench.api.context import RunContext, current_context
from bench.api.sharing import charge
from bench.features.embedding import model_files_digest, resolve_device
from bench.features.lm import load_causal_lm, model_id, sequence_logprobs, token_logprobs
from bench.features.shard_cache import RaggedCache, slug, text_key

_scorers: dict[tuple, "LMScorer"] = {}
CHUNK = 512  # texts scored between two cache writes


def scorer(context: RunContext | None = None) -> "LMScorer":
    """The (process-wide, lazily loaded) scorer of ``context``, by default the current one."""
    context = context or current_context()
    key = (context.cache_dir, model_id(context.lm))
    if key not in _scorers:
        _scorers[key] = LMScorer(context)
    return _scorers[key]


class LMScorer:
    """The context's LM (loaded on first use) and the caches of what it has scored."""

    def __init__(self, context: RunContext):
        self.context = context
        self.model_id = model_id(context.lm)
        self.batch_size = int(context.lm.get("batch_size") or 16)
        self._model = None
        self._caches: dict[str, RaggedCache] = {}
        self.scored = 0  # texts computed (not served from the cache) by this process
        self._loading_seconds = 0.0

    def _loaded(self):
        if self._model is None:
            start = time.perf_counter()
            self._model = load_causal_lm(self.context.lm, self.context.cache_dir)
            self._loading_seconds += time.perf_counter() - start
        return self._model

    def _scoring_clock(self) -> float:
        """A clock that stops while the model loads, a one-time cost not charged per text."""
        return time.perf_counter() - self._loading_seconds

    def _scores_id(self) -> str:
        """The model id, its files when it is a local directory, and the device: what the scores depend on."""
        lm, ident = self.context.lm, self.model_id
        if lm.get("path") and Path(str(lm["path"])).expanduser().is_dir():
            ident += f"+files.{model_files_digest(Path(str(lm['path'])).expanduser(), mtimes=True)}"
        return f"{ident}|{resolve_device(str(lm.get('device') or 'auto')).split(':')[0]}"

    def cache(self, kind: str) -> RaggedCache:
        if kind not in self._caches:
            folder = Path(self.context.cache_dir) / "lm_scores" / slug(f"{self._scores_id()}|{kind}")
            self._caches[kind] = RaggedCache(folder)
        return self._caches[kind]

    def cached(self, kind: str, texts: Sequence[str],
               compute: Callable[[list[str]], list[np.ndarray]]) -> list[np.ndarray]:
        """``compute(texts)`` per text, cached under ``kind`` (which must name every setting of it).

        Missing texts are scored shortest first, a shard per chunk (``bench.features.shard_cache``): an
        interrupted pass keeps its work, and parallel jobs score each text once between them. Within
        an evaluation, each text's scoring cost is charged to it (module note).
        """
        texts = list(texts)
        keys = [text_key(t) for t in texts]
        by_length = sorted(dict(zip(keys, texts)).items(), key=lambda kt: len(kt[1]))
        scored_here: dict[str, float] = {}  # key -> seconds, for the texts this call computes

        def compute_counted(batch: list[str]) -> list[np.ndarray]:
            start = self._scoring_clock()
            values = compute(batch)
            each = (self._scoring_clock() - start) / max(len(batch), 1)
            scored_here.update((text_key(t), each) for t in batch)
            self.scored += len(batch)
            return values

        cache = self.cache(kind)
        found = cache.get_or_compute([k for k, _ in by_length], [t for _, t in by_length],
                                     compute_counted, chunk=CHUNK, label=f"LM scores {kind.split('|')[0]}",
                                     clock=self._scoring_clock)
        served = [k for k, _ in by_length if k not in scored_here]
        per_text = (cache.seconds_per_value() or 0.0) if served else 0.0  # None: an older cache, cost unknown
        for key in served:
            charge(("lm_scores", cache.dir.name, key), per_text)
        for key, seconds in scored_here.items():
            charge(("lm_scores", cache.dir.name, key), seconds, done_here=True)
        return [found[k] for k in keys]

    def token_logprobs(self, texts: Sequence[str], *, max_tokens: int = 256) -> list[np.ndarray]:
        """log p(token_t | BOS, tokens_<t) of each text's first ``max_tokens`` tokens (cached)."""
        def compute(batch: list[str]) -> list[np.ndarray]:
            model, tok = self._loaded()
            return token_logprobs(model, tok, batch, self.batch_size, max_tokens=max_tokens)

        return self.cached(f"token_logprobs|max_tokens={max_tokens}", texts, compute)

    def continuation_logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> np.ndarray:
        """log P(continuation | prompt) for each pair, summed over the continuation's tokens (not cached)."""
        model, tok = self._loaded()
        head = [tok.bos_token_id] if tok.bos_token_id is not None else []
        seqs, starts = [], []
        for prompt, continuation in zip(prompts, continuations, strict=True):
            context = head + tok(prompt, add_special_tokens=False)["input_ids"]
            seqs.append(context + tok(continuation, add_special_tokens=False)["input_ids"])
            starts.append(len(context))
        return np.array([lp.sum() for lp in sequence_logprobs(model, tok, seqs, starts, self.batch_size)])
