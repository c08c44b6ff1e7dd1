"""FACE: Fourier analysis of per-token cross-entropy (Yang et al. 2023, paper 003 §2).

Each text is scored by the run's causal LM (``textmetric_bench.api.context.lm_scorer``; SmolLM2 by default, any
local causal LM through ``lm.path``): its cross-entropy sequence c_1..c_N is
-log p(token_t | preceding tokens). Its spectrum is the real part of the discrete Fourier
transform (003 §2.2), taken over the non-negative frequencies k/N, k = 0..N/2 (for a real
signal the other half mirrors them). Spectra of different lengths are interpolated linearly
onto one grid of ``grid_points`` frequencies in [0, 1/2] (003 §2.3 interpolates to a common
length). The four similarities of 003 §2.3 compare two spectra F, G on that grid:
SO = area(min(|F|, |G|)) / area(max(|F|, |G|)), SAM = arccos(F.G / |F||G|),
CORR = Pearson(F, G), SPEAR = Spearman(F, G).

Corpus level. 003 pairs the i-th human text with the i-th model text and averages the
similarity over those pairs, so its score depends on the order of the texts. Here every text
of one corpus meets every text of the other: with delta(x, y) the per-text dissimilarity
(1 - SO, SAM's angle, 1 - CORR, 1 - SPEAR),

    d(P, Q) = mean delta(x, y) - (mean delta(x, x') + mean delta(y, y')) / 2,

x, x' over P and y, y' over Q, every pair including a text with itself (a V-statistic). The
first term is 003's score averaged over all pairings instead of one; subtracting the
within-corpus terms makes d(P, P) = 0 and d >= 0. SO (the min/max or Ruzicka similarity of
non-negative vectors), CORR and SPEAR (cosines of centred values and of ranks) are positive
definite kernels k, so d is half the squared maximum mean discrepancy, (E k(x,x') + E k(y,y')
- 2 E k(x,y)) / 2; the spectral angle is a metric of negative type on the sphere, so d is
half its energy distance. Both grow as (a - b)^2 between mixtures a P + (1 - a) Q and
b P + (1 - b) Q, which is what KSC asks of a distance. A constant spectrum (a text of two
or three tokens) has no correlation with anything: its CORR and SPEAR features are zero.
Measured on 3 draws of 100 texts of clinc150/banking77 and of the fortune pair, the centred
form ranks a same-source sample closer than the other source in every draw for all four;
the uncentred mean similarity, and a comparison of mean spectra, did not for CORR and SPEAR.

Choices that depart from 003, each a parameter:
- ``include_dc`` (default false): the zero frequency is the sum of a text's cross-entropies,
  i.e. its total surprisal, which grows with length and dwarfs the periodic components.
- ``grid_points`` (default 64): a fixed grid rather than the longest spectrum of the data,
  so a text's spectrum does not depend on which corpus it is compared with.
- ``max_tokens`` (default 256): texts are scored on their first tokens only.
"""

from __future__ import annotations

import numpy as np

from textmetric_bench.api.context import lm_scorer
from textmetric_bench.api.inputs import as_texts, canonical_pair
from textmetric_bench.api.registry import TextLimit, metric
from textmetric_bench.api.sharing import per_corpus
from textmetric_bench.errors import MetricError


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
def text_spectra(texts, *, max_tokens: int, grid_points: int, include_dc: bool, lm: str = "") -> np.ndarray:
    """Re DFT of every text's cross-entropy on the common grid, one row per text (shared across pairs).

    ``lm`` names the scoring model only so that the shared result is keyed by it too.
    """
    rows = []
    for logprobs in lm_scorer().token_logprobs(texts, max_tokens=max_tokens):
        freqs, values = cross_entropy_spectrum(-logprobs, include_dc=include_dc)
        if len(values):  # one token gives no non-zero frequency
            rows.append(on_grid(freqs, values, grid_points))
    if not rows:
        raise MetricError("FACE: no text of the corpus has two or more scored tokens, so no spectrum")
    return np.array(rows)


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
    from scipy import stats  # on use: scipy.stats costs ~60 MiB a process that never scores FACE need not carry

    return float(stats.pearsonr(f, g).statistic)


def spearman(f: np.ndarray, g: np.ndarray) -> float:
    """SPEAR (003 §2.3)."""
    from scipy import stats

    return float(stats.spearmanr(f, g).statistic)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _trapezoid_weights(g: int) -> np.ndarray:
    w = np.ones(g)
    w[[0, -1]] = 0.5
    return w


