"""One self-contained HTML page (images inlined) from one run, several runs, or a sweep.

Runs are grouped into sections: one per KSC setting (pair, k, n). Measures of other
tasks on the same pair (robustness S and I, IFC) join every section of that pair, so
Table 3 and the radar chart show all axes that were measured. A sweep over k or n
also gets a figure of how each measure moves with it.
"""

from __future__ import annotations

import base64
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from reports.aggregate import aggregate_sweep, find_run_dirs, read_run_config
from reports.figures import distance_scatter, radar_chart
from reports.reference_rows import REFERENCE_NOTE, is_reference, labelled
from reports.study_figures import measure_boxplots, sweep_trends
from reports.tables import (MEASURE_LABELS, SIMILARITY_NOTE, metric_labels, similarities, summarise_measures,
                            table3, table3_markdown_cells)

#: Figures a task leaves in its run directory, by file-name prefix, with what good looks like.
TASK_FIGURES = {
    "robustness_": "Distance against sample size s (004 Figure 2 middle and bottom). Size panel: both "
                   "corpora have s texts; imbalance panel: s and N − s texts. The horizontal line is the "
                   "asymptotic distance d(A, B). Good: the curve reaches the line early and stays on it "
                   "(S and I near 1).",
    "ifc_": "Distance from the source to the corpus sampled after each fine-tuning iteration (004 "
            "Figure 5), with the regression line and its 95% band; the horizontal line is the source's "
            "self-distance. Good: distances fall steadily towards the line.",
    "perturb": "Relative shift of each metric under each perturbation of 000 §6.2: how far the perturbed "
               "sample moves from the reference, from another sample of the same source (0%) to a sample "
               "of the other source (100%); grey: no positive gap between the two. A quality metric should "
               "move on perturbations that break fluency or coherence (stopwords, shuffled words, swapped "
               "halves) and not only on length (truncation); a bag-of-words metric stays at 0% under "
               "shuffling.",
}
CAPTIONS = {
    "radar": "Each polygon is one metric over the quality measures (004 Figure 4), on a 0–1 scale, "
             "time left out. Good: a large polygon reaching the rim on every axis.",
    "scatter": "Distance (z-scored within each repetition) against the mixing gap ℓ = j − i, pooled over "
               "repetitions, with the "
               "regression line and its 95% band (004 Figure 2 top; raw distances are in the run's "
               "scatter_<metric>.png). Good: points rise steadily with ℓ, "
               "with little vertical spread at each ℓ (high ρ, ω² and L).",
    "boxplots": "Each measure across repetitions, one box per metric (004 Figure 6). Good: boxes far "
                "to the right and narrow (high and stable).",
    "trend": "How each measure changes with the swept KSC parameter. Larger k makes consecutive corpora "
             "closer and judgements harder, so measures usually fall; a good metric falls least.",
}


@dataclass
class Run:
    """What one run directory holds."""

    path: Path
    config: dict
    measures: pd.DataFrame
    distances: pd.DataFrame | None = None
    failures: dict = field(default_factory=dict)
    orientation_warnings: dict = field(default_factory=dict)

    @property
    def task(self) -> str:
        return str(self.config.get("task") or "ksc")

    @property
    def pair(self) -> str:
        if self.task == "ifc":  # IFC compares one source with generated text: its own section
            return f"{self.config.get('source') or '?'} (generated)"
        return str(self.config.get("pair") or "?")


def load_run(path: Path) -> Run:
    path = Path(path)
    config = read_run_config(path)
    measures = pd.read_csv(path / "measures.csv")
    distances = None
    if (path / "distances.csv").exists():
        distances = pd.read_csv(path / "distances.csv", keep_default_na=False,
                                na_values={"distance": ["", "nan", "NaN"], "z": ["", "nan", "NaN"]})
    manifest = json.loads((path / "run.json").read_text()) if (path / "run.json").exists() else {}
    return Run(path, config, measures, distances, manifest.get("failures") or {},
               manifest.get("orientation_warnings") or {})


def _sections(runs: list[Run]) -> list[tuple[str, list[Run]]]:
    """Group runs: one section per KSC setting, other tasks of the same pair joined to it."""
    ksc = [r for r in runs if r.task == "ksc"]
    others = [r for r in runs if r.task != "ksc"]
    sections: dict[str, list[Run]] = {}
    for run in ksc:
        key = f"{run.pair} · KSC k={run.config.get('k')}, n={run.config.get('n')}"
        sections.setdefault(key, []).append(run)
    for run in others:
        targets = [k for k, rs in sections.items() if rs[0].pair == run.pair and rs[0].task == "ksc"]
        for key in targets or [f"{run.pair} · {run.task}"]:
            sections.setdefault(key, []).append(run)
    return list(sections.items())


