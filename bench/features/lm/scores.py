"""Per-text scores from the run's causal LM, batched and cached like embeddings.

Metrics that read a language model (FACE's cross-entropy spectra, the infilling score) ask
the ``LMScorer`` of the current run context (``textmetric_bench.api.context``) for per-text arrays. Each
kind of score lives in its own shard cache under ``<cache_dir>/lm_scores/<model + device + kind>/``,
keyed by the text, so a run scores every distinct text once, later runs and parallel jobs
reuse it, and a KSC run costs one LM pass over its texts, not one per pair. Sequences are
sorted by length before batching, so padding is small.

The LM pass is per-text preparation, charged to every evaluation that uses it (T, 004 §4.4;
``textmetric_bench.api.sharing``): each shard records the seconds its texts took to score (model loading
left out), and an evaluation that reads scores from the cache is charged the cache's mean seconds
per text for each distinct text it reads, once per evaluation. A cache written before shards
recorded their cost charges nothing for those texts: their cost is unknown.

Scoring uses every core (``lm.workers``, ``textmetric_bench.features.lm.workers``): the batches go to
worker processes when there are at least two, else are scored in this process; the scores do
not depend on the number of workers. The seconds a shard records are the summed seconds of its
batches, what one core would take, so T does not depend on the number of workers either.
A progress bar (textmetric_bench.console) shows the texts scored per second (the run's ``progress`` option).
"""

from __future__ import annotations

import atexit
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from textmetric_bench.console import adopt_library_loggers, progress_bar
from textmetric_bench.api.context import RunContext, current_context
from textmetric_bench.api.sharing import charge
from textmetric_bench.features.embedding import model_files_digest
from textmetric_bench.features.lm.model import (
    checkpoint_path,
    continuation_sequences,
    length_batches,
    load_tokenizer,
    model_id,
    text_sequences,
)
from textmetric_bench.features.lm.ct2 import (
    converted_ctranslate2,
    engine_id,
    lm_engine,
    load_scoring_lm,
    scoring_device,
)
from textmetric_bench.features.lm.workers import Batch, LMWorkers, resolve_workers, score_batch
from textmetric_bench.features.lm.settings import LMSettings
from textmetric_bench.features.shard_cache import RaggedCache, slug, text_key

_scorers: dict[tuple, "LMScorer"] = {}
CHUNK = 512  # texts scored between two cache writes


def scorer(context: RunContext | None = None) -> "LMScorer":
    """The (process-wide, lazily loaded) scorer of ``context``, by default the current one."""
    context = context or current_context()
    key = scorer_key(context)
    if key not in _scorers:
        _scorers[key] = LMScorer(context)
    return _scorers[key]


def scorer_key(context: RunContext) -> tuple:
    """Which contexts share a scorer: the same cache, weights and engine (``lm.engine``)."""
    return context.cache_dir, model_id(context.lm), lm_engine(context.lm)


class TextProgress:
    """A tqdm bar over texts, moved within a chunk of texts as the chunk's sequences are scored."""

    def __init__(self, bar=None):
        self.bar = bar
        self.base = self.texts = self.sequences = self.scored = 0

    def chunk(self, n_texts: int) -> None:
        if self.bar is not None:
            self.bar.update(self.base + self.texts - self.bar.n)  # the previous chunk, all done
            self.base, self.texts, self.sequences, self.scored = self.bar.n, n_texts, 0, 0

    def expect(self, n_sequences: int) -> None:
        self.sequences, self.scored = n_sequences, 0

    def advance(self, n_sequences: int) -> None:
        self.scored += n_sequences
        if self.bar is not None and self.sequences:
            target = self.base + self.texts * min(self.scored, self.sequences) // self.sequences
            if target > self.bar.n:
                self.bar.update(target - self.bar.n)


