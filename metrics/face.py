"""FACE: Fourier analysis of per-token cross-entropy (Yang et al. 2023, paper 003 §2).

Each text is scored by the run's causal LM (``bench.lm_scores``; SmolLM2 by default, any
local causal LM through ``lm.path``): its cross-entropy sequence c_1..c_N is
-log p(token_t | preceding tokens). Its spectrum is the real part of the discrete Fourier
transform (003 §2.2), taken over the non-negative frequencies k/N, k = 0..N/2 (for a real
signal the other half mirrors them). Spectra of different lengths are interpolated linearly
onto one grid of ``grid_points`` frequencies in [0, 1/2] (003 §2.3 interpolates to a common
length). The four similarities of 003 §2.3 compare two spectra F, G on that grid:
SO = area(min(|F|, |G|)) / area(max(|F|, |G|)), SAM = arccos(F.G / |F||G|),
CORR = Pearson(F, G), SPEAR = Spearman(F, G).

Corpus level. 003 pairs the i-th human text with the i-th model text, so its score depends
on the order of the texts. Here each corpus is summarised by its mean magnitude spectrum,
the mean of |Re X(w)| over its texts (what 003's Figure 5 aggregates), and the four
similarities compare the two mean spectra: the value depends on the corpora as sets.
Distances: 1 - SO, SAM (radians), 1 - CORR, 1 - SPEAR.

Choices that depart from 003, each a parameter:
- ``include_dc`` (default false): the zero frequency is the sum of a text's cross-entropies,
  i.e. its total surprisal, which grows with length and dwarfs the periodic components.
- ``grid_points`` (default 128): a fixed grid rather than the longest spectrum of the data,
  so a corpus's spectrum is a statistic of that corpus alone (computed once per run).
- ``max_tokens`` (default 256): texts are scored on their first tokens only.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from bench.corpus_cache import per_corpus
from bench.errors import MetricError
from bench.inputs import as_texts
from bench.lm_scores import scorer
from bench.registry import metric


def cross_entropy_spectrum(cross_entropy: np.ndarray, *, include_dc: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(frequencies k/N in [0, 1/2], Re DFT at them) of one cross-entropy sequence (003 eq. 2)."""
    signal = np.asarray(cross_entropy, dtype=np.float64)
    n = len(signal)
    values = np.fft.rfft(signal).real
    freqs = np.arange(len(values)) / n
    return (freqs, values) if include_dc else (freqs[1:], values[1:])


def on_grid(freqs: np.ndarray, values: np.ndarray, grid_points: int) -> np.ndarray:
    """A spectrum linearly interpolated onto ``grid_points`` frequencies spanning [0, 1/2]."""
    return np.interp(np.linspace(0.0, 0.5, grid_points), freqs, values)


@per_corpus
def mean_magnitude_spectrum(texts, *, max_tokens: int, grid_points: int, include_dc: bool) -> np.ndarray:
    """Mean of |Re X| over a corpus's texts, on the common grid (shared across pairs in a run)."""
    spectra = []
    for logprobs in scorer().token_logprobs(texts, max_tokens=max_tokens):
        freqs, values = cross_entropy_spectrum(-logprobs, include_dc=include_dc)
        if len(values):  # one token gives no non-zero frequency
            spectra.append(on_grid(freqs, np.abs(values), grid_points))
    if not spectra:
        raise MetricError("FACE: no text of the corpus has two or more scored tokens, so no spectrum")
    return np.mean(spectra, axis=0)


def spectral_overlap(f: np.ndarray, g: np.ndarray) -> float:
    """SO (003 §2.3): area under min(|f|, |g|) over area under max(|f|, |g|), in [0, 1]."""
    f, g = np.abs(f), np.abs(g)
    union = np.trapezoid(np.maximum(f, g))
    return float(np.trapezoid(np.minimum(f, g)) / union) if union > 0 else 1.0


def spectral_angle(f: np.ndarray, g: np.ndarray) -> float:
    """SAM (003 §2.3): the angle between the spectra as vectors, in radians."""
    cos = f @ g / (np.linalg.norm(f) * np.linalg.norm(g))
    return float(np.arccos(np.clip(cos, -1.0, 1.0)))


def pearson(f: np.ndarray, g: np.ndarray) -> float:
    """CORR (003 §2.3)."""
    return float(stats.pearsonr(f, g).statistic)


def spearman(f: np.ndarray, g: np.ndarray) -> float:
    """SPEAR (003 §2.3)."""
    return float(stats.spearmanr(f, g).statistic)


def _spectra(p, q, max_tokens: int, grid_points: int, include_dc: bool):
    if grid_points < 2:
        raise MetricError(f"FACE: grid_points must be at least 2, got {grid_points}")
    options = dict(max_tokens=int(max_tokens), grid_points=int(grid_points), include_dc=bool(include_dc))
    return (mean_magnitude_spectrum(as_texts(p, role="first corpus"), **options),
            mean_magnitude_spectrum(as_texts(q, role="second corpus"), **options))


def score_texts(texts, *, max_tokens: int = 256, grid_points: int = 128, include_dc: bool = False) -> None:
    """The engine's ``prepare`` hook: one batched LM pass over every text of the run, cached."""
    scorer().token_logprobs(texts, max_tokens=int(max_tokens))


FACE = dict(inputs="texts", symmetric=True, opt_in=True, prepare=score_texts)


@metric("face_so", description="1 - spectral overlap of the corpora's cross-entropy spectra (FACE)", **FACE)
def face_so(p, q, *, seed: int = 0, max_tokens: int = 256, grid_points: int = 128, include_dc: bool = False) -> float:
    """1 - SO of the mean magnitude spectra (deterministic; ``seed`` unused)."""
    return max(0.0, 1.0 - spectral_overlap(*_spectra(p, q, max_tokens, grid_points, include_dc)))


@metric("face_sam", description="Angle between the corpora's cross-entropy spectra (FACE SAM)", **FACE)
def face_sam(p, q, *, seed: int = 0, max_tokens: int = 256, grid_points: int = 128, include_dc: bool = False) -> float:
    """SAM of the mean magnitude spectra, in radians (deterministic; ``seed`` unused)."""
    return spectral_angle(*_spectra(p, q, max_tokens, grid_points, include_dc))


@metric("face_corr", description="1 - Pearson correlation of the cross-entropy spectra (FACE CORR)", **FACE)
def face_corr(p, q, *, seed: int = 0, max_tokens: int = 256, grid_points: int = 128, include_dc: bool = False) -> float:
    """1 - CORR of the mean magnitude spectra, in [0, 2] (deterministic; ``seed`` unused)."""
    return max(0.0, 1.0 - pearson(*_spectra(p, q, max_tokens, grid_points, include_dc)))


@metric("face_spear", description="1 - Spearman correlation of the cross-entropy spectra (FACE SPEAR)", **FACE)
def face_spear(p, q, *, seed: int = 0, max_tokens: int = 256, grid_points: int = 128, include_dc: bool = False) -> float:
    """1 - SPEAR of the mean magnitude spectra, in [0, 2] (deterministic; ``seed`` unused)."""
    return max(0.0, 1.0 - spearman(*_spectra(p, q, max_tokens, grid_points, include_dc)))
