"""Texts longer than what a model reads: counting them, and embedding them whole as windows.

A sentence-transformers model reads at most ``max_seq_length`` word pieces ([CLS] and [SEP] included; 256 for
all-MiniLM-L6-v2) and cuts a longer text there. ``embedder.long_texts=truncate`` keeps that cut; ``windows``
embeds a longer text as consecutive windows of that length, each through the model's own modules in batches of
one token length (as ``embedding_process.encode_by_length`` does for whole texts, so each window is bit-reproducible),
and pools them the way the model pools tokens: the mean over every window's token embeddings, that is the
windows' mean-pooled vectors weighted by their token counts, then the model's modules after its pooling (its
L2 ``Normalize``). A text within the window takes the model's ordinary path in both modes, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

#: The values of ``embedder.long_texts``.
LONG_TEXT_MODES = ("truncate", "windows")


@dataclass(frozen=True)
class LengthLimit:
    """What a model or a metric reads of a text: at most ``limit`` ``unit``s; ``done``: what a longer text gets."""

    limit: int | None
    unit: str
    done: str
    cuts: bool = True  # a longer text loses its end (not: it is read whole in parts)

    def record(self, lengths: Sequence[int]) -> dict:
        """How many of the texts of ``lengths`` (in ``unit``s) exceed the limit, their share and the longest."""
        over = sum(n > self.limit for n in lengths) if self.limit is not None else None
        return {
            "texts": len(lengths),
            "over_limit": over,
            "share": round(over / len(lengths), 4) if over is not None and lengths else None,
            "longest": max(lengths, default=0) if self.limit is not None else None,
        }


def window_limit(window: int | None, mode: str) -> LengthLimit:
    """An embedder's window and what ``mode`` gives a longer text, as the run records it."""
    unit = "word pieces ([CLS] and [SEP] included)"
    if window is None:
        return LengthLimit(None, unit, "not known: this embedder states no window", cuts=False)
    if mode == "windows":
        return LengthLimit(
            window,
            unit,
            f"embedded whole as consecutive windows of {window} word pieces, mean-pooled "
            "over all their tokens and normalised (embedder.long_texts=windows)",
            cuts=False,
        )
    return LengthLimit(
        window,
        unit,
        f"cut to its first {window} word pieces; the rest is not embedded "
        "(embedder.long_texts=truncate; `windows` embeds it whole)",
    )


def windows_tag(window: int | None) -> str:
    """What names windows mode in a cache key and in the embedder id of a run that windowed texts."""
    return f"|long-texts=windows/{window}"


def read_window(model_dir: Path | str) -> int | None:
    """The model's ``max_seq_length`` as sentence-transformers sets it (``sentence_bert_config.json``), without
    loading the model; None when the directory does not say (a loaded model's own value is checked against it)."""
    import json

    config = Path(model_dir) / "sentence_bert_config.json"
    if not config.is_file():
        return None
    value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
    return int(value) if value is not None else None


def word_piece_tokenizer(model_dir: Path | str):
    """The model's fast tokenizer (``tokenizers.Tokenizer``) with no truncation and no padding: the word pieces
    of a whole text, special tokens included, the same ids the model's own tokenizer gives (tested)."""
    from tokenizers import Tokenizer

    path = Path(model_dir) / "tokenizer.json"
    if path.is_file():
        tokenizer = Tokenizer.from_file(str(path))
    else:  # a model saved without tokenizer.json: its fast tokenizer's backend (transformers builds it)
        from transformers import AutoTokenizer

        tokenizer = Tokenizer.from_str(AutoTokenizer.from_pretrained(str(model_dir)).backend_tokenizer.to_str())
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def token_counter(tokenizer) -> Callable[[Sequence[str]], list[int]]:
    """``count(texts)``: each text's number of word pieces, special tokens included."""

    def count(texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in tokenizer.encode_batch(list(texts))] if texts else []

    return count


def split_windows(ids: Sequence[int], window: int) -> list[list[int]]:
    """A text's ids ([CLS] ... [SEP]) as consecutive windows of at most ``window`` ids, each wrapped in the
    text's own first and last special tokens; a text within the window is one window, itself."""
    if len(ids) <= window:
        return [list(ids)]
    first, body, last = ids[0], ids[1:-1], ids[-1]
    step = window - 2
    return [[first, *body[start : start + step], last] for start in range(0, len(body), step)]


