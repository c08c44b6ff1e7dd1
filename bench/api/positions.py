"""Known positions: where each corpus of a collection sits on the axis the collection varies.

A collection built by the harness knows what a metric has to find out: the mixing proportion of
each KSC corpus (004 §3), the fine-tuning iteration of each IFC corpus (004 §5), the source of each
size/imbalance sample. The reference metric ``oracle`` reads it to draw the ceiling of every
measure. The task enters the positions of its corpora with ``known_positions`` (they travel in the
run context to the worker processes), keyed by the corpus's content (``corpus_key``), so they
follow a corpus wherever the engine passes it. A metric reads them with ``known_position(corpus)``,
and only inside a call of a metric registered with ``needs=("known_position",)``: any other metric
that asks gets an error, so no metric can use them by accident.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from textmetric_bench.api.context import RunContext, current_context, use_context
from textmetric_bench.api.scopes import pushed
from textmetric_bench.errors import MetricError

_readers: list[str] = []


def corpus_key(texts: Sequence[str]) -> str:
    """A digest of a corpus's texts as a multiset (their order does not matter)."""
    h = hashlib.blake2b(digest_size=12)
    for text in sorted(texts):
        h.update(text.encode("utf-8", "surrogatepass") + b"\x00")
    return h.hexdigest()


@contextlib.contextmanager
def known_positions(positions: Mapping[str, float]) -> Iterator[RunContext]:
    """The current context with the known ``positions`` (``corpus_key`` -> position) added, in this block."""
    context = current_context()
    with use_context(replace(context, positions={**context.positions, **positions})) as inner:
        yield inner


@contextlib.contextmanager
def reading_positions(metric: str) -> Iterator[str]:
    """Allow ``known_position`` within one call of ``metric`` (``MetricInfo`` enters this)."""
    with pushed(_readers, metric) as name:
        yield name


def known_position(corpus: Sequence[str], *, role: str = "corpus") -> float:
    """The known position of ``corpus`` (a sequence of texts) in its collection.

    Raises MetricError outside a metric that declared ``needs=("known_position",)``, and when the
    run knows no position for this corpus (a perturbation study, a user's own pair).
    """
    if not _readers:
        raise MetricError("known positions are only for a metric registered with needs=('known_position',)")
    position = current_context().positions.get(corpus_key(list(corpus)))
    if position is None:
        raise MetricError(
            f"the {role} has no known position: metric {_readers[-1]!r} works only on collections that "
            "know each corpus's position (KSC, IFC runs), not on a perturbation "
            "study or a user's own corpora"
        )
    return float(position)
