"""Per-corpus statistics computed once and shared by every pair the corpus takes part in.

A KSC collection evaluates each corpus in k - 1 pairs, a robustness study in many more;
much of a metric's work (FID's mean, covariance and its square root, the k-NN radii of
PR/DC, token counts) depends on one corpus only. A metric marks such a helper with
``@per_corpus``; inside an active ``sharing()`` scope (the evaluation engine opens one
for a run) its result is memoised by the corpus's content and the helper's arguments.
``@per_pair`` does the same for work on a pair that several metrics share (one clustering
for the five cluster divergences).
Outside a scope nothing is cached, so a plain call computes exactly the same thing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import sys
import types
from collections import OrderedDict
from typing import Callable, Iterator, TypeVar

import numpy as np

T = TypeVar("T")

_scopes: list["_Memo"] = []


def _size(value, seen: set[int] | None = None) -> int:
    """Bytes a cached value keeps alive, each object counted once: an array's whole buffer (a view
    keeps its base alive: a k-NN radius column sliced from an n x n matrix holds all n x n), and
    every object inside tuples, lists, dicts, sets and attribute dictionaries (token tuples,
    n-gram models), so the ``sharing()`` bound holds for what is really held."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.nbytes if value.base is None else _size(value.base, seen)
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        return size + sum(_size(k, seen) + _size(v, seen) for k, v in value.items())
    if isinstance(value, (tuple, list, set, frozenset)):
        return size + sum(_size(v, seen) for v in value)
    if hasattr(value, "__dict__") and not isinstance(value, (type, types.ModuleType)):
        return size + _size(vars(value), seen)
    return size


class _Memo:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self.store: OrderedDict[tuple, tuple[object, int]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: tuple, compute: Callable[[], T]) -> T:
        if key in self.store:
            self.hits += 1
            self.store.move_to_end(key)
            return self.store[key][0]  # type: ignore[return-value]
        self.misses += 1
        value = compute()
        size = _size(value)
        self.store[key] = (value, size)
        self.bytes += size
        while self.bytes > self.max_bytes and len(self.store) > 1:
            _, (_, dropped) = self.store.popitem(last=False)
            self.bytes -= dropped
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
def sharing(max_bytes: int = 256 * 2**20) -> Iterator[_Memo]:
    """Within this scope, ``@per_corpus`` helpers reuse their results; beyond ``max_bytes``
    the least recently used are dropped."""
    memo = _Memo(max_bytes)
    _scopes.append(memo)
    try:
        yield memo
    finally:
        _scopes.remove(memo)


def _reusable(corpus):
    """``corpus`` itself, or as a list if it is an iterator the fingerprint would use up."""
    return corpus if isinstance(corpus, (np.ndarray, list, tuple)) else list(corpus)


def per_corpus(fn: Callable[..., T]) -> Callable[..., T]:
    """Mark ``fn(corpus, **params)`` as depending on one corpus only, so runs can share its result."""

    @functools.wraps(fn)
    def wrapper(corpus, **params) -> T:
        if not _scopes:
            return fn(corpus, **params)
        corpus = _reusable(corpus)
        key = (fn.__module__, fn.__qualname__, corpus_fingerprint(corpus), tuple(sorted(params.items())))
        return _scopes[-1].get_or_compute(key, lambda: fn(corpus, **params))

    return wrapper


def per_pair(fn: Callable[..., T]) -> Callable[..., T]:
    """Mark ``fn(p, q, **params)`` as depending on two corpora only, so the metrics of one
    family (e.g. five divergences on one clustering of the pair) share its result in a run.

    The key is the ordered pair: callers that want (p, q) and (q, p) to share put the pair in
    a canonical order first (``bench.api.inputs.canonical_pair``).
    """

    @functools.wraps(fn)
    def wrapper(p, q, **params) -> T:
        if not _scopes:
            return fn(p, q, **params)
        p, q = _reusable(p), _reusable(q)
        key = (fn.__module__, fn.__qualname__, corpus_fingerprint(p), corpus_fingerprint(q),
               tuple(sorted(params.items())))
        return _scopes[-1].get_or_compute(key, lambda: fn(p, q, **params))

    return wrapper
