"""Lift a per-text score to a corpus distance: the 1-Wasserstein distance between score distributions.

Many text-quality scores (fluency, coherence, a classifier's probability, length) score one
text at a time. Two corpora differ in that score as much as the distributions of their
scores differ, and W1, the area between the two empirical CDFs, measures that in the score's
own units; it is 0 for identical distributions, symmetric, and independent of text order.

    from textmetric_bench.api.per_text import per_text_metric

    @per_text_metric("length_w1", description="W1 between the corpora's text lengths in words")
    def words(texts, *, lowercase: bool = True):
        return [len(t.split()) for t in texts]

registers ``length_w1`` as a metric whose parameters are the scorer's keyword parameters.
A scorer that declares a keyword ``pool`` receives the union of both corpora's inputs (for
scores normalised by statistics of the compared texts, such as word frequencies); one that
declares ``seed`` receives the evaluation's seed.
"""

from __future__ import annotations

import inspect
import sys
from typing import Callable, Sequence

import numpy as np

from textmetric_bench.api.inputs import as_embeddings, as_texts
from textmetric_bench.api.registry import NOT_DECLARED, Inputs, TextLimit, metric
from textmetric_bench.errors import MetricError

Scorer = Callable[..., Sequence[float]]


def per_text_metric(
    name: str,
    *,
    inputs: Inputs = "texts",
    description: str = "",
    opt_in: bool = False,
    prepare: Callable[..., None] | None = None,
    version: str = "1",
    needs: tuple[str, ...] = (),
    source: str = NOT_DECLARED,
    value_range: tuple[float, float] | None = None,
    failure_modes: tuple[str, ...] = (),
    stochastic: bool = False,
    text_limit: Callable[..., TextLimit] | None = None,
) -> Callable[[Scorer], Scorer]:
    """Register ``score(texts, *, params...) -> one float per text`` as corpus metric ``name``.

    The metric is W1(scores of p, scores of q). ``opt_in``, ``prepare``, ``version`` and the catalogue
    facts (``needs`` ... ``stochastic``) and ``text_limit`` are passed to ``textmetric_bench.api.registry.metric``; ``prepare`` receives every text of a run and the parameters.
    The scorer is returned unchanged.
    """

    def register(score: Scorer) -> Scorer:
        sig = inspect.signature(score)
        keywords = [p for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
        takes_pool = any(p.name == "pool" for p in keywords)
        takes_seed = any(p.name == "seed" for p in keywords)
        params = [p for p in keywords if p.name not in ("pool", "seed")]
        read = as_texts if inputs == "texts" else as_embeddings

        def corpus_metric(p, q, *, seed: int = 0, **options) -> float:
            x, y = read(p, role="first corpus"), read(q, role="second corpus")
            extra = dict(options)
            if takes_seed:
                extra["seed"] = seed
            if takes_pool:
                extra["pool"] = list(x) + list(y) if inputs == "texts" else np.vstack([x, y])
            from scipy.stats import wasserstein_distance

            return wasserstein_distance(_scores(name, score, x, extra), _scores(name, score, y, extra))

        P = inspect.Parameter
        corpus_metric.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [
                P("p", P.POSITIONAL_OR_KEYWORD),
                P("q", P.POSITIONAL_OR_KEYWORD),
                P("seed", P.KEYWORD_ONLY, default=0),
                *params,
            ]
        )
        corpus_metric.__name__ = corpus_metric.__qualname__ = f"{score.__name__}_w1"
        corpus_metric.__module__ = score.__module__
        # Published in the scorer's module under that name, so worker processes can unpickle it.
        setattr(sys.modules[score.__module__], corpus_metric.__name__, corpus_metric)
        corpus_metric.__doc__ = (
            f"W1 between the corpora's distributions of ``{score.__name__}`` (textmetric_bench.api.per_text)."
        )
        summary = description or f"W1 between per-text {score.__name__} scores"
        metric(
            name,
            inputs=inputs,
            symmetric=True,
            description=summary,
            opt_in=opt_in,
            prepare=prepare,
            version=version,
            needs=needs,
            source=source,
            value_range=value_range,
            failure_modes=failure_modes,
            stochastic=stochastic,
            text_limit=text_limit,
        )(corpus_metric)
        score.corpus_metric = corpus_metric  # type: ignore[attr-defined]
        return score

    return register


def _scores(name: str, score: Scorer, corpus, options: dict) -> np.ndarray:
    values = np.asarray(score(corpus, **options), dtype=np.float64)
    if values.shape != (len(corpus),):
        raise MetricError(
            f"per-text scorer of {name!r} returned shape {values.shape} for {len(corpus)} texts; "
            "it must return one number per text"
        )
    if not np.isfinite(values).all():
        raise MetricError(
            f"per-text scorer of {name!r} returned NaN/inf for {int((~np.isfinite(values)).sum())} "
            f"of {len(corpus)} texts"
        )
    return values
