"""Which metrics lead in each length regime: the paired test's groups over the settings of one regime at a time.

A metric that ranks first on intents may not on articles. Every KSC or robustness run records its pair's regime
(``sentence``, ``paragraph`` or ``document``, by both sides' median words a text; ``run.json``'s ``regime``), and
the suite report groups the metrics again over the settings of each regime alone, with the same test
(``textmetric_bench.reports.suite.groups``) and the same complete block of metrics the ranks rest on. A regime's
groups answer for its settings only; a regime with one setting still has its repetitions to separate metrics.
"""

from __future__ import annotations

import pandas as pd

from textmetric_bench.reports.labels import format_score
from textmetric_bench.reports.suite.groups import MeasureGroups, group_measure
from textmetric_bench.reports.suite.ranks import MeasureRanks
from textmetric_bench.reports.tables.markdown import markdown_table

#: The regimes in the order of text length; a mixed pair's regime joins two names (``sentence+paragraph``).
ORDER = ("sentence", "paragraph", "document")
#: The measures the report's regime section and the README summarise (all are in ``regimes.csv``).
SHOWN = ("A", "rho")
COLUMNS = ["regime", "measure", "metric", "mean", "group", "groups", "settings", "observations"]


def regime_order(regime: str) -> tuple:
    parts = str(regime).split("+")
    return tuple(ORDER.index(p) if p in ORDER else len(ORDER) for p in parts), str(regime)


def regimes_of(table: pd.DataFrame) -> dict[str, list[str]]:
    """Regime -> its settings, in length order; settings whose run recorded no regime are left out."""
    if "regime" not in table.columns:
        return {}
    known = table.dropna(subset=["regime"]).drop_duplicates("setting")
    found = known.groupby("regime")["setting"].apply(list).to_dict()
    return {r: found[r] for r in sorted(found, key=regime_order)}


def regime_groups(
    table: pd.DataFrame, repetitions: pd.DataFrame, ranks: dict[str, MeasureRanks]
) -> dict[tuple[str, str], MeasureGroups]:
    """(regime, measure) -> the paired test's groups over that regime's settings of the measure's complete block."""
    found = {}
    for regime, settings in regimes_of(table).items():
        for measure, r in ranks.items():
            inside = [s for s in r.values.index if s in set(settings)]
            if inside and (g := group_measure(repetitions, measure, inside, list(r.values.columns))) is not None:
                found[(regime, measure)] = g
    return found


def regimes_frame(results: dict[tuple[str, str], MeasureGroups]) -> pd.DataFrame:
    """``regimes.csv``: per regime, measure and metric its mean over the regime's settings and its group there."""
    rows = [
        {
            "regime": regime,
            "measure": measure,
            "metric": metric,
            "mean": mean,
            "group": int(g.groups[metric]),
            "groups": int(g.groups.max()),
            "settings": g.settings,
            "observations": g.repetitions,
        }
        for (regime, measure), g in results.items()
        for metric, mean in g.means.items()
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def regimes_section(results: dict[tuple[str, str], MeasureGroups], table: pd.DataFrame) -> list[str]:
    """Markdown: per regime, its settings and, per shown measure, the leading group and how many groups there are."""
    settings = regimes_of(table)
    lines = [
        "## By length regime",
        "",
        "The same paired test over repetitions, over the settings of one length regime at a time (a pair's "
        "regime: both sides' median words a text, sentence ≤ 30 < paragraph ≤ 200 < document). G1 is the "
        "leading group: the metrics no other metric is separated above. `regimes.csv` holds every measure.",
        "",
    ]
    if not settings:
        return lines + ["No run of this suite recorded its pair's regime (runs made before regimes were recorded).", ""]
    rows = []
    for regime, names in settings.items():
        for measure in SHOWN:
            g = results.get((regime, measure))
            if g is None:
                continue
            lead = ", ".join(f"{m} ({format_score(g.means[m])})" for m in g.members(1))
            rows.append(
                {
                    "regime": regime,
                    "settings": len(names),
                    "measure": measure,
                    "groups": int(g.groups.max()),
                    "G1 (mean over the regime's settings)": lead,
                }
            )
    return lines + [markdown_table(pd.DataFrame(rows)), ""] if rows else lines
