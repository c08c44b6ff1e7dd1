"""The perturbation-sensitivity task: how far each perturbation of 000 §6.2 moves a metric, on the
scale of a domain change.

Per repetition r, from the pair's source A a reference sample R and a disjoint sample S, from
source B a sample O, n texts each. Every metric gives (a) d(R, S), (b) d(R, p(S)) for each
perturbation p, (c) d(R, O), all with the repetition's one metric seed, and

    shift_p = (d(R, p(S)) − d(R, S)) / (d(R, O) − d(R, S))

0: p(S) is no farther from R than another sample of A; 1: as far as a sample of B, the other
domain (000 Figure 4 plots the raw d; the ratio makes metrics comparable). A repetition whose
gap (c) − (a) is not positive has no shift: the metric did not separate the domains, and the
table flags it, as it flags a gap that varies across repetitions by more than half its mean.
Evaluations run in ``textmetric_bench.engine`` (resume, isolation, workers, time limits).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from textmetric_bench.collections.perturbation_samples import (
    OTHER,
    SAME,
    perturbation_corpora,
    validate_perturb_parameters,
)
from textmetric_bench.collections.perturbations import get_perturbation
from textmetric_bench.measures.perturbation import perturbation_measures
from textmetric_bench.reports.labels import plural
from textmetric_bench.tasks.settings import TaskSettings, option
from textmetric_bench.tasks.skeleton import Collections, Evaluation, RunInputs, Scores, Task, TaskResult, task_runner
from textmetric_bench.tasks.sources import pair_sources

log = logging.getLogger(__name__)

SUMMARY_COLUMNS = [
    "metric",
    "perturbation",
    "mean",
    "std",
    "n",
    "ci_low",
    "ci_high",
    "repetitions",
    "gap_not_positive",
    "gap_cv",
    "d_same",
    "d_perturbed",
    "d_other",
]


def summarise_shifts(measures: pd.DataFrame) -> pd.DataFrame:
    """Per (metric, perturbation): mean, std and 95% t-interval of the shift over repetitions, how
    many repetitions had a gap that is not positive, the gap's coefficient of variation (sd / mean
    over repetitions: a noisy denominator makes the shifts unreliable), and the mean raw distances."""
    from textmetric_bench.measures.intervals import mean_ci

    rows = []
    for (name, p), grp in measures.groupby(["metric", "perturbation"], sort=False):
        gap = grp["gap"].to_numpy(float)
        gap_mean, gap_sd = mean_ci(gap)[:2]
        rows.append(
            (
                name,
                p,
                *mean_ci(grp["shift"].to_numpy(float)),
                len(grp),
                int((np.isfinite(gap) & (gap <= 0)).sum()),
                gap_sd / gap_mean if gap_mean > 0 else math.nan,
                *(grp[c].mean() for c in ("d_same", "d_perturbed", "d_other")),
            )
        )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


@dataclass(frozen=True)
class PerturbSettings(TaskSettings):
    n: int = option(200, "texts per sample (R, S and O); source A needs 2n, source B n")
    repetitions: int = option(5, "independent draws of R, S, O and of the seeded perturbations")
    perturbations: list[str] = option(
        ["truncate", "remove_articles", "remove_stopwords", "swap_halves", "shuffle_words"],
        "any of bench/collections/perturbations.py PERTURBATIONS, in table order: truncate (p_short, first third "
        "of the words), remove_articles (p_no art), remove_stopwords (p_no stop, scikit-learn English stopwords), "
        "swap_halves (p_swap, first halves exchanged between random pairs of texts), shuffle_words (p_rand)",
        example=["truncate", "shuffle_words"],
    )
    run_label: str = option(
        "${pair_label:}", "names the output folder outputs/<task>/<run_label>/<time>", example="mine"
    )

    def check(self) -> None:
        validate_perturb_parameters(self.n, self.repetitions, self.perturbations)


FIGURE = (
    "Relative shift of each metric under each perturbation of 000 §6.2: how far the perturbed sample moves "
    "from the reference, from another sample of the same source (0%) to a sample of the other source "
    "(100%); grey: no positive gap between the two. A quality metric should move on perturbations that break "
    "fluency or coherence (stopwords, shuffled words, swapped halves) and not only on length (truncation); a "
    "bag-of-words metric stays at 0% under shuffling."
)


class PerturbTask(
    Task,
    name="perturb",
    settings=PerturbSettings,
    fields=("repetition", "condition"),
    figures={"perturb": FIGURE},
    printed=("perturbation_md",),
):
    """Perturbation sensitivity (000 §6.2, Figure 4): per repetition, from source A of the pair a reference sample
    R and a disjoint sample S, from source B a sample O; each metric gives d(R, S), d(R, p(S)) for every
    perturbation p and d(R, O); reported as (d(R, p(S)) - d(R, S)) / (d(R, O) - d(R, S))."""

    def build(self, run: RunInputs) -> Collections:
        s: PerturbSettings = run.settings  # type: ignore[assignment]
        n, reps, perturbations = validate_perturb_parameters(s.n, s.repetitions, s.perturbations)
        seed = run.seed
        sources = pair_sources(run)
        a, b = sources.a, sources.b
        corpora, stats = perturbation_corpora(a.texts, b.texts, n, reps, seed, perturbations, (a.name, b.name))
        evaluations = [
            Evaluation((r, c), f"r{r}/reference", f"r{r}/{c}", r)
            for r in range(reps)
            for c in [SAME, *perturbations, OTHER]
        ]
        described = {
            p: {
                "paper": get_perturbation(p).paper,
                "description": get_perturbation(p).description,
                **{k: round(float(np.mean([s[k] for s in stats[p]])), 4) for k in stats[p][0]},
            }
            for p in perturbations
        }
        return Collections(
            corpora,
            evaluations,
            fingerprint={"task": "perturb", "pair": sources.identity, "n": n, "seed": seed},
            info={
                "pair": sources.label,
                "n": n,
                "repetitions": reps,
                "perturbations": described,
                "sources": sources.record(),
                "reference_source": a.name,
                "other_source": b.name,
            },
            extra={"perturbations": perturbations},
            sides={a.name: a.texts, b.name: b.texts},
        )

    def score(self, distances: pd.DataFrame, collections: Collections) -> Scores:
        measures, failures = perturbation_measures(distances, collections.extra["perturbations"])
        return Scores(measures, failures, summary=summarise_shifts(measures))

    def title(self, run: RunInputs, collections: Collections) -> str:
        info = collections.info
        return (
            f"Perturbation sensitivity on {info['pair']}: reference {info['reference_source']}, other "
            f"{info['other_source']}, n={info['n']}, {plural(info['repetitions'], 'repetition')}, seed {run.seed}"
        )

    def write(self, result: TaskResult, out_dir: Path) -> dict[str, Path]:
        """perturbation.csv (summary), perturbation.md and the heatmap perturb_heatmap.png."""
        from textmetric_bench.measures.run_warnings import run_warnings
        from textmetric_bench.reports.figures.perturb import perturbation_heatmap, perturbation_markdown

        title = result.info["title"]
        files = {"perturbation": out_dir / "perturbation.csv", "perturbation_md": out_dir / "perturbation.md"}
        result.summary.to_csv(files["perturbation"], index=False)
        files["perturbation_md"].write_text(
            perturbation_markdown(result.summary, result.info, title=title, failures=result.failures), encoding="utf-8"
        )
        heatmap = perturbation_heatmap(
            result.summary, out_dir / "perturb_heatmap.png", title=title, warnings=run_warnings(result.info)
        )
        if heatmap is not None:
            files["perturb_heatmap"] = heatmap
        return files


run_perturb = task_runner(PerturbTask)
