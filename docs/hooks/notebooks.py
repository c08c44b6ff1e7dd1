"""mkdocs hook: the docs' notebooks are shown with their outputs, executed at build time.

The notebooks are stored without outputs (tests/test_notebook.py checks it, and runs them in a kernel): their
numbers come from running them, never from a stored copy. For the site, ``on_files`` executes each one in a fresh
kernel in a scratch directory (its run directories land there, not in the checkout), and hands mkdocs-jupyter the
executed copy to render. A cell that raises fails the build. Progress bars are dropped from the copy (a static
page can only show them frozen); the run's INFO lines are shown as plain output, not in the colours of an error
(a warning keeps them); every other output stays. The kernel gets a matplotlib config directory of its own, so the
page does not depend on the builder's font cache.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.notebooks")

#: Seconds a cell may take (the notebook's runs use a small setting and the reference rows).
CELL_TIMEOUT = 900
WIDGET = "application/vnd.jupyter.widget-view+json"
_scratch: list[tempfile.TemporaryDirectory] = []


def informational(text: str) -> bool:
    """Whether a stream's text is only the harness's INFO lines (what a run says as it goes)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith("INFO ") for line in lines)


def executed_copy(source: Path, name: str) -> Path:
    """``source`` executed in a fresh kernel in a scratch directory and written there as ``name`` (its path in the
    docs, so mkdocs-jupyter's ``include`` patterns still match it), without widgets."""
    import nbformat
    from nbclient import NotebookClient

    scratch = tempfile.TemporaryDirectory(prefix="docs-notebook-")
    _scratch.append(scratch)  # kept until the build ends: mkdocs-jupyter reads the copy later
    notebook = nbformat.read(source, as_version=4)
    # matplotlib's own config and font cache, new: a builder's stale font cache (one listing fonts of a deleted
    # environment) printed "findfont: ... not found" lines into the page's outputs
    mpl_dir = Path(scratch.name) / "matplotlib"
    NotebookClient(
        notebook, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": scratch.name}}
    ).execute(env={**os.environ, "MPLCONFIGDIR": str(mpl_dir)})
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        # a progress bar's widget with its text stand-in, which a static page would show frozen at 0%
        cell.outputs = [o for o in cell.outputs if WIDGET not in o.get("data", {})]
        for output in cell.outputs:
            if output.output_type == "stream" and output.name == "stderr" and informational(output.text):
                output.name = "stdout"  # the run's INFO lines, shown as plain text, not in an error's colours
    copy = Path(scratch.name) / "site" / name
    copy.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, copy)
    return copy


def on_files(files, config):
    for file in files:
        if file.src_uri.endswith(".ipynb"):
            log.info("executing %s for the site", file.src_uri)
            file.abs_src_path = str(executed_copy(Path(file.abs_src_path), file.src_uri))
    return files


def on_post_build(config):
    while _scratch:
        _scratch.pop().cleanup()
