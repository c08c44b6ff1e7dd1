"""A metric's card: every measure in every setting with its interval and its rank there, its mean ranks over the
settings, S and I, IFC where run, its own noise, T, its orientation and its known failure modes.

A card is built from the suite's per-setting table (``textmetric_bench.reports.suite.settings``), the ranks of
``textmetric_bench.reports.suite.ranks``, the settings' ``own_noise.csv`` and the catalogue facts the suite
recorded; a plugin metric gets the same card as a built-in one. The bounds (``oracle``, ``chance``) get no card:
they are the reference lines of the others'.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from textmetric_bench.reports.bounds import BOUNDS, ranked
from textmetric_bench.reports.labels import format_score
from textmetric_bench.reports.suite.ranks import HIGHER_IS_BETTER, MeasureRanks, not_separated
from textmetric_bench.reports.suite.settings import SUITE_MEASURES
from textmetric_bench.reports.tables.markdown import markdown_table

NOT_RECORDED = "not recorded (rerun the report through textmetric-bench-suite-report to read the catalogue)"


@dataclass
class Card:
    """What one metric's card shows."""

    metric: str
    values: pd.DataFrame  # one row per (setting, measure): mean, ci_low, ci_high, source, rank, of, bounds
    mean_ranks: dict[str, tuple[float, int, int, int, list[str]]]  # measure -> (mean rank, place, of, settings, ties)
    orientation: str
    own_noise: pd.DataFrame  # setting, seeds, own_sd, data_sd, ratio
    facts: dict[str, str]  # catalogue: range, stochastic, source, failure_modes

    @property
    def measures(self) -> list[str]:
        return [m for m in SUITE_MEASURES if m in set(self.values["measure"])]


def build_card(
    metric: str, table: pd.DataFrame, ranks: dict[str, MeasureRanks], own_noise: pd.DataFrame, catalogue: pd.DataFrame
) -> Card:
    """The card of ``metric`` from the suite's tables."""
    rows = table[table["metric"] == metric].copy()
    rows["rank"], rows["of"] = np.nan, np.nan
    for measure, result in ranks.items():
        if metric in result.ranks.columns:
            for setting, rank in result.ranks[metric].items():
                at = (rows["measure"] == measure) & (rows["setting"] == setting)
                rows.loc[at, "rank"], rows.loc[at, "of"] = rank, result.ranks.shape[1]
    for bound in BOUNDS:  # the reference lines: each bound's value in the same setting and measure
        found = table[table["metric"] == bound].set_index(["setting", "measure"])["mean"]
        rows[bound] = [found.get((s, m), np.nan) for s, m in zip(rows["setting"], rows["measure"])]
    mean_ranks = {}
    for measure, result in ranks.items():
        if metric in result.ranks.columns:
            order = list(result.mean_ranks.index)
            mean_ranks[measure] = (
                float(result.mean_ranks[metric]),
                order.index(metric) + 1,
                len(order),
                result.settings,
                not_separated(result, metric),
            )
    orientations = rows["orientation"].dropna().unique()
    noise = own_noise[own_noise["metric"] == metric].drop(columns="metric") if len(own_noise) else own_noise
    facts = catalogue[catalogue["metric"] == metric].to_dict("records") if len(catalogue) else []
    facts = facts[0] if facts else {}
    orientation = str(orientations[0]) if len(orientations) else facts.get("orientation") or "distance"
    return Card(metric, rows, mean_ranks, orientation, noise, facts)


def build_cards(
    table: pd.DataFrame, ranks: dict[str, MeasureRanks], own_noise: pd.DataFrame, catalogue: pd.DataFrame
) -> list[Card]:
    """One card per ranked metric of ``table`` (bounds excluded), in name order."""
    return [build_card(m, table, ranks, own_noise, catalogue) for m in sorted(ranked(table["metric"].unique()))]


def cell(row) -> str:
    """``mean [low, high] #rank/of`` as the card's table shows a value; a reference value is marked ᴿ."""
    text = format_score(row["mean"])
    if np.isfinite(row["ci_low"]) and np.isfinite(row["ci_high"]):
        text += f" [{format_score(row['ci_low'])}, {format_score(row['ci_high'])}]"
    if np.isfinite(row["rank"]):
        text += f" #{row['rank']:g}/{int(row['of'])}"
    return text + (" ᴿ" if row.get("source") == "reference" else "")


def orientation_line(card: Card) -> str:
    """The metric's orientation, and the measures' (every measure: higher is better)."""
    kind = (
        "a similarity (larger = more alike), scored on its negation"
        if card.orientation == "similarity"
        else "a distance (grows as corpora grow apart)"
    )
    better = ", ".join(f"{m} {'higher' if HIGHER_IS_BETTER.get(m, True) else 'lower'}" for m in card.measures)
    return f"{kind}; better is: {better} (T is a speed, evaluations per second)"


def card_markdown(card: Card, image: str | None = None) -> str:
    """The card's section of the suite report."""
    lines = [f"### {card.metric}", ""]
    if image:
        lines += [f"![card of {card.metric}]({image})", ""]
    lines += [f"- **Orientation**: {orientation_line(card)}"]
    if card.facts:
        lines += [
            f"- **Range**: {card.facts.get('range', '')}; **stochastic**: {card.facts.get('stochastic', '')}; "
            f"**source**: {card.facts.get('source', '')}",
            f"- **Known failure modes** (catalogue): {card.facts.get('failure_modes') or 'none declared'}",
        ]
    else:
        lines += [f"- **Known failure modes**: {NOT_RECORDED}"]
    for measure, (mean_rank, place, of, settings, ties) in card.mean_ranks.items():
        tied = f"; not separated from {', '.join(ties)}" if ties else "; separated from every other metric"
        lines.append(
            f"- **{measure}**: mean rank {mean_rank:.2f}, place {place} of {of} over {settings} "
            f"setting{'s' if settings != 1 else ''}{tied}"
        )
    missing = [m for m in card.measures if m not in card.mean_ranks]
    if missing:
        lines.append(f"- not ranked ({', '.join(missing)}): no complete block of settings with this metric")
    lines.append(f"- **Own noise**: {own_noise_text(card)}")
    wide = card.values.assign(text=card.values.apply(cell, axis=1)).pivot_table(
        index="setting", columns="measure", values="text", aggfunc="first", sort=False
    )
    wide = wide[[m for m in card.measures if m in wide.columns]].fillna("–")
    lines += [
        "",
        "Mean over the setting's repetitions [95% interval] #rank among the ranked metrics in that setting "
        "(1 = best); ᴿ: taken from the shipped reference results.",
        "",
        markdown_table(wide.reset_index()),
        "",
    ]
    return "\n".join(lines)


def own_noise_text(card: Card) -> str:
    """The metric's own noise over the settings that measured it, or why there is none."""
    if card.own_noise.empty:
        if str(card.facts.get("stochastic", "")).lower() == "no":
            return "none (deterministic: the same corpora give the same value)"
        return "not measured in these settings (KSC's own_noise.seeds)"
    parts = [
        f"{r.setting}: own sd {r.own_sd:.3g} vs data sd {r.data_sd:.3g} (ratio {r.ratio:.2f})"
        for r in card.own_noise.itertuples()
    ]
    return "; ".join(parts)
