"""The cross-setting report of a suite: which metric is better across settings, and one card per metric.

``write_suite_report(root)`` reads every run below ``root`` (a suite's sweep directory, or any directory of runs)
and writes, into ``root`` unless told otherwise:

- ``suite_report.md``: the settings, per measure the mean ranks, Friedman's test, the post-hoc test, the
  critical-difference diagram and the warning when the settings are too few, the bounds as reference values,
  and one card per metric;
- ``ranks.csv`` (per measure and metric: mean rank, ``friedman_chi2``, ``friedman_p``, ..., and ``group`` of the
  paired test over repetitions), ``setting_ranks.csv`` (every value the tests rest on and its rank in its
  setting), ``settings.csv`` (every metric's mean and interval in every setting), ``posthoc_<measure>.csv``
  (Holm-adjusted p of Wilcoxon's test of every two metrics);
- ``repetitions.csv`` (every value per setting and repetition), ``groups.csv`` (per measure and metric: its mean
  over the settings and its group, ``textmetric_bench.reports.suite.groups``), ``paired_<measure>.csv``
  (Holm-adjusted p of the paired test over repetitions between every two metrics), ``regimes.csv`` (the same
  groups over the settings of each length regime alone, ``textmetric_bench.reports.suite.regimes``);
- ``cd_<measure>.png`` and ``card_<metric>.png``.

Files of these kinds that an earlier report wrote and this one does not are removed, so none goes stale.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from textmetric_bench.reports.bounds import BOUNDS, bound_label
from textmetric_bench.reports.cards.card import build_cards, card_markdown
from textmetric_bench.reports.cards.figure import card_figure
from textmetric_bench.reports.labels import format_score
from textmetric_bench.reports.suite.cd import cd_caption, cd_diagram, measure_title
from textmetric_bench.reports.suite.groups import TEST, MeasureGroups, group_measure, groups_frame
from textmetric_bench.reports.suite.regimes import regime_groups, regimes_frame, regimes_section
from textmetric_bench.reports.suite.ranks import (
    ALPHA,
    POSTHOC,
    MeasureRanks,
    not_separated,
    rank_measures,
    ranks_frame,
    setting_ranks_frame,
)
from textmetric_bench.reports.suite.settings import (
    SUITE_MEASURES,
    load_settings,
    own_noise,
    read_catalogue,
    repetition_table,
    setting_labels,
    setting_table,
)
from textmetric_bench.reports.tables.markdown import markdown_table

#: The files a suite report writes whose names depend on the measures and metrics (stale ones are removed).
PATTERNS = ("cd_*.png", "card_*.png", "posthoc_*.csv", "paired_*.csv")


def file_name(name: str) -> str:
    """A metric or measure name as a file name part (a plugin's name may hold any character)."""
    return re.sub(r"[^\w.-]+", "_", str(name))


def write_suite_report(root: Path, out_dir: Path | None = None) -> dict[str, Path]:
    """Write the suite report of the runs below ``root`` into ``out_dir`` (default ``root``); returns the files.
    Raises FileNotFoundError when no run below ``root`` has finished."""
    root = Path(root).absolute()
    out_dir = Path(out_dir) if out_dir is not None else root
    runs = load_settings(root)
    if not runs:
        raise FileNotFoundError(f"no finished run (a directory holding measures.csv) below {root}")
    out_dir.mkdir(parents=True, exist_ok=True)
    stale = {p for pattern in PATTERNS for p in out_dir.glob(pattern)}
    table = setting_table(runs, root)
    ranks = rank_measures(table)
    repetitions = repetition_table(runs, root)
    groups = {
        measure: g
        for measure, r in ranks.items()
        if (g := group_measure(repetitions, measure, list(r.values.index), list(r.values.columns))) is not None
    }
    by_regime = regime_groups(table, repetitions, ranks)
    noise, catalogue = own_noise(runs, root), read_catalogue(root)
    files = {
        "settings": out_dir / "settings.csv",
        "ranks": out_dir / "ranks.csv",
        "setting_ranks": out_dir / "setting_ranks.csv",
        "repetitions": out_dir / "repetitions.csv",
        "groups": out_dir / "groups.csv",
        "regimes": out_dir / "regimes.csv",
        "suite_report": out_dir / "suite_report.md",
    }
    table.to_csv(files["settings"], index=False)
    repetitions.to_csv(files["repetitions"], index=False)
    frame = ranks_frame(ranks)
    frame["group"] = [
        groups[m].groups.get(metric) if m in groups else None for m, metric in zip(frame["measure"], frame["metric"])
    ]
    frame.to_csv(files["ranks"], index=False)
    groups_frame(groups).to_csv(files["groups"], index=False)
    regimes_frame(by_regime).to_csv(files["regimes"], index=False)
    setting_ranks_frame(ranks).to_csv(files["setting_ranks"], index=False)
    for measure, result in ranks.items():
        files[f"posthoc_{measure}"] = out_dir / f"posthoc_{file_name(measure)}.csv"
        result.posthoc.rename_axis("metric").to_csv(files[f"posthoc_{measure}"])
        if measure in groups:
            files[f"paired_{measure}"] = out_dir / f"paired_{file_name(measure)}.csv"
            groups[measure].p.rename_axis("metric").to_csv(files[f"paired_{measure}"])
        files[f"cd_{measure}"] = cd_diagram(result, out_dir / f"cd_{file_name(measure)}.png", groups.get(measure))
    cards = build_cards(table, ranks, noise, catalogue)
    for card in cards:
        files[f"card_{card.metric}"] = card_figure(card, out_dir / f"card_{file_name(card.metric)}.png")
    lines = [
        f"# Suite report: {root.name}",
        "",
        *settings_section(runs, table, root),
        *ranks_section(ranks, groups),
        *regimes_section(by_regime, table),
        *bounds_section(table),
        "## One card per metric",
        "",
    ]
    lines += [card_markdown(card, f"card_{file_name(card.metric)}.png") for card in cards]
    files["suite_report"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    for path in stale - set(files.values()):
        path.unlink(missing_ok=True)
    return files


def settings_section(runs, table: pd.DataFrame, root: Path) -> list[str]:
    """The settings the report rests on, one row each."""
    rows = [
        {
            "setting": label,
            "task": run.task,
            "repetitions": run.repetitions,
            "metrics": ", ".join(sorted(table.loc[table["setting"] == label, "metric"].unique())),
            "directory": str(run.path.relative_to(root)) if run.path.is_relative_to(root) else str(run.path),
        }
        for label, run in zip(setting_labels(runs, root), runs)
    ]
    reference = sorted(set(table.loc[table["source"] == "reference", "metric"]))
    lines = [
        f"{len(runs)} settings, each one run summarised on its own (mean and 95% percentile bootstrap interval "
        "over its repetitions); settings are never pooled, and every test below treats a setting as one "
        "observation.",
        "",
        markdown_table(pd.DataFrame(rows)),
        "",
    ]
    if reference:
        lines += [
            f"Values of {', '.join(reference)} marked ᴿ in the cards come from the shipped reference results "
            "(reports/reference/), not from this suite's runs; their T was measured on the machine that "
            "made them.",
            "",
        ]
    return lines


def ranks_section(ranks: dict[str, MeasureRanks], groups: dict[str, MeasureGroups] | None = None) -> list[str]:
    """Per measure: the critical-difference diagram and its caption, the mean ranks, the tests, the warning and the
    groups of the paired test over repetitions."""
    groups = groups or {}
    lines = [
        "## Which metric is better across settings",
        "",
        f"Per measure, the metrics are ranked within each setting (1 = best; every measure is better higher, "
        f"T being a speed), the ranks averaged over the settings, Friedman's test asks whether all metrics "
        f"rank alike, and the post-hoc test is {POSTHOC} (p < {ALPHA:g} separates two metrics; docs/suites.md "
        f"says why). Then the groups of the {TEST} (p < {ALPHA:g} separates two metrics): it uses every "
        f"repetition inside each setting, paired by (setting, repetition), so it can separate metrics where "
        f"the few settings' means cannot, and it answers for these settings, not for settings not run. The "
        f"bounds oracle and chance are never ranked.",
        "",
    ]
    if not ranks:
        return lines + ["No measure has two ranked metrics in a setting.", ""]
    for measure, r in ranks.items():
        friedman = (
            "not computed (fewer than 3 metrics or 2 settings)"
            if math.isnan(r.statistic)
            else f"χ² = {r.statistic:.3f}, p = {r.p:.3g}"
        )
        lines += [
            f"### {measure_title(measure)}",
            "",
            f"![critical differences of {measure}](cd_{file_name(measure)}.png)",
            "",
            f"*{cd_caption(r, groups.get(measure))}*",
            "",
            f"**{r.settings} settings × {r.values.shape[1]} metrics.** Friedman: {friedman}.",
            "",
        ]
        lines += [f"Left out (incomplete): {'; '.join(r.left_out)}.", ""] if r.left_out else []
        rows = [
            {
                "place": i,
                "metric": m,
                "mean rank": f"{v:.2f}",
                "not separated from": ", ".join(not_separated(r, m)) or "–",
            }
            for i, (m, v) in enumerate(r.mean_ranks.items(), start=1)
        ]
        lines += [markdown_table(pd.DataFrame(rows)), ""]
        lines += (
            groups_lines(groups[measure])
            if measure in groups
            else ["No paired test over repetitions: the runs hold no repetition of these metrics.", ""]
        )
    return lines


def groups_lines(g: MeasureGroups) -> list[str]:
    """One measure's groups: each group's members with their means, and the smallest Holm-adjusted p between the
    metric that opens it and the group above (below ALPHA: why it opens a group)."""
    rows = []
    for group in sorted(set(g.groups)):
        members = g.members(group)
        above = g.members(group - 1)
        p = min((g.p.loc[members[0], m] for m in above), default=math.nan)
        opened = "–" if math.isnan(p) else f"{members[0]} ({p:.3g})"
        rows.append(
            {
                "group": f"G{group}",
                "metrics (mean)": ", ".join(f"{m} ({format_score(g.means[m])})" for m in members),
                "opened by (smallest p to the group above)": opened,
            }
        )
    count = int(g.groups.max())
    patterns = f"all {g.patterns:,} sign patterns" if g.exact else f"{g.patterns:,} random sign patterns"
    lines = [
        f"**Groups by the paired test over repetitions** ({g.settings} settings, {g.repetitions} (setting, "
        f"repetition) pairs, {patterns}): {count} group{'s' if count != 1 else ''}; "
        f"metrics of one group are not separated from one another (Holm-adjusted p ≥ {ALPHA:g}); "
        f"`paired_{file_name(g.measure)}.csv` holds every p.",
        "",
        markdown_table(pd.DataFrame(rows)),
        "",
    ]
    if g.exact and 2 / g.patterns >= ALPHA:
        lines += [
            f"With {g.repetitions} (setting, repetition) pairs the paired test's smallest two-sided p is "
            f"2/2^{g.repetitions} = {2 / g.patterns:.3g}, so it can separate nothing at {ALPHA:g}: add "
            f"repetitions or settings.",
            "",
        ]
    if g.left_out:
        lines += [f"Left out of the paired test (incomplete repetitions): {'; '.join(g.left_out)}.", ""]
    return lines


def bounds_section(table: pd.DataFrame) -> list[str]:
    """The bounds' mean value per measure over the settings: reference lines, not ranked."""
    bounds = table[table["metric"].isin(BOUNDS)]
    if bounds.empty:
        return []
    wide = bounds.pivot_table(index="metric", columns="measure", values="mean", aggfunc="mean")
    wide = wide[[m for m in SUITE_MEASURES if m in wide.columns]].reindex([b for b in BOUNDS if b in wide.index])
    cells = wide.apply(lambda col: col.map(format_score)).astype(object)
    cells.index = [bound_label(m) for m in cells.index]
    return [
        "## Bounds (reference lines, not ranked)",
        "",
        "The mean over the settings of each bound's per-setting value; the cards draw each setting's value as "
        "a grey line.",
        "",
        markdown_table(cells.rename_axis("bound").reset_index()),
        "",
    ]
