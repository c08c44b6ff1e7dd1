"""Numbers behind reports/paper_table3/README.md: our Table 3 against 004's, and why rankings differ.

Reads the committed per-setting tables (`<pair>_k<k>.csv`), the transcription of 004 Table 3
(`paper_table3_values.csv`) and the re-run distances (`distances.csv`). Never imports bench.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from textmetric_bench.reports.paper_table3.judgements import accuracy_variants

FOLDER = Path(__file__).resolve().parent
MEASURES = ["A", "Aw", "rho", "omega2", "L"]
LABELS = {"A": "A", "Aw": "A^w", "rho": "ρ", "omega2": "ω²", "L": "L", "T100": "T"}
SETTINGS = [("clinc150_banking77", 7), ("clinc150_banking77", 12), ("atis_news", 7), ("atis_news", 12)]
PAIR_LABELS = {"clinc150_banking77": "clinc150/banking77", "atis_news": "atis/news"}
PAPER_PAIRS = {"atis_yahoo": "atis_news"}  # Yahoo nfL6 is not obtainable; news headlines stand in
LEXICAL = ["chi", "zipf"]  # the two metrics that read tokens, not embeddings
THRESHOLD = 0.7  # a measure whose Spearman falls below this gets a diagnosis
COMPCOR = (
    "classifier_compcor"  # CLASSIFIER as compcor scores it (tests/benchmarks/compcor_classifier_run.py), re-run only
)


def setting_label(pair: str, k: int) -> str:
    return f"{PAIR_LABELS[pair]}, k = {k}"


def load_ours(folder: Path = FOLDER) -> pd.DataFrame:
    """The committed tables of the four settings, one frame with pair and k columns."""
    frames = []
    for pair, k in SETTINGS:
        path = folder / f"{pair}_k{k}.csv"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the comparison needs all four settings of 004 Table 3")
        frames.append(pd.read_csv(path).assign(pair=pair, k=k))
    return pd.concat(frames, ignore_index=True)


def load_paper(folder: Path = FOLDER) -> pd.DataFrame:
    """004 Table 3 as transcribed, with the paper's atis/yahoo renamed to the pair that stands in for it."""
    paper = pd.read_csv(folder / "paper_table3_values.csv")
    paper["pair"] = paper["pair"].replace(PAPER_PAIRS)
    return paper


def values(frame: pd.DataFrame, pair: str, k: int, column: str) -> pd.Series:
    """One column of one setting, indexed by metric, in alphabetical metric order."""
    rows = frame[(frame["pair"] == pair) & (frame["k"] == k)].set_index("metric")
    return rows[column].sort_index()


def spearman(a: pd.Series, b: pd.Series) -> float:
    """Spearman correlation of two metric-indexed series over their common metrics (ties: mid-ranks)."""
    common = a.index.intersection(b.index)
    if len(common) < 3 or a[common].nunique() < 2 or b[common].nunique() < 2:
        return float("nan")
    return float(stats.spearmanr(a[common], b[common]).statistic)