def _img(path: Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    mime = "image/svg+xml" if path.suffix == ".svg" else "image/png"
    return f'<img src="data:{mime};base64,{data}" alt="{html.escape(path.stem)}">'


def _figure(path: Path | None, caption: str) -> str:
    if path is None or not Path(path).exists():
        return ""
    return f"<figure>{_img(Path(path))}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _table_html(cells: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in ["metric", *cells.columns])
    rows = []
    for metric, row in cells.iterrows():
        tds = "".join(
            "<td>" + re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(str(v))) + "</td>" for v in row)
        rows.append(f"<tr><th>{html.escape(str(metric))}</th>{tds}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _perturbation_html(run: Run) -> str:
    """The shift table of a perturbation run (its measures are not Table 3 measures)."""
    from reports.perturb_figures import LEGEND, perturbation_cells

    path = run.path / "perturbation.csv"
    if not path.exists():
        return ""
    summary = pd.read_csv(path)
    if summary.empty:
        return ""
    cells = perturbation_cells(summary).rename(index=metric_labels(summary))
    return (f"<h3>Perturbation sensitivity (000 §6.2)</h3>{_table_html(cells)}"
            f"<p class=legend>{html.escape(LEGEND)} Raw distances: perturbation.md of the run.</p>")


def _section_html(title: str, runs: list[Run], fig_dir: Path, slug: str, out_dir: Path) -> str:
    tables = [r.measures for r in runs if r.task != "perturb"]
    measures = labelled(pd.concat(tables, ignore_index=True)) if tables else pd.DataFrame()
    parts = [f"<section><h2>{html.escape(title)}</h2>",
             "<p class=runs>Runs: " + ", ".join(html.escape(str(r.path)) for r in runs) + "</p>"]
    failures = {m: e for r in runs for m, e in r.failures.items()}
    upside_down = {m: e for r in runs for m, e in r.orientation_warnings.items()}
    if not measures.empty:
        summary = summarise_measures(measures)
        cells = table3_markdown_cells(summary)
        parts.append(_table_html(cells.rename(index=metric_labels(summary))))
        legend = "; ".join(MEASURE_LABELS[c] for c in cells.columns if c in MEASURE_LABELS)
        similarity = " " + SIMILARITY_NOTE if similarities(summary) else ""
        parts.append(f"<p class=legend>{html.escape(legend)}. Cells: mean [95% CI] over repetitions; "
                     f"bold: best of the column and within .015 of it. Higher is better.{html.escape(similarity)}</p>")
        if any(map(is_reference, cells.index)):
            parts.append(f"<p class=legend>{html.escape(REFERENCE_NOTE)}</p>")
        wide = table3(summary, with_ci=True)
        wide.to_csv(out_dir / f"table3_{slug}.csv")
        try:
            radar = radar_chart(summary, fig_dir / f"radar_{slug}", title=title)[0]
            parts.append(_figure(radar, CAPTIONS["radar"]))
        except ValueError as exc:
            parts.append(f"<p class=note>No radar chart: {html.escape(str(exc))}</p>")
        parts.append(_figure(measure_boxplots(measures, fig_dir / f"boxplots_{slug}.png"), CAPTIONS["boxplots"]))
    for heading, notes in (("Failed metrics", failures), ("Orientation", upside_down)):
        if notes:
            items = "".join(f"<li><b>{html.escape(m)}</b>: {html.escape(str(e)[:4000])}</li>" for m, e in notes.items())
            parts.append(f"<div class=failures><h3>{heading}</h3><ul>{items}</ul></div>")
    for run in runs:
        if run.task == "ksc" and run.distances is not None and not run.distances.empty:
            scatter = [p for p in distance_scatter(run.distances, fig_dir / slug) if p.stem == "scatter_all"]
            parts.append(_figure(scatter[0] if scatter else None, CAPTIONS["scatter"]))
        if run.task == "perturb":
            parts.append(_perturbation_html(run))
        for prefix, caption in TASK_FIGURES.items():
            for png in sorted(run.path.glob(f"{prefix}*.png")):
                parts.append(_figure(png, caption))
    parts.append("</section>")
    return "\n".join(parts)


STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}th,td{border:1px solid #ccc;padding:.3em .6em}
thead th{background:#f3f3f3}figure{margin:1.5em 0}img{max-width:100%}
figcaption{color:#555;font-size:.9em}.legend,.runs{color:#555;font-size:.85em}
.failures{background:#fff3f3;border:1px solid #e99;padding:.5em 1em}
"""


# Marks on <body> how many figures decoded, so a headless browser can check the page.
LOAD_CHECK = """window.addEventListener('load', () => {
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.figuresLoaded = ok + '/' + imgs.length;
});"""


def build_report(dirs: list[Path | str], out_dir: Path | str | None = None) -> dict[str, Path]:
    """Write ``report.html`` (self-contained) and one Table 3 CSV per section into ``out_dir``."""
    dirs = [Path(d) for d in dirs]
    run_dirs = sorted({r for d in dirs for r in find_run_dirs(d)})
    if not run_dirs:
        raise FileNotFoundError(f"no run directory (with measures.csv) under {', '.join(map(str, dirs))}")
    out_dir = Path(out_dir) if out_dir is not None else dirs[0]
    fig_dir = out_dir / "report_figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    runs = [load_run(p) for p in run_dirs]
    body = []
    for n, (title, members) in enumerate(_sections(runs)):
        body.append(_section_html(title, members, fig_dir, f"s{n}", out_dir))
    if sum(r.task == "ksc" for r in runs) > 1:
        long = pd.concat([aggregate_sweep(d) for d in dirs], ignore_index=True)
        body.append("<section><h2>Across the sweep</h2>"
                    + _figure(sweep_trends(long, fig_dir / "trends.png"), CAPTIONS["trend"]) + "</section>")
    page = (f"<!doctype html><html><head><meta charset=utf-8><title>textmetric-bench report</title>"
            f"<style>{STYLE}</style></head><body data-figures-loaded='pending'><h1>Metric quality report</h1>"
            f"<p>{len(runs)} run(s). Measures follow Kour, Ackerman et al., <i>Measuring the Measuring "
            f"Tools</i> (004).</p>{''.join(body)}<script>{LOAD_CHECK}</script></body></html>")
    path = out_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return {"report_html": path}
