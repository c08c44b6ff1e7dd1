"""The templated sentences of reports/paper_table3/README.md: each states what the numbers say.

Every function takes the committed tables (``ours``), the transcribed paper (``paper``) or the
diagnosis frame and returns one or two sentences whose numbers and wording follow from them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from textmetric_bench.reports.paper_table3.diagnosis import (
    COMPCOR,
    LABELS,
    LEXICAL,
    SETTINGS,
    setting_label,
    values,
)

SHAPE_MEASURES = ["rho", "omega2", "L"]


def num(x: float, digits: int = 3) -> str:
    """.973 style, with a real minus sign."""
    text = f"{x:.{digits}f}".replace("0.", ".", 1)
    return text.replace("-", "−")


def signed(x: float) -> str:
    return ("+" if x >= 0 else "") + num(x, 2)


def name(metric: str) -> str:
    return metric.upper()


def listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def rank(frame: pd.DataFrame, pair: str, k: int, measure: str, metric: str) -> int:
    """Rank of ``metric`` on ``measure`` (1 = best; ties share the best rank)."""
    return int(values(frame, pair, k, measure).rank(ascending=False, method="min")[metric])


def cells(frame, metric, measures):
    return {(pair, k, m): rank(frame, pair, k, m, metric) for pair, k in SETTINGS for m in measures}


def mauve_sentence(ours, paper) -> str:
    ranks = cells(ours, "mauve", SHAPE_MEASURES)
    misses = [f"{LABELS[m]} at {setting_label(p, k)} (rank {r})" for (p, k, m), r in ranks.items() if r > 2]
    theirs = cells(paper, "mauve", SHAPE_MEASURES)
    paper_top = sum(r <= 2 for r in theirs.values())
    head = (
        f"MAUVE is among the top two metrics on ρ, ω² and L in {len(ranks) - len(misses)} of "
        f"{len(ranks)} cells (the paper: {paper_top} of {len(theirs)})"
    )
    return head + (f"; not on {listing(misses)}." if misses else ".")


def chi_sentence(ours, paper) -> str:
    worst = max(cells(ours, "chi", ["rho", "omega2"]).values())
    k12 = [(values(ours, p, 12, "rho")["chi"], values(paper, p, 12, "rho")["chi"]) for p, _ in SETTINGS[::2]]
    return (
        f"CHI ranks {worst_words(worst)} on ρ and ω² in every setting, and its ρ at k = 12 is "
        f"{num(k12[0][0])} and {num(k12[1][0])} against the paper's {num(k12[0][1])} and {num(k12[1][1])}."
    )


def worst_words(r: int) -> str:
    return "first" if r == 1 else f"{ordinal(r)} or better"


def ordinal(r: int) -> str:
    return {1: "first", 2: "second", 3: "third", 4: "fourth"}.get(r, f"{r}th")


def weakest_sentence(ours, paper) -> str:
    hits, misses = 0, []
    for pair, k in SETTINGS:
        for m in SHAPE_MEASURES:
            weakest = set(values(ours, pair, k, m).drop(LEXICAL).nsmallest(2).index)
            if weakest == {"irpr", "pr"}:
                hits += 1
            else:
                misses.append(f"{LABELS[m]} at {setting_label(pair, k)} ({listing(sorted(map(name, weakest)))})")
    total = len(SETTINGS) * len(SHAPE_MEASURES)
    text = f"IRPR and PR are the two weakest embedding metrics on ρ, ω² and L in {hits} of {total} cells"
    return text + (f"; the exceptions are {listing(misses)}." if misses else ".")


def fid_sentence(ours, paper) -> str:
    p, k = SETTINGS[0]
    mine = [rank(ours, p, k, m, "fid") for m in ("A", "rho", "omega2")]
    theirs = [values(paper, p, k, m)["fid"] for m in ("A", "rho")]
    return (
        f"FID ranks {ordinal(mine[0])} on A but {ordinal(mine[1])} on ρ and {ordinal(mine[2])} on ω² "
        f"({setting_label(p, k)}: A {num(values(ours, p, k, 'A')['fid'])}, ρ "
        f"{num(values(ours, p, k, 'rho')['fid'])}; the paper {num(theirs[0])} and {num(theirs[1])})."
    )


def changes(frame) -> pd.Series:
    """Value at k = 12 minus value at k = 7 for every (pair, metric, measure)."""
    diffs = []
    for pair in dict.fromkeys(p for p, _ in SETTINGS):
        for m in ["A", "Aw"] + SHAPE_MEASURES:
            change = values(frame, pair, 12, m) - values(frame, pair, 7, m)
            diffs.append(change.set_axis([(pair, m, metric) for metric in change.index]))
    return pd.concat(diffs)


def falls_sentence(ours, paper) -> str:
    mine, theirs = changes(ours), changes(paper)
    rises = [f"{name(metric)} {LABELS[m]} on {p.split('_')[0]}" for (p, m, metric), v in mine.items() if v > 0]
    return (
        f"From k = 7 to k = 12, {int((mine < 0).sum())} of {len(mine)} values fall here and "
        f"{int((theirs < 0).sum())} of {len(theirs)} in the paper; ours rise for {listing(rises)}."
        if rises
        else f"Every one of the {len(mine)} values falls from k = 7 to k = 12."
    )


def linearity_sentence(ours, paper) -> str:
    low = float(paper["L"].min())
    if low > 0:
        return (
            f"Either way the ranking is the same: every L in the paper's table is positive (the smallest is "
            f"{num(low)}), and squaring a positive r keeps the order of metrics."
        )
    return f"The paper's smallest L is {num(low)}: squaring a negative r changes the order, so Spearman on L differs."


def classifier_sentence(ours, paper) -> str:
    p, k = SETTINGS[0]
    r_ours, r_paper = rank(ours, p, k, "rho", "classifier"), rank(paper, p, k, "rho", "classifier")
    return (
        f"ranks {ordinal(r_ours)} on ρ here and {ordinal(r_paper)} of 8 in the paper "
        f"({setting_label(p, k)}: ρ {num(values(ours, p, k, 'rho')['classifier'])} against "
        f"{num(values(paper, p, k, 'rho')['classifier'])})."
    )


def split_sentence(n: int = 100) -> str:
    test = round(0.2 * 2 * n)
    return (
        f"At n = {n} one split leaves {test} test texts, so the value moves in steps of about "
        f"{num(1 / test)} (ours too); compcor's split is unseeded, so its value also changes from run to run."
    )


def dc_sentence(ours, paper) -> str:
    p, k = SETTINGS[0]
    return (
        f"scores ρ {num(values(ours, p, k, 'rho')['dc'])} against the paper's "
        f"{num(values(paper, p, k, 'rho')['dc'])} at {setting_label(p, k)}."
    )


def higher_sentence(ours, paper) -> str:
    parts = []
    for metric in ("fid", "irpr", "zipf"):
        higher = sum(values(ours, p, k, "A")[metric] > values(paper, p, k, "A")[metric] for p, k in SETTINGS)
        parts.append(f"{name(metric)} in {higher}")
    return f"Our A is above the paper's for {listing(parts)} of the {len(SETTINGS)} settings."


def perfect(frame, pair, k, measure="A") -> list[str]:
    series = values(frame, pair, k, measure)
    return sorted(series[series == 1.0].index)


def saturation_sentence(ours, paper) -> str:
    counts = [f"{len(perfect(ours, p, k))} at {setting_label(p, k)}" for p, k in SETTINGS if perfect(ours, p, k)]
    if not counts:
        return "No metric reaches A = 1 in any setting."
    return f"Metrics with A = 1.000 exactly: {listing(counts)}."


def above95_sentence(ours) -> str:
    parts = [f"{int((values(ours, p, k, 'A') > 0.95).sum())} at {setting_label(p, k)}" for p, k in SETTINGS]
    return f"Metrics with A above .95 (of 8): {listing(parts)}."


def tie_sentence(variants) -> str:
    share = variants[variants["metric"] != COMPCOR].groupby("metric")["ties"].max()
    tied = share[share > 0].sort_values(ascending=False)
    if tied.empty:
        return "No two distances of a judgement are ever equal, so the tie rule never applies."
    return (
        f"A tie (two equal distances in one judgement) counts ½ here; in the re-run, ties occur for "
        f"{listing([f'{name(m)} (up to {100 * v:.1f}% of judgements)' for m, v in tied.items()])}, "
        f"metrics whose values take few distinct levels."
    )


def ci_sentence(ours) -> str:
    widths = []
    for m in ["A", "Aw"] + SHAPE_MEASURES:
        widths.append((ours[f"{m}_ci_high"] - ours[f"{m}_ci_low"]) / 2)
    half = pd.concat(widths)
    return (
        f"With 5 repetitions their half-widths run from {num(half.min())} to {num(half.max())} "
        f"(median {num(float(np.median(half)))})."
    )