def agreement(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Spearman between our and the paper's value of each measure across the eight metrics, per setting."""
    rows = [
        {"pair": pair, "k": k, "measure": m, "spearman": spearman(values(ours, pair, k, m), values(paper, pair, k, m))}
        for pair, k in SETTINGS
        for m in MEASURES
    ]
    return pd.DataFrame(rows)


def broken_ties(ours: pd.Series, paper: pd.Series, favour: bool) -> pd.Series:
    """Our values as strict ranks, ties among them ordered as the paper orders them (or the reverse)."""
    key = paper if favour else -paper
    order = sorted(ours.index, key=lambda m: (ours[m], key[m]))
    return pd.Series(np.arange(1, len(order) + 1, dtype=float), index=order).sort_index()


def tie_figures(ours: pd.Series, paper: pd.Series) -> dict:
    """How many metrics share a value, and Spearman with those ties broken either way or left out."""
    tied = ours[ours.duplicated(keep=False)]
    untied = ours.drop(tied.index)
    return {
        "tied": len(tied),
        "tied_values": sorted(tied.unique(), reverse=True),
        "for": spearman(broken_ties(ours, paper, True), paper),
        "against": spearman(broken_ties(ours, paper, False), paper),
        "excluded": spearman(untied, paper),
        "left": len(untied),
    }


def overlapping_neighbours(frame: pd.DataFrame, pair: str, k: int, measure: str) -> int:
    """Adjacent pairs in our ranking on ``measure`` whose 95% intervals overlap."""
    rows = frame[(frame["pair"] == pair) & (frame["k"] == k)].sort_values(measure, ascending=False)
    low, high = rows[f"{measure}_ci_low"].to_numpy(), rows[f"{measure}_ci_high"].to_numpy()
    return int(np.sum(low[:-1] <= high[1:]))


def embedding_figures(ours: pd.Series, paper: pd.Series) -> dict:
    """Spearman over the embedding metrics alone, and the mean gap to the paper by kind of metric."""
    gap = (ours - paper).abs()
    embedded = [m for m in ours.index if m not in LEXICAL]
    return {
        "spearman": spearman(ours[embedded], paper[embedded]),
        "gap_embedding": float(gap[embedded].mean()),
        "gap_lexical": float(gap[LEXICAL].mean()),
    }


def diagnoses(ours: pd.DataFrame, paper: pd.DataFrame, variants: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, measure) with Spearman below THRESHOLD, holding every diagnostic figure."""
    rows = []
    for row in agreement(ours, paper).itertuples():
        if not row.spearman < THRESHOLD:
            continue
        mine, theirs = values(ours, row.pair, row.k, row.measure), values(paper, row.pair, row.k, row.measure)
        entry = {
            "pair": row.pair,
            "k": row.k,
            "measure": row.measure,
            "spearman": row.spearman,
            "overlaps": overlapping_neighbours(ours, row.pair, row.k, row.measure),
            "metrics": len(mine),
        }
        entry.update({f"tie_{key}": v for key, v in tie_figures(mine, theirs).items()})
        entry.update({f"emb_{key}": v for key, v in embedding_figures(mine, theirs).items()})
        entry.update({f"shift_{key}": v for key, v in rank_shift(mine, theirs).items()})
        rerun_column = f"{row.measure}_half" if row.measure in ("A", "Aw") else row.measure
        entry.update(compcor_classifier(mine, theirs, values(variants, row.pair, row.k, rerun_column)))
        if row.measure in ("A", "Aw"):
            for variant in ("half", "le", "lt", "paths", "paths_le"):
                rerun = values(variants, row.pair, row.k, f"{row.measure}_{variant}")
                entry[f"rule_{variant}"] = spearman(rerun, theirs)
            entry["judgement_ties"] = float(values(variants, row.pair, row.k, "ties").drop(COMPCOR).max())
        rows.append(entry)
    return pd.DataFrame(rows)


def load_variants(folder: Path = FOLDER) -> pd.DataFrame:
    """A and A^w of the re-run distances under every tie rule and counting (textmetric_bench.reports.paper_table3.judgements)."""
    path = folder / "distances.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: build it with python -m textmetric_bench.reports.paper_table3.distances"
        )
    return accuracy_variants(pd.read_csv(path))


def rerun_gap(ours: pd.DataFrame, variants: pd.DataFrame, metrics: list[str]) -> float:
    """Largest |A or A^w of the re-run − committed table| over the four settings, for ``metrics``."""
    gaps = []
    for pair, k in SETTINGS:
        for measure in ("A", "Aw"):
            diff = values(variants, pair, k, f"{measure}_half") - values(ours, pair, k, measure)
            gaps.append(diff[metrics].abs().max())
    return float(max(gaps))


def rank_shift(ours: pd.Series, paper: pd.Series) -> dict:
    """The metric whose rank (1 = best) moves most between the paper and us, and Spearman without it."""
    mine, theirs = ours.rank(ascending=False), paper.rank(ascending=False)
    metric = (mine - theirs).abs().idxmax()
    return {
        "metric": metric,
        "paper_rank": float(theirs[metric]),
        "our_rank": float(mine[metric]),
        "without": spearman(ours.drop(metric), paper.drop(metric)),
    }


def compcor_classifier(ours: pd.Series, paper: pd.Series, rerun: pd.Series) -> dict:
    """Spearman with our CLASSIFIER value replaced by the re-run's ``classifier_compcor`` (compcor's way)."""
    swapped = ours.copy()
    swapped["classifier"] = rerun[COMPCOR]
    return {
        "cls_ours": float(ours["classifier"]),
        "cls_compcor": float(rerun[COMPCOR]),
        "cls_paper": float(paper["classifier"]),
        "cls_spearman": spearman(swapped, paper),
    }
