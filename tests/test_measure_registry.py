"""One definition per measure (bench/measures/registry.py): every table, figure, card, suite rank, summary and the
gate read a measure's name, symbol, direction and scale from the registry, and each task writes exactly the measures
the registry says it produces."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from checkout_copy import copy_checkout, installed_layout, installed_metadata

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.measures import registry
from textmetric_bench.measures.registry import MEASURES, measure


def test_every_view_writes_a_measure_as_the_registry_does():
    from textmetric_bench.measures.chance import CHANCE
    from textmetric_bench.measures.summaries import RAW_MEASURES
    from textmetric_bench.reports.cards import figure as card
    from textmetric_bench.reports.figures import drawing, heatmap, overview
    from textmetric_bench.reports.html import tables
    from textmetric_bench.reports.labels import MEASURE_LABELS, QUALITY_MEASURES, TABLE3_ORDER
    from textmetric_bench.reports.paper_table3 import diagnosis
    from textmetric_bench.reports.suite.ranks import HIGHER_IS_BETTER
    from textmetric_bench.reports.suite.settings import SUITE_MEASURES

    assert list(RAW_MEASURES) == list(MEASURES) and set(SUITE_MEASURES) == set(MEASURES) == set(HIGHER_IS_BETTER)
    assert TABLE3_ORDER == tuple(m.column for m in MEASURES.values()) and "T100" in TABLE3_ORDER
    assert set(QUALITY_MEASURES) == {n for n, m in MEASURES.items() if m.quality} and "T" not in QUALITY_MEASURES
    assert set(card.PANEL_ORDER) == set(MEASURES)
    for name, m in MEASURES.items():
        assert MEASURE_LABELS[m.column] == f"{m.column}: {m.legend}"  # the legend names the column as headed
        assert tables.SYMBOLS[m.column].startswith(m.html)
        assert drawing.MEASURE_SYMBOLS[name] == drawing.MEASURE_SYMBOLS[m.column] == m.math
        assert card.SYMBOLS[name].startswith(m.math) and card.SCALE.get(name, 1.0) == m.shown_scale
        assert HIGHER_IS_BETTER[name] is m.higher_is_better
        assert CHANCE.get(name) == m.chance
        if m.quality:
            assert overview.MEASURE_TITLES[name] == f"{m.math}: {m.title}"
        if m.scaled:  # T: shown in [100 op/s] in every table, heatmap and card
            assert tables.SYMBOLS[m.column] == f"{m.html} {m.shown_unit.replace(' ', '&nbsp;')}"
            assert heatmap.HEADERS[m.column].endswith(m.shown_unit) and card.SYMBOLS[name].endswith(m.shown_unit)
            assert diagnosis.LABELS[m.column] == m.symbol


def test_each_task_writes_the_measures_the_registry_names_for_it():
    from textmetric_bench.tasks import ksc, reference, robustness

    assert set(ksc.MEASURE_COLUMNS[2:]) == set(registry.names(task="ksc")) == set(reference.MEASURES)
    assert set(robustness.MEASURE_COLUMNS[2:]) == set(registry.names(task="robustness"))
    from textmetric_bench.running.registry import available_tasks

    assert {task for m in MEASURES.values() for task in m.tasks} <= set(available_tasks())


def test_a_summary_shows_a_scaled_measure_in_its_unit():
    """T in pair evaluations per second becomes T100 in 004's [100 op/s], by the registry's scale."""
    from textmetric_bench.measures.summaries import summarise_measures

    frame = pd.DataFrame({"metric": ["x", "x", "x"], "repetition": [0, 1, 2], "T": [200.0, 400.0, 600.0]})
    summary = summarise_measures(frame).set_index("measure")
    t = measure("T")
    assert summary.loc[t.column, "mean"] == pytest.approx(summary.loc["T", "mean"] / t.shown_scale) == 4.0


def test_a_measure_is_found_by_its_name_or_its_column_and_an_unknown_one_is_named():
    assert measure("T100") is measure("T") is MEASURES["T"]
    with pytest.raises(KeyError, match="unknown measure 'rh0'; known: A, Aw, T, rho"):
        measure("rh0")
    assert registry.by_task()[: len(registry.names(task="ksc"))] == registry.names(
        quality=True, task="ksc"
    ) + registry.names(quality=False, task="ksc")
    assert registry.quality_then_others()[-1] == "T"


# --- the guide: docs/measures.md's entry, added to a copy of the checkout -----------------------------------------

GUIDE = PROJECT_ROOT / "docs" / "measures.md"

VIEWS = """
import json
import pandas as pd
from textmetric_bench.measures import registry
from textmetric_bench.measures.summaries import summarise_measures
from textmetric_bench.reports.cards import figure as card
from textmetric_bench.reports.figures import drawing
from textmetric_bench.reports.html import tables
from textmetric_bench.reports.labels import MEASURE_LABELS, TABLE3_ORDER
from textmetric_bench.reports.suite.ranks import HIGHER_IS_BETTER
from textmetric_bench.reports.suite.settings import SUITE_MEASURES