def pool_windows(pooled: np.ndarray, counts: Sequence[int]) -> np.ndarray:
    """The token-count-weighted mean of windows' mean-pooled vectors: the mean over all their tokens.

    In float64, elementwise in a fixed order (each step IEEE-rounded, so the same bits on any CPU), then float32.
    """
    weights = np.asarray(counts, dtype=np.float64)
    total = np.zeros(pooled.shape[1], dtype=np.float64)
    for vector, weight in zip(pooled.astype(np.float64), weights):
        total += weight * vector
    return (total / weights.sum()).astype(np.float32)


def pooling_split(model) -> tuple[list, list]:
    """The model's modules up to and including its pooling, and those after (its ``Normalize``)."""
    modules = list(model)
    names = [type(m).__name__ for m in modules]
    if "Pooling" not in names:
        raise TypeError(
            f"no Pooling module among {names}: embedder.long_texts=windows pools windows as the model's Pooling does"
        )
    cut = names.index("Pooling") + 1
    return modules[:cut], modules[cut:]


def encode_windowing_long(
    model,
    tokenizer,
    texts: Sequence[str],
    *,
    window: int,
    batch_size: int,
    encode_whole: Callable[[list[str]], np.ndarray],
) -> np.ndarray:
    """Vectors of ``texts``: those within the window by ``encode_whole`` (the model's own path), the longer ones
    by ``encode_windows``."""
    lengths = [len(e.ids) for e in tokenizer.encode_batch(list(texts))]
    short = [i for i, n in enumerate(lengths) if n <= window]
    long = [i for i, n in enumerate(lengths) if n > window]
    parts = [
        (short, encode_whole([texts[i] for i in short])),
        (long, encode_windows(model, tokenizer, [texts[i] for i in long], window=window, batch_size=batch_size)),
    ]
    vectors = np.empty((len(texts), max(v.shape[1] for _, v in parts)), dtype=np.float32)
    for rows, part in parts:
        if rows:
            vectors[rows] = part
    return vectors


def encode_windows(model, tokenizer, texts: Sequence[str], *, window: int, batch_size: int) -> np.ndarray:
    """Vectors of long ``texts``, each from its windows (``split_windows``) pooled (``pool_windows``) and passed
    through the model's modules after its pooling. Windows are embedded in batches of one token length."""
    import torch

    head, tail = pooling_split(model)
    windows: list[list[int]] = []
    owned: list[list[int]] = []  # per text, the indices of its windows
    for encoding in tokenizer.encode_batch(list(texts)):
        split = split_windows(encoding.ids, window)
        owned.append(list(range(len(windows), len(windows) + len(split))))
        windows.extend(split)
    template = model.preprocess(["x"]) if hasattr(model, "preprocess") else model.tokenize(["x"])
    by_length: dict[int, list[int]] = {}
    for index, ids in enumerate(windows):
        by_length.setdefault(len(ids), []).append(index)
    pooled: np.ndarray | None = None
    device = model.device
    with torch.inference_mode():
        for indices in by_length.values():
            for start in range(0, len(indices), batch_size):
                chunk = indices[start : start + batch_size]
                features = window_features(template, [windows[i] for i in chunk], device)
                for module in head:
                    features = module(features)
                vectors = features["sentence_embedding"].float().cpu().numpy()
                if pooled is None:
                    pooled = np.empty((len(windows), vectors.shape[1]), dtype=np.float32)
                pooled[chunk] = vectors
    out = []
    for mine in owned:
        mean = torch.from_numpy(pool_windows(pooled[mine], [len(windows[i]) for i in mine])[None, :]).to(device)
        features = {"sentence_embedding": mean}
        with torch.inference_mode():
            for module in tail:
                features = module(features)
        out.append(features["sentence_embedding"].float().cpu().numpy()[0])
    return np.stack(out) if out else np.zeros((0, 0), dtype=np.float32)


def window_features(template: dict, rows: list[list[int]], device) -> dict:
    """The model's input features for windows of one length: ids, all attended, one segment."""
    import torch

    ids = torch.tensor(rows, dtype=torch.long, device=device)
    built = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
    features = {}
    for key, value in template.items():
        if key in built:
            features[key] = built[key]
        elif isinstance(value, torch.Tensor):
            raise TypeError(f"the model takes an input {key!r} that embedder.long_texts=windows cannot build")
        else:
            features[key] = value
    return features
