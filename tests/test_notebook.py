"""The example notebook (docs/notebooks/plugin.ipynb) executed in a real Jupyter kernel, as a user runs it, and the
progress bars' auto-detection in such a kernel."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbclient import NotebookClient

from textmetric_bench import PROJECT_ROOT

NOTEBOOK = PROJECT_ROOT / "docs" / "notebooks" / "plugin.ipynb"


def execute(notebook: nbformat.NotebookNode, cwd, timeout: int = 600) -> nbformat.NotebookNode:
    """Run every cell in a fresh kernel of this Python, in ``cwd``; a cell that raises fails with its traceback."""
    NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    ).execute()
    return notebook


def outputs_of(notebook: nbformat.NotebookNode, source_start: str) -> list:
    cells = [c for c in notebook.cells if c.cell_type == "code" and c.source.startswith(source_start)]
    assert len(cells) == 1, f"no single code cell starting with {source_start!r}"
    return cells[0].outputs


def data(outputs: list, mime: str) -> list[str]:
    return [o["data"][mime] for o in outputs if mime in o.get("data", {})]


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_the_plugin_notebook_runs_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "cache"))
    notebook = execute(nbformat.read(NOTEBOOK, as_version=4), tmp_path)

    evaluated = outputs_of(notebook, "result = tb.evaluate(")
    assert data(evaluated, "application/vnd.jupyter.widget-view+json"), "no progress bar drawn in the notebook"
    shown = data(evaluated, "text/html")
    assert shown and "vocabulary_gap" in shown[0] and "passed" in shown[0]
    assert data(outputs_of(notebook, "result.radar()"), "image/png"), "the radar figure is not shown inline"
    assert "vocabulary_gap" in data(outputs_of(notebook, "result.distances"), "text/html")[0]
    ranked = data(outputs_of(notebook, "full = tb.evaluate("), "text/html")[0]
    assert "vocabulary_gap" in ranked and "mauve" in ranked and "rank_A" in ranked  # beside the reference rows
    runs = list((tmp_path / "outputs" / "ksc" / "fortune_computing_people").iterdir())
    assert len(runs) == 2 and all((run / "table3.md").is_file() for run in runs)


def test_auto_progress_draws_a_widget_bar_in_a_real_kernel(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "from tqdm.notebook import tqdm_notebook\n"
            "from textmetric_bench.console import bars_shown, progress_bar\n"
            "bar = progress_bar(total=1, desc='x', unit='x')\n"
            "print(bars_shown(), isinstance(bar, tqdm_notebook), bar.disable)"
        )
    ]
    out = execute(notebook, tmp_path, timeout=120).cells[0].outputs
    printed = "".join(o.get("text", "") for o in out if o.output_type == "stream" and o.name == "stdout")
    assert printed.split() == ["True", "True", "False"]  # shown, as a widget


@pytest.mark.parametrize(
    "cell",
    [c for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"],
    ids=lambda c: c.source.splitlines()[0][:40],
)
def test_the_notebook_is_stored_without_outputs(cell):
    """Its numbers come from running it, never from a stored copy (the docs site shows the code)."""
    assert cell.outputs == [] and cell.execution_count is None


def test_the_docs_build_executes_the_notebooks_and_renders_the_executed_copy():
    """mkdocs.yml runs docs/hooks/notebooks.py, whose executed copy keeps the notebook's docs path, so that
    mkdocs-jupyter's include patterns still take it for a notebook (else the page would show its JSON)."""
    import importlib.util
    from pathlib import PurePath

    import yaml

    text = (PROJECT_ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = yaml.safe_load(re.sub(r"!{1,2}[a-z][\w/:.]*", "", text))  # mkdocs tags (!relative) left out
    assert "docs/hooks/notebooks.py" in config["hooks"]
    jupyter = next(p["mkdocs-jupyter"] for p in config["plugins"] if isinstance(p, dict) and "mkdocs-jupyter" in p)
    assert jupyter["execute"] is False  # the hook executes, in a scratch directory; the plugin only renders
    spec = importlib.util.spec_from_file_location("notebooks_hook", PROJECT_ROOT / "docs" / "hooks" / "notebooks.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    name = NOTEBOOK.relative_to(PROJECT_ROOT / "docs").as_posix()
    copy = PurePath("/scratch/site") / name  # where executed_copy writes it
    assert any(copy.match(pattern) for pattern in jupyter["include"])
    assert hook.CELL_TIMEOUT >= 600


def test_the_docs_build_gives_the_kernel_a_matplotlib_directory_of_its_own(tmp_path, monkeypatch):
    """A builder's stale matplotlib font cache (fonts of a deleted environment) put "findfont: ... not found" lines
    into the site's notebook page: the hook's kernel gets a config directory of its own, in its scratch directory."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("notebooks_hook", PROJECT_ROOT / "docs" / "hooks" / "notebooks.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "builders"))
    source = tmp_path / "probe.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("import matplotlib\nprint(matplotlib.get_configdir())")]
    nbformat.write(notebook, source)
    try:
        executed = nbformat.read(hook.executed_copy(source, "probe.ipynb"), as_version=4)
        printed = "".join(o.get("text", "") for o in executed.cells[0].outputs).strip()
        scratch = hook._scratch[-1].name
    finally:
        hook.on_post_build(None)
    assert printed.startswith(scratch) and "builders" not in printed


def test_the_site_shows_no_frozen_progress_bar_and_info_lines_as_plain_output(tmp_path):
    """The site's notebook page showed the progress bars' text stand-in frozen at "0%" and the run's INFO lines
    in the colours of an error; a warning stays where it was."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("notebooks_hook", PROJECT_ROOT / "docs" / "hooks" / "notebooks.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    source = tmp_path / "probe.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "from textmetric_bench.console import progress_bar\n"
            "bar = progress_bar(total=3, desc='ksc evaluations', unit='evaluation')\n"
            "bar.update(1)\n"
            "print('after the bar')"
        ),
        nbformat.v4.new_code_cell("import sys\nprint('INFO textmetric_bench.x: a corpus read', file=sys.stderr)"),
        nbformat.v4.new_code_cell("import sys\nprint('WARNING textmetric_bench.x: a metric failed', file=sys.stderr)"),
    ]
    nbformat.write(notebook, source)
    try:
        executed = nbformat.read(hook.executed_copy(source, "probe.ipynb"), as_version=4)
    finally:
        hook.on_post_build(None)
    bar, info, warning = (cell.outputs for cell in executed.cells)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in bar] == [("stream", "stdout", "after the bar\n")]
    assert [(o.name, o.text) for o in info] == [("stdout", "INFO textmetric_bench.x: a corpus read\n")]
    assert [o.name for o in warning] == ["stderr"]
