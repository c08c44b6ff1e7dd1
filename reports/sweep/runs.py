"""The run directories a report reads, how they are grouped, and how a pair's tasks join.

Separate runs are never pooled: a KSC setting (pair, k, n) run twice gives two blocks, each
summarised alone exactly as ``textmetric_bench.reports.sweep.aggregate`` summarises it. Other tasks join a KSC run as
one profile per metric (004 Figure 4): the newest robustness run of the same pair (S, I) and the
newest IFC run whose source is one of the pair's source corpora (IFC); older ones keep their own
section, so no two runs of one task are mixed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from textmetric_bench.measures.run_warnings import run_warnings
from textmetric_bench.measures.summaries import most_repetitions, summarise_measures
from textmetric_bench.reports.labels import QUALITY_MEASURES, plural
from textmetric_bench.reports.sweep.aggregate import read_run_config

#: Which task measures each quality measure the KSC task does not (for the note on a missing one).
TASK_OF = {"S": "robustness", "I": "robustness", "IFC": "ifc"}


@dataclass
class Run:
    """What one run directory holds."""

    path: Path
    config: dict
    measures: pd.DataFrame
    distances: pd.DataFrame | None = None
    manifest: dict = field(default_factory=dict)

    @property
    def task(self) -> str:
        return str(self.config.get("task") or "ksc")

    @property
    def pair(self) -> str:
        if self.task == "ifc":  # IFC compares one source with generated text
            return f"{self.config.get('source') or '?'} (generated)"
        return str(self.config.get("pair") or "?")

    @property
    def sources(self) -> set[str]:
        """The source corpora of the run's pair, as run.json names them."""
        return set(self.manifest.get("sources") or {})

    @property
    def failures(self) -> dict:
        return self.manifest.get("failures") or {}

    @property
    def orientation_warnings(self) -> dict:
        return self.manifest.get("orientation_warnings") or {}

    @property
    def warnings(self) -> list[str]:
        """The run's warnings (``run_warnings`` of its run.json and measures), as its own figures carry them."""
        return run_warnings(self.manifest, most_repetitions(self.measures))

    @property
    def finished(self) -> datetime:
        return datetime.fromtimestamp((self.path / "measures.csv").stat().st_mtime, tz=timezone.utc)

    @property
    def repetitions(self) -> int:
        return int(self.measures.groupby("metric").size().max()) if not self.measures.empty else 0

    @property
    def setting(self) -> str:
        """What each figure of the run names in its title: the pair, k and n (KSC) or the task, the repetitions
        and the seed."""
        size = f"k={self.config.get('k')}, n={self.config.get('n')}" if self.task == "ksc" else self.task
        return f"{self.pair} · {size} · {plural(self.repetitions, 'repetition')} · seed {self.config.get('seed', '?')}"

    def label(self, root: Path | None = None) -> str:
        """Directory (relative to ``root`` when inside it), seed and the date its measures were written."""
        inside = root is not None and self.path.is_relative_to(root) and self.path != Path(root)
        name = self.path.relative_to(root) if inside else self.path.name
        return f"{name} · seed {self.config.get('seed', '?')} · {self.finished:%Y-%m-%d %H:%M} UTC"

    def summary(self) -> pd.DataFrame:
        """This run alone, summarised as ``textmetric_bench.reports.sweep.aggregate`` does."""
        return summarise_measures(self.measures)


def load_run(path: Path) -> Run:
    path = Path(path)
    measures = pd.read_csv(path / "measures.csv")
    distances = None
    if (path / "distances.csv").exists():
        distances = pd.read_csv(
            path / "distances.csv",
            keep_default_na=False,
            na_values={"distance": ["", "nan", "NaN"], "z": ["", "nan", "NaN"]},
        )
    manifest = json.loads((path / "run.json").read_text()) if (path / "run.json").exists() else {}
    return Run(path, read_run_config(path), measures, distances, manifest)


def joins(run: Run, ksc: Run) -> bool:
    """Whether ``run`` joins the Table 3 of the KSC run ``ksc``: its task says its measures do (``joins_ksc`` in
    its run.json, from the task's registration) and it measured ``ksc``'s sources, or some of them (IFC: one),
    read from the same files (a file of one name edited between the runs holds other texts)."""
    return (
        bool(run.manifest.get("joins_ksc"))
        and bool(run.sources)
        and run.sources <= ksc.sources
        and all(_same_files(run, ksc, name) for name in run.sources)
    )


