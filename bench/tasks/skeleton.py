"""The one skeleton every task runs on: build collections → evaluate on the engine → measures → artifacts.

A task (``textmetric_bench.tasks.ksc``, ``robustness``, ``perturb``, ``ifc``; ``check`` runs the KSC task and
compares) says only what is particular to it, as a ``Task`` subclass; subclassing registers it
(``TASKS``) with everything the command line, the config validation and the report need: its name,
its settings (a ``TaskSettings`` dataclass, whose defaults are the task's Hydra node), the fields that
name an evaluation, its figures' captions and whether its measures join a KSC run's table.

- ``build(run)`` draws its corpora and lists the ``Evaluation``s (pairs of corpora, each named by the
  task's ``fields``, e.g. repetition, i, j) that every metric gets (or only some, with seeds of their own:
  KSC's own-noise evaluations), and the corpora's known positions for the oracle;
- ``score(distances, collections)`` turns the distance table into measures (and a summary);
- ``write(result, out_dir)`` writes the task's own tables and figures.

The skeleton does the rest the same way for all: it checks the metrics, embeds the texts once (only
when a metric takes embeddings), runs every (metric, evaluation) job on the engine (isolated workers,
time limits, resume from the run directory's ``evaluations.jsonl``), and writes ``run.json``, the
distance and measure tables, and ``failures.csv``. A task scores every metric's values oriented as
distances (``textmetric_bench.measures.orientation``: a similarity is negated); the tables keep each metric's own
values and say which way it points.

Results add up. A run directory keeps the evaluations of every metric ever scored in it (its
evaluation log); scoring more or fewer metrics there again adds the new ones to the tables, report
and figures and keeps the others as they were (a metric run again with new parameters replaces its
earlier rows). Files a previous run wrote that this run does not are removed, so no figure goes stale.
A task may add rows of metrics it did not compute from reference results (``Task.merge_reference``; KSC
does, from ``reports/reference/``: ``textmetric_bench.tasks.reference``).
"""

from __future__ import annotations

import functools
from collections import Counter
import hashlib
import importlib
import json
import logging
import platform
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar, Iterable, Mapping, Sequence

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from textmetric_bench import __version__
from textmetric_bench.api.positions import corpus_key, known_positions
from textmetric_bench.api.registry import MetricInfo, is_builtin_module, plugin_failures
from textmetric_bench.console import FILE_ONLY
from textmetric_bench.collections.seeds import metric_seed
from textmetric_bench.data.settings import DataSettings
from textmetric_bench.engine import (
    CorpusStore,
    EngineSettings,
    Job,
    Outcome,
    engine_options,
    params_digest,
    result_log_for,
    run_jobs,
    start_worker_server,
)
from textmetric_bench.features.embedding_process import end_if_started_ahead
from textmetric_bench.features.embedder_settings import EmbedderSettings
from textmetric_bench.features.lm.settings import LMSettings
from textmetric_bench.measures import LIBRARIES as MEASURE_LIBRARIES
from textmetric_bench.measures.failures import write_failures_csv
from textmetric_bench.measures.run_warnings import partial_sentence, unstated_warnings
from textmetric_bench.measures.orientation import (
    DISTANCE,
    orientation_of,
    orientation_warnings,
    oriented,
    with_orientation,
)
from textmetric_bench.errors import ConfigError, StorageError
from textmetric_bench.files import storage_errors
from textmetric_bench.tasks.config import build_embedder, selected_metrics
from textmetric_bench.settings import SharedSettings
from textmetric_bench.tasks.settings import TaskSettings, read_settings
from textmetric_bench.tasks.text_lengths import long_text_records
from textmetric_bench.reports.figures.parallel import PRELOAD as FIGURE_PRELOAD

log = logging.getLogger(__name__)

#: Columns of every distance table after the metric and the task's fields.
OUTCOME_COLUMNS = ["distance", "seconds", "error", "attempts"]
#: Files the skeleton writes into every run directory; a task adds its own.
MANIFEST = "run.json"


