"""The warnings of one run, as sentences, from what it wrote (``run.json`` and its summary): the same list for every
view of a result (the Python API's DataFrames, its HTML display and ``text()``, the figures' captions).

A warning is something a reader of the numbers must know to read them right: too few repetitions for the paired
tests, texts cut before a reader saw them whole, metrics that failed some or all of their evaluations, a reversed
orientation, reference rows that were not used, metrics merged from an earlier run in the same
directory, a grid truncated to the sources.
"""

from __future__ import annotations

from collections.abc import Mapping

from textmetric_bench.measures.intervals import few_repetitions_warning
from textmetric_bench.measures.text_limits import over_limit_sentence, reader_name


def run_warnings(info: Mapping, repetitions: int | None = None) -> list[str]:
    """The warnings of the run whose ``run.json`` is ``info``; ``repetitions``: the most repetitions any metric
    completed (the summary's largest n), else the run's setting."""
    out = []
    reps = repetitions if repetitions is not None else info.get("repetitions")
    if isinstance(reps, int) and (text := few_repetitions_warning(reps)):
        out.append(text[0].upper() + text[1:])
    for key, record in (info.get("long_texts") or {}).items():
        if record.get("cuts") and (sentence := over_limit_sentence(reader_name(key, record), record)):
            out.append(f"Long texts cut: {sentence}")
    out += plugin_warnings(info)
    for metric, reason in (info.get("failures") or {}).items():
        out.append(f"Metric {metric} failed: {' '.join(str(reason).split())[:300]}")
    for metric, note in (info.get("orientation_warnings") or {}).items():
        out.append(f"Orientation of {metric}: {' '.join(str(note).split())[:300]}")
    return out + merge_warnings(info)


def unstated_warnings(info: Mapping) -> list[str]:
    """The warnings of ``run_warnings`` that nothing of the run said but its log and ``run.json``: a metric plugin
    that failed to import, reference rows not used, metrics merged from an earlier run, a truncated grid. The run's
    printed page (``table3.md``) and its report put them at the top. (The page states too few repetitions, failed
    metrics and reversed orientations itself; cut long texts are a console line and a box of their own in the
    report.)"""
    return plugin_warnings(info) + merge_warnings(info)


def plugin_warnings(info: Mapping) -> list[str]:
    """One sentence per metric plugin that failed to import (``run.json``'s ``plugin_failures``)."""
    out = []
    for module, record in (info.get("plugin_failures") or {}).items():
        left = f"; its metrics {', '.join(record['withdrawn'])} did not run" if record.get("withdrawn") else ""
        out.append(f"Metric plugin {record.get('plugin', module)} ({module}) failed to import: {record['error']}{left}")
    return out


def merge_warnings(info: Mapping) -> list[str]:
    """Rows that are not this run's own computation as asked: reference rows not used, metrics merged from an
    earlier run in the same directory, a grid truncated to the sources."""
    out = []
    reference = info.get("reference") or {}
    if reference.get("not_used"):
        out.append(f"Reference rows {reference.get('file')} not used: {reference['not_used']}")
    if earlier := info.get("earlier_metrics"):
        out.append(
            f"Merged from an earlier run in this directory: {', '.join(earlier)} (this run computed "
            f"{', '.join(info.get('metrics_this_run') or [])}); a new directory keeps a run's metrics alone"
        )
    for note in (info.get("grid") or {}).get("truncated") or []:
        out.append(f"Grid truncated: {note}")
    return out
