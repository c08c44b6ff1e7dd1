"""The KSC task: every metric on every corpus pair of Known-Similarity Corpora, scored by ρ, ω², L, A, A^w and T (004 §3-4)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from textmetric_bench.collections.ksc import corpus_pairs, known_similarity_corpora, validate_ksc_parameters
from textmetric_bench.collections.seeds import repetition_seed
from textmetric_bench.data.lengths import pair_regime
from textmetric_bench.measures.failures import per_repetition
from textmetric_bench.measures.ksc import collection_measures, zscore
from textmetric_bench.measures.own_noise import COLUMNS as OWN_NOISE_COLUMNS
from textmetric_bench.measures.own_noise import own_noise_table
from textmetric_bench.tasks.own_noise import own_noise_evaluations
from textmetric_bench.reports.labels import plural
from textmetric_bench.tasks.reference import merge_reference, reference_dir
from textmetric_bench.tasks.settings import TaskSettings, option
from textmetric_bench.tasks.skeleton import (
    Collections,
    Evaluation,
    RunInputs,
    Scores,
    Task,
    TaskResult,
    figure_processes,
    task_runner,
)
from textmetric_bench.tasks.sources import pair_sources

log = logging.getLogger(__name__)

DISTANCE_COLUMNS = ["metric", "repetition", "i", "j", "ell", "distance", "z", "seconds", "error", "attempts"]
MEASURE_COLUMNS = ["metric", "repetition", "rho", "omega2", "L", "A", "Aw", "T"]


def reference_accepted(value) -> bool:
    """The ``reference`` setting: false, or a string (auto or a directory, checked in ``preflight``)."""
    return value is False or isinstance(value, str)


def own_noise_seeds_accepted(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and (value == 0 or value >= 2)


@dataclass(frozen=True)
class KSCSettings(TaskSettings):
    k: int = option(7, "corpora per collection (>= 3)")
    n: int = option(100, "texts per corpus (>= k - 1)")
    repetitions: int = option(5, "independent collections, each from its own seed", minimum=1)
    reference: str | bool = option(
        "auto",
        "reference results of the built-in metrics (reports/reference/) join the table when this run's "
        "settings match a file's (only the metrics selected here are computed); false: never; or a directory of "
        "such files",
        accepts=reference_accepted,
        advice="auto, false, or a directory of reference files",
        example=False,
    )
    own_noise_seeds: int = option(
        5,
        "a stochastic metric's own noise (own_noise.csv): on repetition 0's pairs (c_1, c_k) and (c_1, c_m), "
        "m the middle, every stochastic metric again with this many seeds of its own; 0 disables it, otherwise at "
        "least 2",
        key="own_noise.seeds",
        accepts=own_noise_seeds_accepted,
        advice="0 (off) or a whole number >= 2 (a spread needs two values)",
    )
    run_label: str = option(
        "${pair_label:}", "names the output folder outputs/<task>/<run_label>/<time>", example="mine"
    )

    def check(self) -> None:
        validate_ksc_parameters(self.k, self.n)


class KSCTask(Task, name="ksc", settings=KSCSettings, fields=("repetition", "i", "j")):
    """Known-Similarity Corpora (004 §3-4): k corpora mixing A and B in steps of 1/(k-1)."""

    def preflight(self, run: RunInputs) -> None:
        reference_dir(run.settings.reference)

    def build(self, run: RunInputs) -> Collections:
        s: KSCSettings = run.settings  # type: ignore[assignment]
        sources = pair_sources(run)
        a, b = sources.a, sources.b
        collections = [  # raises, naming the source and the count needed, if a source is too small
            known_similarity_corpora(
                a.texts, b.texts, k=s.k, n=s.n, seed=repetition_seed(run.seed, r, 0), names=(a.name, b.name)
            )
            for r in range(s.repetitions)
        ]
        corpora = {f"r{r}c{c.index}": c.texts for r, coll in enumerate(collections) for c in coll}
        evaluations = [
            Evaluation((r, i, j), f"r{r}c{i}", f"r{r}c{j}", r)
            for r in range(s.repetitions)
            for i, j in corpus_pairs(s.k)
        ]
        stochastic = frozenset(m.name for m, _ in run.metrics if m.stochastic)
        evaluations += own_noise_evaluations(s.k, s.own_noise_seeds, run.seed, stochastic)
        return Collections(
            corpora,
            evaluations,
            fingerprint={"task": "ksc", "pair": sources.identity, "k": s.k, "n": s.n, "seed": run.seed},
            info={
                "pair": sources.label,
                "k": s.k,
                "n": s.n,
                "repetitions": s.repetitions,
                "sources": sources.record(),
                "regime": pair_regime(a.texts, b.texts),
            },
            extra={"k": s.k},
            sides={a.name: a.texts, b.name: b.texts},
            positions={
                f"r{r}c{c.index}": c.known_position  # for the oracle: mixing proportions
                for r, coll in enumerate(collections)
                for c in coll
            },
        )

    def score(self, distances: pd.DataFrame, collections: Collections) -> Scores:
        k = collections.extra["k"]
        distances = distances.assign(ell=distances["j"] - distances["i"])
        distances["z"] = distances.groupby(["metric", "repetition"])["distance"].transform(zscore)
        measures, failures = per_repetition(
            distances, lambda g: collection_measures(g["i"], g["j"], g["distance"], g["seconds"], k), MEASURE_COLUMNS
        )
        own = collections.aside
        if own is not None and len(own):
            own = own.assign(seed=-1 - own["repetition"])[["metric", "seed", "i", "j", "distance"]]
        info = {"own_noise": own_noise_table(own, distances).to_dict("records")} if own is not None and len(own) else {}
        return Scores(measures, failures, distances=distances[DISTANCE_COLUMNS], info=info)

    def merge_reference(
        self, run: RunInputs, collections: Collections, measures: pd.DataFrame, computed: set[str]
    ) -> tuple[pd.DataFrame, dict]:
        """The shipped reference rows of metrics not computed here (``reference: auto``; textmetric_bench.tasks.reference)."""
        return merge_reference(run, collections, measures, computed)

    def title(self, run: RunInputs, collections: Collections) -> str:
        s, pair = run.settings, collections.info["pair"]
        return f"KSC on {pair}: k={s.k}, n={s.n}, {plural(s.repetitions, 'repetition')}, seed {run.seed}"

    def write(self, result: TaskResult, out_dir: Path) -> dict[str, Path]:
        """Table 3, radar chart, scatter plots, and the stochastic metrics' own noise (``own_noise.csv``)."""
        from textmetric_bench.measures.run_warnings import run_warnings, warnings_by_metric
        from textmetric_bench.measures.summaries import labelled, most_repetitions, summarise_measures
        from textmetric_bench.reports.figures.ksc import scatter_file, scatter_names
        from textmetric_bench.reports.figures.palette import metric_order
        from textmetric_bench.reports.figures.parallel import FigureDrawer
        from textmetric_bench.reports.figures.radar import radar_chart
        from textmetric_bench.reports.tables.files import write_tables

        if result.measures.empty:
            log.error("no metric produced measures; see %s", out_dir / self.distances_file)
            return {}
        title = result.info["title"]
        own_noise = {}
        if result.info.get("own_noise"):
            own_noise["own_noise"] = out_dir / "own_noise.csv"
            pd.DataFrame(result.info["own_noise"], columns=OWN_NOISE_COLUMNS).to_csv(
                own_noise["own_noise"], index=False
            )
        names = scatter_names(result.distances)
        repetitions = most_repetitions(result.measures)
        warnings = run_warnings(result.info, repetitions)  # the caption of every figure of all metrics
        metric_warnings = warnings_by_metric(result.info, set(result.distances["metric"]), repetitions)  # of one
        shown = {*labelled(result.measures)["metric"], *result.distances["metric"]}  # reference rows: one look each
        with (
            metric_order(shown),
            FigureDrawer(1 + len(names), figure_processes()) as drawer,
        ):  # while tables are written
            # the longest job first (the grid of every metric: about four scatters' time), so no process idles last
            scatters = {
                name: drawer.submit(
                    scatter_file,
                    result.distances,
                    out_dir,
                    name,
                    setting=title,
                    warnings=warnings,
                    metric_warnings=metric_warnings,
                )
                for name in sorted(names, key=lambda name: name != "scatter_all")
            }
            summary = summarise_measures(result.measures)
            radar = drawer.submit(radar_chart, summary, out_dir / "radar", title=title, warnings=warnings)
            files = own_noise | write_tables(
                result.measures,
                out_dir,
                title=title,
                failures=result.failures,
                repetitions=result.info.get("repetitions"),
                orientation=result.info.get("orientation"),
            )
            try:
                for path in drawer.result(radar):
                    files[f"radar{path.suffix}"] = path
            except ValueError as exc:
                log.warning("no radar chart: %s", exc)
            for name in names:
                path = drawer.result(scatters[name])
                files[path.stem] = path
        return files


run_ksc = task_runner(KSCTask)
