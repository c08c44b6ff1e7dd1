"""The IFC task: generate Increasingly Fine-tuned Corpora from a source corpus and score every metric on them (004 §5).

The source is split once (seeded) into a training pool, from which each fine-tuning step draws
its m texts, and a disjoint reference pool, from which the reference samples are drawn; so no
reference text was ever trained on. Generation (``textmetric_bench.collections.ifc_generate``) resumes from what is on
disk in ``<out_dir>/generated``; scoring always re-reads the corpora from
there, so a re-run with new metrics and ``ifc.generate=false`` never loads the language model.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from textmetric_bench.collections.ifc import ifc_pairs, ifc_positions, reference_samples, split_source
from textmetric_bench.collections.ifc_generate import GenerationPlan, finished_iterations, generate_ifc, read_corpus
from textmetric_bench.errors import DataError
from textmetric_bench.measures.ifc import constant_distance, gap_closed, ifc_measures, type_token_ratio
from textmetric_bench.reports.labels import plural
from textmetric_bench.tasks.settings import TaskSettings, option
from textmetric_bench.tasks.skeleton import Collections, Evaluation, RunInputs, Scores, Task, TaskResult, task_runner
from textmetric_bench.tasks.sources import check_ifc_source, ifc_source

log = logging.getLogger(__name__)


def in_open_unit_interval(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1


@dataclass(frozen=True)
class IFCSettings(TaskSettings):
    source: str = option(
        "banking77",
        "a corpus card (datasets/corpora/ or data.cards), e.g. news_category, or a file texts.jsonl",
        key="ifc.source",
    )
    text_field: str = option(
        "text", "when source is a file: its JSON field or CSV/Parquet column of the texts", key="ifc.text_field"
    )
    iterations: int = option(
        4, "T fine-tuning steps; corpora g_0 (before fine-tuning) .. g_T", key="ifc.iterations", minimum=0
    )
    train_per_step: int = option(
        200, "m source texts, one epoch per step (004: 1000)", key="ifc.train_per_step", minimum=1
    )
    corpus_size: int = option(
        200, "N texts per generated corpus and per reference sample (004: ~1000)", key="ifc.corpus_size", minimum=1
    )
    repetitions: int = option(5, "reference samples scored against every g_i", key="ifc.repetitions", minimum=1)
    reference_share: float = option(
        0.5,
        "share of the source held out for reference samples (never trained on)",
        key="ifc.reference_share",
        accepts=in_open_unit_interval,
        advice="a number strictly between 0 and 1",
    )
    learning_rate: float = option(
        1.0e-4, "AdamW, constant, fresh optimiser each step", key="ifc.learning_rate", minimum=0, exclusive=True
    )
    batch_size: int = option(16, "texts per optimiser update", key="ifc.batch_size", minimum=1)
    recompute_activations: bool = option(
        True,
        "fine-tuning recomputes each layer's activations in the backward "
        "pass: ~290 MiB less at its peak for 10-40% more fine-tuning time; false "
        "keeps them (faster, more memory); the same texts either way",
        key="ifc.recompute_activations",
        example=False,
    )
    generate: bool = option(
        True, "false: only score the corpora already in <run dir>/generated/", key="ifc.generate", example=False
    )
    top_p: float = option(0.95, "nucleus sampling", key="ifc.sampling.top_p", minimum=0, maximum=1, exclusive=True)
    temperature: float = option(1.0, "sampling temperature", key="ifc.sampling.temperature", minimum=0, exclusive=True)
    sample_batch_size: int = option(
        256, "sequences sampled at once (rows that end leave the batch)", key="ifc.sampling.batch_size", minimum=1
    )
    length_quantile: float = option(
        0.95,
        "new tokens end at this quantile of the source's token lengths",
        key="ifc.sampling.length_quantile",
        minimum=0,
        maximum=1,
        exclusive=True,
    )
    max_rounds: int = option(
        4, "give up after drawing max_rounds x corpus_size samples", key="ifc.sampling.max_rounds", minimum=1
    )
    run_label: str = option(
        "${corpus_label:${ifc.source}}", "names the output folder outputs/<task>/<run_label>/<time>", example="mine"
    )


def generation_plan(run: RunInputs) -> GenerationPlan:
    """The generation settings of the run (``ifc`` and ``lm``)."""
    from textmetric_bench.features.lm.model import model_id

    s: IFCSettings = run.settings  # type: ignore[assignment]
    return GenerationPlan(
        source=s.source,
        lm=model_id(run.lm),
        seed=run.seed,
        iterations=s.iterations,
        train_per_step=s.train_per_step,
        corpus_size=s.corpus_size,
        learning_rate=s.learning_rate,
        train_batch_size=s.batch_size,
        top_p=s.top_p,
        temperature=s.temperature,
        sample_batch_size=s.sample_batch_size,
        length_quantile=s.length_quantile,
        max_sample_rounds=s.max_rounds,
        recompute_activations=s.recompute_activations,
    )


FIGURE = (
    "Distance from the source to the corpus sampled after each fine-tuning iteration (004 Figure 5), with the "
    "regression line and its 95% band; the horizontal line is the source's self-distance. Good: distances "
    "fall steadily towards the line."
)


class IFCTask(
    Task,
    name="ifc",
    settings=IFCSettings,
    fields=("kind", "iteration", "repetition"),
    distances_file="ifc_distances.csv",
    figures={"ifc_": FIGURE},
    joins_ksc=True,
    uses_pair=False,
    warms_embedder=False,  # its build fine-tunes and samples for minutes: the helper would only hold memory
):
    """Increasingly Fine-tuned Corpora (004 §5, Figure 5): fine-tune the causal LM of ``lm`` on a source corpus
    step by step, sample a corpus g_i after each step, and check that every metric's distance d(reference, g_i)
    falls toward the source's self-distance. Resume: rerun with the same hydra.run.dir; g_i already in
    <run dir>/generated/ are reused."""

    def preflight(self, run: RunInputs) -> None:
        check_ifc_source(run.cfg)
        generation_plan(run)  # the language model's settings (lm) name a model

    def build(self, run: RunInputs) -> Collections:
        """Generate (or resume) g_0..g_T from the source; score them against held-out reference samples."""
        s: IFCSettings = run.settings  # type: ignore[assignment]
        plan = generation_plan(run)
        seed, reps = run.seed, s.repetitions
        loaded = ifc_source(run, s.source, s.text_field)
        source = list(loaded.texts)
        training_pool, reference_pool = split_source(source, s.reference_share, seed)
        if plan.train_per_step > len(training_pool):
            raise DataError(
                f"ifc.train_per_step={plan.train_per_step} exceeds the training pool of "
                f"{len(training_pool)} {plan.source} texts; lower it or ifc.reference_share"
            )
        samples = reference_samples(len(reference_pool), plan.corpus_size, reps, seed)

        gen_dir = run.out_dir / "generated"
        start = time.perf_counter()
        generated_now, threads = (
            _generate(run, plan, gen_dir, training_pool, loaded.normalise) if s.generate else ([], None)
        )
        generation_seconds = time.perf_counter() - start
        on_disk = finished_iterations(gen_dir, plan) if gen_dir.is_dir() else []
        iterations = [i for i in on_disk if i <= plan.iterations] if s.generate else on_disk
        if not iterations:
            raise DataError(
                f"no generated corpora in {gen_dir}; run with ifc.generate=true first "
                "(or point hydra.run.dir at the directory of an earlier IFC run)"
            )
        generated = {i: read_corpus(gen_dir, i) for i in iterations}
        corpora, pairs = ifc_pairs(generated, reference_pool, samples)
        return Collections(
            corpora,
            [Evaluation((kind, i, r), p, q, r) for kind, i, r, p, q in pairs],
            fingerprint={
                "task": "ifc",
                "source": plan.source,
                "plan": plan.fingerprint(),
                "seed": seed,
                "reference_share": s.reference_share,
            },
            info={
                "source": plan.source,
                "source_texts": len(source),
                "sources": {loaded.name: loaded.record()},
                "training_pool": len(training_pool),
                "reference_pool": len(reference_pool),
                "iterations": iterations,
                "generated_now": generated_now,
                "repetitions": reps,
                "lm": plan.lm,
                "plan": plan.fingerprint(),
                "seconds": {"generation": round(generation_seconds, 1)},
                **({"generation_threads": threads} if threads else {}),
            },
            extra={"ttr": corpus_ttr(source, reference_pool, samples, generated)},
            positions=ifc_positions(corpora),  # for the oracle: iterations
            sides={loaded.name: loaded.texts},
        )  # generated texts are recorded as `other`

    def score(self, distances: pd.DataFrame, collections: Collections) -> Scores:
        measures, failures = ifc_measures(distances)
        return Scores(
            measures, failures, summary=ifc_summary(distances, measures), info={"ttr": collections.extra["ttr"]}
        )

    def title(self, run: RunInputs, collections: Collections) -> str:
        info, s = collections.info, run.settings
        return (
            f"IFC on {info['source']}: g_0..g_{max(info['iterations'])}, {s.train_per_step} texts a step, "
            f"{s.corpus_size} per corpus, {plural(info['repetitions'], 'repetition')}, seed {run.seed}"
        )

    def write(self, result: TaskResult, out_dir: Path) -> dict[str, Path]:
        """The summary and TTR tables, the IFC table and the Figure 5 plots."""
        from textmetric_bench.measures.run_warnings import run_warnings, warnings_by_metric
        from textmetric_bench.reports.figures.ifc import ifc_figures
        from textmetric_bench.reports.tables.ifc_markdown import ifc_markdown

        ttr = result.info.pop("ttr")
        files = {
            "ifc_summary": out_dir / "ifc_summary.csv",
            "ifc_ttr": out_dir / "ifc_ttr.csv",
            "table3_md": out_dir / "table3.md",
        }
        result.summary.to_csv(files["ifc_summary"], index=False)
        ttr.to_csv(files["ifc_ttr"], index=False)
        files["table3_md"].write_text(
            ifc_markdown(
                result.summary,
                ttr,
                title=result.info["title"],
                failures=result.failures,
                repetitions=result.info.get("repetitions"),
            ),
            encoding="utf-8",
        )
        figures = ifc_figures(
            result.distances,
            result.summary,
            out_dir,
            setting=result.info["title"],
            warnings=run_warnings(result.info),
            metric_warnings=warnings_by_metric(result.info, set(result.distances["metric"])),
        )
        for path in figures:
            files[path.stem] = path
        return files


def _generate(
    run: RunInputs, plan: GenerationPlan, gen_dir: Path, training_pool, normalisation
) -> tuple[list[int], dict | None]:
    """Generate what is missing, loading the language model only when something is; the iterations generated now
    and how many threads generated them, and why (``textmetric_bench.features.lm.model.thread_choice``)."""
    from textmetric_bench.features.lm.model import load_causal_lm, load_tokenizer, text_token_ids, thread_choice

    done = finished_iterations(gen_dir, plan) if gen_dir.is_dir() else []
    if set(range(plan.iterations + 1)) <= set(done):
        return [], None
    cache_dir = run.cache_dir
    tokenizer = load_tokenizer(run.lm, cache_dir)
    lengths = [max(1, len(text_token_ids(tokenizer, t, add_eos=False)) - 1) for t in training_pool]
    threads, record = thread_choice(run.lm)
    log.info(
        "generation threads: %s (%s)",
        threads or "torch's default",
        ", ".join(f"{k} {v}" for k, v in record.items() if k != "threads"),
    )
    generating = run.lm.changed(threads=threads)
    return generate_ifc(
        plan,
        gen_dir,
        training_pool=training_pool,
        token_lengths=lengths,
        normalisation=normalisation,
        load_model=lambda path: load_causal_lm(generating, cache_dir, path=path),
        progress=run.progress,
    ), record


def corpus_ttr(source, reference_pool, samples, generated) -> pd.DataFrame:
    """TTR of the whole source, of each reference sample and of every g_i (004 §5).

    TTR falls with corpus size, so g_i compares with the reference samples (same size), not the source.
    """
    rows = [
        {
            "corpus": "source",
            "iteration": math.nan,
            "repetition": math.nan,
            "texts": len(source),
            "TTR": type_token_ratio(source),
        }
    ]
    for r, (ref_idx, _) in enumerate(samples):
        rows.append(
            {
                "corpus": "reference",
                "iteration": math.nan,
                "repetition": r,
                "texts": len(ref_idx),
                "TTR": type_token_ratio([reference_pool[j] for j in ref_idx]),
            }
        )
    for i, texts in sorted(generated.items()):
        rows.append(
            {
                "corpus": f"g_{i}",
                "iteration": i,
                "repetition": math.nan,
                "texts": len(texts),
                "TTR": type_token_ratio(texts),
            }
        )
    return pd.DataFrame(rows)


def ifc_summary(distances: pd.DataFrame, measures: pd.DataFrame) -> pd.DataFrame:
    """Per metric: mean IFC with the 95% interval every table gives (percentile bootstrap over repetitions, as
    ``summarise_measures``), the repetitions it rests on, those whose distance did not change over the iterations
    (``constant_repetitions``: their ρ is undefined), d(A, A), d(0), d(T) and the share of the gap closed."""
    from textmetric_bench.measures.intervals import mean_interval

    rows = []
    for name, grp in distances.groupby("metric", sort=True):
        self_d = grp.loc[grp["kind"] == "self", "distance"].mean()
        generated = grp[grp["kind"] == "generated"]
        per_iter = generated.groupby("iteration")["distance"].mean()
        first = per_iter.iloc[0] if len(per_iter) else math.nan
        last = per_iter.iloc[-1] if len(per_iter) else math.nan
        mean, std, n, low, high = mean_interval(measures.loc[measures["metric"] == name, "IFC"].to_numpy())
        rows.append(
            {
                "metric": name,
                "IFC": mean,
                "IFC_ci_low": low,
                "IFC_ci_high": high,
                "repetitions": n,
                "constant_repetitions": sum(
                    constant_distance(g["distance"]) for _, g in generated.groupby("repetition")
                ),
                "self_distance": self_d,
                "first_distance": first,
                "last_distance": last,
                "gap_closed": gap_closed(first, last, self_d),
            }
        )
    return pd.DataFrame(rows)


run_ifc = task_runner(IFCTask)
