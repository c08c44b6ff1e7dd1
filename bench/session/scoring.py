"""``textmetric_bench.score``: one metric's value for two lists of texts, as a benchmark run computes it.

For the researcher who has picked a metric and wants to use it: the metric comes from the same registry (a name,
or a function decorated in a notebook), its parameters are checked and defaulted as ``metric.<name>.<key>=...``
is on the command line, the texts are embedded by the same embedder with the same cache (``data.cache_dir``,
``embedder.*``), and an LM metric's per-text scores are prepared as a run prepares them. The value is the one a run
writes into ``distances.csv`` for the same two corpora and metric seed (a test checks it); the metric's own
exception is raised as it is.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Any

import numpy as np

from textmetric_bench.errors import ConfigError, MetricError


#: score()'s own keyword arguments, which a misspelt one (``sed=1``) is told of.
OWN_ARGUMENTS = ("seed", "config")


def score(
    metric: Any,
    texts_a: Iterable[str],
    texts_b: Iterable[str],
    *,
    seed: int = 0,
    config: Mapping[str, Any] | Sequence[str] | None = None,
    **params: Any,
) -> float:
    """The value of ``metric`` for corpora ``texts_a`` and ``texts_b``.

    Args:
        metric: a registered metric's name (``"mauve"``), or a function decorated with
            ``@textmetric_bench.api.metric`` (one defined in a notebook too).
        texts_a: the first corpus, a list of strings (a tuple, pandas Series or numpy array of them too), used as
            given, in its order.
        texts_b: the second corpus, likewise.
        seed: the seed handed to the metric (a run hands repetition r of seed s ``metric_seed(s, r)``,
            ``textmetric_bench.collections.seeds``); a deterministic metric ignores it.
        config: shared settings by dotted key, e.g. ``{"embedder.long_texts": "windows"}`` or
            ``{"data.cache_dir": "/scratch/cache"}``, or command-line overrides.
        **params: the metric's parameters (``mauve_scaling_factor=5`` for mauve), checked as ``metric.<name>.<key>=`` is.

    Returns:
        The metric's value, in its own direction (a distance, or a similarity for a metric that declares one).

    Raises:
        ConfigError: an unknown metric or parameter, a bad setting, an empty corpus or one that is not a list of
            strings (a set too: its order is not fixed). MetricError: the metric returned something that is not a
            finite number. The metric's own exception, as raised, when it fails.
    """
    from textmetric_bench.api.context import use_context
    from textmetric_bench.api.registry import get_metric
    from textmetric_bench.session.running import compose, metric_names, override, overrides_of
    from textmetric_bench.tasks.config import build_embedder, data_locations, run_context, selected_metrics

    names = metric_names(metric)
    if len(names) != 1 or names[0] in ("default", "all"):
        raise ConfigError(f"score() takes one metric, not {metric!r}: use evaluate() to compare several")
    a, b = _texts(texts_a, "texts_a"), _texts(texts_b, "texts_b")
    name = names[0]
    overrides = overrides_of("ksc", [name], None, {}, config)
    overrides += [override(f"metric.{name}.{key}", value) for key, value in params.items()]
    declared = get_metric(name)
    try:
        declared.check_params(params)  # the check composing makes, said here with score()'s own arguments
    except ConfigError as exc:
        unknown = [key for key in params if key not in declared.params]
        near = {key: difflib.get_close_matches(key, OWN_ARGUMENTS, n=1) for key in unknown}
        hints = [f"{found[0]}={params[key]!r} (score()'s own argument)" for key, found in near.items() if found]
        if hints:  # a parameter meant as score()'s own argument (sed=1)
            raise ConfigError(f"{exc}; did you mean {' or '.join(hints)}?") from None
        raise
    cfg, _ = compose(overrides, run_dir=False)  # score() writes no run directory
    ((info, chosen),) = selected_metrics(cfg)
    cache_dir = data_locations(cfg)[0]
    distinct = list(dict.fromkeys([*a, *b]))  # each text embedded or prepared once, as a run's corpus store does
    with use_context(run_context(cfg, cache_dir)):
        if info.prepare is not None:
            info.prepare(distinct, **chosen)
        p, q = a, b
        if info.inputs == "embeddings":
            vectors = build_embedder(cfg, cache_dir).embed(distinct)
            row = {text: i for i, text in enumerate(distinct)}
            p, q = (np.asarray(vectors[[row[t] for t in side]]) for side in (a, b))
        value = info(p, q, seed=int(seed), **chosen)
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, float, np.number))
        or not math.isfinite(float(value))
    ):
        raise MetricError(f"metric {name!r} returned {value!r}, not a finite number")
    return float(value)


def _texts(texts: Iterable[str], which: str) -> list[str]:
    kind = type(texts).__name__
    if isinstance(texts, Set):  # a set's order changes between processes (string hashing), and so could a value
        raise ConfigError(f"{which} is a {kind}, which has no fixed order: pass a list of strings (e.g. sorted(...))")
    if isinstance(texts, Mapping) or getattr(texts, "ndim", 1) != 1:  # iterating these gives keys or column names
        raise ConfigError(
            f"{which} is a {kind}: pass one column or list of texts (e.g. df['text'] or list(d.values()))"
        )
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise ConfigError(
            f"{which} must be a list of strings (or a tuple, pandas Series, numpy array of them), not {kind}"
        )
    out = list(texts)
    if not out:
        raise ConfigError(f"{which} is empty: a corpus needs at least one text")
    bad = [i for i, t in enumerate(out) if not isinstance(t, str)]
    if bad:
        raise ConfigError(
            f"{which}[{bad[0]}] is not a string but {type(out[bad[0]]).__name__} {repr(out[bad[0]])[:60]} "
            f"({len(bad)} such item{'s' if len(bad) > 1 else ''})"
        )
    return [str(text) for text in out]  # numpy's str_ items as plain strings, as a run's corpora hold them
