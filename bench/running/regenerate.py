"""Regenerate everything the repository ships that today's code computes: one command, from a checkout.

``python -m textmetric_bench.running.regenerate`` (``make regenerate``) reruns, with the code and the pinned numerics
of this checkout, from the cache it is given (an empty one reproduces the same files):

- ``baseline``: the regression gate's baseline (``task=check update=true``; reports/baselines/);
- ``reference``: the reference results of the default metrics on the shipped pairs (reports/reference/);
- ``paper``: the reproduction of 004's Table 3 (reports/paper_table3/: the four tables, ``distances.csv`` with
  compcor's CLASSIFIER column when compcor is installed, ``classifier_folds5.csv``, and the README made from them).

Each step runs the CLI in a run directory of its own under ``--work`` (default outputs/regenerate), so an
interrupted regeneration resumes where it stopped. ``tests/test_shipped_results.py`` (slow) recomputes the
shipped files and finds them equal to what the code computes now.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from textmetric_bench.measures import registry
from textmetric_bench import IN_CHECKOUT, PROJECT_ROOT
from textmetric_bench.tasks.reference import write_reference

STEPS = ("baseline", "reference", "paper")
#: The pairs whose default-setting KSC results ship as reference rows.
REFERENCE_PAIRS = ("fortune_computing_people", "clinc150_banking77", "atis_news")
#: 004 Table 3's settings and metrics.
PAPER_SETTINGS = (("clinc150_banking77", 7), ("clinc150_banking77", 12), ("atis_news", 7), ("atis_news", 12))
PAPER_METRICS = ("chi", "classifier", "dc", "fid", "irpr", "mauve", "pr", "zipf")
PAPER_RUN = ("n=100", "repetitions=5", "seed=0", "reference=false")
PAPER_DIR = PROJECT_ROOT / "reports" / "paper_table3"


def bench(*overrides: str, run_dir: Path, workers: str) -> None:
    """One run of the CLI in ``run_dir`` (resumed if it exists); stops the regeneration if it fails."""
    command = [
        sys.executable,
        "-m",
        "textmetric_bench",
        *overrides,
        f"engine.workers={workers}",
        "progress=false",
        f"hydra.run.dir={run_dir}",
    ]
    print("$", " ".join(command[1:]), flush=True)
    subprocess.run(command, check=True, cwd=PROJECT_ROOT)


def regenerate_baseline(work: Path, workers: str) -> None:
    bench("task=check", "update=true", run_dir=work / "check", workers=workers)


def regenerate_reference(work: Path, workers: str) -> None:
    for pair in REFERENCE_PAIRS:
        run_dir = work / "reference" / pair
        bench(f"pair={pair}", "reference=false", run_dir=run_dir, workers=workers)
        print("wrote", write_reference(run_dir), flush=True)


def regenerate_paper(work: Path, workers: str) -> None:
    metrics = f"metrics=[{','.join(PAPER_METRICS)}]"
    runs = []
    for pair, k in PAPER_SETTINGS:
        run_dir = work / "paper" / f"{pair}_k{k}"
        bench(f"pair={pair}", f"k={k}", *PAPER_RUN, metrics, run_dir=run_dir, workers=workers)
        for suffix in ("csv", "md"):
            shutil.copyfile(run_dir / f"table3.{suffix}", PAPER_DIR / f"{pair}_k{k}.{suffix}")
        runs.append(run_dir)
    folds = []
    for pair, k in PAPER_SETTINGS:  # CLASSIFIER version 1 (5 folds), which the README compares with one split
        run_dir = work / "paper" / f"{pair}_k{k}_classifier_folds5"
        bench(
            f"pair={pair}",
            f"k={k}",
            *PAPER_RUN,
            "metrics=[classifier]",
            "metric.classifier.folds=5",
            run_dir=run_dir,
            workers=workers,
        )
        row = pd.read_csv(run_dir / "table3.csv").set_index("metric").loc["classifier"]
        folds.append(
            {"pair": pair, "k": k, **{m: round(float(row[m]), 6) for m in registry.names(quality=True, task="ksc")}}
        )
    pd.DataFrame(folds).to_csv(PAPER_DIR / "classifier_folds5.csv", index=False)
    distances = PAPER_DIR / "distances.csv"
    python = [sys.executable, "-m"]
    subprocess.run(
        [*python, "textmetric_bench.reports.paper_table3.distances", str(distances), *map(str, runs)], check=True
    )
    compcor = PROJECT_ROOT / "tests" / "benchmarks" / "compcor_classifier_run.py"
    if _has_compcor():
        subprocess.run([sys.executable, str(compcor), str(distances)], check=True, cwd=PROJECT_ROOT)
    else:
        print(
            "compcor is not installed: distances.csv has no classifier_compcor rows "
            "(pip install --no-deps compcor==1.0.6, or run `make regenerate`)",
            flush=True,
        )
    subprocess.run([*python, "textmetric_bench.reports.paper_table3.agreement"], check=True)


def _has_compcor() -> bool:
    from importlib.util import find_spec

    return find_spec("compcor") is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m textmetric_bench.running.regenerate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("steps", nargs="*", help=f"what to regenerate: any of {', '.join(STEPS)} (default: all)")
    parser.add_argument(
        "--work",
        type=Path,
        default=PROJECT_ROOT / "outputs" / "regenerate",
        help="where the runs go (an interrupted regeneration resumes there)",
    )
    parser.add_argument("--workers", default="auto", help="engine.workers of every run (results do not depend on it)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.steps) - set(STEPS))
    if unknown:
        parser.error(f"unknown step(s) {unknown}; choose from {', '.join(STEPS)}")
    if not IN_CHECKOUT:
        print("regenerate writes the files of a checkout; run it from one (pip install -e .)", file=sys.stderr)
        return 2
    done = {"baseline": regenerate_baseline, "reference": regenerate_reference, "paper": regenerate_paper}
    for step in args.steps or STEPS:
        done[step](args.work.absolute(), args.workers)
    print(json.dumps({"regenerated": args.steps or list(STEPS)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
