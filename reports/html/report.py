"""One self-contained HTML page (images inlined) from one run, several runs, or a sweep.

Sections follow reports/sweep/runs.py: one per KSC setting, one block per run (never pooled), a pair's
robustness and IFC runs joined into each KSC run's Table 3. A sweep over k or n also gets a figure
of how each measure moves with it.
"""

from __future__ import annotations

import base64
import html
import re
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Callable

import pandas as pd

from textmetric_bench.measures.intervals import INTERVAL_NAME
from textmetric_bench.measures.paired import all_comparisons
from textmetric_bench.measures.summaries import RAW_MEASURES, labelled
from textmetric_bench.reports.figures.drawing import MEASURE_SYMBOLS
from textmetric_bench.reports.figures.heatmap import heatmap_caption, measure_heatmap
from textmetric_bench.reports.figures.ksc import bound_lines_sentence, distance_scatter
from textmetric_bench.reports.figures.overview import bounds_caption, measure_boxplots, sweep_trends
from textmetric_bench.reports.figures.palette import PAGE_METRICS, metric_order
from textmetric_bench.reports.figures.parallel import DrawingProcesses, FigureDrawer, saved
from textmetric_bench.reports.figures.radar import radar_chart, radar_small_multiples, small_multiples_caption
from textmetric_bench.reports.html.tables import (
    PLAIN_SYMBOLS,
    below_chance_html,
    escape,
    negative_divergence_html,
    own_noise_html,
    run_warnings_html,
    scroll,
    significance_html,
    table3_html,
)
from textmetric_bench.reports.labels import SIMILARITY_NOTE, metric_labels, row_labels
from textmetric_bench.reports.reference_rows import REFERENCE_NOTE, is_reference
from textmetric_bench.reports.sweep.aggregate import aggregate_sweep, find_run_dirs
from textmetric_bench.reports.sweep.jobs import apart, left_out_lines
from textmetric_bench.reports.sweep.runs import Run, Section, load_run, profile, sections
from textmetric_bench.reports.tables.significance import column_marks, marks_note
from textmetric_bench.reports.tables.table3 import repetition_counts, table3
from textmetric_bench.reports.tables.table3_markdown import failed_counts

CAPTIONS = {
    "radar": "The same measures overlaid for at most 6 metrics, those with the largest mean over the "
    "axes (004 Figure 4), on a 0–1 scale, time left out; each vertex is the measure's mean over repetitions (the table's number). "
    "Good: a large polygon reaching the rim on every axis.",
    "scatter": "Distance (z-scored within each repetition) against the mixing gap ℓ = j − i, pooled over "
    "repetitions, with the regression line and its 95% band (004 Figure 2 top; raw distances are "
    "in the run's scatter_<metric>.png). Each panel title gives two numbers, each named: ρ, the "
    "table's (Spearman ρ within each repetition, averaged over repetitions), and the pooled ρ (z): one "
    "Spearman ρ over the z-scored distances of all repetitions drawn, which differs from it. Good: "
    "points rise steadily with ℓ, with little vertical spread at each ℓ (high ρ, ω² and L).",
    "boxplots": "Each measure across repetitions, one box per metric, one value per repetition (004 Figure "
    "6), the largest median on top. Good: boxes far to the right and narrow (high and stable).",
    "trend": "How each measure changes with the swept KSC parameter: mean over repetitions of each run. "
    "Larger k makes consecutive corpora closer and judgements harder, so measures usually fall; a "
    "good metric falls least. Bars: the 95% interval of each mean; the legend names each setting's marker fill.",
}


