"""Example third-party metric: difference of the mean text length in words of two corpora."""

from textmetric_bench.api.inputs import as_texts
from textmetric_bench.api.registry import metric


@metric("length_gap", inputs="texts", symmetric=True, description="gap in mean words per text")
def length_gap(p, q, *, seed: int = 0, log_scale: bool = False) -> float:
    """|mean words(p) - mean words(q)|, optionally of log lengths."""
    import math

    def mean_length(texts):
        lengths = [len(t.split()) for t in as_texts(texts)]
        values = [math.log(x) for x in lengths] if log_scale else lengths
        return sum(values) / len(values)

    return abs(mean_length(p) - mean_length(q))
