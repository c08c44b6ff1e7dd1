"""The samples of the perturbation study: per repetition a reference R and a sample S of source A, a sample O of
source B, and S under every perturbation (``textmetric_bench.collections.perturbations``), each on its own seed."""

from __future__ import annotations

import math
import zlib

import numpy as np
from omegaconf import ListConfig

from textmetric_bench.collections.perturbations import get_perturbation
from textmetric_bench.collections.seeds import repetition_seed
from textmetric_bench.errors import ConfigError, DataError

SAME, OTHER = "same", "other"  # conditions (a) and (c); (b) is named by its perturbation
PERTURB_STREAM = 2  # seed stream of the perturbations (0: samples, 1: metrics)


def validate_perturb_parameters(n, repetitions, perturbations) -> tuple[int, int, list[str]]:
    """(n, repetitions, perturbation names), checked before anything is loaded."""
    try:
        n, repetitions = int(n), int(repetitions)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"n and repetitions must be integers: {exc}") from exc
    if n < 2 or repetitions < 1:
        raise ConfigError(
            f"task=perturb needs n >= 2 texts per sample and repetitions >= 1, got n={n}, repetitions={repetitions}"
        )
    if isinstance(perturbations, str):
        perturbations = [p.strip() for p in perturbations.split(",")]
    if not isinstance(perturbations, (list, tuple, ListConfig)) or not perturbations:
        raise ConfigError(f"`perturbations` must list at least one perturbation, got {perturbations!r}")
    names = list(dict.fromkeys(str(p) for p in perturbations))
    for name in names:
        get_perturbation(name)  # raises, suggesting the closest name
    return n, repetitions, names


def draw_samples(
    n_a: int, n_b: int, n: int, seed: int, repetition: int, names: tuple[str, str] = ("A", "B")
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R, S, O) row indices of one repetition: R and S disjoint in source A, O in source B."""
    if 2 * n > n_a or n > n_b:
        raise DataError(
            f"task=perturb with n={n} needs {2 * n} texts of {names[0]} (has {n_a}) and {n} of "
            f"{names[1]} (has {n_b}); lower n"
        )
    rng = np.random.default_rng(repetition_seed(seed, repetition, 0))
    both = rng.choice(n_a, size=2 * n, replace=False)
    return both[:n], both[n:], rng.choice(n_b, size=n, replace=False)


def perturbation_rng(seed: int, repetition: int, name: str) -> np.random.Generator:
    """The generator of one perturbation in one repetition: independent of which others run."""
    return np.random.default_rng([int(seed), int(repetition), PERTURB_STREAM, zlib.crc32(name.encode())])


def perturbation_stats(original: list[str], perturbed: list[str]) -> dict[str, float]:
    """How much a perturbation changed a sample: share of texts changed, words kept per word."""
    before = sum(len(t.split()) for t in original)
    return {
        "changed": float(np.mean([a != b for a, b in zip(original, perturbed)])),
        "words_ratio": sum(len(t.split()) for t in perturbed) / before if before else math.nan,
    }


def perturbation_corpora(
    a_texts, b_texts, n: int, repetitions: int, seed: int, perturbations: list[str], names: tuple[str, str] = ("A", "B")
) -> tuple[dict[str, list[str]], dict[str, list[dict]]]:
    """Corpora ``r{r}/reference``, ``r{r}/same``, ``r{r}/other`` and ``r{r}/<perturbation>`` of every
    repetition, and per perturbation the ``perturbation_stats`` of each repetition."""
    corpora: dict[str, list[str]] = {}
    stats: dict[str, list[dict]] = {p: [] for p in perturbations}
    for r in range(repetitions):
        ref, same, other = draw_samples(len(a_texts), len(b_texts), n, seed, r, names)
        corpora[f"r{r}/reference"] = [a_texts[i] for i in ref]
        corpora[f"r{r}/{SAME}"] = [a_texts[i] for i in same]
        corpora[f"r{r}/{OTHER}"] = [b_texts[i] for i in other]
        for p in perturbations:
            texts = get_perturbation(p).apply(corpora[f"r{r}/{SAME}"], perturbation_rng(seed, r, p))
            corpora[f"r{r}/{p}"] = texts
            stats[p].append(perturbation_stats(corpora[f"r{r}/{SAME}"], texts))
    return corpora, stats
