"""The contract every metric keeps, as checks a plugin author runs in their own tests (scikit-learn's
``parametrize_with_checks``):

    from textmetric_bench.api.checks import parametrize_with_checks

    @parametrize_with_checks(["length_gap"])
    def test_contract(name, check):
        check()            # on the synthetic corpora below: no model, no download
        # check(samples)   # or on your own: ContractSamples.from_corpora(texts_a, texts_b, embed=...)

Test ids read ``<metric>-<check>`` (``length_gap-check_order_invariant``), so ``pytest -k length_gap``
selects one metric's checks. The checks: a finite float; same seed, same value; the order of the texts
does not matter; a sample of source A is closer (for a similarity: more similar), on average over
draws, to another sample of A than to a sample of B, and the same from B; symmetric if declared;
empty input raises an error that says "empty". A failed check raises AssertionError; a check that
does not apply raises ``unittest.SkipTest`` (pytest reports a skip).

This module imports nothing of the application, and pytest only inside ``parametrize_with_checks``.
"""

from __future__ import annotations

import functools
import re
import unittest
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from textmetric_bench.api.registry import MetricInfo, get_metric

#: The five disjoint samples of one draw: two of source A, two of source B, and a half-and-half mix.
SAMPLE_NAMES = ("a1", "a2", "b1", "b2", "mix")


@dataclass(frozen=True)
class ContractSamples:
    """Disjoint samples of two sources A and B, as texts and (for metrics of embeddings) as vectors, in several draws.

    Each draw is (texts, vectors): dicts from ``SAMPLE_NAMES`` to a list of texts and to a 2-D array.
    ``get`` serves one draw in the form the metric takes; ``mean`` averages a metric over all draws, for
    direction checks whose single-draw noise can exceed a weak metric's signal.
    """

    draws: tuple[tuple[Mapping[str, list[str]], Mapping[str, np.ndarray] | None], ...]

    def get(self, metric: MetricInfo, *names: str, draw: int = 0) -> tuple:
        texts, vectors = self.draws[draw]
        if metric.inputs == "embeddings":
            if vectors is None:
                raise ValueError(
                    f"metric {metric.name!r} takes embeddings and these samples have none: "
                    "give ContractSamples.from_corpora an embed function"
                )
            return tuple(vectors[n] for n in names)
        return tuple(texts[n] for n in names)

    def mean(self, metric: MetricInfo, first: str, second: str, *, seed: int = 0) -> float:
        values = [metric(*self.get(metric, first, second, draw=d), seed=seed) for d in range(len(self.draws))]
        return float(sum(values) / len(values))

    @classmethod
    def from_corpora(
        cls,
        a: Sequence[str],
        b: Sequence[str],
        *,
        embed: Callable[[list[str]], np.ndarray] | None = None,
        size: int = 100,
        n_draws: int = 5,
        seed: int = 2024,
    ) -> "ContractSamples":
        """Draw disjoint samples of ``size`` texts from corpora ``a`` and ``b`` (each needs
        ``n_draws * 2.5 * size`` texts); ``embed`` turns texts into vectors, for metrics of embeddings. It is
        called once, on the texts of every draw together: an embedder that batches texts by length (the
        harness's own) fills its batches far better than with one sample at a time."""
        per_draw = 2 * size + size // 2
        if min(len(a), len(b)) < n_draws * per_draw:
            raise ValueError(
                f"{n_draws} draws of {size} texts need {n_draws * per_draw} texts per source; "
                f"got {len(a)} and {len(b)}: lower size or n_draws"
            )
        rng = np.random.default_rng(seed)
        ia, ib = rng.permutation(len(a)), rng.permutation(len(b))
        samples = []
        for d in range(n_draws):
            off = d * per_draw
            ta = [a[i] for i in ia[off : off + per_draw]]
            tb = [b[i] for i in ib[off : off + per_draw]]
            samples.append(
                {
                    "a1": ta[:size],
                    "a2": ta[size : 2 * size],
                    "b1": tb[:size],
                    "b2": tb[size : 2 * size],
                    "mix": ta[2 * size :] + tb[2 * size :],
                }
            )
        if embed is None:
            return cls(tuple((texts, None) for texts in samples))
        every = [t for texts in samples for name in SAMPLE_NAMES for t in texts[name]]
        vectors = np.asarray(embed(every))
        if len(vectors) != len(every):
            raise ValueError(f"embed gave {len(vectors)} vectors for {len(every)} texts")
        draws, start = [], 0
        for texts in samples:
            split = {}
            for name in SAMPLE_NAMES:
                split[name], start = vectors[start : start + len(texts[name])], start + len(texts[name])
            draws.append((texts, split))
        return cls(tuple(draws))


