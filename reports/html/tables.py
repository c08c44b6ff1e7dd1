"""HTML pieces of the report that are tables: Table 3 with its ▲/▼ marks and bounds, the significance
matrix, a metric's own noise, and the notes that name every number (reports/html/report.py lays them out)."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from textmetric_bench.measures import registry
from textmetric_bench.measures.intervals import FEW_REPETITIONS, INTERVAL_NAME, few_repetitions_warning
from textmetric_bench.measures.paired import TEST_NAME
from textmetric_bench.measures.run_warnings import unstated_warnings
from textmetric_bench.measures.text_limits import over_limit_sentence, reader_name
from textmetric_bench.reports.bounds import bound_label, bound_of, table_order
from textmetric_bench.reports.labels import MEASURE_LABELS, format_score, metric_labels, plural, row_labels
from textmetric_bench.reports.tables.significance import HINT_NOTE, TOP_MARK, WILCOXON_NOTE
from textmetric_bench.reports.tables.table3_markdown import complete_repetitions
from textmetric_bench.reports.tables.table3 import (
    BELOW_MARK,
    BELOW_NOTE,
    BOLD_TOLERANCE,
    FEWER_REPETITIONS_NOTE,
    below_chance_cells,
    best_mask,
    fewer_repetitions,
    repetition_counts,
    table3,
)

#: How each Table 3 column is written in HTML (a scaled measure with its unit, which never wraps).
SYMBOLS = {m.column: f"{m.html} {m.shown_unit.replace(' ', '&nbsp;')}".strip() for m in registry.MEASURES.values()}
#: The same symbols as plain text (no unit), for sentences that are escaped: what a legend calls a column.
PLAIN_SYMBOLS = {m.column: html.unescape(re.sub(r"<[^>]+>", "", m.html)) for m in registry.MEASURES.values()}


def escape(value) -> str:
    return html.escape(str(value))


def scroll(table: str) -> str:
    """A wide table scrolls sideways in its own box instead of wrapping cells or widening the page."""
    return f"<div class=scroll>{table}</div>"


def _long_text_notes(manifest: dict) -> list[tuple[str, str, str]]:
    """(class, mark, sentence) of each ``long_texts`` record: a warning where texts were cut, a note where they were
    read whole (windows)."""
    notes = []
    for key, record in (manifest.get("long_texts") or {}).items():
        sentence = over_limit_sentence(reader_name(key, record), record)
        if sentence:
            cut = record.get("cuts")
            notes.append(("warning", "⚠ Long texts", sentence) if cut else ("note", "Long texts", sentence))
    return notes


def _notes_html(notes: list[tuple[str, str, str, str]]) -> str:
    """One box per distinct (class, mark, sentence), naming every run it concerns (the fourth item; empty: none
    named): runs joined into one table share a warning in one box, not one box each."""
    runs: dict[tuple[str, str, str], list[str]] = {}
    for kind, mark, sentence, which in notes:
        named = runs.setdefault((kind, mark, sentence), [])
        if which and which not in named:
            named.append(which)
    return "".join(
        f"<p class={kind}>{mark}{' (' + escape('; '.join(named)) + ')' if named else ''}: {escape(sentence)}.</p>"
        for (kind, mark, sentence), named in runs.items()
    )


def run_warnings_html(runs: list[tuple[str, dict, int]]) -> str:
    """The warnings of runs shown in one table, each ``(which, manifest, repetitions)``: fewer than 5 repetitions,
    long texts (cut: a warning; read whole, in windows: a note) and those no table states (``unstated_warnings``: a plugin that failed to
    import, reference rows not used, metrics merged from an earlier run, a truncated grid); a warning that several
    runs share is one box naming them all."""
    notes = []
    for which, _, repetitions in runs:
        few = few_repetitions_warning(int(repetitions))
        if few:
            notes.append(("warning", "⚠ Warning", few, which))
    for which, manifest, _ in runs:
        notes += [(*note, which) for note in _long_text_notes(manifest)]
    for which, manifest, _ in runs:
        notes += [("warning", "⚠ Warning", w, which) for w in unstated_warnings(manifest)]
    return _notes_html(notes)


def _row_head(metric, labels: dict) -> tuple[str, str]:
    """The row header of a metric and its row class (bounds are set apart)."""
    kind = bound_of(metric)
    name = labels.get(metric, str(metric))
    return escape(bound_label(name) if kind else name), f" class=bound-{kind}" if kind else ""


def table3_html(
    summary: pd.DataFrame,
    marks: dict,
    missing: dict[str, str],
    marks_note: str = "",
    failed: dict[str, tuple[int, int]] | None = None,
    orientation: Mapping[str, str] | None = None,
    repetitions: int | None = None,
) -> str:
    """004 Table 3 with every profile column; ``marks``: per column, the metrics not separated from its best (▲),
    explained by ``marks_note``; ▼: an A or A^w below chance; ``missing``: measure -> why no run measured it (its
    column is left out, and one note below the table names them);
    ``failed``: metric -> (failed, all) evaluations, marked in its row with how many of the ``repetitions`` are
    complete, the only ones its cells average (a metric with no complete repetition keeps a row without numbers,
    named as its kind by the runs' ``orientation``)."""
    failed = dict(failed or {})
    complete = complete_repetitions(summary, failed)
    means = table3(summary)
    for metric in failed:
        if metric not in means.index:
            means.loc[metric] = np.nan
    means = means.reindex(table_order(means.index))  # ceiling first and floor last, a failed metric between
    below = set(below_chance_cells(summary)[["metric", "measure"]].itertuples(index=False, name=None))
    wide = table3(summary, with_ci=True)
    columns = [c for c in SYMBOLS if c in means.columns and c not in missing]
    bold = best_mask(means, counts=repetition_counts(summary))
    labels, _ = row_labels(summary, means.index, orientation)
    head = "".join(f"<th title='{escape(MEASURE_LABELS.get(c, c))}'>{SYMBOLS[c]}</th>" for c in columns)
    rows = []
    for metric in means.index:
        name, cls = _row_head(metric, labels)
        if metric in failed:
            of = f"{complete[metric]} of {repetitions} repetitions complete; " if repetitions else ""
            name += (
                f" <span class=failed title='a repetition with a failed evaluation counts for none: see Failed "
                f"metrics'>✗ {of}{failed[metric][0]} of {failed[metric][1]} evaluations failed</span>"
            )
        tds = []
        for c in columns:
            if not np.isfinite(means.at[metric, c]):
                tds.append("<td class=missing>–</td>")
                continue
            value = format_score(means.at[metric, c])
            text = f"<b>{value}</b>" if bold.at[metric, c] else value
            if metric in marks.get(c, ()):
                text += f" <span class=top title='not separated from the best'>{TOP_MARK}</span>"
            if (metric, c) in below:
                text += f" <span class=below title='significantly below chance'>{BELOW_MARK}</span>"
            low, high = wide.at[metric, f"{c}_ci_low"], wide.at[metric, f"{c}_ci_high"]
            if np.isfinite(low) and np.isfinite(high):
                text += f" <span class=ci>[{format_score(low)}, {format_score(high)}]</span>"
            tds.append(f"<td>{text}</td>")
        rows.append(f"<tr{cls}><th>{name}</th>{''.join(tds)}</tr>")
    table = f"<table class=table3><thead><tr><th>metric</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    notes = (
        "<br>Not in this table, as no run in this report measured them: "
        + "; ".join(f"{SYMBOLS[c]} ({escape(why)})" for c, why in missing.items())
        + "."
        if missing
        else ""
    )
    bounds = [bound_label(m) for m in means.index if bound_of(m) is not None]
    said = " and ".join(f"<i>{escape(b)}</i>" for b in bounds)
    bounds_note = f" {said} {'are bounds' if len(bounds) > 1 else 'is a bound'}, not ranked." if bounds else ""
    over = (
        "the complete repetitions (a repetition with a failed evaluation counts for none)" if failed else "repetitions"
    )
    caption = (
        f"Cells: mean over {over} [{INTERVAL_NAME}]; bold: best of the column and those within "
        f"{BOLD_TOLERANCE:g} of it{', ' + FEWER_REPETITIONS_NOTE if fewer_repetitions(summary) else ''}. "
        f"{escape(marks_note)} Higher is better.{bounds_note}" + (f" {escape(BELOW_NOTE)}" if below else "")
    )
    return scroll(table) + f"<p class=legend>{caption}{notes}</p>"


