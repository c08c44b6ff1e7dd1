"""The README's example of a suite: a critical-difference diagram and a card of ``suite=paper``, with the numbers
of the prose around them written from that suite's ``ranks.csv``, never by hand.

    python -m textmetric_bench suite=paper                                   # long: 6 runs at 004's settings
    python -m textmetric_bench.reports.suite.readme multirun/suite/paper     # images and README section

run from the checkout, copies ``cd_<measure>.png`` and the card of the metric ranked first by that measure into ``docs/images/`` and
keeps the suite's ``settings.csv`` (without machine paths), ``ranks.csv`` and ``repetitions.csv`` in
``reports/suite/paper_example/``
and rewrites the README between the markers ``<!-- suite-example:start -->`` and ``<!-- suite-example:end -->``
(added before "## Documentation" the first time). It refuses a suite that is not ``paper`` at 004's settings
(k = 7 and 12, n = 100, 5 repetitions): a reduced run must not stand in for it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import pandas as pd

from textmetric_bench.reports.suite.cd import measure_title
from textmetric_bench.reports.suite.report import file_name

START, END = "<!-- suite-example:start -->", "<!-- suite-example:end -->"
MEASURE = "rho"
COMMAND = "python -m textmetric_bench suite=paper"
RESULTS = "reports/suite/paper_example"  # the suite's settings.csv and ranks.csv behind the README's numbers


def paper_settings_problem(settings: pd.DataFrame) -> str | None:
    """Why ``settings.csv`` is not a full ``suite=paper`` (004's pairs, k, n and repetitions), or None."""
    ksc = settings[settings["task"] == "ksc"].drop_duplicates("setting")
    found = {(p, int(k), int(n)) for p, k, n in zip(ksc["pair"], ksc["k"], ksc["n"])}
    wanted = {(p, k, 100) for p in ("atis_news", "clinc150_banking77") for k in (7, 12)}
    if found != wanted:
        return f"its KSC settings are {sorted(found)}, not suite=paper's {sorted(wanted)}"
    if (ksc["repetitions"] < 5).any():
        return "its KSC settings have fewer than 5 repetitions: a reduced run"
    if set(settings.loc[settings["task"] == "robustness", "pair"]) != {"atis_news", "clinc150_banking77"}:
        return "it lacks the robustness runs of suite=paper's two pairs"
    return None


def section(ranks: pd.DataFrame, measure: str = MEASURE) -> tuple[str, str]:
    """(the README section, the metric whose card it shows) from ``ranks.csv``."""
    rows = ranks[ranks["measure"] == measure].sort_values("place")
    best = rows.iloc[0]
    friedman = f"Friedman χ² = {best['friedman_chi2']:.2f}, p = {best['friedman_p']:.3g}"
    text = "\n".join([
        START, "## Which metric is better across settings", "",
        f"`{COMMAND}` runs 004's four KSC settings and the robustness runs of their pairs, then ranks the metrics "
        f"per measure over the settings ([Suites](docs/suites.md)). By {measure_title(measure)}, "
        f"`{best['metric']}` has the best mean rank, {best['mean_rank']:.2f} over {int(best['settings'])} settings "
        f"({friedman}); bars join the metrics Wilcoxon–Holm does not separate. "
        f"{'With so few settings the tests are a rough guide (the report warns).' if best['warning'] else ''}",
        "", f"![Critical differences of {measure} over suite=paper's KSC settings](docs/images/suite_cd_{measure}.png)",
        "", f"The card of `{best['metric']}`: every measure in every setting with its interval and rank, the bounds "
        "as grey lines, its own noise and its known failure modes.", "",
        f"![The card of {best['metric']} from suite=paper](docs/images/suite_card.png)", END])
    return text, str(best["metric"])


def write_readme_example(suite_dir: Path, readme: Path = Path("README.md"), images: Path = Path("docs/images"),
                         results: Path = Path(RESULTS)) -> Path:
    """Copy the images, keep the suite's ``settings.csv``, ``ranks.csv`` and ``repetitions.csv`` in ``results``
    (so that tests can check the prose, the ranks and the groups against them) and rewrite the README section from
    the suite report in ``suite_dir``."""
    suite_dir = Path(suite_dir)
    problem = paper_settings_problem(pd.read_csv(suite_dir / "settings.csv"))
    if problem:
        raise ValueError(f"{suite_dir} is not a full suite=paper run: {problem}; run `{COMMAND}`")
    text, metric = section(pd.read_csv(suite_dir / "ranks.csv"))
    images.mkdir(parents=True, exist_ok=True)
    results.mkdir(parents=True, exist_ok=True)
    settings = pd.read_csv(suite_dir / "settings.csv").drop(columns=["run_dir"], errors="ignore")  # machine paths
    settings.to_csv(results / "settings.csv", index=False)
    shutil.copyfile(suite_dir / "ranks.csv", results / "ranks.csv")
    shutil.copyfile(suite_dir / "repetitions.csv", results / "repetitions.csv")  # what the paired test rests on
    shutil.copyfile(suite_dir / f"cd_{MEASURE}.png", images / f"suite_cd_{MEASURE}.png")
    shutil.copyfile(suite_dir / f"card_{file_name(metric)}.png", images / "suite_card.png")
    current = readme.read_text(encoding="utf-8")
    if START in current and END in current:
        before, rest = current.split(START, 1)
        updated = before + text + rest.split(END, 1)[1]
    else:
        updated = current.replace("## Documentation", text + "\n\n## Documentation", 1)
    readme.write_text(updated, encoding="utf-8")
    return readme


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m textmetric_bench.reports.suite.readme",
                                     description="Put a full suite=paper's CD diagram and card into the README.")
    parser.add_argument("suite_dir", type=Path, help="the suite's directory, e.g. multirun/suite/paper")
    parser.add_argument("--readme", type=Path, default=Path("README.md"), help="default: README.md here (the checkout)")
    parser.add_argument("--images", type=Path, default=Path("docs/images"), help="default: docs/images here")
    parser.add_argument("--results", type=Path, default=Path(RESULTS), help=f"default: {RESULTS} here")
    args = parser.parse_args(argv)
    if not args.readme.is_file():
        raise SystemExit(f"suite readme: no {args.readme}; run it from the checkout or give --readme")
    try:
        print(f"wrote {write_readme_example(args.suite_dir, args.readme, args.images, args.results)}")
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(f"suite readme: {exc}") from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