@dataclass(frozen=True)
class Evaluation:
    """One pair of corpora every metric is evaluated on; ``fields`` are its values of ``Task.fields``.

    ``only``: evaluated by these metrics alone (None: every metric of the run); ``seed``: the metric seed
    (None: the run's seed for ``repetition``); ``aside``: its outcomes are not rows of the distance table
    but go to ``score`` as ``Collections.aside`` (KSC's own-noise evaluations)."""

    fields: tuple
    p: str
    q: str
    repetition: int
    only: frozenset[str] | None = None
    seed: int | None = None
    aside: bool = False


#: The blocks every task shares, each a typed dataclass checked like a task's settings and carried by ``RunInputs``.
SHARED_SETTINGS: tuple[type[SharedSettings], ...] = (EngineSettings, DataSettings, EmbedderSettings, LMSettings)


@dataclass(frozen=True)
class RunInputs:
    """Everything a run reads from its config, read once at the top and passed down as typed values.

    ``settings`` are the task's own (its ``TaskSettings``); ``metrics`` the selected metrics with their
    parameters; ``engine``, ``data``, ``embedder`` and ``lm`` the blocks every task shares, typed
    (``textmetric_bench.settings.SharedSettings``); ``cfg`` the composed config, for the pair (a card's or files)."""

    cfg: DictConfig
    settings: TaskSettings
    metrics: list[tuple[MetricInfo, dict]]
    out_dir: Path
    seed: int
    cache_dir: Path
    mirror: Path | None
    engine: EngineSettings
    data: DataSettings
    embedder: EmbedderSettings
    lm: LMSettings
    progress: bool

    @classmethod
    def of(
        cls,
        cfg: DictConfig,
        settings: TaskSettings,
        metrics: list[tuple[MetricInfo, dict]],
        out_dir: Path | str,
        shared: Mapping[type, SharedSettings] | None = None,
    ) -> "RunInputs":
        """The inputs with the seed, the shared blocks (``shared``: as already read, by class) and the data
        locations read from ``cfg``."""
        shared = shared or {}

        def block(kind):
            return shared[kind] if kind in shared else kind.of(cfg)

        data = block(DataSettings)
        cache_dir, mirror = data.locations()
        return cls(
            cfg,
            settings,
            metrics,
            Path(out_dir),
            int(cfg.seed),
            cache_dir,
            mirror,
            block(EngineSettings),
            data,
            block(EmbedderSettings),
            block(LMSettings),
            bool(OmegaConf.select(cfg, "progress", default=True)),  # auto: the console decides whether a bar shows
        )


@dataclass
class Collections:
    """What a task's ``build`` returns: the corpora by id, the evaluations, and what identifies the run.

    ``fingerprint`` names everything the corpora depend on (the evaluation log refuses another);
    ``info`` is the task's part of ``run.json``; ``extra`` carries what ``score`` and ``write`` need;
    ``positions``: corpus id -> its known position on the collection's axis, which the reference metric
    ``oracle`` reads (``textmetric_bench.api.positions``). The skeleton fills ``aside`` with the distance
    table of the evaluations marked ``aside`` before ``score``. ``sides``: each source's texts, by its name, so
    the record of texts longer than a model reads (``textmetric_bench.tasks.text_lengths``) is per source.
    """

    corpora: Mapping[str, Sequence[str]]
    evaluations: list[Evaluation]
    fingerprint: dict
    info: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    positions: Mapping[str, float] = field(default_factory=dict)
    aside: pd.DataFrame | None = None
    sides: Mapping[str, Sequence[str]] = field(default_factory=dict)  # source name -> its texts (long-text record)

    @functools.cached_property
    def digest(self) -> str:
        """A short digest of every corpus with its id (``corpora_digest``), computed once per run."""
        return corpora_digest(self.corpora)


@dataclass
class TaskResult:
    """What a task produced: the one result type of every task."""

    task: str
    distances: pd.DataFrame
    measures: pd.DataFrame
    summary: pd.DataFrame | None = None
    failures: dict[str, str] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    passed: bool = True
    tracebacks: pd.DataFrame | None = None  # metric, the task's fields, traceback: of each evaluation that raised


