"""Per-corpus statistics computed once and shared by every pair the corpus takes part in.

A KSC collection evaluates each corpus in k - 1 pairs, a robustness study in many more;
much of a metric's work (FID's mean, covariance and its square root, the k-NN radii of
PR/DC, token counts) depends on one corpus only. A metric marks such a helper with
``@per_corpus``; inside an active ``sharing()`` scope (the evaluation engine opens one
for a run) its result is memoised by the corpus's content and the helper's arguments.
Outside a scope nothing is cached, so a plain call computes exactly the same thing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections import OrderedDict
from typing import Callable, Iterator, TypeVar

import numpy as np

T = TypeVar("T")

_scopes: list["_Memo"] = []


class _Memo:
    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        self.store: OrderedDict[tuple, object] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: tuple, compute: Callable[[], T]) -> T:
        if key in self.store:
            self.hits += 1
            self.store.move_to_end(key)
            return self.store[key]  # type: ignore[return-value]
        self.misses += 1
        value = compute()
        self.store[key] = value
        if len(self.store) > self.max_entries:
            self.store.popitem(last=False)
        return value


def corpus_fingerprint(corpus) -> str:
    """A digest of a corpus's content: the same texts (or rows) in the same order give the same digest."""
    h = hashlib.blake2b(digest_size=16)
    if isinstance(corpus, np.ndarray):
        h.update(f"{corpus.dtype}{corpus.shape}".encode())
        h.update(np.ascontiguousarray(corpus).data)
    else:
        for text in corpus:
            h.update(text.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
    return h.hexdigest()


@contextlib.contextmanager
def sharing(max_entries: int = 512) -> Iterator[_Memo]:
    """Within this scope, ``@per_corpus`` helpers reuse their results (least recently used evicted)."""
    memo = _Memo(max_entries)
    _scopes.append(memo)
    try:
        yield memo
    finally:
        _scopes.remove(memo)


def per_corpus(fn: Callable[..., T]) -> Callable[..., T]:
    """Mark ``fn(corpus, **params)`` as depending on one corpus only, so runs can share its result."""

    @functools.wraps(fn)
    def wrapper(corpus, **params) -> T:
        if not _scopes:
            return fn(corpus, **params)
        key = (fn.__module__, fn.__qualname__, corpus_fingerprint(corpus), tuple(sorted(params.items())))
        return _scopes[-1].get_or_compute(key, lambda: fn(corpus, **params))

    return wrapper