frame = pd.DataFrame({"metric": ["x"] * 4, "repetition": range(4), "separated": [1.0, 1.0, 0.0, 1.0]})
summary = summarise_measures(frame).set_index("measure")
print(json.dumps({
    "column": "separated" in TABLE3_ORDER, "legend": MEASURE_LABELS.get("separated"),
    "html": tables.SYMBOLS.get("separated"), "figure": drawing.MEASURE_SYMBOLS.get("separated"),
    "panel_last": card.PANEL_ORDER[-1], "ranked": "separated" in SUITE_MEASURES,
    "higher": HIGHER_IS_BETTER.get("separated"), "mean": float(summary.loc["separated", "mean"]),
    "docs_row": [line for line in registry.markdown().splitlines() if line.startswith("| `separated`")],
}))
"""


def guide_entry() -> str:
    ((code,),) = [re.findall(r'```python title="an entry of MEASURES[^"]*"\n(.*?)```', GUIDE.read_text(), re.S)]
    return code


def test_the_guides_measure_is_shown_by_every_view(tmp_path):
    copy = copy_checkout(tmp_path / "checkout")
    with_guide_entry(copy)
    layout = installed_layout(copy, tmp_path / "importable")
    proc = subprocess.run(
        [sys.executable, "-c", VIEWS],
        env={**os.environ, "PYTHONPATH": str(layout)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    shown = json.loads(proc.stdout)
    assert shown["column"] and shown["ranked"] and shown["higher"] is True
    assert shown["legend"] == "separated: share of repetitions where d(A1, B) > d(A1, A2)"
    assert shown["html"] == shown["figure"] == "sep" and shown["panel_last"] == "separated"
    assert shown["mean"] == pytest.approx(0.75)
    assert len(shown["docs_row"]) == 1 and "`halves`" in shown["docs_row"][0]


def with_guide_entry(copy) -> None:
    """docs/measures.md's entry added to the MEASURES of the checkout copy ``copy``."""
    source = copy / "bench" / "measures" / "registry.py"
    text = source.read_text(encoding="utf-8")
    end = "\n    )\n}\n"  # the end of the MEASURES tuple
    assert text.count(end) == 1
    entry = textwrap.indent(guide_entry().strip(), " " * 8) + ",\n"
    source.write_text(text.replace(end, "\n" + entry + end[1:]), encoding="utf-8")


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_guides_measure_goes_through_a_whole_run_of_the_guides_task_into_its_report(tmp_path, cache_dir):
    """Both guides followed in one copy of the checkout: the task of docs/tasks.md (its file and its entry-point
    line) and the measure of docs/measures.md. A run of that task writes the measure, and its report.html shows it
    by the registry's symbol and legend."""
    from test_adding_a_task import with_guide_task

    copy = copy_checkout(tmp_path / "checkout")
    with_guide_task(copy)
    with_guide_entry(copy)
    layout = installed_layout(copy, tmp_path / "importable")
    installed_metadata(copy, layout)
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "textmetric_bench", "task=halves", "metrics=[fid,zipf]", "n=40", "repetitions=2"]
        + ["progress=false", f"hydra.run.dir={out}"],
        env={**os.environ, "PYTHONPATH": str(layout), "BENCH_CACHE_DIR": str(cache_dir)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert set(pd.read_csv(out / "measures.csv").columns) >= {"metric", "repetition", "separated"}
    report = (out / "report.html").read_text(encoding="utf-8")
    legend = html.escape("separated: share of repetitions where d(A1, B) > d(A1, A2)", quote=True)
    assert f"<th title='{legend}'>sep</th>" in report, "the measure's symbol heads a column, its legend on hover"


def test_the_generated_measures_table_is_todays():
    shipped = (PROJECT_ROOT / "docs" / "generated" / "measures.md").read_text(encoding="utf-8")
    assert shipped == registry.markdown() + "\n", "run `python -m textmetric_bench.measures.registry --docs`"