def _img(path: Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    mime = "image/svg+xml" if path.suffix == ".svg" else "image/png"
    return f'<img src="data:{mime};base64,{data}" alt="{html.escape(path.stem)}">'


def _figure(path: Path | None, caption: str) -> str:
    if path is None or not Path(path).exists():
        return ""
    return f"<figure>{_img(Path(path))}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _table_html(cells: pd.DataFrame) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in ["metric", *cells.columns])
    rows = []
    for metric, row in cells.iterrows():
        tds = "".join("<td>" + re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", escape(v)) + "</td>" for v in row)
        rows.append(f"<tr><th>{escape(metric)}</th>{tds}</tr>")
    return scroll(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _perturbation_html(run: Run) -> str:
    """The shift table of a perturbation run (its measures are not Table 3 measures)."""
    from textmetric_bench.reports.figures.perturb import LEGEND, perturbation_cells

    path = run.path / "perturbation.csv"
    if not path.exists():
        return ""
    summary = pd.read_csv(path)
    if summary.empty:
        return ""
    cells = perturbation_cells(summary).rename(index=metric_labels(summary))
    return (
        f"<h3>Perturbation sensitivity (000 §6.2)</h3>{_table_html(cells)}"
        f"<p class=legend>{escape(LEGEND)} Raw distances: perturbation.md of the run.</p>"
    )


def _notes_html(runs: list[Run]) -> str:
    parts = []
    for heading, attr in (("Failed metrics", "failures"), ("Orientation", "orientation_warnings")):
        notes = {m: e for r in runs for m, e in getattr(r, attr).items()}
        if notes:
            items = "".join(f"<li><b>{escape(m)}</b>: {escape(str(e)[:4000])}</li>" for m, e in notes.items())
            parts.append(f"<div class=failures><h4>{heading}</h4><ul>{items}</ul></div>")
    return "".join(parts)


def corpora_line(run: Run) -> str:
    """What the run read, per source (``run.json``'s ``sources``): the texts its corpora were drawn from (distinct,
    normalised, the card's selection), the raw texts its files held where more, and the first 12 hex digits of each
    file's sha256 (up to three files); empty for a run that recorded none."""
    sources = run.manifest.get("sources")
    if not isinstance(sources, dict) or not sources:
        return ""
    described = []
    for name, record in sources.items():
        if not isinstance(record, dict):
            continue
        texts, raw = record.get("texts"), record.get("raw_texts")
        counts = f"{texts:,} texts to draw from" if isinstance(texts, int) else "texts"
        if isinstance(texts, int) and isinstance(raw, int) and raw > texts:
            counts += f" ({raw:,} read)"
        digests = [str(f.get("sha256"))[:12] for f in record.get("files") or [] if isinstance(f, dict)]
        files = f", sha256 {', '.join(digests)}" if 0 < len(digests) <= 3 else ""
        described.append(f"{name}: {counts}{files}")
    return "Corpora: " + "; ".join(described) if described else ""


def _task_figures(run: Run) -> list[str]:
    parts = [_perturbation_html(run)] if run.task == "perturb" else []
    for prefix, caption in (run.manifest.get("figures") or {}).items():  # the task's, by file-name prefix
        parts += [_figure(png, caption) for png in sorted(run.path.glob(f"{prefix}*.png"))]
    return parts


def _run_block(
    run: Run,
    joined: list[Run],
    fig_dir: Path,
    slug: str,
    out_dir: Path,
    root: Path | None,
    figure_context: BaseContext | DrawingProcesses | None = None,
    apart: str = "",
) -> str:
    """One run's Table 3 (its joined runs' columns added), significance, notes and figures (drawn in processes
    ``figure_context`` starts, textmetric_bench.reports.figures.parallel); ``apart``: the overrides that set it apart
    from the other runs of its setting, in its heading."""
    parts = [f"<h3 class=run>Run {escape(run.label(root))}{f' · {escape(apart)}' if apart else ''}</h3>"]
    if joined:
        parts.append(
            "<p class=runs>Joined: " + "; ".join(f"{escape(r.task)} {escape(r.label(root))}" for r in joined) + "</p>"
        )
    if corpora := corpora_line(run):
        parts.append(f"<p class=runs>{escape(corpora)}</p>")
    parts.append(
        run_warnings_html([(f"{r.task} run {r.label(root)}", r.manifest, r.repetitions) for r in (run, *joined)])
    )
    if run.measures.empty:
        return "".join(parts) + "<p class=note>No metric produced measures.</p>"
    summary, missing = profile(run, joined) if run.task == "ksc" else (run.summary(), {})
    setting = run.setting + "".join(f" + {r.task} ({r.setting})" for r in joined)
    measures = labelled(pd.concat([r.measures for r in (run, *joined)], ignore_index=True))
    with FigureDrawer(4, figure_context) as drawer:  # the figures are drawn while the tables are made
        figures = _submit_overview_figures(
            drawer, summary, measures, fig_dir, slug, setting, block_warnings([run, *joined])
        )
        comparisons = {}
        for member in (run, *joined):
            comparisons.update(all_comparisons(labelled(member.measures), RAW_MEASURES))
        means = table3(summary)
        counts = repetition_counts(summary)
        marks = column_marks(comparisons, means, counts=counts)
        failed = {m: c for member in (run, *joined) for m, c in failed_counts(member.failures).items()}
        kinds = {m: k for member in (run, *joined) for m, k in (member.manifest.get("orientation") or {}).items()}
        note = marks_note(comparisons, marks, means, PLAIN_SYMBOLS, counts=counts)
        planned = int(run.config.get("repetitions") or run.repetitions)  # as the run asked (some may have failed)
        parts.append(table3_html(summary, marks, missing, note, failed, kinds, planned))
        legend = ""
        if row_labels(summary, [*means.index, *failed], kinds)[1]:
            legend += SIMILARITY_NOTE + " "
        if any(map(is_reference, means.index)):
            legend += REFERENCE_NOTE
        if legend:
            parts.append(f"<p class=legend>{escape(legend)}</p>")
        wide = table3(summary, with_ci=True).rename_axis("metric")
        wide.insert(0, "runs", ";".join(str(r.path) for r in (run, *joined)))  # where every number comes from
        wide.to_csv(out_dir / f"table3_{slug}.csv")
        parts += [
            below_chance_html(summary),
            significance_html(comparisons, means),
            own_noise_html(run.path),
            negative_divergence_html(run.distances),
            _notes_html([run, *joined]),
        ]
        parts += figures()
    if run.task == "ksc" and run.distances is not None and not run.distances.empty:
        bounds = bound_lines_sentence(run.distances["metric"].unique())  # "" when the run has no bound
        parts.append(_figure(_scatter_grid(run, fig_dir / slug), f"{CAPTIONS['scatter']} {bounds}".strip()))
    for member in (run, *joined):
        parts += _task_figures(member)
    return "\n".join(parts)


def page_metrics(runs: list[Run]) -> set[str]:
    """Every metric the runs of a page show: their measures' and their distances' (the palette numbers them at
    once, ``textmetric_bench.reports.figures.palette.metric_order``)."""
    names: set[str] = set()
    for run in runs:
        for frame in (labelled(run.measures), run.distances):  # reference rows by their label, as figures name them
            if frame is not None and "metric" in frame:
                names.update(map(str, frame["metric"].unique()))
    return names


def _scatter_grid(run: Run, out_dir: Path) -> Path | None:
    """The run's own grid of z-scored distances (``scatter_all.png``, written by its task from the same
    ``distances.csv``), or, where it is missing or older than the distances, or drawn with other colours than the
    page's (the page shows metrics the run does not), the grid drawn afresh (its caption, as the task's, the run's
    warnings)."""
    written, distances = run.path / "scatter_all.png", run.path / "distances.csv"
    fresh = written.is_file() and distances.is_file() and written.stat().st_mtime >= distances.stat().st_mtime
    if fresh and set(PAGE_METRICS.get()) <= page_metrics([run]):
        return written
    scatter = distance_scatter(run.distances, out_dir, setting=run.setting, per_metric=False, warnings=run.warnings)
    return scatter[0] if scatter else None


def block_warnings(runs: list[Run]) -> list[str]:
    """The warnings of a run block's figures: each run's (``Run.warnings``, as its own figures carry them), named
    after its task where runs are joined, each said once."""
    said: dict[str, None] = {}
    for r in runs:
        for warning in r.warnings:
            said[f"{r.task} run: {warning}" if len(runs) > 1 else warning] = None
    return list(said)


#: At most this many distinct warnings under the sweep's trend figure; the rest are counted (each run's block says
#: its own).
SWEEP_WARNINGS_SHOWN = 6


def sweep_warnings(runs: list[Run]) -> list[str]:
    """The warnings of a sweep's KSC runs (``Run.warnings``) under its trend figure: each distinct one once, with how
    many of the runs it concerns, the most common first; beyond ``SWEEP_WARNINGS_SHOWN`` a count of the rest."""
    ksc = [r for r in runs if r.task == "ksc"]
    counts: dict[str, int] = {}
    for r in ksc:
        for warning in dict.fromkeys(r.warnings):
            counts[warning] = counts.get(warning, 0) + 1
    ranked = sorted(counts, key=lambda w: -counts[w])  # stable: the first run's order among equals
    out = [f"{counts[w]} of {len(ksc)} runs: {w}" for w in ranked[:SWEEP_WARNINGS_SHOWN]]
    if len(ranked) > SWEEP_WARNINGS_SHOWN:
        out.append(f"{len(ranked) - SWEEP_WARNINGS_SHOWN} more warnings: each run's block above says its own")
    return out


def _submit_overview_figures(
    drawer: FigureDrawer,
    summary: pd.DataFrame,
    measures: pd.DataFrame,
    fig_dir: Path,
    slug: str,
    setting: str,
    warnings: list[str],
) -> Callable[[], list[str]]:
    """Start drawing the heatmap of every metric and measure, one small radar per metric, one overlaid radar (each
    titled with the run's ``setting``: pair, k, n, repetitions; ``warnings`` in each caption) and the box plots;
    returns what gives their HTML."""
    drawable = summary[summary["measure"].isin([*MEASURE_SYMBOLS, "T", "T100"])]  # axes the radars can label
    # the longest jobs first (the small radars, then the box plots), so no process idles at the end
    small = drawer.submit(
        saved,
        radar_small_multiples,
        fig_dir / f"radars_{slug}.png",
        drawable,
        title=f"Each metric's profile (mean over repetitions): {setting}",
        warnings=warnings,
    )
    boxplots = drawer.submit(
        measure_boxplots, measures, fig_dir / f"boxplots_{slug}.png", setting=setting, warnings=warnings
    )
    heatmap = drawer.submit(
        saved,
        measure_heatmap,
        fig_dir / f"heatmap_{slug}.png",
        summary,
        sort_by=None,  # A, or the first measure the run has (a robustness or IFC run has no A)
        setting=setting,
        warnings=warnings,
    )
    radar = drawer.submit(
        radar_chart,
        drawable,
        fig_dir / f"radar_{slug}",
        title=setting,
        warnings=warnings,
    )

    def html_of() -> list[str]:
        parts = []
        try:
            parts.append(_figure(drawer.result(heatmap), heatmap_caption(summary)))
        except ValueError as exc:
            parts.append(f"<p class=absent>No heatmap: {escape(exc)}</p>")
        try:
            parts.append(_figure(drawer.result(small), small_multiples_caption(drawable)))
            parts.append(_figure(drawer.result(radar)[0], CAPTIONS["radar"]))
        except ValueError as exc:
            parts.append(f"<p class=absent>No radar chart: {escape(exc)}</p>")
        bounds = bounds_caption(set(measures["metric"]))  # "" when the run has no bound
        parts.append(_figure(drawer.result(boxplots), f"{CAPTIONS['boxplots']} {bounds}".strip()))
        return parts

    return html_of


def _section_html(
    section: Section,
    fig_dir: Path,
    slug: str,
    out_dir: Path,
    root: Path | None,
    figure_context: BaseContext | DrawingProcesses | None,
) -> str:
    parts = [f"<section><h2>{escape(section.title)}</h2>"]
    if len(section.ksc) > 1:
        parts.append(
            f"<p class=runs>{len(section.ksc)} separate runs of this setting, shown one by one (never pooled).</p>"
        )
    # several runs of one setting: each headed by what sets it apart (a seed, a metric's parameter)
    heads = apart({r.path: str(r.config.get("overrides") or "").split() for r in section.ksc})
    for n, run in enumerate(section.ksc):
        head = heads[run.path] if len(set(heads.values())) > 1 else ""  # nothing sets them apart: no head
        parts.append(
            _run_block(run, section.joined[run.path], fig_dir, f"{slug}r{n}", out_dir, root, figure_context, head)
        )
    for n, run in enumerate(section.others):
        if run.task == "perturb" or run.measures.empty:
            parts += [f"<h3 class=run>Run {escape(run.label(root))}</h3>", *_task_figures(run), _notes_html([run])]
        else:
            parts.append(_run_block(run, [], fig_dir, f"{slug}o{n}", out_dir, root, figure_context))
    parts.append("</section>")
    return "\n".join(parts)


#: Prose keeps a readable measure (1100 px); tables and figures may use the window's width, and a table wider than
#: that scrolls inside its own box with the metric column fixed (position: sticky), marked by a line saying so.
STYLE = """
body{font-family:system-ui,sans-serif;max-width:1800px;margin:2em auto;padding:0 1.5em;color:#222}
h1,h2,h3,h4,p,ul,figcaption,summary,.warning,.note,.failures,.absent{max-width:1100px;box-sizing:border-box}
table{border-collapse:separate;border-spacing:0;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;border-width:0 1px 1px 0;padding:.3em .6em;white-space:nowrap;background:#fff}
tr>:first-child{border-left-width:1px}thead tr:first-child>*{border-top-width:1px}
.scroll{overflow-x:auto;max-width:100%}.scroll>table{margin:.3em 0 .6em}
.scroll tr>:first-child{position:sticky;left:0;z-index:1;box-shadow:2px 0 3px -1px rgba(0,0,0,.18)}
.scroll.overflowing::before{content:"⇆ wider than the window: scroll sideways inside the table; the metric column stays";
display:block;position:sticky;left:0;color:#555;font-size:.8em;width:max-content}
thead th{background:#f3f3f3}figure{margin:1.5em 0}img{max-width:100%}
figcaption{color:#555;font-size:.9em}.legend,.runs{color:#555;font-size:.85em}.runs,h3.run{overflow-wrap:anywhere}.ci{color:#666;font-size:.85em}
tr.bound-ceiling>*,tr.bound-floor>*{font-style:italic;background:#f7f7f7}td.missing{color:#999}
span.top{color:#1f5fa8}span.below{color:#b00020;font-weight:bold}span.failed{color:#b00020;font-size:.85em;font-weight:normal}.matrix td{text-align:right}
.matrix th.turned{vertical-align:bottom;padding:.4em .2em}.matrix th.turned span{writing-mode:vertical-rl;transform:rotate(180deg)}
td.better{background:#cfe8cf}td.worse{background:#f3d0d0}
td.tie{background:#eee}td.hint{background-image:repeating-linear-gradient(135deg,transparent 0 5px,rgba(255,255,255,.7) 5px 9px)}.warning{background:#fff6d6;border:1px solid #e0c060;padding:.4em .8em}
.failures,.note{background:#fff3f3;border:1px solid #e99;padding:.5em 1em}
.absent{background:#f6f6f6;border:1px solid #ccc;color:#444;padding:.5em 1em}
"""
NUMBERS = (
    "Every number in a table is a measure's mean over the repetitions of one run with its "
    f"{INTERVAL_NAME}; runs are never pooled. Figures say in their captions when they show another "
    "number (a pooled ρ, one value per repetition)."
)

# Marks on <body> how many figures decoded, so a headless browser can check the page; marks each table box that
# is wider than the window (it then says so above the table).
LOAD_CHECK = """const markOverflow = () => document.querySelectorAll('.scroll').forEach(box =>
  box.classList.toggle('overflowing', box.scrollWidth > box.clientWidth + 1));
window.addEventListener('resize', markOverflow);
document.addEventListener('toggle', markOverflow, true);
window.addEventListener('load', () => {
  markOverflow();
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.figuresLoaded = ok + '/' + imgs.length;
});"""


def build_report(
    dirs: list[Path | str],
    out_dir: Path | str | None = None,
    *,
    figure_context: BaseContext | DrawingProcesses | None = None,
) -> dict[str, Path]:
    """Write ``report.html`` (self-contained) and one Table 3 CSV per run block (``table3_s<i>r<j>.csv``); its
    figures drawn in processes that ``figure_context`` starts (None: in this process;
    textmetric_bench.reports.figures.parallel)."""
    dirs = [Path(d) for d in dirs]
    run_dirs = sorted({r for d in dirs for r in find_run_dirs(d)})
    if not run_dirs:
        raise FileNotFoundError(f"no run directory (with measures.csv) under {', '.join(map(str, dirs))}")
    out_dir = Path(out_dir) if out_dir is not None else dirs[0]
    fig_dir = out_dir / "report_figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    runs = [load_run(p) for p in run_dirs]
    root = dirs[0] if len(dirs) == 1 else None
    with metric_order(page_metrics(runs)):  # a metric has one colour and marker in every figure of the page
        body = [
            _section_html(section, fig_dir, f"s{n}", out_dir, root, figure_context)
            for n, section in enumerate(sections(runs))
        ]
        if sum(r.task == "ksc" for r in runs) > 1:
            long = pd.concat([aggregate_sweep(d) for d in dirs], ignore_index=True)
            trends = sweep_trends(long, fig_dir / "trends.png", warnings=sweep_warnings(runs))
            shown = (
                _figure(trends, CAPTIONS["trend"])
                if trends is not None
                else "<p class=note>No trend figure: "
                + (
                    "no run has a quality measure to follow."
                    if any(c in long and long[c].nunique() > 1 for c in ("k", "n"))
                    else "k and n are the same in every KSC run here (the runs differ in other settings, each in its "
                    "own block above)."
                )
                + "</p>"
            )
            body.append(f"<section><h2>Across the sweep</h2>{shown}</section>")
    left_out = [line for d in dirs for line in left_out_lines(d)]  # a sweep's jobs that wrote no measures
    missing = (
        "<div class=failures><h4>Jobs without results (not in this report)</h4><ul>"
        + "".join(f"<li>{escape(line)}</li>" for line in left_out)
        + "</ul></div>"
        if left_out
        else ""
    )
    page = (
        f"<!doctype html><html><head><meta charset=utf-8><title>textmetric-bench report</title>"
        f"<style>{STYLE}</style></head><body data-figures-loaded='pending'><h1>Metric quality report</h1>"
        f"<p>{len(runs)} run(s). Measures follow Kour, Ackerman et al., <i>Measuring the Measuring "
        f"Tools</i> (004). {NUMBERS}</p>{missing}{''.join(body)}<script>{LOAD_CHECK}</script></body></html>"
    )
    path = out_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return {"report_html": path}