class LMScorer:
    """The context's LM (loaded on first use, here or in worker processes) and the caches of what it has scored."""

    def __init__(self, context: RunContext):
        self.context = context
        self.lm = LMSettings.of(context.lm)  # the public context carries a mapping; read once here
        self.model_id = model_id(self.lm)
        self.batch_size = self.lm.batch_size
        self.workers = resolve_workers(self.lm)
        self.progress = self.lm.shows_progress  # textmetric_bench.console decides "auto"
        self._model = None
        self._tokenizer = None
        self._pool: LMWorkers | None = None
        self._caches: dict[str, RaggedCache] = {}
        self._tracker = TextProgress()
        self.scored = 0  # texts computed (not served from the cache) by this process
        self.cpu_seconds = 0.0  # CPU seconds of the batches scored for this process, here or in workers
        self._not_scoring = 0.0  # seconds the scoring clock leaves out (module note)

    def _loaded(self):
        if self._model is None:
            start = time.perf_counter()
            self._model = load_scoring_lm(self.lm, self.context.cache_dir)
            adopt_library_loggers()  # transformers, imported by the load, prints through its own handler
            self._not_scoring += time.perf_counter() - start
        return self._model

    def _workers(self) -> LMWorkers:
        if self._pool is None:
            start = time.perf_counter()
            checkpoint_path(self.lm, self.context.cache_dir)  # convert once here, not in every worker
            if lm_engine(self.lm) == "ctranslate2":
                converted_ctranslate2(self.lm, self.context.cache_dir)
            self._pool = LMWorkers(self.lm, self.context.cache_dir, self.workers)
            atexit.register(self.close)
            self._not_scoring += time.perf_counter() - start  # a first run's conversions are not the texts' cost
        return self._pool

    def close(self) -> None:
        """Stop the worker processes, if any were started (they start again when needed)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.close()

    def _scoring_clock(self) -> float:
        """Single-core scoring seconds: wall time without model loading, batches counted at their own seconds."""
        return time.perf_counter() - self._not_scoring

    def _scores_id(self) -> str:
        """The model id, its files when it is a local directory, the device and the engine (with its version,
        ``lm.engine``): what the scores depend on. Torch's key is the one it had before engines existed."""
        lm, ident = self.lm, self.model_id
        if lm.path and Path(lm.path).expanduser().is_dir():
            ident += f"+files.{model_files_digest(Path(lm.path).expanduser(), mtimes=True)}"
        engine = engine_id(lm)
        return f"{ident}|{scoring_device(lm)}" + (f"|{engine}" if engine != "torch" else "")

    def cache(self, kind: str) -> RaggedCache:
        if kind not in self._caches:
            folder = Path(self.context.cache_dir) / "lm_scores" / slug(f"{self._scores_id()}|{kind}")
            self._caches[kind] = RaggedCache(folder)
        return self._caches[kind]

    def cached(
        self, kind: str, texts: Sequence[str], compute: Callable[[list[str]], list[np.ndarray]]
    ) -> list[np.ndarray]:
        """``compute(texts)`` per text, cached under ``kind`` (which must name every setting of it).

        Missing texts are scored shortest first, a shard per chunk (``textmetric_bench.features.shard_cache``): an
        interrupted pass keeps its work, and parallel jobs score each text once between them. Within
        an evaluation, each text's scoring cost is charged to it (module note).
        """
        texts = list(texts)
        keys = [text_key(t) for t in texts]
        by_length = sorted(dict(zip(keys, texts)).items(), key=lambda kt: len(kt[1]))
        scored_here: dict[str, float] = {}  # key -> seconds, for the texts this call computes

        def compute_counted(batch: list[str]) -> list[np.ndarray]:
            self._tracker.chunk(len(batch))
            start = self._scoring_clock()
            values = compute(batch)
            each = (self._scoring_clock() - start) / max(len(batch), 1)
            scored_here.update((text_key(t), each) for t in batch)
            self.scored += len(batch)
            return values

        cache = self.cache(kind)
        label = f"LM scores {kind.split('|')[0]}"
        missing = len(by_length) - len(cache.get([k for k, _ in by_length]))
        with progress_bar(
            missing, desc=label, unit="text", enabled=bool(self.progress and missing), leave=False
        ) as bar:
            self._tracker = TextProgress(bar)
            try:
                found = cache.get_or_compute(
                    [k for k, _ in by_length],
                    [t for _, t in by_length],
                    compute_counted,
                    chunk=CHUNK,
                    label=label,
                    clock=self._scoring_clock,
                )
                self._tracker.chunk(0)  # the last chunk, all done
            finally:
                self._tracker = TextProgress()
        served = [k for k, _ in by_length if k not in scored_here]
        per_text = (cache.seconds_per_value() or 0.0) if served else 0.0  # None: an older cache, cost unknown
        for key in served:
            charge(("lm_scores", cache.dir.name, key), per_text)
        for key, seconds in scored_here.items():
            charge(("lm_scores", cache.dir.name, key), seconds, done_here=True)
        return [found[k] for k in keys]

    def sequence_logprobs(self, seqs: Sequence[Sequence[int]], starts: Sequence[int]) -> list[np.ndarray]:
        """``textmetric_bench.features.lm.model.sequence_logprobs`` on every core: the same batches, in worker processes
        when there are at least two of them and ``lm.workers`` > 1."""
        rows = length_batches(seqs, self.batch_size)
        batches: list[Batch] = [([list(seqs[i]) for i in r], [int(starts[i]) for i in r]) for r in rows]
        self._tracker.expect(len(seqs))
        if self.workers > 1 and len(batches) > 1:
            pool = self._workers()
            wall = time.perf_counter()
            scored = pool.map(batches, self._tracker.advance)
        else:
            model = self._loaded()
            wall = time.perf_counter()
            scored = []
            for batch in batches:
                scored.append(score_batch(model, *batch))
                self._tracker.advance(len(batch[0]))
        self._not_scoring += time.perf_counter() - wall - sum(seconds for _, seconds, _ in scored)
        self.cpu_seconds += sum(cpu for _, _, cpu in scored)
        out: list[np.ndarray | None] = [None] * len(seqs)
        for r, (values, _, _) in zip(rows, scored):
            for i, v in zip(r, values):
                out[i] = v
        return out  # type: ignore[return-value]

    def token_logprobs(self, texts: Sequence[str], *, max_tokens: int = 256) -> list[np.ndarray]:
        """log p(token_t | BOS, tokens_<t) of each text's first ``max_tokens`` tokens (cached)."""

        def compute(batch: list[str]) -> list[np.ndarray]:
            seqs = text_sequences(self.tokenizer(), batch, max_tokens=max_tokens)
            return self.sequence_logprobs(seqs, [1] * len(seqs))

        return self.cached(f"token_logprobs|max_tokens={max_tokens}", texts, compute)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Each text's number of LM tokens, without BOS and EOS: what ``token_logprobs``' ``max_tokens`` counts."""
        tokenizer = self.tokenizer()
        head = 1 if tokenizer.bos_token_id is not None else 0
        return [len(ids) - head for ids in text_sequences(tokenizer, list(texts))]

    def continuation_logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> np.ndarray:
        """log P(continuation | prompt) for each pair, summed over the continuation's tokens (not cached)."""
        seqs, starts = continuation_sequences(self.tokenizer(), prompts, continuations)
        return np.array([lp.sum() for lp in self.sequence_logprobs(seqs, starts)])

    def tokenizer(self):
        """The LM's tokenizer (loaded alone when the model itself runs in worker processes)."""
        if self._model is not None:
            return self._model[1]
        if self._tokenizer is None:
            start = time.perf_counter()
            self._tokenizer = load_tokenizer(self.lm, self.context.cache_dir)
            self._not_scoring += time.perf_counter() - start
        return self._tokenizer
