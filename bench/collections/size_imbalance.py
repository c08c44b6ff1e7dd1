"""The samples of the size and imbalance study (004 §4.6-4.7): the grid of sample sizes and the sample pairs.

For d(A, B) pairs of n_ref texts; for the size curve pairs (a_s, b_s); for the imbalance curve
pairs (a_s, b_(N-s)). Each pair is drawn on its own seed, so the grid and the repetitions can
change without moving the other samples. The measures S and I are in ``textmetric_bench.measures.robustness``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from textmetric_bench.collections.seeds import repetition_seed
from textmetric_bench.errors import ConfigError, DataError

#: Known position of a sample by its source (what the oracle knows): every sample is pure A or pure B, so
#: d(a_s, b) = 1 at every size and S = I = 1. A task publishes them per corpus (``textmetric_bench.tasks.positions``).
SOURCE_POSITIONS = {"a": 0.0, "b": 1.0}

#: Seed stream of each curve (streams 0 and 1 are the KSC collection and the metric seeds).
CURVE_STREAMS = {"asymptotic": 2, "size": 3, "imbalance": 4}
CURVES = tuple(CURVE_STREAMS)


@dataclass(frozen=True)
class RobustnessGrid:
    """Sample sizes actually used: n_ref per side for d(A, B), s for the size curve, and s
    (with |b| = N - s) for the imbalance curve; ``truncated`` says what the sources cut and why."""

    n_ref: int
    sizes: tuple[int, ...]
    imbalance_sizes: tuple[int, ...]
    imbalance_total: int
    truncated: list[str] = field(default_factory=list)

    def sample_sizes(self, curve: str) -> list[tuple[int, int, int]]:
        """(s, |a|, |b|) of every point of ``curve``; s is the x-axis value."""
        if curve == "asymptotic":
            return [(self.n_ref, self.n_ref, self.n_ref)]
        if curve == "size":
            return [(s, s, s) for s in self.sizes]
        if curve == "imbalance":
            return [(s, s, self.imbalance_total - s) for s in self.imbalance_sizes]
        raise ValueError(f"unknown curve {curve!r}; expected one of {CURVES}")


def validate_robustness_parameters(n_ref, sizes, imbalance_total, repetitions) -> tuple[int, list[int], int, int]:
    """Check the configured grid before anything is loaded; returns (n_ref, sorted sizes, N, repetitions)."""
    try:
        n_ref, total, reps = int(n_ref), int(imbalance_total), int(repetitions)
        grid = sorted({int(s) for s in sizes})
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"n_ref, imbalance_total, repetitions and every entry of sizes must be integers: {exc}"
        ) from exc
    if not grid:
        raise ConfigError("`sizes` is empty; give the sample sizes s of the curves, e.g. sizes=[50,250,450]")
    if grid[0] < 1:
        raise ConfigError(f"every sample size must be >= 1; sizes has {grid[0]}")
    if n_ref < 1 or reps < 1:
        raise ConfigError(f"n_ref and repetitions must be >= 1; got n_ref={n_ref}, repetitions={reps}")
    if grid[-1] >= total:
        raise ConfigError(
            f"imbalance_total N={total} must exceed every size s (b_(N-s) needs >= 1 text); "
            f"the largest size is {grid[-1]}: raise imbalance_total or drop that size"
        )
    return n_ref, grid, total, reps


def feasible_grid(
    n_ref: int, sizes: Sequence[int], imbalance_total: int, n_a: int, n_b: int, names: tuple[str, str] = ("A", "B")
) -> RobustnessGrid:
    """The grid truncated to what sources of n_a and n_b texts allow (samples draw without replacement).

    n_ref is capped by the smaller source; sizes larger than a source are dropped from a curve.
    Raises DataError when a curve has no point left.
    """
    notes = []
    ref = min(n_ref, n_a, n_b)
    if ref < n_ref:
        notes.append(f"n_ref capped from {n_ref} to {ref}: the smaller source has {ref} texts")
    size = tuple(s for s in sizes if s <= min(n_a, n_b))
    imbalance = tuple(s for s in sizes if s <= n_a and imbalance_total - s <= n_b)
    for curve, kept in (("size", size), ("imbalance", imbalance)):
        dropped = sorted(set(sizes) - set(kept))
        if dropped:
            notes.append(
                f"{curve} curve: s = {dropped} dropped; sources {names[0]} ({n_a} texts) and "
                f"{names[1]} ({n_b} texts) are too small for them"
            )
        if not kept:
            raise DataError(
                f"no point of the {curve} curve fits sources {names[0]} ({n_a} texts) and "
                f"{names[1]} ({n_b} texts); lower `sizes` or `imbalance_total`"
            )
    return RobustnessGrid(ref, size, imbalance, imbalance_total, notes)


def sample_seed(seed: int, repetition: int, curve: str, s: int) -> np.random.SeedSequence:
    """Seed of one sample pair: depends only on (seed, repetition, curve, s), so editing the grid
    or adding repetitions never changes the other samples."""
    base = repetition_seed(seed, repetition, CURVE_STREAMS[curve])
    return np.random.SeedSequence(base.entropy, spawn_key=(*base.spawn_key, int(s)))


def draw_sample_pair(
    n_a: int, n_b: int, size_a: int, size_b: int, seed: np.random.SeedSequence
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a_s (size_a texts of A) and b (size_b texts of B), each drawn without replacement."""
    rng = np.random.default_rng(seed)
    return rng.choice(n_a, size_a, replace=False), rng.choice(n_b, size_b, replace=False)
