"""Judgement accuracy A (004 §4.5, eq. 6-7) under the rules in which this project and 004 can differ.

Reads distances only (reports/ does not import bench). Three choices move A:

- the tie rule: ``half`` (this project: a tie counts ½), ``le`` (004 eq. 6 as written: the judgement
  d(inner) ≤ d(outer) is correct, so a tie counts 1), ``lt`` (a tie counts 0);
- the judgement set: ``distinct`` containments (q, r) ⊂ (i, j) (eq. 5; |J| = 105 at k = 7), or
  ``paths``: every path from (i, j) down to (q, r) in 004's Figure 3 tree counted once, which is how a
  recursion over that tree meets the same judgement more than once;
- the weight 1 / (ell_outer - ell_inner) of A^w (eq. 7), normalised by the sum of weights.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb

import numpy as np
import pandas as pd
from scipy import stats

TIE_RULES = {"half": 0.5, "le": 1.0, "lt": 0.0}


@lru_cache(maxsize=16)
def containments(k: int) -> pd.DataFrame:
    """One row per distinct judgement of a k-collection: outer (i, j), inner (q, r), weight and paths.

    ``paths`` is the number of routes from node (i, j) to node (q, r) in Figure 3's tree, where each
    node has the children (i + 1, j) and (i, j - 1): choose which of the (q - i) + (j - r) steps move i.
    """
    rows = []
    for i in range(1, k + 1):
        for j in range(i + 1, k + 1):
            for q in range(i, j):
                for r in range(q + 1, j + 1):
                    if (q, r) == (i, j):
                        continue
                    rows.append((i, j, q, r, 1.0 / ((j - i) - (r - q)), comb((q - i) + (j - r), q - i)))
    return pd.DataFrame(rows, columns=["i", "j", "q", "r", "weight", "paths"])


def judgement_count(k: int, counting: str = "distinct") -> int:
    """|J| of a k-collection: distinct judgements, or judgements counted once per tree path."""
    table = containments(k)
    return int(len(table) if counting == "distinct" else table["paths"].sum())


def accuracy(i, j, distance, k: int, *, tie: str = "half", weighted: bool = False, counting: str = "distinct") -> float:
    """A (or A^w) of one repetition's distances d(c_i, c_j) under the given tie rule and counting."""
    if tie not in TIE_RULES:
        raise ValueError(f"tie rule {tie!r} is not one of {sorted(TIE_RULES)}")
    if counting not in ("distinct", "paths"):
        raise ValueError(f"counting {counting!r} must be 'distinct' or 'paths'")
    d = {(int(a), int(b)): float(v) for a, b, v in zip(i, j, distance)}
    table = containments(k)
    missing = [(a, b) for a in range(1, k + 1) for b in range(a + 1, k + 1) if (a, b) not in d]
    if missing:
        raise ValueError(f"distances of a k={k} collection lack the pair {missing[0]}")
    outer = np.array([d[(a, b)] for a, b in zip(table["i"], table["j"])])
    inner = np.array([d[(a, b)] for a, b in zip(table["q"], table["r"])])
    score = np.where(inner < outer, 1.0, np.where(inner == outer, TIE_RULES[tie], 0.0))
    w = table["weight"].to_numpy() if weighted else np.ones(len(table))
    if counting == "paths":
        w = w * table["paths"].to_numpy()
    return float((w * score).sum() / w.sum())


def tie_share(i, j, distance, k: int) -> float:
    """Share of the distinct judgements whose two distances are exactly equal."""
    d = {(int(a), int(b)): float(v) for a, b, v in zip(i, j, distance)}
    table = containments(k)
    equal = [d[(a, b)] == d[(q, r)] for a, b, q, r in zip(table["i"], table["j"], table["q"], table["r"])]
    return float(np.mean(equal))


VARIANTS = {  # column: (tie rule, counting)
    "half": ("half", "distinct"),
    "le": ("le", "distinct"),
    "lt": ("lt", "distinct"),
    "paths": ("half", "paths"),
    "paths_le": ("le", "paths"),
}


def shape_measures(ell, distance) -> dict[str, float]:
    """rho (Spearman with ell, 004 §4.1), omega2 (one-way ANOVA ω² over ell, eq. 4) and L (R², §4.3)."""
    ell, distance = np.asarray(ell, float), np.asarray(distance, float)
    levels = [distance[ell == v] for v in np.unique(ell)]
    grand = distance.mean()
    between = sum(len(g) * (g.mean() - grand) ** 2 for g in levels)
    within = sum(((g - g.mean()) ** 2).sum() for g in levels)
    mean_within = within / (len(distance) - len(levels))
    return {
        "rho": float(stats.spearmanr(ell, distance).statistic),
        "omega2": float((between - (len(levels) - 1) * mean_within) / (between + within + mean_within)),
        "L": float(stats.linregress(ell, distance).rvalue ** 2),
    }


def accuracy_variants(distances: pd.DataFrame) -> pd.DataFrame:
    """Mean over repetitions of A and A^w under every variant, and of rho, omega2 and L, per (pair, k, metric).

    Columns ``A_<variant>`` and ``Aw_<variant>`` for the variants of ``VARIANTS``, ``ties``: the
    mean share of judgements with equal distances, and ``rho``, ``omega2``, ``L``.
    """
    rows = []
    for (pair, k, metric, repetition), group in distances.groupby(["pair", "k", "metric", "repetition"]):
        args = (group["i"].to_numpy(), group["j"].to_numpy(), group["distance"].to_numpy(), int(k))
        row = {
            "pair": pair,
            "k": int(k),
            "metric": metric,
            "repetition": repetition,
            "ties": tie_share(*args),
            **shape_measures(args[1] - args[0], args[2]),
        }
        for name, (tie, counting) in VARIANTS.items():
            row[f"A_{name}"] = accuracy(*args, tie=tie, counting=counting)
            row[f"Aw_{name}"] = accuracy(*args, tie=tie, counting=counting, weighted=True)
        rows.append(row)
    per_repetition = pd.DataFrame(rows)
    return per_repetition.drop(columns="repetition").groupby(["pair", "k", "metric"]).mean().reset_index()