def dissimilarities(x: np.ndarray, y: np.ndarray, similarity: str) -> np.ndarray:
    """delta(x_i, y_j) for all rows of two spectrum matrices, vectorised (values equal the per-pair functions)."""
    from scipy import stats
    from scipy.spatial.distance import cdist

    if similarity == "so":
        w = _trapezoid_weights(x.shape[1])
        ax, ay = np.abs(x) * w, np.abs(y) * w
        total = ax.sum(1)[:, None] + ay.sum(1)[None, :]
        l1 = cdist(ax, ay, "cityblock")  # sum min = (total - l1) / 2, sum max = (total + l1) / 2
        return np.divide(2 * l1, total + l1, out=np.zeros_like(l1), where=total + l1 > 0)
    if similarity == "sam":
        return np.arccos(np.clip(_unit_rows(x) @ _unit_rows(y).T, -1.0, 1.0))
    if similarity in ("corr", "spear"):
        if similarity == "spear":
            x, y = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
        fx = _unit_rows(x - x.mean(axis=1, keepdims=True))
        fy = _unit_rows(y - y.mean(axis=1, keepdims=True))
        return 1.0 - fx @ fy.T
    raise MetricError(f"FACE: unknown similarity {similarity!r}; use so, sam, corr or spear")


@per_corpus
def within_corpus_dissimilarity(spectra: np.ndarray, *, similarity: str) -> float:
    """mean delta(x, x') over all pairs of texts of one corpus, itself included (shared across pairs)."""
    return float(dissimilarities(spectra, spectra, similarity).mean())


def face_distance(p, q, similarity: str, max_tokens: int, grid_points: int, include_dc: bool) -> float:
    """The centred all-pairs FACE distance of the module note."""
    if grid_points < 2:
        raise MetricError(f"FACE: grid_points must be at least 2, got {grid_points}")
    options = dict(
        max_tokens=int(max_tokens), grid_points=int(grid_points), include_dc=bool(include_dc), lm=lm_scorer().model_id
    )
    x = text_spectra(as_texts(p, role="first corpus"), **options)
    y = text_spectra(as_texts(q, role="second corpus"), **options)
    return centred_distance(x, y, similarity)


def centred_distance(x: np.ndarray, y: np.ndarray, similarity: str) -> float:
    """mean delta(x, y) - (mean delta(x, x') + mean delta(y, y')) / 2 over spectrum rows (module note)."""
    x, y = canonical_pair(x, y)  # the same float sums whichever corpus comes first
    cross = float(dissimilarities(x, y, similarity).mean())
    within = within_corpus_dissimilarity(x, similarity=similarity) + within_corpus_dissimilarity(
        y, similarity=similarity
    )
    return max(0.0, cross - within / 2)


def score_texts(texts, *, max_tokens: int = 256, grid_points: int = 64, include_dc: bool = False) -> None:
    """The engine's ``prepare`` hook: one batched LM pass over every text of the run, cached."""
    lm_scorer().token_logprobs(texts, max_tokens=int(max_tokens))


def text_limit(*, max_tokens: int = 256, grid_points: int = 64, include_dc: bool = False) -> TextLimit:
    """What FACE reads of each text (``max_tokens`` of the run's LM), for the run's record of long texts."""
    return TextLimit(int(max_tokens), "tokens of the run's LM", "max_tokens", lm_scorer().token_counts)


FACE = dict(
    inputs="texts",
    symmetric=True,
    opt_in=True,
    prepare=score_texts,
    needs=("lm",),
    text_limit=text_limit,
    failure_modes=(
        "short texts: spectra of few tokens, interpolated onto the grid",
        "depends on the run's LM (lm config)",
    ),
)
FACE_PARAMETERS = """

``max_tokens``: each text's cross-entropy sequence covers its first max_tokens tokens. ``grid_points``:
spectra are interpolated onto this many frequencies in [0, 1/2]. ``include_dc``: keep the zero frequency
(a text's total surprisal, which grows with its length). Opt-in: every text is scored with the run's LM.
"""


def _face_metric(name: str, similarity: str, label: str, what: str):
    """Register the FACE metric ``name`` on one spectrum dissimilarity; all four take the same parameters."""

    def face_metric(
        p, q, *, seed: int = 0, max_tokens: int = 256, grid_points: int = 64, include_dc: bool = False
    ) -> float:
        return face_distance(p, q, similarity, max_tokens, grid_points, include_dc)

    face_metric.__name__ = face_metric.__qualname__ = name
    face_metric.__doc__ = (
        f"Centred mean of {what} over all text pairs (deterministic; ``seed`` unused)." + FACE_PARAMETERS
    )
    description = f"FACE {label}: centred all-pairs {what} of cross-entropy spectra"
    return metric(name, description=description, source=f"003 §2.3 ({label})", value_range=RANGES[similarity], **FACE)(
        face_metric
    )


#: Range of each centred dissimilarity (floored at 0): 1 - SO, the angle, 1 - a correlation.
RANGES = {"so": (0.0, 1.0), "sam": (0.0, np.pi), "corr": (0.0, 2.0), "spear": (0.0, 2.0)}

#: name: (spectrum dissimilarity, label, what is averaged over text pairs)
FACE_METRICS = {
    "face_so": ("so", "spectral overlap", "1 - SO"),
    "face_sam": ("sam", "spectrum angle", "angle (radians)"),
    "face_corr": ("corr", "CORR", "1 - Pearson correlation"),
    "face_spear": ("spear", "SPEAR", "1 - Spearman correlation"),
}
face_so, face_sam, face_corr, face_spear = (_face_metric(name, *row) for name, row in FACE_METRICS.items())
