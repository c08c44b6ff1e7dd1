"""A run's results as Python objects: the tables of its directory as pandas DataFrames, its figures as matplotlib
figures, and an HTML summary a notebook shows when the result is the last value of a cell.

Everything is read from the files the task wrote (``run.json``, the distance and measure tables, ``summary.csv``,
``significance_<measure>.csv``, ``check.csv``), so a run started from Python and one started from the command line
open the same way (``load_run``) and give equal tables.
"""

from __future__ import annotations

import functools
import html
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from textmetric_bench.errors import ConfigError


@dataclass(frozen=True)
class Result:
    """One run directory's results. Tables are read on first use; figures are drawn on each call."""

    run_dir: Path

    @functools.cached_property
    def info(self) -> dict:
        """``run.json``: the task, its settings, the metrics, failures, orientation, timings."""
        return json.loads((self.run_dir / "run.json").read_text(encoding="utf-8"))

    @property
    def task(self) -> str:
        return str(self.info["task"])

    @property
    def title(self) -> str:
        return str(self.info.get("title") or f"{self.task} run {self.run_dir.name}")

    @functools.cached_property
    def status(self) -> dict:
        """``exit_status.json``: the exit status the command line would end with, and why (empty if none)."""
        path = self.run_dir / "exit_status.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    @property
    def exit_status(self) -> int | None:
        return self.status.get("exit_status")

    @property
    def passed(self) -> bool:
        """The run did what was asked: exit status 0 (every metric scored; the gate, if run, held)."""
        return self.exit_status == 0

    @property
    def long_texts(self) -> dict:
        """Per reader (the embedder; metrics that read each text's start), per source: how many texts were longer
        than it reads, their share, the longest and what each got (``run.json``'s ``long_texts``)."""
        return dict(self.info.get("long_texts") or {})

    @property
    def failures(self) -> dict[str, str]:
        """Failed metrics of the run and the first reason."""
        return dict(self.info.get("failures") or {})

    @functools.cached_property
    def warnings(self) -> list[str]:
        """What a reader of this run's numbers must know, one sentence each: fewer than 5 repetitions (the paired
        tests optimistic), texts cut before a reader saw them whole, failed metrics, a reversed orientation, unused
        reference rows, a truncated grid. Every view carries them: each DataFrame's ``attrs["warnings"]``, the
        HTML display, ``text()`` and the figures' captions."""
        from textmetric_bench.measures.run_warnings import run_warnings

        path = self.run_dir / "summary.csv"
        summary = pd.read_csv(path) if path.is_file() else None
        completed = int(summary["n"].max()) if summary is not None and "n" in summary and not summary.empty else None
        return run_warnings(self.info, completed)

    def _csv(self, name: str, **options) -> pd.DataFrame | None:
        path = self.run_dir / name
        return self._warned(pd.read_csv(path, **options)) if path.is_file() else None

    def _warned(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` carrying the run's warnings in ``frame.attrs["warnings"]`` (pandas keeps attrs through most
        operations)."""
        frame.attrs["warnings"] = list(self.warnings)
        return frame

    @functools.cached_property
    def distances(self) -> pd.DataFrame:
        """One row per (metric, evaluation): each metric's own value (a similarity is not negated), seconds, error."""
        from textmetric_bench.running.registry import get_task

        return self._csv(get_task(self.task).distances_file)

    @functools.cached_property
    def measures(self) -> pd.DataFrame:
        """One row per (metric, repetition): the task's measures (KSC: ρ, ω², L, A, A^w, T); ``source`` tells
        computed rows from reference rows."""
        return self._csv("measures.csv")

    @functools.cached_property
    def summary(self) -> pd.DataFrame | None:
        """One row per (metric, measure): mean, sd, n and the 95% bootstrap interval across repetitions."""
        return self._csv("summary.csv")

    @functools.cached_property
    def table3(self) -> pd.DataFrame | None:
        """004 Table 3 as a wide table (metric x measure, with intervals), as ``table3.csv``."""
        return self._csv("table3.csv", index_col="metric")

    @functools.cached_property
    def significance(self) -> dict[str, pd.DataFrame]:
        """Per measure, the paired comparisons of every two metrics across repetitions (``significance_<m>.csv``)."""
        from textmetric_bench.measures.paired import caution

        frames = {}
        for path in sorted(self.run_dir.glob("significance_*.csv")):
            frame = pd.read_csv(path)
            if "caution" not in frame.columns and "n" in frame.columns:  # a run written before the column existed
                frame["caution"] = [caution(int(n)) for n in frame["n"]]
            frames[path.stem.removeprefix("significance_")] = self._warned(frame)
        return frames

    @functools.cached_property
    def check(self) -> pd.DataFrame | None:
        """The regression gate's comparison (``task=check``): one row per metric and measure with its status."""
        return self._csv("check.csv")

    def text(self, name: str = "table3.md") -> str:
        """A text file of the run, by default Table 3's markdown page (the console prints it as plain text), headed
        by the run's warnings that the file does not state itself."""
        text = (self.run_dir / name).read_text(encoding="utf-8")
        flat = " ".join(text.split()).lower()
        missing = [w for w in self.warnings if " ".join(w.split()).lower().rstrip(".") not in flat]
        if not missing:
            return text
        return "\n".join(["Warnings of this run:", *(f"- {w}" for w in missing), "", text])

    def compare_reference(self) -> pd.DataFrame:
        """This KSC run's metrics ranked among the shipped reference rows of the built-in metrics at the run's
        settings (``reports/reference/``): means per measure in Table 3's units, ranks (1 = best), sorted by A;
        ``attrs["warnings"]``: the run's, and that reference rows were timed elsewhere. ConfigError when no
        reference rows exist for these settings (they are shipped at k=7, n=100, 5 repetitions, seed 0)."""
        from textmetric_bench.session.reference import ranked_among_reference

        if self.task != "ksc":
            raise ConfigError(f"reference rows are KSC results; this is a {self.task} run")
        settings = {key: self.info[key] for key in ("k", "n", "repetitions", "seed")}
        table = ranked_among_reference(self.measures, {"pair": self.info["pair"], **settings})
        table.attrs["warnings"] = list(self.warnings) + table.attrs.get("warnings", [])
        return table

    # --- figures: matplotlib figures, shown inline by a notebook -------------------------------------------------

    def radar(self, metrics=None):
        """The radar chart of 004 Figure 4 (``metrics``: which to draw; by default the best few)."""
        from textmetric_bench.reports.figures.radar import overlaid_radar

        with self._metric_order():
            return overlaid_radar(
                self._summary_for_figures(), title=self.title, metrics=metrics, warnings=self.warnings
            )

    def heatmap(self, sort_by: str | None = None):
        """Every metric by every measure, shaded by its mean, sorted by ``sort_by`` (default: A, or the first
        measure the run has, as S in a robustness run)."""
        from textmetric_bench.reports.figures.heatmap import measure_heatmap

        return measure_heatmap(self._summary_for_figures(), sort_by=sort_by, setting=self.title, warnings=self.warnings)

    def figure(self, name: str):
        """A figure the task wrote into the run directory (e.g. ``scatter_zipf.png``), as an image a notebook shows."""
        path = self.run_dir / name
        if not path.is_file():
            written = sorted(p.name for p in self.run_dir.glob("*.png"))
            raise ConfigError(f"no figure {name!r} in {self.run_dir}; it has {', '.join(written) or 'none'}")
        try:
            from IPython.display import Image
        except ImportError:
            raise ConfigError(
                f"figure() shows an image in Jupyter (IPython is not installed); the file is {path}"
            ) from None
        return Image(filename=str(path))

    def _metric_order(self):
        """The run's figures' numbering of metrics (its reference rows and the metrics of its distances, which
        run.json lists), so that a metric looks in these figures as in those the run wrote."""
        from textmetric_bench.measures.summaries import labelled
        from textmetric_bench.reports.figures.palette import metric_order

        measures = self.measures
        measured = labelled(measures)["metric"] if measures is not None and "metric" in measures else []
        return metric_order({*measured, *(self.info.get("metrics") or [])})

    def _summary_for_figures(self) -> pd.DataFrame:
        from textmetric_bench.measures.summaries import labelled, summarise_measures

        if self.measures is None or self.measures.empty:
            raise ConfigError(f"the run {self.run_dir} has no measures to draw (see its failures: {self.failures})")
        return summarise_measures(labelled(self.measures))

    # --- notebook display ------------------------------------------------------------------------------------------

    def _repr_html_(self) -> str:
        state = (
            "passed"
            if self.passed
            else f"exit status {self.exit_status}: {self.status.get('reason', '')}"
            if self.status
            else "no exit status recorded"
        )
        parts = [
            f"<h4>{html.escape(self.title)}</h4>",
            f"<p>{html.escape(state)} · <code>{html.escape(self.shown_dir)}</code></p>",
        ]
        if self.warnings:
            items = "".join(f"<li>{html.escape(w)}</li>" for w in self.warnings)
            parts.append(
                "<div style='background:#fff6d6;border:1px solid #e0c060;padding:.3em .8em'>"
                f"<b>⚠ Warnings</b><ul>{items}</ul></div>"
            )
        table = self.check if self.check is not None else self.table3
        if table is not None:
            parts.append(table.to_html(na_rep="–", float_format=lambda v: f"{v:.3f}"))
        return "\n".join(parts)

    @property
    def shown_dir(self) -> str:
        """The run directory as a reader types it here: relative to the current directory when inside it (a
        notebook's ``outputs/ksc/...``), else absolute."""
        try:
            return str(self.run_dir.relative_to(Path.cwd()))
        except ValueError:
            return str(self.run_dir)

    def __repr__(self) -> str:
        return f"Result({self.task!r}, run_dir={self.shown_dir!r}, exit_status={self.exit_status})"


def show_figures_inline() -> None:
    """In a Jupyter kernel, show a bare matplotlib ``Figure`` (what the figure methods return: drawn without pyplot,
    so no window opens elsewhere) as a PNG when it is a cell's value; elsewhere, nothing."""
    from textmetric_bench.console import in_jupyter

    if not in_jupyter():
        return
    from IPython import get_ipython
    from IPython.core.pylabtools import print_figure
    from matplotlib.figure import Figure

    formatter = get_ipython().display_formatter.formatters["image/png"]
    try:
        formatter.lookup_by_type(Figure)  # the inline backend's own, once pyplot is in use
    except KeyError:
        formatter.for_type(Figure, lambda figure: print_figure(figure, "png", bbox_inches="tight"))


def load_run(run_dir: Path | str) -> Result:
    """The results of a run directory written by ``evaluate``, ``check`` or the command line."""
    path = Path(run_dir).expanduser().absolute()
    if not (path / "run.json").is_file():
        raise ConfigError(
            f"{path} is not a run directory (no run.json): give the directory a run wrote its tables to, "
            "e.g. outputs/ksc/fortune_computing_people/<time>"
        )
    return Result(path)
