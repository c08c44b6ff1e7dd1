"""The warnings of one run, as sentences, from what it wrote (``run.json`` and its summary): the same list for every
view of a result (the Python API's DataFrames, its HTML display and ``text()``, the figures' captions).

A warning is something a reader of the numbers must know to read them right: too few repetitions for the paired
tests, texts cut before a reader saw them whole, metrics that failed some or all of their evaluations, a reversed
orientation, reference rows that were not used, metrics merged from an earlier run in the same
directory, a grid truncated to the sources. A figure of one metric alone carries the warnings about the whole run
and those about its metric.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Mapping

from textmetric_bench.measures.intervals import few_repetitions_warning
from textmetric_bench.measures.text_limits import over_limit_sentence, reader_name

#: Which metrics a warning is about: a figure of one metric alone carries the warnings about it
#: (``run_warnings(..., metric=...)``).
About = Callable[[str], bool]
#: Characters of a failure's or an orientation note's reason a warning keeps; the rest is marked as left out.
REASON_CHARS = 300


def clipped(reason: object) -> str:
    """``reason`` on one line, cut at a word to at most ``REASON_CHARS`` characters, the cut marked: the whole of
    it is in the run's ``table3.md`` (Failed metrics) and ``failures.csv``."""
    return textwrap.shorten(str(reason), REASON_CHARS, placeholder=" … (in full in table3.md)")


def every_metric(metric: str) -> bool:
    """A warning about the whole run (few repetitions, a truncated grid): every figure carries it."""
    return True


def no_drawn_metric(metric: str) -> bool:
    """A warning about rows no figure of one metric draws (reference rows not used, a failed plugin's metrics)."""
    return False


def reads_embeddings(inputs: Mapping[str, str]) -> About:
    """The metrics the embedder's cuts are about: those whose inputs (``run.json``'s ``metric_inputs``) are
    embeddings, and any it does not list (merged from an earlier run)."""

    def about(metric: str) -> bool:
        return inputs.get(metric, "embeddings") == "embeddings"

    return about


def run_warnings(info: Mapping, repetitions: int | None = None, *, metric: str | None = None) -> list[str]:
    """The warnings of the run whose ``run.json`` is ``info``; ``repetitions``: the most repetitions any metric
    completed (the summary's largest n), else the run's setting. ``metric``: only those a figure of that metric
    alone must carry, the run-wide ones and those about it (not another metric's failure, orientation or cut
    texts, nor a plugin whose metrics did not run)."""
    return [text for text, about in warnings_and_metrics(info, repetitions) if metric is None or about(metric)]


def warnings_by_metric(info: Mapping, metrics: Iterable[str], repetitions: int | None = None) -> dict[str, list[str]]:
    """``run_warnings(info, repetitions, metric=m)`` for each of ``metrics``: the captions of their own figures."""
    tagged = warnings_and_metrics(info, repetitions)
    return {m: [text for text, about in tagged if about(m)] for m in metrics}


def warnings_and_metrics(info: Mapping, repetitions: int | None = None) -> list[tuple[str, About]]:
    """Every warning of ``run_warnings``, in its order, with which metrics it is about."""
    out: list[tuple[str, About]] = []
    reps = repetitions if repetitions is not None else info.get("repetitions")
    if isinstance(reps, int) and (text := few_repetitions_warning(reps)):
        out.append((text[0].upper() + text[1:], every_metric))
    inputs = info.get("metric_inputs")  # absent from runs before it was recorded: the embedder's cuts concern all
    for key, record in (info.get("long_texts") or {}).items():
        if record.get("cuts") and (sentence := over_limit_sentence(reader_name(key, record), record)):
            if key != "embedder":  # a record of metrics sharing a limit: "name, name"
                about: About = frozenset(key.split(", ")).__contains__
            elif isinstance(inputs, Mapping):
                about = reads_embeddings(inputs)
            else:
                about = every_metric
            out.append((f"Long texts cut: {sentence}", about))
    out += plugin_warnings_and_metrics(info)
    for name, reason in (info.get("failures") or {}).items():
        out.append((f"Metric {name} failed: {clipped(reason)}", frozenset([name]).__contains__))
    for name, note in (info.get("orientation_warnings") or {}).items():
        out.append((f"Orientation of {name}: {clipped(note)}", frozenset([name]).__contains__))
    return out + merge_warnings_and_metrics(info)


def unstated_warnings(info: Mapping) -> list[str]:
    """The warnings of ``run_warnings`` that nothing of the run said but its log and ``run.json``: a metric plugin
    that failed to import, reference rows not used, metrics merged from an earlier run, a truncated grid. The run's
    printed page (``table3.md``) and its report put them at the top. (The page states too few repetitions, failed
    metrics and reversed orientations itself; cut long texts are a console line and a box of their own in the
    report.)"""
    return plugin_warnings(info) + merge_warnings(info)


def plugin_warnings(info: Mapping) -> list[str]:
    """One sentence per metric plugin that failed to import (``run.json``'s ``plugin_failures``)."""
    return [text for text, _ in plugin_warnings_and_metrics(info)]


def plugin_warnings_and_metrics(info: Mapping) -> list[tuple[str, About]]:
    """``plugin_warnings``, each about no metric a figure of one draws."""
    out: list[tuple[str, About]] = []
    for module, record in (info.get("plugin_failures") or {}).items():
        withdrawn = list(record.get("withdrawn") or ())
        left = (
            f"; its metric{'s' if len(withdrawn) > 1 else ''} {', '.join(withdrawn)} did not run" if withdrawn else ""
        )
        text = f"Metric plugin {record.get('plugin', module)} ({module}) failed to import: {record['error']}{left}"
        out.append((text, no_drawn_metric))  # its metrics did not run: no figure of one metric draws them
    return out


def partial_sentence(partial: Mapping[str, str]) -> str:
    """What a run says of earlier metrics in its directory that it does not merge, each with "<found> of <planned>"
    evaluations (``textmetric_bench.tasks.skeleton.incomplete_earlier``)."""
    return (
        "Not merged from an earlier run in this directory: "
        + ", ".join(f"{name} ({count} of this run's evaluations logged)" for name, count in partial.items())
        + f"; the earlier run ended early or read other corpora (an edited file): metrics=[{','.join(partial)}] "
        "computes them here"
    )


def merge_warnings(info: Mapping) -> list[str]:
    """Rows that are not this run's own computation as asked: reference rows not used, metrics merged from an
    earlier run in the same directory, a grid truncated to the sources."""
    return [text for text, _ in merge_warnings_and_metrics(info)]


def merge_warnings_and_metrics(info: Mapping) -> list[tuple[str, About]]:
    """``merge_warnings``, each with the metrics it is about."""
    out: list[tuple[str, About]] = []
    reference = info.get("reference") or {}
    if reference.get("not_used"):
        out.append((f"Reference rows {reference.get('file')} not used: {reference['not_used']}", no_drawn_metric))
    if earlier := info.get("earlier_metrics"):
        text = (
            f"Merged from an earlier run in this directory: {', '.join(earlier)} (this run computed "
            f"{', '.join(info.get('metrics_this_run') or [])}); a new directory keeps a run's metrics alone"
        )
        out.append((text, frozenset(earlier).__contains__))
    if partial := info.get("earlier_not_merged"):
        out.append((partial_sentence(partial), no_drawn_metric))
    for note in (info.get("grid") or {}).get("truncated") or []:
        out.append((f"Grid truncated: {note}", every_metric))
    return out