def significance_html(comparisons: dict[str, pd.DataFrame], means: pd.DataFrame) -> str:
    """One matrix per measure: row − column mean difference; green: row better, red: worse (Holm p < α)."""
    if not comparisons:
        return ""
    scaled = [
        f"{shown.html} in the table's unit {escape(shown.shown_unit)} (the test is the same in {escape(shown.unit)}). "
        for shown in (registry.MEASURES.get(m) for m in comparisons)
        if shown is not None and shown.scaled
    ]
    parts = [
        (
            f"<h4>Which metric is better</h4><p class=legend>Test: {escape(TEST_NAME)}. A cell is the mean "
            f"of (row − column) over the paired repetitions; green: row significantly better, red: "
            f"significantly worse, grey: not separated; hover for Holm p. {''.join(scaled)}{escape(WILCOXON_NOTE)} "
            f"Also written as significance_&lt;measure&gt;.csv by the run and by aggregate.</p>"
        )
    ]
    hints = False
    for measure, frame in comparisons.items():
        shown = registry.measure(measure) if measure in registry.MEASURES else None
        column = shown.column if shown else measure
        order = list(means[column].sort_values(ascending=False, kind="stable").index) if column in means else []
        order += sorted((set(frame["metric_a"]) | set(frame["metric_b"])) - set(order), key=str)
        symbol = SYMBOLS.get(column, escape(measure))
        scale = shown.shown_scale if shown else 1.0  # T is tested in op/s and shown in the table's [100 op/s]
        lookup = {}
        for r in frame.itertuples():
            few = r.n < FEW_REPETITIONS
            hints |= few
            lookup[(r.metric_a, r.metric_b)] = (r.mean_diff / scale, r.p_holm, r.better, few, r.n)
            # 0.0 - d, not -d: two equal metrics read .000 both ways, not -.000 (a negated zero)
            lookup[(r.metric_b, r.metric_a)] = ((0.0 - r.mean_diff) / scale, r.p_holm, r.better, few, r.n)
        head = "".join(f"<th class=turned><span>{escape(bound_label(m))}</span></th>" for m in order)
        rows = []
        for a in order:
            cells = []
            for b in order:
                if a == b or (a, b) not in lookup:
                    cells.append("<td class=diag></td>")
                    continue
                diff, p, better, few, n = lookup[(a, b)]
                cls = "better" if better == a else "worse" if better == b else "tie"
                title = f"Holm p = {p:.4f}"
                if few:  # below FEW_REPETITIONS a colour is a hint, not a finding: striped, and the title says so
                    cls, title = f"'{cls} hint'", f"{title}; {n} paired repetitions: a hint, not a finding"
                cells.append(f"<td class={cls} title='{title}'>{format_score(diff)}</td>")
            rows.append(f"<tr><th>{escape(bound_label(a))}</th>{''.join(cells)}</tr>")
        table = (
            f"<table class=matrix><thead><tr><th>{symbol}: row − column"
            f"</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
        parts.append(f"<details><summary>{symbol}</summary>{scroll(table)}</details>")
    if hints:
        parts.insert(1, f"<p class=legend>{escape(HINT_NOTE)}</p>")
    return "".join(parts)


def own_noise_html(run_dir: Path) -> str:
    """The run's own_noise.csv as a small table, or nothing when the run has none."""
    path = Path(run_dir) / "own_noise.csv"
    if not path.exists():
        return ""
    frame = pd.read_csv(path)
    required = {"metric", "seeds", "own_sd", "data_sd", "ratio"}
    if not required <= set(frame.columns):
        raise ValueError(f"{path}: own-noise table needs columns {sorted(required)}; it has {list(frame.columns)}")
    rows = "".join(
        f"<tr><th>{escape(r.metric)}</th><td>{int(r.seeds)}</td><td>{r.own_sd:.4g}</td><td>{r.data_sd:.4g}</td>"
        f"<td>{format_score(r.ratio)}</td></tr>"
        for r in frame.itertuples()
    )
    table = (
        "<table><thead><tr><th>metric</th><th>own seeds</th><th>own sd</th><th>data sd</th><th>ratio</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )
    return (
        f"<h4>A metric's own noise</h4>{scroll(table)}<p class=legend>Ratio = own sd / data sd: the spread "
        "of the metric's value across its own seeds on fixed corpora, over its spread across data "
        "repetitions; near 1 or above, the metric's own randomness is as large as the data's.</p>"
    )


def below_chance_html(summary: pd.DataFrame) -> str:
    """A remark on every A or A^w significantly below chance (▼ in Table 3), or nothing when none is."""
    below = below_chance_cells(summary)
    if below.empty:
        return ""
    labels = metric_labels(summary)
    items = "".join(
        f"<li><b>{escape(labels.get(r.metric, r.metric))}</b>: {'A<sup>w</sup>' if r.measure == 'Aw' else 'A'} = "
        f"{format_score(r.mean)} over {plural(int(r.n), 'repetition')} (Holm p = {r.p_holm:.3g})</li>"
        for r in below.itertuples()
    )
    return (
        f"<div class=note><p>Below chance. {escape(BELOW_NOTE)} A constant metric ties every judgement; "
        "a metric below it ranks the nearer of two nested pairs as the farther more often than not, at "
        f"this corpus size and setting.</p><ul>{items}</ul></div>"
    )


def negative_divergence_html(distances: pd.DataFrame | None) -> str:
    """Why a divergence came out negative (estimator bias), for each metric with negative distances."""
    if distances is None or distances.empty or "distance" not in distances.columns:
        return ""
    frame = distances
    if "orientation" in frame.columns:
        frame = frame[frame["orientation"] != "similarity"]
    values = pd.to_numeric(frame["distance"], errors="coerce")
    negative = frame[values < 0].groupby("metric").size()
    if negative.empty:
        return ""
    totals = frame.groupby("metric").size()
    items = "".join(f"<li><b>{escape(m)}</b>: {n} of {totals[m]} distances below 0</li>" for m, n in negative.items())
    return (
        "<div class=note><p>Negative values. A divergence (KL, JS, FID ...) is never below 0, but its "
        "plug-in estimate from two samples can be: estimator bias, e.g. an n-gram KL whose models are "
        "truncated or smoothed on a shared vocabulary, or a bias-corrected estimate of corpora that are "
        "close. It is not a real negative divergence. (For a metric that is not a divergence, a negative "
        "value may simply be its scale.) The measures use only the order of the distances, so they "
        f"stand; raw values are in distances.csv.</p><ul>{items}</ul></div>"
    )
