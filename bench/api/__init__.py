"""The plugin API: all a metric author imports, and nothing of the application.

    from textmetric_bench.api import as_texts, metric

- ``metric`` registers a function of two corpora as a metric (``MetricInfo`` describes it);
- ``as_texts``, ``as_embeddings``, ``same_dims`` check a metric's inputs with clear errors;
- ``per_corpus``/``per_pair`` declare work a run shares across pairs and metrics (its cost is
  charged to every evaluation that uses it, so T stays fair);
- ``per_text_metric`` lifts a per-text score to a corpus distance;
- ``lm_scorer`` gives the run's causal-LM scores per text; ``tokenize``/``token_counts`` the shared tokeniser;
- ``known_position`` gives a metric that declares ``needs=("known_position",)`` the known position of a
  corpus in its collection (the reference metric ``oracle``; ``textmetric_bench.api.positions``);
- ``TextLimit`` is what a metric that reads only the start of each text declares (``metric(text_limit=...)``);
- ``MetricError`` is what to raise on input the metric cannot work with.
"""

from textmetric_bench.api.context import lm_scorer
from textmetric_bench.api.inputs import as_embeddings, as_texts, same_dims
from textmetric_bench.api.per_text import per_text_metric
from textmetric_bench.api.positions import known_position
from textmetric_bench.api.registry import MetricInfo, TextLimit, metric
from textmetric_bench.api.sharing import per_corpus, per_pair
from textmetric_bench.api.tokens import token_counts, tokenize
from textmetric_bench.errors import MetricError

__all__ = [
    "MetricError",
    "MetricInfo",
    "TextLimit",
    "as_embeddings",
    "as_texts",
    "known_position",
    "lm_scorer",
    "metric",
    "per_corpus",
    "per_pair",
    "per_text_metric",
    "same_dims",
    "token_counts",
    "tokenize",
]