def _same_files(run: Run, other: Run, source: str) -> bool:
    """Whether both runs read ``source`` from files of the same contents (sha256, as run.json records them); True
    where either does not record them."""
    digests = []
    for one in (run, other):
        record = (one.manifest.get("sources") or {}).get(source)
        files = record.get("files") if isinstance(record, dict) else None
        if not files:
            return True
        digests.append(sorted(str(f.get("sha256")) for f in files if isinstance(f, dict)))
    return digests[0] == digests[1]


def joined_runs(ksc: Run, runs: list[Run]) -> list[Run]:
    """The newest run of each joining task that measures ``ksc``'s pair."""
    newest: dict[str, Run] = {}
    for run in sorted((r for r in runs if r.task != "ksc" and joins(r, ksc)), key=lambda r: (r.finished, str(r.path))):
        newest[run.task] = run
    return sorted(newest.values(), key=_table_position)


def _table_position(run: Run) -> tuple[int, str]:
    """Where a joined run's measures stand in Table 3 (S and I before IFC): its runs are listed in that order."""
    columns = [QUALITY_MEASURES.index(c) for c in run.measures.columns if c in QUALITY_MEASURES]
    return (min(columns) if columns else len(QUALITY_MEASURES), run.task)


@dataclass
class Section:
    """One heading of the report: the KSC runs of one setting (each its own block) and what joins them."""

    title: str
    ksc: list[Run] = field(default_factory=list)
    joined: dict[Path, list[Run]] = field(default_factory=dict)  # KSC run path -> its joined runs
    others: list[Run] = field(default_factory=list)  # runs shown on their own (no KSC run to join)


def _setting_order(run: Run) -> tuple:
    """Pair, then k and n as numbers (k=7 before k=12), then the directory."""

    def number(key):
        value = run.config.get(key)
        return (0, float(value)) if isinstance(value, int | float) else (1, str(value))

    return run.pair, number("k"), number("n"), str(run.path)


def sections(runs: list[Run]) -> list[Section]:
    """One section per KSC setting (pair, k, n); runs that join none get a section per (pair, task)."""
    by_title: dict[str, Section] = {}
    ksc_runs = sorted((r for r in runs if r.task == "ksc"), key=_setting_order)
    for run in ksc_runs:
        title = f"{run.pair} · KSC k={run.config.get('k')}, n={run.config.get('n')}"
        section = by_title.setdefault(title, Section(title))
        section.ksc.append(run)
        section.joined[run.path] = joined_runs(run, runs)
    used = {r.path for s in by_title.values() for rs in s.joined.values() for r in rs}
    for run in runs:
        if run.task == "ksc" or run.path in used:
            continue
        if run.task == "perturb":  # shown beside its pair's KSC runs, else on its own
            targets = [s for s in by_title.values() if s.ksc and s.ksc[0].pair == run.pair]
            if targets:
                for section in targets:
                    section.others.append(run)
                continue
        title = f"{run.pair} · {run.task}"
        by_title.setdefault(title, Section(title)).others.append(run)
    return list(by_title.values())


def profile(ksc: Run, joined: list[Run]) -> tuple[pd.DataFrame, dict[str, str]]:
    """One summary over the KSC run and its joined runs (each summarised alone), and the quality measures no run
    measured mapped to why (the table leaves their columns out and says so in one note)."""
    summaries = [ksc.summary()] + [r.summary() for r in joined]
    summary = pd.concat(summaries, ignore_index=True)
    measured = set(summary["measure"])
    missing = {}
    for measure in QUALITY_MEASURES:
        if measure not in measured:
            task = TASK_OF.get(measure, "ksc")
            where = "on a source corpus of this pair" if task == "ifc" else "of this pair"
            missing[measure] = f"no {task} run {where}; task={task} adds it"
    if "orientation" in summary.columns:
        summary["orientation"] = summary["metric"].map(summary.groupby("metric")["orientation"].first())
    return summary, missing
