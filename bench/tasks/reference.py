"""Reference results: the built-in metrics' measures on the shipped pairs at the default KSC settings, so that
a run of one new metric shows it beside them without computing them all again.

A reference file ``reports/reference/<pair>_k<k>_n<n>_r<repetitions>_s<seed>.json`` is written from a real
KSC run directory by ``python -m textmetric_bench.tasks.reference <run dir>``. It holds the run's settings, a digest of
its corpora, its embedding model and project version, and per metric its version (declared, package,
source digest), its parameters and its measures in every repetition.

A KSC run (``reference: auto``, the default) whose settings, corpora and project version match a file adds
the file's metrics it did not compute to its measures, marked ``source`` = reference, provided the metric
registered now declares the same version, has the same parameters in this run's config and, if it reads
embeddings, this run's embedder is the reference's. Any other is left out, with a log line saying why.
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import re
import sys
from pathlib import Path
from typing import Callable

import pandas as pd
from omegaconf import DictConfig

from textmetric_bench import PROJECT_ROOT, __version__, shipped_path
from textmetric_bench.api.registry import get_metric
from textmetric_bench.engine import params_digest
from textmetric_bench.errors import BenchError, ConfigError
from textmetric_bench.files import atomic_write
from textmetric_bench.tasks.config import build_embedder, metric_params
from textmetric_bench.tasks.skeleton import Collections, RunInputs

log = logging.getLogger(__name__)

#: Where the shipped reference files live (``reference: auto``).
REFERENCE_DIR = shipped_path("reports/reference")
FORMAT = 1
#: What a reference file's settings name; a run must match every one.
SETTINGS = ("task", "pair", "k", "n", "repetitions", "seed")
#: Values of the ``source`` column of a KSC run's measures.csv.
RUN, REFERENCE = "run", "reference"
MEASURES = ("rho", "omega2", "L", "A", "Aw", "T")


def ksc_settings(run: RunInputs) -> dict:
    s = run.settings
    return {
        "task": "ksc",
        "pair": str(run.cfg.pair.name),
        "k": s.k,
        "n": s.n,
        "repetitions": s.repetitions,
        "seed": run.seed,
    }


def reference_name(settings: dict) -> str:
    """The file name of the reference results of ``settings``."""
    s = settings
    return f"{s['pair']}_k{s['k']}_n{s['n']}_r{s['repetitions']}_s{s['seed']}.json"


def reference_dir(value: str | bool | None) -> Path | None:
    """Where the ``reference`` setting says to look: the shipped files (``auto``), nowhere (``false``), or a directory."""
    if value is False or value is None:
        return None
    if value == "auto":
        return REFERENCE_DIR
    if isinstance(value, str) and Path(value).expanduser().is_dir():
        return Path(value).expanduser()
    raise ConfigError(
        f"reference={value!r} is not valid: give auto (the shipped reference results), false (none) "
        "or a directory of files written by `python -m textmetric_bench.tasks.reference <run dir>`"
    )


def version_parts(version: str) -> dict:
    """``MetricInfo.version`` ("<declared>+<package version>+<source digest>") split into its parts."""
    declared, _, rest = version.partition("+")
    package, _, source = rest.rpartition("+")
    return {"version": declared, "package_version": package, "source_digest": source}


# --- merging into a run -------------------------------------------------------------------------------------


def shown_setting(key: str) -> str:
    """``k7_n100_r5_s0`` (a reference file's setting) as "k=7, n=100, 5 repetitions, seed 0"; other keys as given."""
    found = re.fullmatch(r"k(\d+)_n(\d+)_r(\d+)_s(\d+)", key)
    if found is None:
        return key
    k, n, r, seed = found.groups()
    return f"k={k}, n={n}, {r} repetition{'s' if r != '1' else ''}, seed {seed}"


def merge_reference(
    run: RunInputs, collections: Collections, measures: pd.DataFrame, computed: set[str]
) -> tuple[pd.DataFrame, dict]:
    """``measures`` with a ``source`` column, plus the rows of matching reference metrics not ``computed``;
    and what ``run.json`` says of it (the file, the metrics taken, those skipped and why)."""
    measures = measures.assign(source=RUN)
    directory = reference_dir(run.settings.reference)
    if directory is None:
        return measures, {}
    settings = ksc_settings(run)
    path = directory / reference_name(settings)
    if not path.is_file():
        # Said only where it could have been otherwise: the pair has reference rows at other settings.
        # Your own files or cards have none, and a line about it on every run would be noise.
        shipped = sorted(p.stem for p in directory.glob(glob.escape(str(settings["pair"])) + "_k*.json"))
        say = log.info if shipped else log.debug
        say(
            "every metric in the table was computed here: reference rows of %s exist for %s only (%s)",
            settings["pair"],
            "; ".join(shown_setting(s.removeprefix(f"{settings['pair']}_")) for s in shipped) or "no setting",
            path.parent.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path.parent,
        )
        return measures, {}
    shown = str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)
    try:
        reference = json.loads(path.read_text())
        problem = file_mismatch(reference, settings, collections.digest)
    except (OSError, ValueError, AttributeError) as exc:  # not a reference file: the run's own results stand
        reference, problem = {}, f"it cannot be read ({type(exc).__name__}: {exc}); write it again"
    if problem:
        log.warning("reference results %s not used: %s", shown, problem)
        return measures, {"file": shown, "metrics": [], "not_used": problem}
    embedder: dict = {}

    def embedder_id() -> str | None:  # built only if a metric of embeddings is to be merged; loads no model
        if "id" not in embedder:
            try:
                made = build_embedder(run.embedder, run.cache_dir)
                made.count([t for corpus in collections.corpora.values() for t in corpus])  # windowed texts, if any
                embedder["id"] = made.identity
            except BenchError as exc:
                embedder["id"] = f"none ({exc})"
        return embedder["id"]

    taken, skipped = [], {}
    for name, entry in reference["metrics"].items():
        if name in computed:
            continue
        if reason := metric_mismatch(run.cfg, name, entry, reference["embedder"], embedder_id):
            log.warning("reference metric %s not merged: %s", name, reason)
            skipped[name] = reason
        else:
            taken.append(name)
    rows = [
        {"metric": name, **row, "source": REFERENCE} for name in taken for row in reference["metrics"][name]["measures"]
    ]
    if taken:
        log.info(
            "took %d metrics from the reference results %s (not computed in this run): %s",
            len(taken),
            shown,
            ", ".join(taken),
        )
        added = pd.DataFrame(rows, columns=measures.columns)
        measures = pd.concat([measures, added], ignore_index=True) if len(measures) else added
        measures[["repetition", *MEASURES]] = measures[["repetition", *MEASURES]].apply(pd.to_numeric)
    return measures, {"file": shown, "metrics": taken, "skipped": skipped}


