"""Per-corpus statistics computed once, shared by every pair the corpus takes part in, and charged to each.

A KSC collection evaluates each corpus in k - 1 pairs, a robustness study in many more;
much of a metric's work (FID's mean, covariance and its square root, the k-NN radii of
PR/DC, token counts) depends on one corpus only. Marking such a helper ``@per_corpus`` is
how a metric declares a preparation step; inside an active ``sharing()`` scope (the
evaluation engine opens one for a run) its result is memoised by the corpus's content and
the helper's arguments. ``@per_pair`` declares work on a pair that several metrics share
(one clustering for the five cluster divergences). Outside a scope nothing is cached, so a
plain call computes exactly the same thing.

Fair time (T, 004 §4.4). Each memoised result keeps what it cost: the seconds of its own
computation and, for every piece of prepared work it used (nested helpers, LM scores), that
piece's seconds, by key. An evaluation runs in a ``charged_time()`` account: reusing a
result adds the cost of each piece the evaluation has not used yet, once per piece; work
done within the evaluation is already in its wall time. So an evaluation's time is its own
compute plus the full cost of the preparations it used, whichever metric ran first and
however many workers share the run; sharing still saves wall time. The memo's own bookkeeping
(fingerprints, sizes) is left out, as a plain call does none. A result evicted by the memo's
bound is computed again, and then its cost is wall time.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import sys
import time
import types
from collections import OrderedDict
from typing import Callable, Hashable, Iterable, Iterator, Mapping, TypeVar

import numpy as np
import xxhash

from textmetric_bench.api.scopes import pushed

T = TypeVar("T")

_scopes: list["_Memo"] = []
_accounts: list["Account"] = []


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
        return size + _items_size(itertools.chain.from_iterable(value.items()), seen)
    if isinstance(value, (tuple, list, set, frozenset)):
        return size + _items_size(value, seen)
    if hasattr(value, "__dict__") and not isinstance(value, (type, types.ModuleType)):
        return size + _size(vars(value), seen)
    return size


def _items_size(items, seen: set[int]) -> int:
    """``sum(_size(item, seen) for item in items)``, with the leaves (str, int, float, bytes: the tokens and
    counts of a token Counter) counted inline: the memo sizes every value it stores, and recursing into
    each of a corpus's tokens cost 3 s of the size study's wall time."""
    total = 0
    for item in items:
        if type(item) in _LEAVES:
            if id(item) not in seen:
                seen.add(id(item))
                total += sys.getsizeof(item)
        else:
            total += _size(item, seen)
    return total


_LEAVES = frozenset({str, int, float, bytes, bool, type(None)})


class Account:
    """The prepared work one evaluation (or one memoised computation) used: seconds per piece, by
    key, and which pieces ran inside its own wall time (those are not charged again)."""

    def __init__(self):
        self.used: dict[Hashable, float] = {}
        self.done_here: set[Hashable] = set()
        self.bookkeeping = 0.0  # seconds the memo spent on itself (keys, sizes) inside this wall time

    def take(self, pieces: Mapping[Hashable, float], done_here: Iterable[Hashable] = ()) -> None:
        """Add ``pieces`` (a piece already used keeps its first cost); ``done_here`` ran in this wall time."""
        for key, seconds in pieces.items():
            self.used.setdefault(key, seconds)
        self.done_here.update(done_here)

    @property
    def seconds(self) -> float:
        """What to add to the wall time: the pieces used but not computed within it, less the memo's
        bookkeeping, which is no work of the metric's (a plain call without sharing does none)."""
        return sum(s for k, s in self.used.items() if k not in self.done_here) - self.bookkeeping


def _bookkeeping(seconds: float) -> None:
    if _accounts:
        _accounts[-1].bookkeeping += seconds


@contextlib.contextmanager
def charged_time() -> Iterator[Account]:
    """An evaluation's account: its time is the wall time of this block plus ``account.seconds``."""
    with pushed(_accounts, Account()) as account:
        yield account


def charge(key: Hashable, seconds: float, *, done_here: bool = False) -> None:
    """Record that the running evaluation used prepared work ``key`` costing ``seconds`` (e.g. one
    text's cached LM scores): charged once per evaluation, or never if ``done_here`` (it ran just
    now, inside the wall time; recorded so that its reuse later is costed right). Outside an
    evaluation, nothing happens."""
    if _accounts:
        _accounts[-1].take({key: float(seconds)}, (key,) if done_here else ())


