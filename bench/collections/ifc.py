"""The corpora IFC scores (004 §5): the source split into a training pool and a reference pool, per repetition
two disjoint reference samples, and each generated g_i against the first of them.

The evaluations are d(reference_r, g_i) for every iteration i ("generated") and the self-distance
d(reference_r, other_r) ("self"). A g_i smaller than the reference sample is compared with the same
number of reference texts, keeping the two sides of every distance the same size (004 §5).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from textmetric_bench.collections.seeds import repetition_seed
from textmetric_bench.errors import ConfigError, DataError

SPLIT_STREAM = 2  # seed stream of the training/reference split (0: samples, 1: metrics, 3-4: generation)


def split_source(texts, reference_share: float, seed: int) -> tuple[list[str], list[str]]:
    """(training pool, reference pool): a seeded split of the source into two disjoint parts."""
    if not 0 < reference_share < 1:
        raise ConfigError(f"ifc.reference_share must lie strictly between 0 and 1, got {reference_share}")
    order = np.random.default_rng(repetition_seed(seed, 0, SPLIT_STREAM)).permutation(len(texts))
    n_ref = int(round(reference_share * len(texts)))
    return [texts[i] for i in order[n_ref:]], [texts[i] for i in order[:n_ref]]


def reference_samples(pool_size: int, size: int, repetitions: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per repetition, two disjoint samples of ``size`` indices into the reference pool.

    The first is the reference sample scored against every g_i, both give the self-distance.
    """
    if 2 * size > pool_size:
        raise DataError(
            f"IFC needs 2 x {size} held-out source texts per repetition (reference sample and its "
            f"self-distance partner) but the reference pool has {pool_size}; lower ifc.corpus_size "
            "or raise ifc.reference_share"
        )
    out = []
    for r in range(repetitions):
        pick = np.random.default_rng(repetition_seed(seed, r, 0)).choice(pool_size, 2 * size, replace=False)
        out.append((pick[:size], pick[size:]))
    return out


def ifc_positions(corpora: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """The known position of every corpus of ``ifc_pairs`` (what the oracle knows): g_i at its iteration i,
    every reference sample at the last iteration T, the model's target, so d(reference, g_i) = T - i."""
    iterations = [int(cid[1:]) for cid in corpora if cid.startswith("g")]
    last = max(iterations, default=0)
    return {cid: float(cid[1:]) if cid.startswith("g") else float(last) for cid in corpora}


def ifc_pairs(
    generated: Mapping[int, Sequence[str]],
    reference_pool: Sequence[str],
    samples: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[dict[str, list[str]], list[tuple]]:
    """(corpora by id, evaluations as (kind, iteration, repetition, p id, q id)); the self-distance has iteration -1."""
    corpora: dict[str, list[str]] = {f"g{i}": list(texts) for i, texts in generated.items()}
    plan = []
    for r, (ref_idx, other_idx) in enumerate(samples):
        reference = [reference_pool[j] for j in ref_idx]
        corpora[f"ref{r}"] = reference
        corpora[f"other{r}"] = [reference_pool[j] for j in other_idx]
        plan.append(("self", -1, r, f"ref{r}", f"other{r}"))
        for i, texts in sorted(generated.items()):
            ref = f"ref{r}" if len(texts) >= len(reference) else f"ref{r}[:{len(texts)}]"
            corpora[ref] = reference[: len(texts)]
            plan.append(("generated", int(i), r, ref, f"g{i}"))
    return corpora, plan