def file_mismatch(reference: dict, settings: dict, corpora: str) -> str | None:
    """Why a reference file does not describe this run, or None."""
    if reference.get("format") != FORMAT:
        return f"format {reference.get('format')!r}, this version reads {FORMAT}; write it again"
    theirs = reference.get("settings") or {}
    differs = [f"{k} {theirs.get(k)!r} (this run {v!r})" for k, v in settings.items() if theirs.get(k) != v]
    if differs:
        return "it was made with " + ", ".join(differs)
    if reference.get("project_version") != __version__:
        return (
            f"it was made by textmetric-bench {reference.get('project_version')}, this is {__version__}; "
            "write it again from a run of this version"
        )
    if reference.get("corpora_digest") != corpora:
        return "its corpora differ from this run's (the data or the KSC construction changed); write it again"
    return None


def metric_mismatch(
    cfg: DictConfig, name: str, entry: dict, reference_embedder: str | None, embedder_id: Callable[[], str | None]
) -> str | None:
    """Why a reference metric's rows do not stand for the metric registered now, or None."""
    try:
        info = get_metric(name)
    except ConfigError:
        return "no metric of that name is registered here"
    declared = version_parts(info.version)["version"]
    if entry["version"] != declared:
        return (
            f"the reference was computed by its declared version {entry['version']!r} and the registered "
            f"metric declares version {declared!r} (@metric(version=...)); compute it in this run"
        )
    params = metric_params(cfg, info)
    if params_digest(params) != entry["params_digest"]:
        return f"its parameters in this run {params} differ from the reference's {entry['params']}"
    if info.inputs == "embeddings" and embedder_id() != reference_embedder:
        return f"the reference embedded the texts with {reference_embedder}, this run with {embedder_id()}"
    if entry["source_digest"] != version_parts(info.version)["source_digest"]:
        log.info(
            "metric %s: its module changed since the reference was written, its declared version did not: "
            "merged (bump version= in @metric if its results changed)",
            name,
        )
    return None


# --- writing from a run directory ---------------------------------------------------------------------------


