"""The README's section "Which metric is better across settings", written from a full suite run, never by hand.

    python -m textmetric_bench suite=all                                              # long: every shipped pair
    python -m textmetric_bench.reports.suite.readme multirun/suite/all --suite all    # images, tables, README section

run from the checkout, copies ``cd_rho.png`` and the card of the metric ranked first by rho into ``docs/images/``,
keeps the suite's tables that the section quotes in ``reports/suite/<suite>_example/`` (``settings.csv`` without
machine paths, ``ranks.csv``, ``repetitions.csv``, and for ``all`` also ``groups.csv``, ``regimes.csv`` and the post-hoc
and paired p of the measures shown) and rewrites the README between the markers ``<!-- suite-example:start -->``
and ``<!-- suite-example:end -->``. Two sections exist:

- ``all``: per length regime the groups of the paired test over repetitions (which metrics lead, which are
  separated), and over all KSC settings the mean ranks, Friedman's test and how many pairs each post-hoc test
  separates. It refuses a run that is not a full ``suite=all`` (at least 12 KSC settings over at least 6 pairs,
  the three length regimes, 5 repetitions a setting).
- ``paper``: 004's four KSC settings, the mean ranks and Friedman's test of rho. It refuses a run that is not
  ``suite=paper`` at 004's settings (k = 7 and 12, n = 100, 5 repetitions, both robustness runs).

A reduced run must not stand in for either.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import pandas as pd

from textmetric_bench.reports.labels import format_score
from textmetric_bench.reports.suite.cd import measure_title
from textmetric_bench.reports.suite.ranks import ALPHA
from textmetric_bench.reports.suite.regimes import ORDER, SHOWN, regime_order
from textmetric_bench.reports.suite.report import file_name

START, END = "<!-- suite-example:start -->", "<!-- suite-example:end -->"
MEASURE = "rho"
COMMAND = "python -m textmetric_bench suite={suite}"
RESULTS = "reports/suite/{suite}_example"  # the suite's tables behind the README's numbers
#: The suite the README's section is written from today (its tables in RESULTS).
README_SUITE = "all"
KEPT = {
    "all": (
        "ranks.csv",
        "groups.csv",
        "regimes.csv",
        "repetitions.csv",
        *(f"{kind}_{m}.csv" for kind in ("posthoc", "paired") for m in SHOWN),
    ),
    "paper": ("ranks.csv", "repetitions.csv"),
}
MIN_KSC_SETTINGS, MIN_PAIRS, MIN_REPETITIONS = 12, 6, 5


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


def paper_section(ranks: pd.DataFrame, measure: str = MEASURE) -> tuple[str, str]:
    """(the README section of suite=paper, the metric whose card it shows) from its ``ranks.csv``."""
    rows = ranks[ranks["measure"] == measure].sort_values("place")
    best = rows.iloc[0]
    friedman = f"Friedman χ² = {best['friedman_chi2']:.2f}, p = {best['friedman_p']:.3g}"
    text = "\n".join(
        [
            START,
            "## Which metric is better across settings",
            "",
            f"`{COMMAND.format(suite='paper')}` runs 004's four KSC settings and the robustness runs of their pairs, then "
            f"ranks the metrics per measure over the settings ([Suites](docs/suites.md)). By {measure_title(measure)}, "
            f"`{best['metric']}` has the best mean rank, {best['mean_rank']:.2f} over {int(best['settings'])} settings "
            f"({friedman}); bars join the metrics Wilcoxon–Holm does not separate. "
            f"{'With so few settings the tests are a rough guide (the report warns).' if best['warning'] else ''}",
            "",
            f"![Critical differences of {measure} over suite=paper's KSC settings](docs/images/suite_cd_{measure}.png)",
            "",
            f"The card of `{best['metric']}`: every measure in every setting with its interval and rank, the bounds "
            "as grey lines, its own noise and its known failure modes.",
            "",
            f"![The card of {best['metric']} from suite=paper](docs/images/suite_card.png)",
            END,
        ]
    )
    return text, str(best["metric"])


def suite_problem(settings: pd.DataFrame) -> str | None:
    """Why ``settings.csv`` is not a full ``suite=all`` at its defaults, or None."""
    ksc = settings[settings["task"] == "ksc"].drop_duplicates("setting")
    if len(ksc) < MIN_KSC_SETTINGS or ksc["pair"].nunique() < MIN_PAIRS:
        return (
            f"it has {len(ksc)} KSC settings over {ksc['pair'].nunique()} pairs, not at least "
            f"{MIN_KSC_SETTINGS} over {MIN_PAIRS}"
        )
    if (ksc["repetitions"] < MIN_REPETITIONS).any():
        return f"some KSC settings have fewer than {MIN_REPETITIONS} repetitions: a reduced run"
    regimes = set(ksc["regime"].dropna()) if "regime" in ksc.columns else set()
    if not set(ORDER) <= regimes:
        return f"its KSC settings cover the regimes {sorted(regimes)}, not all of {list(ORDER)}"
    return None


def separated_pairs(p: pd.DataFrame) -> tuple[int, int]:
    """(pairs of metrics a p matrix separates at ALPHA, all pairs)."""
    names = list(p.index)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    return sum(bool(p.loc[a, b] < ALPHA) for a, b in pairs), len(pairs)


def members(frame: pd.DataFrame, group: int) -> str:
    rows = frame[frame["group"] == group].sort_values("mean", ascending=False)
    return ", ".join(f"`{m}` {format_score(v)}" for m, v in zip(rows["metric"], rows["mean"]))


def regime_table(regimes: pd.DataFrame, groups: pd.DataFrame, settings: pd.DataFrame) -> str:
    """Markdown: per regime (and over all KSC settings), per shown measure, the leading and the last group."""
    ksc = settings[settings["task"] == "ksc"].drop_duplicates("setting")
    lines = [
        "| regime | KSC settings | measure | groups | leading group (mean) | last group (mean) |",
        "|---|---|---|---|---|---|",
    ]
    blocks = [("all KSC settings", len(ksc), groups)]
    blocks += [
        (r, int((ksc["regime"] == r).sum()), regimes[regimes["regime"] == r])
        for r in sorted(regimes["regime"].unique(), key=regime_order)
    ]
    for name, count, frame in blocks:
        for measure in SHOWN:
            rows = frame[frame["measure"] == measure]
            if rows.empty:
                continue
            last = int(rows["group"].max())
            lines.append(
                f"| {name} | {count} | {measure} | {last} | {members(rows, 1)} | "
                f"{members(rows, last) if last > 1 else '–'} |"
            )
    return "\n".join(lines)


def all_section(results: Path) -> tuple[str, str]:
    """(the README section of suite=all, the metric whose card it shows) from the kept tables in ``results``."""
    results = Path(results)
    settings = pd.read_csv(results / "settings.csv")
    ranks, groups = pd.read_csv(results / "ranks.csv"), pd.read_csv(results / "groups.csv")
    regimes = pd.read_csv(results / "regimes.csv")
    ksc = settings[settings["task"] == "ksc"].drop_duplicates("setting")
    per_regime = ", ".join(f"{int((ksc['regime'] == r).sum())} {r}" for r in ORDER)
    robust = sorted(settings.loc[settings["task"] == "robustness", "pair"].unique())
    robustness = f" and the robustness task on {', '.join(f'`{p}`' for p in robust)}" if robust else ""
    rows = ranks[ranks["measure"] == MEASURE].sort_values("place")
    best = rows.iloc[0]
    wilcoxon, total = separated_pairs(pd.read_csv(results / f"posthoc_{MEASURE}.csv", index_col=0))
    paired, _ = separated_pairs(pd.read_csv(results / f"paired_{MEASURE}.csv", index_col=0))
    observations = int(groups.loc[groups["measure"] == MEASURE, "observations"].iloc[0])
    text = "\n".join(
        [
            START,
            "## Which metric is better across settings",
            "",
            f"The run of `{COMMAND.format(suite='all')}` kept in `{RESULTS.format(suite='all')}/` holds {len(ksc)} KSC "
            f"settings over {ksc['pair'].nunique()} pairs "
            f"({per_regime}: intents, headlines and fortunes; paragraphs and whole articles of BBC News and "
            f"Shakespeare; human text against text SmolLM2 wrote from it){robustness}; the suite compares the metrics "
            f"per measure across the settings ([Suites](docs/suites.md)). The groups come from a paired sign-flip test "
            f"over every "
            f"(setting, repetition), Holm-adjusted at {ALPHA:g}: metrics in one group are not separated from each "
            f"other, and each group is separated from the one above it. They speak for these settings.",
            "",
            regime_table(regimes, groups, settings),
            "",
            f"Over all KSC settings, by {measure_title(MEASURE)}, `{best['metric']}` has the best mean rank, "
            f"{best['mean_rank']:.2f} over {int(best['settings'])} settings (Friedman χ² = {best['friedman_chi2']:.2f}, "
            f"p = {best['friedman_p']:.3g}). Of the {total} pairs of metrics, Wilcoxon–Holm over the settings' means "
            f"separates {wilcoxon}; the paired test over the {observations} (setting, repetition)s separates {paired}.",
            "",
            f"![Critical differences of {MEASURE} over suite=all's KSC settings, with the paired test's groups under "
            f"them](docs/images/suite_cd_{MEASURE}.png)",
            "",
            f"The card of `{best['metric']}`: every measure in every setting with its interval and rank, its own "
            "noise and its known failure modes.",
            "",
            f"![The card of {best['metric']} from suite=all](docs/images/suite_card.png)",
            END,
        ]
    )
    return text, str(best["metric"])


def section(results: Path, suite: str = README_SUITE) -> tuple[str, str]:
    """(the README section of ``suite``, the metric whose card it shows) from the tables kept in ``results``."""
    if suite == "all":
        return all_section(results)
    return paper_section(pd.read_csv(Path(results) / "ranks.csv"))


def write_readme_example(
    suite_dir: Path,
    readme: Path = Path("README.md"),
    images: Path = Path("docs/images"),
    results: Path | None = None,
    suite: str = README_SUITE,
) -> Path:
    """Keep the suite's quoted tables in ``results``, copy the images and rewrite the README section from them."""
    suite_dir = Path(suite_dir)
    results = Path(results) if results is not None else Path(RESULTS.format(suite=suite))
    settings = pd.read_csv(suite_dir / "settings.csv")
    problem = (suite_problem if suite == "all" else paper_settings_problem)(settings)
    if problem:
        raise ValueError(f"{suite_dir} is not a full suite={suite} run: {problem}; run `{COMMAND.format(suite=suite)}`")
    results.mkdir(parents=True, exist_ok=True)
    settings.drop(columns=["run_dir"], errors="ignore").to_csv(results / "settings.csv", index=False)  # machine paths
    for name in KEPT[suite]:
        shutil.copyfile(suite_dir / name, results / name)
    text, metric = section(results, suite)
    images.mkdir(parents=True, exist_ok=True)
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
    parser = argparse.ArgumentParser(
        prog="python -m textmetric_bench.reports.suite.readme",
        description="Put a full suite's groups, CD diagram and card into the README.",
    )
    parser.add_argument("suite_dir", type=Path, help="the suite's directory, e.g. multirun/suite/all")
    parser.add_argument(
        "--suite",
        choices=sorted(KEPT),
        default=README_SUITE,
        help=f"which suite the directory holds (default: {README_SUITE})",
    )
    parser.add_argument("--readme", type=Path, default=Path("README.md"), help="default: README.md here (the checkout)")
    parser.add_argument("--images", type=Path, default=Path("docs/images"), help="default: docs/images here")
    parser.add_argument("--results", type=Path, default=None, help=f"default: {RESULTS} here")
    args = parser.parse_args(argv)
    if not args.readme.is_file():
        raise SystemExit(f"suite readme: no {args.readme}; run it from the checkout or give --readme")
    try:
        print(f"wrote {write_readme_example(args.suite_dir, args.readme, args.images, args.results, args.suite)}")
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(f"suite readme: {exc}") from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