#: Two synthetic sources: disjoint vocabularies drawn with different Zipf exponents and text lengths.
_VOCABULARY = {
    "a": [f"{s}{v}" for s in ("ka", "lo", "mi", "nu", "pe", "ra", "si", "to") for v in "aeiou"],
    "b": [f"{s}{v}" for s in ("ba", "de", "fo", "gu", "hi", "jo", "wu", "ze") for v in "aeiou"],
}
_SHARED = ["the", "a", "of", "and", "to", "in", "is", "it"]


def _synthetic_texts(source: str, n: int, rng: np.random.Generator) -> list[str]:
    words = _SHARED + _VOCABULARY[source]
    exponent, (low, high) = (1.0, (5, 12)) if source == "a" else (1.6, (9, 20))
    weights = 1.0 / np.arange(1, len(words) + 1) ** exponent
    weights /= weights.sum()
    return [" ".join(rng.choice(words, size=int(rng.integers(low, high)), p=weights)) for _ in range(n)]


def _synthetic_vectors(source: str, n: int, dims: int, rng: np.random.Generator) -> np.ndarray:
    # B is A shifted along its first axes, like two corpora in an embedding space.
    shift = np.zeros(dims)
    shift[: max(1, dims // 4)] = 0.8 if source == "b" else 0.0
    return shift + rng.standard_normal((n, dims))


@functools.lru_cache(maxsize=8)
def synthetic_samples(*, size: int = 60, n_draws: int = 3, dims: int = 32, seed: int = 0) -> ContractSamples:
    """Samples of two synthetic sources (made-up words; Gaussian vectors), cheap and identical on every machine.

    A's texts are short and use one vocabulary, B's longer and another, over a few shared function words;
    A's vectors are standard normal in ``dims`` dimensions, B's shifted. Vectors and texts are
    drawn independently: they stand in for an embedding model in a plugin author's CI, not for its output.
    """
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_draws):
        halves = {"a": size // 2, "b": size - size // 2}
        texts = {name: _synthetic_texts(name[0], size, rng) for name in SAMPLE_NAMES[:4]}
        texts["mix"] = [t for src, k in halves.items() for t in _synthetic_texts(src, k, rng)]
        vectors = {name: _synthetic_vectors(name[0], size, dims, rng) for name in SAMPLE_NAMES[:4]}
        vectors["mix"] = np.vstack([_synthetic_vectors(src, k, dims, rng) for src, k in halves.items()])
        draws.append((texts, vectors))
    return ContractSamples(tuple(draws))


def _close(actual: float, expected: float, *, rel: float, abs_: float) -> bool:
    """pytest.approx's rule: within ``rel`` of the expected value or within ``abs_``."""
    return actual == expected or abs(actual - expected) <= max(rel * abs(expected), abs_)


def check_returns_finite_float(m: MetricInfo, s: ContractSamples) -> None:
    value = m(*s.get(m, "a1", "b1"), seed=0)
    assert isinstance(value, float) and np.isfinite(value), f"{m.name} returned {value!r} ({type(value).__name__})"


def check_same_seed_same_value(m: MetricInfo, s: ContractSamples) -> None:
    p, q = s.get(m, "a1", "b1")
    first, second = m(p, q, seed=11), m(p, q, seed=11)
    assert first == second, f"{m.name} gave {first!r} then {second!r} with seed=11"


def check_order_invariant(m: MetricInfo, s: ContractSamples) -> None:
    p, q = s.get(m, "a1", "b1")
    rng = np.random.default_rng(5)
    shuffled_p: Any = [p[i] for i in rng.permutation(len(p))]
    shuffled_q: Any = [q[i] for i in rng.permutation(len(q))]
    if m.inputs == "embeddings":
        shuffled_p, shuffled_q = np.array(shuffled_p), np.array(shuffled_q)
    shuffled, original = m(shuffled_p, shuffled_q, seed=3), m(p, q, seed=3)
    assert _close(shuffled, original, rel=1e-6, abs_=1e-9), (
        f"{m.name}: {shuffled!r} on shuffled texts, {original!r} in order"
    )


def check_own_source_is_closer(m: MetricInfo, s: ContractSamples) -> None:
    sign = 1.0 if m.higher_is_more_different else -1.0  # a similarity: the own source is more similar
    for own, other in (("a", "b"), ("b", "a")):
        same, across = s.mean(m, f"{own}1", f"{own}2"), s.mean(m, f"{own}1", f"{other}1")
        assert sign * same < sign * across, (
            f"{m.name}: mean d({own}1, {own}2) = {same!r}, mean d({own}1, {other}1) = "
            f"{across!r}; the own source must be {'closer' if sign > 0 else 'more similar'}"
        )


def check_symmetric_if_declared(m: MetricInfo, s: ContractSamples) -> None:
    p, q = s.get(m, "a1", "b1")
    if not m.symmetric:
        raise unittest.SkipTest(f"{m.name} is declared asymmetric")
    forward, backward = m(p, q, seed=2), m(q, p, seed=2)
    assert _close(forward, backward, rel=1e-6, abs_=1e-12), (
        f"{m.name} is declared symmetric: d(p, q) = {forward!r}, d(q, p) = {backward!r}"
    )


def check_empty_input_raises(m: MetricInfo, s: ContractSamples) -> None:
    p, _ = s.get(m, "a1", "b1")
    empty: Any = np.zeros((0, np.asarray(p).shape[1])) if m.inputs == "embeddings" else []
    for side, args in (("p", (empty, p)), ("q", (p, empty))):
        try:
            value = m(*args, seed=0)
        except Exception as error:  # noqa: BLE001 - any error will do, as long as it says what is wrong
            assert re.search("(?i)empty", str(error)), (
                f"{m.name} on an empty {side} raised {error!r}, which does not say 'empty'"
            )
        else:
            raise AssertionError(f"{m.name} on an empty {side} returned {value!r} instead of raising")


#: Every check, in the order they run.
CHECKS: tuple[Callable[[MetricInfo, ContractSamples], None], ...] = (
    check_returns_finite_float,
    check_same_seed_same_value,
    check_order_invariant,
    check_own_source_is_closer,
    check_symmetric_if_declared,
    check_empty_input_raises,
)


def metric_checks(name: str) -> Iterator[tuple[str, Callable[..., None]]]:
    """(check name, check) for every check of metric ``name``; ``check(samples=None)`` runs it on ``samples``,
    by default on ``synthetic_samples()``. The metric is looked up when the check runs."""
    for check in CHECKS:

        def run(samples: ContractSamples | None = None, *, _check=check) -> None:
            _check(get_metric(name), synthetic_samples() if samples is None else samples)

        run.__name__ = run.__qualname__ = check.__name__
        yield check.__name__, run


def parametrize_with_checks(names: Sequence[str]):
    """A ``pytest.mark.parametrize`` over ("name", "check") for every check of every metric in ``names``,
    with ids ``<metric>-<check>``; the test calls ``check()`` (synthetic corpora) or ``check(samples)``."""
    import pytest

    return pytest.mark.parametrize(
        "name,check",
        [
            pytest.param(name, check, id=f"{name}-{check_name}")
            for name in names
            for check_name, check in metric_checks(name)
        ],
    )