def reference_from_run(run_dir: Path | str) -> dict:
    """The reference results of a finished KSC run directory, checked against the metrics registered now."""
    run_dir = Path(run_dir)
    try:
        run = json.loads((run_dir / "run.json").read_text())
        measures = pd.read_csv(run_dir / "measures.csv")
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{run_dir} is not a finished run directory ({exc}); give the directory of a "
            "`python -m textmetric_bench task=ksc` run (with run.json and measures.csv)"
        ) from exc
    if run.get("task") != "ksc":
        raise ConfigError(f"{run_dir / 'run.json'}: task {run.get('task')!r}; reference results come from a KSC run")
    if run.get("version") != __version__ or "corpora_digest" not in run or "metric_params" not in run:
        raise ConfigError(
            f"{run_dir / 'run.json'} was written by textmetric-bench {run.get('version')} (this is "
            f"{__version__}) or by an older checkout; run the same command in that directory again "
            "(hydra.run.dir=...: it recomputes only what changed), then write the reference"
        )
    if "source" in measures.columns:
        measures = measures[measures["source"] != REFERENCE]
    logged = logged_versions(run_dir / "evaluations.jsonl")
    embedder = run["embedding"]["model"]
    metrics = {}
    for name, rows in measures.groupby("metric", sort=True):
        if name in run.get("failures", {}):
            log.warning("metric %s left out: it failed in the run (%s)", name, run["failures"][name])
            continue
        if name not in run["metric_params"]:
            raise ConfigError(
                f"{run_dir}: metric {name} was not computed by the directory's last run (it is an "
                f"earlier metric there); run it again with metrics=[...,{name}] before writing"
            )
        info, params = get_metric(str(name)), run["metric_params"][name]
        expected = info.version + (f"|{embedder}" if info.inputs == "embeddings" else "")
        found = logged.get((name, params_digest(params)), set())
        if found != {expected}:
            raise ConfigError(
                f"{run_dir / 'evaluations.jsonl'}: metric {name} with parameters {params} was evaluated "
                f"as version(s) {sorted(found) or 'none'}, the registered metric is {expected}; run "
                "the same command in that directory again (it recomputes it), then write the reference"
            )
        metrics[str(name)] = {
            **version_parts(info.version),
            "inputs": info.inputs,
            "params": params,
            "params_digest": params_digest(params),
            "measures": _records(rows),
        }
    if not metrics:
        raise ConfigError(f"{run_dir}: no metric with complete measures to write")
    settings = {key: run[key] for key in SETTINGS if key != "task"}
    return {
        "format": FORMAT,
        "written_by": "python -m textmetric_bench.tasks.reference <run dir>",
        "settings": {"task": "ksc", **settings},
        "corpora_digest": run["corpora_digest"],
        "embedder": embedder,
        "project_version": __version__,
        "metrics": metrics,
    }


def logged_versions(path: Path) -> dict[tuple[str, str], set[str]]:
    """(metric, parameter digest) -> the metric versions of the latest logged attempt of each of its jobs."""
    if not path.is_file():
        raise ConfigError(
            f"{path} is missing: reference results are written from a run with its evaluation "
            "log (engine.resume=true, the default)"
        )
    latest = {}
    for line in path.read_text().splitlines()[1:]:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a kill
            continue
        latest[tuple(row["key"])] = row.get("metric_version")
    out: dict[tuple[str, str], set[str]] = {}
    for key, version in latest.items():
        out.setdefault((key[0], key[1]), set()).add(version)
    return out


def _records(rows: pd.DataFrame) -> list[dict]:
    """Measures per repetition as plain JSON values (a NaN measure as null)."""

    def plain(value) -> float | None:
        return None if pd.isna(value) else float(value)

    return [
        {"repetition": int(r["repetition"]), **{m: plain(r[m]) for m in MEASURES}}
        for r in rows.sort_values("repetition").to_dict("records")
    ]


def write_reference(run_dir: Path | str, out_dir: Path | str = REFERENCE_DIR, *, merge: bool = False) -> Path:
    """Write the reference file of ``run_dir`` into ``out_dir``; returns its path.

    ``merge``: keep the metrics of an existing file that the run did not compute, replacing those it did
    (a changed metric is re-run alone); the file must describe the same settings, corpora, embedder and
    project version."""
    reference = reference_from_run(run_dir)
    path = Path(out_dir) / reference_name(reference["settings"])
    if merge and path.is_file():
        old = json.loads(path.read_text())
        for key in ("settings", "corpora_digest", "embedder", "project_version"):
            if old.get(key) != reference[key]:
                raise ConfigError(
                    f"{path}: its {key} is {old.get(key)!r}, the run's is {reference[key]!r}; "
                    "merge only a run of the same settings, or write the file anew without --merge"
                )
        reference["metrics"] = dict(sorted({**old["metrics"], **reference["metrics"]}.items()))
    text = json.dumps(reference, indent=1)
    text = re.sub(r'\{\s+"repetition"[^{}]*\}', lambda row: " ".join(row.group().split()), text)  # a row a line
    atomic_write(path, text + "\n", what="reference results")
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m textmetric_bench.tasks.reference RUN_DIR [--out DIR]``."""
    parser = argparse.ArgumentParser(
        prog="python -m textmetric_bench.tasks.reference",
        description="Write the reference results of a finished KSC run directory.",
    )
    parser.add_argument(
        "run_dirs", type=Path, nargs="+", help="run directories of `python -m textmetric_bench task=ksc`"
    )
    parser.add_argument("--out", type=Path, default=REFERENCE_DIR, help=f"where to write (default {REFERENCE_DIR})")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the existing file's other metrics; replace only those the run computed",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        for run_dir in args.run_dirs:
            path = write_reference(run_dir, args.out, merge=args.merge)
            print(f"wrote {path} ({len(json.loads(path.read_text())['metrics'])} metrics)")
    except BenchError as exc:
        print(f"python -m textmetric_bench.tasks.reference: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