@dataclass
class Scores:
    """What a task's ``score`` returns."""

    measures: pd.DataFrame
    failures: dict[str, str]
    distances: pd.DataFrame | None = None  # the distance table with derived columns, if the task adds any
    summary: pd.DataFrame | None = None
    info: dict = field(default_factory=dict)


#: Every task by name, registered by subclassing ``Task`` (``textmetric_bench.running.registry`` finds the modules).
TASKS: dict[str, type["Task"]] = {}


class Task:
    """What a task says about itself, in one place:
    ``class KSCTask(Task, name="ksc", settings=KSCSettings, fields=("repetition", "i", "j"))``.

    ``settings``: its ``TaskSettings`` dataclass (keys, types, defaults, help; the task's Hydra node);
    ``fields`` name the columns that identify an evaluation in the distance table (after ``metric``);
    ``distances_file`` is that table's file name in the run directory; ``figures`` maps the file-name prefix of
    each figure it writes to the caption the HTML report shows; ``joins_ksc``: its measures join the Table 3 of
    a KSC run of the same pair; ``uses_pair``: it reads the corpus pair ``pair`` (checked before the run);
    ``printed``: the files of ``write``'s result (by name) printed on the console at the end of a run;
    ``warms_embedder``: on an empty embedding cache the embedder's model starts loading while ``build`` runs (a
    helper process of about 800 MB); false for a task whose build is minutes of language-model work (IFC), where
    the overlap gains nothing and the helper's memory would sit beside the LM's.
    """

    name: ClassVar[str]
    settings: ClassVar[type[TaskSettings]]
    fields: ClassVar[tuple[str, ...]]
    distances_file: ClassVar[str]
    figures: ClassVar[dict[str, str]]
    joins_ksc: ClassVar[bool]
    uses_pair: ClassVar[bool]
    printed: ClassVar[tuple[str, ...]]
    warms_embedder: ClassVar[bool]

    def __init_subclass__(
        cls,
        *,
        name: str,
        settings: type[TaskSettings],
        fields: tuple[str, ...],
        distances_file: str = "distances.csv",
        figures: Mapping[str, str] | None = None,
        joins_ksc: bool = False,
        uses_pair: bool = True,
        printed: tuple[str, ...] = ("table3_md",),
        warms_embedder: bool = True,
        **kwargs,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if name in TASKS and TASKS[name].__qualname__ != cls.__qualname__:
            raise ValueError(f"task {name!r} is registered twice: {TASKS[name].__module__} and {cls.__module__}")
        cls.name, cls.settings, cls.fields, cls.distances_file = name, settings, tuple(fields), distances_file
        cls.figures, cls.joins_ksc, cls.uses_pair, cls.printed = (
            dict(figures or {}),
            joins_ksc,
            uses_pair,
            tuple(printed),
        )
        cls.warms_embedder = warms_embedder
        TASKS[name] = cls

    @classmethod
    def unnamed_metrics(cls, cfg: DictConfig) -> list[str]:
        """The metrics a run of this task computes when ``metrics`` is not given (null in the config): the default
        ones (``metrics=default``)."""
        return ["default"]

    def preflight(self, run: RunInputs) -> None:
        """Raise ConfigError for what the settings' types cannot tell (a file that must exist, a source that must
        be known), before any corpus or model is loaded."""

    def build(self, run: RunInputs) -> Collections:
        """Draw the corpora and list the evaluations."""
        raise NotImplementedError

    def score(self, distances: pd.DataFrame, collections: Collections) -> Scores:
        """Measures (and a summary) from the distance table of every metric."""
        raise NotImplementedError

    def write(self, result: TaskResult, out_dir: Path) -> dict[str, Path]:
        """The task's own tables and figures; returns them by name."""
        raise NotImplementedError

    def title(self, run: RunInputs, collections: Collections) -> str:
        raise NotImplementedError

    def merge_reference(
        self, run: RunInputs, collections: Collections, measures: pd.DataFrame, computed: set[str]
    ) -> tuple[pd.DataFrame, dict]:
        """Measures of metrics not ``computed`` here, taken from reference results (KSC only), and what was taken."""
        return measures, {}

    def run(self, run: RunInputs) -> TaskResult:
        """Run the task (on the skeleton; a task that wraps another, as ``check`` wraps KSC, overrides this)."""
        return run_task(self, run)


def read_inputs(task: type[Task] | Task, cfg: DictConfig, out_dir: Path | str) -> RunInputs:
    """The typed inputs of a run of ``task`` from the composed config; ConfigError lists every bad setting.
    (``textmetric_bench.running.validate.validate_config`` checks the rest of the config as well.)"""
    settings, problems, _ = read_settings(task.settings, cfg)
    if problems:
        raise ConfigError("\n".join(problems))
    return RunInputs.of(cfg, settings, selected_metrics(cfg, task.unnamed_metrics(cfg)), out_dir)


def reported_plugin_failures() -> dict[str, dict]:
    """The metric modules that failed to import, each said in the run's log with its traceback (the console gets
    them from the command line's end-of-run lines); for ``run.json``."""
    failures = plugin_failures()
    for module, record in failures.items():
        log.error(
            "metric plugin %s (%s) failed to import: %s; its metrics are left out of this run%s\n%s",
            record["plugin"],
            module,
            record["error"],
            f" ({', '.join(record['withdrawn'])})" if record["withdrawn"] else "",
            record["traceback"].rstrip(),
            extra=FILE_ONLY,
        )
    return failures


def merged_sentence(earlier: list[str], now: list[str], out_dir: Path) -> str:
    """What a run says when its directory held other metrics' results from an earlier run there, which it keeps."""
    return (
        f"{out_dir} held results of {', '.join(earlier)} from an earlier run in it: they are merged into these "
        f"tables beside this run's {', '.join(now)}; give a new run directory for this run's metrics alone"
    )


#: What the rest of a run imports in this process: the figure modules whose jobs it submits and the measures'
#: libraries (each imported where it is first used). Imported before the texts are embedded, while the embedding
#: helper and the workers' forkserver start up, they are off the run's tail: with the embeddings cached a run took
#: 12.75-12.88 s instead of 13.41-13.70 s, four alternated pairs (AMD EPYC, 2026-11-29).
RUN_IMPORTS = (*FIGURE_PRELOAD, *MEASURE_LIBRARIES)


def figure_processes():
    """How a run's figures are drawn (``textmetric_bench.reports.figures.parallel.DrawingProcesses``): in processes
    forked from the evaluation workers' forkserver, each sending what it logs or prints into the run's log."""
    from textmetric_bench.console import output_to_run_log
    from textmetric_bench.engine.pool import worker_context
    from textmetric_bench.reports.figures.parallel import DrawingProcesses

    return DrawingProcesses(worker_context(), output_to_run_log())


REPORT_FILES = ("report.html", "report_figures")


def write_run_report(out_dir: Path) -> Path | None:
    """The run's ``report.html`` (with its ``report_figures/``), or None and one warning if it cannot be built: the
    run's tables are written, and a failure of their page must not hide them. Its files are then removed, an earlier
    run's included, so that no page is cut short or shows other results than the tables beside it; the same command
    writes it again (its evaluations are logged)."""
    from textmetric_bench.reports.html.report import build_report

    try:
        with storage_errors(out_dir, "the run's report.html"):
            build_report([out_dir], out_dir, figure_context=figure_processes())  # the run's forkserver draws them
    except Exception as exc:  # noqa: BLE001 - the tables are written; the page is a view of them
        for name in REPORT_FILES:
            path = out_dir / name
            try:
                shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
            except OSError:  # what cannot be removed stays; the warning says the page was not built
                pass
        log.warning("could not build report.html (no report written; the tables are): %s", exc)
        return None
    return out_dir / REPORT_FILES[0]


def import_ahead(modules: Iterable[str]) -> None:
    """Import ``modules`` now (each once per process)."""
    for name in modules:
        importlib.import_module(name)


def run_task(task: Task, run: RunInputs) -> TaskResult:
    """Run ``task`` on ``run``'s inputs and write everything into ``run.out_dir``."""
    out_dir, metrics = run.out_dir, run.metrics
    out_dir.mkdir(parents=True, exist_ok=True)
    embedder, embed_seconds, warming = None, 0.0, False
    if any(m.inputs == "embeddings" for m, _ in metrics):
        embedder = build_embedder(
            run.embedder, run.cache_dir
        )  # the model loads only if a text is not in the embedding cache
        if task.warms_embedder:  # an empty cache: the model loads while the corpora are built
            warming = embedder.warm_up_if_uncached()
    if not warming:
        end_if_started_ahead()  # the command line guessed a first run (textmetric_bench.running.ahead): not here
    collections = task.build(run)
    result_log = result_log_for(run.engine, out_dir, collections.fingerprint)
    if result_log is not None:
        result_log.check()  # a directory of another configuration is refused before any text is embedded
    if changed := changed_files(_previous_manifest(out_dir), collections.info):
        log.warning("%s", changed_files_sentence(changed))
    # the workers' forkserver imports while the texts are embedded; not before the build, which may be minutes of
    # language-model work (IFC, a machine-written corpus) that it would only sit beside in memory
    start_worker_server(FIGURE_PRELOAD)
    import_ahead(RUN_IMPORTS)

    start = time.perf_counter()
    store = CorpusStore.from_corpora(collections.corpora, embed=embedder.embed if embedder else None)
    embed_seconds = time.perf_counter() - start
    long_texts = long_text_records(store.all_texts, collections.sides, embedder, metrics)

    content = {ev: pair_digest(collections.corpora[ev.p], collections.corpora[ev.q]) for ev in collections.evaluations}
    planned = [
        (
            Job(
                key=(m.name, params_digest(params), *ev.fields, content[ev]),
                metric=m.name,
                p=ev.p,
                q=ev.q,
                seed=metric_seed(run.seed, ev.repetition) if ev.seed is None else ev.seed,
            ),
            ev,
        )
        for ev in collections.evaluations
        for m, params in metrics
        if ev.only is None or m.name in ev.only
    ]
    jobs = [job for job, _ in planned]
    aside = {job.key for job, ev in planned if ev.aside}
    positions = {corpus_key(collections.corpora[cid]): float(pos) for cid, pos in collections.positions.items()}
    with known_positions(positions):  # the oracle's view of the corpora, in every worker the engine starts
        outcomes = run_jobs(
            jobs,
            store,
            {m.name: (m, params) for m, params in metrics},
            result_log=result_log,
            embedder_id=embedder.identity if embedder else None,
            desc=f"{task.name} evaluations",
            **engine_options(run.engine, progress=run.progress),
        )
    collections.aside = distance_table(task.fields, [(k, o) for k, o in outcomes.items() if k in aside])
    outcomes = {k: o for k, o in outcomes.items() if k not in aside}
    own_content = {ev: d for ev, d in content.items() if not ev.aside}
    earlier = earlier_outcomes(result_log, own_content, {m.name for m, _ in metrics}, out_dir)
    if partial := incomplete_earlier(earlier, own_content):  # on other corpora, mostly: not merged
        earlier = {key: o for key, o in earlier.items() if key[0] not in partial}
        log.warning("%s", partial_sentence(partial))
    distances = distance_table(task.fields, [*outcomes.items(), *earlier.items()])
    tracebacks = traceback_table(task.fields, [*outcomes.items(), *earlier.items()])
    names = list(dict.fromkeys(distances["metric"]))
    if earlier_names := [n for n in names if n not in {m.name for m, _ in metrics}]:
        log.warning("%s", merged_sentence(earlier_names, [m.name for m, _ in metrics], out_dir))
    orientation = metric_orientations(names, out_dir)
    scores = task.score(oriented(distances, orientation), collections)
    if scores.distances is not None:  # the task's table with derived columns, back to each metric's own values
        distances = oriented(scores.distances, orientation)
    built_in = {m.name for m, _ in metrics if is_builtin_module(m.module)}  # orientation fixed by the harness
    upside_down = orientation_warnings(scores.measures, orientation, built_in)
    for message in upside_down.values():
        log.warning("%s", message)
    measures, reference = task.merge_reference(run, collections, scores.measures, set(names))
    taken = [m for m in dict.fromkeys(measures["metric"]) if m not in orientation]  # reference rows
    orientation.update(metric_orientations(taken, out_dir))

    info = {
        "task": task.name,
        **collections.info,
        "seed": run.seed,
        "metrics": names,
        "metrics_this_run": [m.name for m, _ in metrics],
        "earlier_metrics": sorted(set(names) - {m.name for m, _ in metrics}),
        **({"earlier_not_merged": partial} if partial else {}),
        **({"files_changed": changed} if changed else {}),
        "metric_params": {m.name: params for m, params in metrics},
        "metric_inputs": {m.name: m.inputs for m, _ in metrics},
        **({"plugin_failures": failed_imports} if (failed_imports := reported_plugin_failures()) else {}),
        "failures": scores.failures,
        "orientation": orientation,
        "orientation_warnings": upside_down,
        **scores.info,
        **({"reference": reference} if reference else {}),
        "seconds_per_metric": distances.groupby("metric", sort=False)["seconds"].sum().round(3).to_dict(),
        "embedding": {
            "model": embedder.identity if embedder else None,
            "seconds": round(embed_seconds, 3),
            **(embedder.stats if embedder else {}),
            **({"window": embedder.window, "long_texts": embedder.long_texts} if embedder else {}),
        },
        "long_texts": long_texts,
        "corpora_digest": collections.digest,
        "mirror": str(run.mirror) if run.mirror else None,
        "version": __version__,
        "python": platform.python_version(),
        "figures": task.figures,
        "joins_ksc": task.joins_ksc,
    }
    summary = scores.summary
    if summary is not None and "metric" in summary.columns:
        summary = with_orientation(summary, orientation)
    result = TaskResult(
        task.name,
        with_orientation(distances, orientation),
        with_orientation(measures, orientation),
        summary,
        scores.failures,
        {},
        info,
        tracebacks=tracebacks,
    )
    result.files = write_artifacts(task, result, out_dir, title=task.title(run, collections))
    return result


def metric_orientations(names: Sequence[str], out_dir: Path) -> dict[str, str]:
    """Each metric's orientation: as registered (this run's metrics always are), else as the run
    directory's ``run.json`` recorded it (an earlier metric whose plugin is gone), else a distance."""
    from textmetric_bench.api.registry import available_metrics, get_metric

    registered, recorded = set(available_metrics()), _previous_manifest(out_dir).get("orientation") or {}
    return {
        name: orientation_of(get_metric(name)) if name in registered else recorded.get(name, DISTANCE) for name in names
    }


def pair_digest(p: Sequence[str], q: Sequence[str]) -> str:
    """A short digest of both corpora's texts, the last part of a job key: a logged evaluation is reused
    only on the very same corpora (a regenerated IFC corpus or a changed source is evaluated again)."""
    return _texts_digest((p, q))


def corpora_digest(corpora: Mapping[str, Sequence[str]]) -> str:
    """A short digest of every corpus of a run, with its id (in ``run.json``): reference results are
    merged only into a run on the very same corpora."""
    return _texts_digest(part for cid in sorted(corpora) for part in ([cid], corpora[cid]))


def _texts_digest(corpora: Iterable[Sequence[str]]) -> str:
    h = hashlib.blake2b(digest_size=8)
    for corpus in corpora:
        for text in corpus:
            h.update(text.encode("utf-8", "surrogatepass") + b"\x00")
        h.update(b"\x01")
    return h.hexdigest()


def earlier_outcomes(
    result_log, content: Mapping[Evaluation, str], current: set[str], out_dir: Path
) -> dict[tuple, Outcome]:
    """Logged outcomes of metrics this run did not select, on this run's very corpora (latest parameters).

    In the order this run plans its own jobs (evaluation by evaluation, the metrics in the order the earlier
    run listed them), not the log's: the log is in the order the jobs finished, which varies with the load,
    and a metric's measures summed in another order differ in their last bits.
    """
    if result_log is None:
        return {}
    position = {(*ev.fields, digest): n for n, (ev, digest) in enumerate(content.items())}
    found = [
        (key, outcome)
        for key, outcome in result_log.latest_per_metric().items()
        if key[0] not in current and tuple(key[2:]) in position
    ]
    listed = {name: n for n, name in enumerate(_previous_manifest(out_dir).get("metrics") or [])}
    found.sort(key=lambda item: (position[tuple(item[0][2:])], listed.get(item[0][0], len(listed)), item[0][0]))
    return dict(found)


def incomplete_earlier(earlier: Mapping[tuple, Outcome], content: Mapping[Evaluation, str]) -> dict[str, str]:
    """The earlier metrics of ``earlier_outcomes`` whose logged evaluations cover only some of this run's
    evaluations (its corpora changed since, a file edited, say), each with "<found> of <planned>": merged, their
    rows would stand on a part of the corpora, so they are left out and said so."""
    found = Counter(key[0] for key in earlier)
    planned = {name: sum(ev.only is None or name in ev.only for ev in content) for name in found}
    return {name: f"{found[name]} of {planned[name]}" for name in sorted(found) if found[name] < planned[name]}


def changed_files(previous: Mapping, info: Mapping) -> dict[str, str]:
    """Per source of this run (``info``'s ``sources``) whose files' sha256 differ from those the earlier run in the
    same directory recorded (``previous``, its ``run.json``): its files now, each with its sha256 then and now.
    Empty for a first run, and for a source the earlier run did not record."""
    before = previous.get("sources") if isinstance(previous.get("sources"), dict) else {}
    changed = {}
    for place, (name, record) in enumerate((info.get("sources") or {}).items()):
        # a source is matched by its name, else by its place (a file pair's side given by another path)
        earlier_record = before.get(name) or dict(enumerate(before.values())).get(place)
        files = earlier_record.get("files") if isinstance(earlier_record, dict) else None
        then = [(str(f.get("path")), str(f.get("sha256"))) for f in files or [] if isinstance(f, dict)]
        now = [(str(f["path"]), str(f["sha256"])) for f in record.get("files") or []]
        if not then or sorted(sha for _, sha in then) == sorted(sha for _, sha in now):
            continue
        by_path = dict(then)
        # a file is matched by its path, else by its place (the same file given by another path)
        earlier = [by_path.get(path, then[i][1] if i < len(then) else "") for i, (path, _) in enumerate(now)]
        changed[name] = (
            ", ".join(
                f"{path}: sha256 {old[:12] or 'none'} then, {sha[:12]} now"
                for (path, sha), old in zip(now, earlier)
                if old != sha
            )
            or f"{len(then)} files then, {len(now)} now"
        )
    return changed


def changed_files_sentence(changed: Mapping[str, str]) -> str:
    """What a run says of the files that changed since the earlier run in its directory (``changed_files``)."""
    return (
        "Files changed since the earlier run in this directory: "
        + "; ".join(f"{source} ({files})" for source, files in changed.items())
        + ". Evaluations of corpora holding texts that changed are computed again; the others are reused"
    )


def distance_table(fields: Sequence[str], outcomes: Sequence[tuple[tuple, Outcome]]) -> pd.DataFrame:
    """One row per (metric, evaluation) from job keys (metric, parameter digest, *fields, corpora digest)."""
    rows = [(key[0], *key[2:-1], o.distance, o.seconds, o.error, o.attempts) for key, o in outcomes]
    return pd.DataFrame(rows, columns=["metric", *fields, *OUTCOME_COLUMNS])


def traceback_table(fields: Sequence[str], outcomes: Sequence[tuple[tuple, Outcome]]) -> pd.DataFrame:
    """One row per evaluation that raised: metric, ``fields`` and the metric's traceback (for ``failures.csv``)."""
    rows = [(key[0], *key[2:-1], o.traceback) for key, o in outcomes if o.traceback]
    return pd.DataFrame(rows, columns=["metric", *fields, "traceback"])


def write_artifacts(task: Task, result: TaskResult, out_dir: Path, *, title: str) -> dict[str, Path]:
    """The common files, then the task's own; files an earlier run wrote and this one did not are removed. A disk
    that fills up (or turns read-only) meanwhile is a StorageError, and the files written until then, which may be
    cut short, are removed: the run directory keeps its evaluations, from which the same command writes them all."""
    before = _file_states(out_dir)
    try:
        with storage_errors(out_dir, "the run's tables and figures"):
            return _write_artifacts(task, result, out_dir, title=title)
    except StorageError:
        for path, state in _file_states(out_dir).items():
            if state != before.get(path):
                path.unlink(missing_ok=True)
        raise


def _file_states(out_dir: Path) -> dict[Path, tuple[int, int]]:
    """(modification time, size) of every file under ``out_dir`` but the evaluation log and the log files."""
    states = {}
    for path in out_dir.rglob("*"):
        try:
            if path.is_file() and path.name != "evaluations.jsonl" and path.suffix != ".log":
                stat = path.stat()
                states[path] = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            continue
    return states


def _write_artifacts(task: Task, result: TaskResult, out_dir: Path, *, title: str) -> dict[str, Path]:
    previous = _previous_files(out_dir)
    files = {
        "distances": out_dir / task.distances_file,
        "measures": out_dir / "measures.csv",
        "run": out_dir / MANIFEST,
    }
    result.distances.to_csv(files["distances"], index=False)
    result.measures.to_csv(files["measures"], index=False)
    if (failed := write_failures_csv(result.distances, out_dir, result.tracebacks)) is not None:
        files["failures"] = failed
    result.info["title"] = title
    files.update(task.write(result, out_dir))
    if result.info.get("orientation_warnings") and "table3_md" in files:
        from textmetric_bench.reports.tables.markdown import orientation_markdown

        with files["table3_md"].open("a", encoding="utf-8") as md:
            md.write("\n".join(["", *orientation_markdown(result.info["orientation_warnings"])]))
    if page := next((files[name] for name in task.printed if name in files), None):
        head_with_warnings(page, unstated_warnings(result.info))
    result.info["files"] = sorted(str(p.relative_to(out_dir)) for p in files.values() if p.is_relative_to(out_dir))
    files["run"].write_text(json.dumps(result.info, indent=2, default=str))
    for stale in previous - set(result.info["files"]):
        path = out_dir / stale
        if path.is_file() and path.name != "evaluations.jsonl":
            path.unlink()
            log.info("removed %s, written by an earlier run and not by this one", path)
    return files


def head_with_warnings(page: Path, warnings: Sequence[str]) -> None:
    """Put ``warnings`` under the title of the markdown ``page`` (the run's printed page), one bold line each, so the
    console, the file and ``Result.text()`` carry them."""
    if not warnings:
        return
    lines = page.read_text(encoding="utf-8").split("\n")
    at = 2 if lines[0].startswith("# ") else 0
    lines[at:at] = [line for w in warnings for line in (f"**Warning: {' '.join(w.split())}**", "")]
    page.write_text("\n".join(lines), encoding="utf-8")


def _previous_files(out_dir: Path) -> set[str]:
    return set(_previous_manifest(out_dir).get("files") or [])


def _previous_manifest(out_dir: Path) -> dict:
    """The ``run.json`` an earlier run left in ``out_dir``, or {}."""
    try:
        manifest = json.loads((out_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def task_runner(task: type[Task]) -> Callable[[DictConfig, Path | str], TaskResult]:
    """``fn(cfg, out_dir)`` running ``task`` on a composed config (its settings read and checked first)."""

    def run(cfg: DictConfig, out_dir: Path | str) -> TaskResult:
        instance = task()
        return instance.run(read_inputs(instance, cfg, out_dir))

    run.__name__ = f"run_{task.name}"
    run.__doc__ = f"Run the {task.name} task described by ``cfg``; write its outputs to ``out_dir``."
    return run
