"""What a run records of texts longer than what reads them: the embedder's window, and the limits of metrics that
read only the start of each text (FACE's ``max_tokens``, the coherence score's ``max_words``).

Per reader, per side of the pair (the source each text came from; texts of neither side, generated or perturbed,
as ``other``): how many texts exceed the limit, their share, the longest length and what such a text gets. It goes
into ``run.json`` (``long_texts``) and the log; a reader that cuts texts warns on the console.
"""

from __future__ import annotations

import logging
from typing import Mapping, Sequence

from textmetric_bench.api.registry import MetricInfo
from textmetric_bench.console import FILE_ONLY
from textmetric_bench.features.embedding import Embedder
from textmetric_bench.features.long_texts import LengthLimit
from textmetric_bench.measures.text_limits import over_limit_sentence, reader_name

log = logging.getLogger(__name__)

#: The group of the texts that belong to no side (generated, perturbed).
OTHER = "other"


def by_side(texts: Sequence[str], sides: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """``texts`` grouped by the side that holds them (in ``sides``' order), the rest as ``OTHER``."""
    owner: dict[str, str] = {}
    for name, held in sides.items():
        for text in held:
            owner.setdefault(text, name)
    groups: dict[str, list[str]] = {name: [] for name in sides}
    for text in texts:
        groups.setdefault(owner.get(text, OTHER), []).append(text)
    return {name: group for name, group in groups.items() if group} or {OTHER: []}


def reader_record(limit: LengthLimit, groups: Mapping[str, Sequence[str]], lengths: Mapping[str, int] | None) -> dict:
    """The record of one reader: its limit, unit, what a longer text gets, and per side ``LengthLimit.record``."""
    corpora = {
        name: limit.record([lengths[t] for t in texts])
        if lengths is not None
        else {"texts": len(texts), "over_limit": None, "share": None, "longest": None}
        for name, texts in groups.items()
    }
    return {"limit": limit.limit, "unit": limit.unit, "done": limit.done, "cuts": limit.cuts, "corpora": corpora}


def announce(reader: str, record: Mapping) -> None:
    """One log line per reader: a warning on the console when it cut texts; only in the log file when every text is
    within its limit (nothing for the user to weigh)."""
    if record["limit"] is None:
        log.info("%s: %s", reader, record["done"])
        return
    sentence = over_limit_sentence(reader, record)
    if sentence is None:
        log.info(
            "%s reads at most %d %s: every text is within it (longest %s)",
            reader,
            record["limit"],
            record["unit"],
            ", ".join(f"{n} {c['longest']}" for n, c in record["corpora"].items()),
            extra=FILE_ONLY,
        )
    else:
        (log.warning if record["cuts"] else log.info)("%s", sentence)


def long_text_records(
    texts: Sequence[str],
    sides: Mapping[str, Sequence[str]],
    embedder: Embedder | None,
    metrics: Sequence[tuple[MetricInfo, dict]],
) -> dict:
    """``run.json``'s ``long_texts``: the embedder's record (after it embedded ``texts``) and one per limit of
    the metrics (metrics sharing a limit, as FACE's four do, share a record), each announced in the log."""
    groups = by_side(texts, sides)
    records: dict[str, dict] = {}
    if embedder is not None:
        lengths = embedder.lengths if embedder.window is not None else None
        records["embedder"] = reader_record(embedder.limit, groups, lengths)
        announce(reader_name("embedder", records["embedder"]), records["embedder"])
    shared: dict[tuple, list[str]] = {}
    limits = {}
    for info, params in metrics:
        if info.text_limit is None:
            continue
        limit = info.text_limit(**{**info.params, **params})
        key = (limit.unit, limit.param, limit.limit)
        shared.setdefault(key, []).append(info.name)
        limits[key] = limit
    for key, names in shared.items():
        limit = limits[key]
        counted = dict(zip(texts, limit.count(list(texts))))
        done = f"read on its first {limit.limit} {limit.unit} only; the rest is not scored ({limit.param})"
        record = reader_record(LengthLimit(limit.limit, limit.unit, done), groups, counted)
        record["param"] = limit.param
        label = ", ".join(names)
        records[label] = record
        announce(reader_name(label, record), record)
    return records