class _Memo:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self.store: OrderedDict[tuple, tuple[object, int, dict]] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.per_text: dict[str, dict] = {}

    def get_or_compute(self, key: tuple, compute: Callable[[], T]) -> T:
        """The memoised value of ``key``; its cost goes to the running account (module note)."""
        if key in self.store:
            self.hits += 1
            self.store.move_to_end(key)
            value, _, pieces = self.store[key]
            if _accounts:
                _accounts[-1].take(pieces)
            return value  # type: ignore[return-value]
        self.misses += 1
        inner = Account()
        _accounts.append(inner)
        start = time.perf_counter()
        try:
            value = compute()
        finally:
            wall = time.perf_counter() - start
            _accounts.remove(inner)
            own = max(0.0, wall - inner.bookkeeping - sum(inner.used[k] for k in inner.done_here))
            pieces = {**inner.used, key: own}
            if _accounts:
                _accounts[-1].take(pieces, inner.done_here | {key})
            _bookkeeping(inner.bookkeeping)
        start = time.perf_counter()
        size = _size(value) + _size(pieces)
        self.store[key] = (value, size, pieces)
        self.bytes += size
        while self.bytes > self.max_bytes and len(self.store) > 1:
            _, (_, dropped, _) = self.store.popitem(last=False)
            self.bytes -= dropped
        _bookkeeping(time.perf_counter() - start)
        return value

    def cost(self, key: tuple) -> float:
        """Seconds that reusing ``key`` charges to an evaluation that used none of its pieces."""
        return sum(self.store[key][2].values())

    def forget(self, keys: Iterable[tuple]) -> None:
        """Drop these entries (the engine's warm-up does, so they are computed again warm)."""
        for key in keys:
            if key in self.store:
                self.bytes -= self.store.pop(key)[1]


#: Entries a ``per_text_cache`` keeps before it starts again (token lists of ~10 tokens: tens of MB).
PER_TEXT_ENTRIES = 200_000


def per_text_cache(name: str) -> dict | None:
    """A dict named ``name`` that lives as long as the innermost ``sharing()`` scope (None outside one), for
    results per text that many corpora of a run share (the size study draws each text into ~30 samples).
    It is emptied when it reaches ``PER_TEXT_ENTRIES``. Fair time is the caller's: a computation that
    reuses a text's result ``charge``s what computing it cost."""
    if not _scopes:
        return None
    cache = _scopes[-1].per_text.setdefault(name, {})
    if len(cache) >= PER_TEXT_ENTRIES:
        cache.clear()
    return cache


def corpus_fingerprint(corpus) -> str:
    """A digest of a corpus's content: the same texts (or rows) in the same order give the same digest.

    XXH3 (128 bits): a non-cryptographic hash is enough for an in-memory memo of our own inputs, and it
    hashes 100 x 384 float32 embeddings in 3 us where blake2b took 170 us; blake2b was 6% of a KSC
    study's time."""
    h = xxhash.xxh3_128()
    if isinstance(corpus, np.ndarray):
        h.update(f"{corpus.dtype.str}{corpus.shape}".encode())  # .str: formatting the dtype's name costs 11 us
        h.update(np.ascontiguousarray(corpus).data)
    elif len(corpus):  # each text followed by a NUL byte, hashed in one call (not one per text)
        h.update("\x00".join(corpus).encode("utf-8", "surrogatepass") + b"\x00")
    return h.hexdigest()


@contextlib.contextmanager
def sharing(max_bytes: int = 256 * 2**20) -> Iterator[_Memo]:
    """Within this scope, ``@per_corpus`` helpers reuse their results; beyond ``max_bytes``
    (values and their cost records) the least recently used are dropped."""
    with pushed(_scopes, _Memo(max_bytes)) as memo:
        yield memo


def _reusable(corpus):
    """``corpus`` itself, or as a list if it is an iterator the fingerprint would use up."""
    return corpus if isinstance(corpus, (np.ndarray, list, tuple)) else list(corpus)


def per_corpus(fn: Callable[..., T]) -> Callable[..., T]:
    """Declare ``fn(corpus, **params)`` a preparation step depending on one corpus only: runs share its
    result, and every evaluation that uses it is charged its cost (module note)."""

    @functools.wraps(fn)
    def wrapper(corpus, **params) -> T:
        if not _scopes:
            return fn(corpus, **params)
        start = time.perf_counter()
        corpus = _reusable(corpus)
        key = (fn.__module__, fn.__qualname__, corpus_fingerprint(corpus), tuple(sorted(params.items())))
        _bookkeeping(time.perf_counter() - start)
        return _scopes[-1].get_or_compute(key, lambda: fn(corpus, **params))

    return wrapper


def per_pair(fn: Callable[..., T]) -> Callable[..., T]:
    """Declare ``fn(p, q, **params)`` a preparation step depending on two corpora only, so the metrics
    of one family (e.g. five divergences on one clustering of the pair) share its result in a run,
    each charged its cost.

    The key is the ordered pair: callers that want (p, q) and (q, p) to share put the pair in
    a canonical order first (``textmetric_bench.api.inputs.canonical_pair``).
    """

    @functools.wraps(fn)
    def wrapper(p, q, **params) -> T:
        if not _scopes:
            return fn(p, q, **params)
        start = time.perf_counter()
        p, q = _reusable(p), _reusable(q)
        key = (
            fn.__module__,
            fn.__qualname__,
            corpus_fingerprint(p),
            corpus_fingerprint(q),
            tuple(sorted(params.items())),
        )
        _bookkeeping(time.perf_counter() - start)
        return _scopes[-1].get_or_compute(key, lambda: fn(p, q, **params))

    return wrapper
