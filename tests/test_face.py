"""FACE (003 §2): spectra of known signals, the four similarities on constructed spectra, and the
corpus-level metrics on real texts scored by the real SmolLM2."""

import numpy as np
import pytest
from scipy import stats

from textmetric_bench.api.context import lm_scorer
from textmetric_bench.api.registry import get_metric
from textmetric_bench.metrics.face import (
    centred_distance,
    cross_entropy_spectrum,
    dissimilarities,
    on_grid,
    pearson,
    spearman,
    spectral_angle,
    spectral_overlap,
    text_spectra,
)

FACE = ["face_so", "face_sam", "face_corr", "face_spear"]


def test_spectrum_of_a_cosine_peaks_at_its_frequency():
    n, k0 = 64, 5
    signal = 3.0 + np.cos(2 * np.pi * k0 * np.arange(n) / n)
    freqs, values = cross_entropy_spectrum(signal, include_dc=True)
    assert freqs[0] == 0 and freqs[-1] == pytest.approx(0.5) and len(values) == n // 2 + 1
    assert values[0] == pytest.approx(3.0 * n)  # DC: the sum of the signal
    assert values[k0] == pytest.approx(n / 2)  # Re DFT of a cosine: N/2 at its bin
    assert np.abs(np.delete(values, [0, k0])).max() < 1e-9
    no_dc_freqs, no_dc = cross_entropy_spectrum(signal)
    assert no_dc_freqs[0] == pytest.approx(1 / n) and np.array_equal(no_dc, values[1:])


def test_spectrum_real_part_matches_the_dft_definition():
    x = np.random.default_rng(0).random(13)
    _, values = cross_entropy_spectrum(x, include_dc=True)
    k = np.arange(7)[:, None]
    direct = (x * np.cos(2 * np.pi * k * np.arange(13) / 13)).sum(axis=1)  # Re of sum x_n e^{-i w_k n}
    np.testing.assert_allclose(values, direct, atol=1e-12)


def test_interpolation_onto_the_common_grid():
    grid = on_grid(np.array([0.0, 0.25, 0.5]), np.array([0.0, 1.0, 0.0]), 5)
    np.testing.assert_allclose(grid, [0.0, 0.5, 1.0, 0.5, 0.0])


def test_similarities_on_constructed_spectra():
    f = np.array([1.0, 2.0, 3.0, 4.0])
    assert spectral_overlap(f, f) == 1.0 and spectral_angle(f, f) == pytest.approx(0.0, abs=1e-7)
    assert pearson(f, f) == pytest.approx(1.0) and spearman(f, f) == pytest.approx(1.0)
    # Doubling a spectrum: overlap halves (area of min / area of max), the angle and correlations do not move.
    assert spectral_overlap(f, 2 * f) == pytest.approx(0.5)
    assert spectral_angle(f, 2 * f) == pytest.approx(0.0, abs=1e-7)
    # Hand-computed trapezoid areas for g = (4,3,2,1): min = (1,2,2,1) -> 1.5+2+1.5 = 5; max = (4,3,3,4) -> 10.
    g = f[::-1]
    assert spectral_overlap(f, g) == pytest.approx(5 / 10)
    assert spectral_angle(f, g) == pytest.approx(np.arccos(20 / 30))  # f.g = 20, |f||g| = 30
    assert pearson(f, g) == pytest.approx(-1.0) and spearman(f, g) == pytest.approx(-1.0)
    # Orthogonal spectra meet at a right angle; a monotone but non-linear pair is Spearman 1, Pearson < 1.
    assert spectral_angle(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(np.pi / 2)
    assert spearman(f, f**3) == pytest.approx(1.0) and pearson(f, f**3) < 0.99
    assert pearson(f, f**3) == pytest.approx(stats.pearsonr(f, f**3).statistic)


def test_vectorised_dissimilarities_equal_the_per_pair_definitions():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(4, 9)), rng.normal(size=(3, 9))
    per_pair = {
        "so": lambda f, g: 1 - spectral_overlap(f, g),
        "sam": spectral_angle,
        "corr": lambda f, g: 1 - pearson(f, g),
        "spear": lambda f, g: 1 - spearman(f, g),
    }
    for name, delta in per_pair.items():
        expected = np.array([[delta(f, g) for g in y] for f in x])
        np.testing.assert_allclose(dissimilarities(x, y, name), expected, atol=1e-12, err_msg=name)
    # A constant spectrum has no correlation with anything (zero feature), not a NaN.
    flat = np.vstack([np.ones(9), x[0]])
    assert np.isfinite(dissimilarities(flat, flat, "corr")).all()
    assert dissimilarities(flat, flat, "corr")[0, 1] == 1.0


@pytest.mark.parametrize("similarity", ["so", "sam", "corr", "spear"])
def test_centred_distance_is_zero_on_itself_and_quadratic_in_mixing(similarity):
    rng = np.random.default_rng(4)
    a = np.abs(rng.normal(size=(10, 16)))
    b = np.abs(rng.normal(size=(10, 16))) * np.linspace(2, 0.2, 16)  # another spectral shape
    assert centred_distance(a, a, similarity) == pytest.approx(0.0, abs=1e-12)
    full = centred_distance(a, b, similarity)
    assert full > 0
    # a and the half-and-half union: the mean embedding moves half way, so the distance is a quarter.
    assert centred_distance(a, np.vstack([a, b]), similarity) == pytest.approx(full / 4, rel=1e-9)
    assert centred_distance(b, a, similarity) == pytest.approx(full, rel=1e-12)


@pytest.fixture(scope="module")
def corpora(intent_texts):
    a, b = intent_texts["a"], intent_texts["b"]
    return {"a1": a[:24], "a2": a[24:48], "b1": b[:24]}


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_face_metrics_on_real_texts(lm_context, corpora):
    a1, b1 = corpora["a1"], corpora["b1"]
    for name in FACE:
        m = get_metric(name)
        assert m.opt_in and m.prepare is not None
        assert m(a1, a1, seed=0) == pytest.approx(0.0, abs=1e-12)
        value = m(a1, b1, seed=0)
        assert np.isfinite(value) and value > 0
        shuffled = [a1[i] for i in np.random.default_rng(1).permutation(len(a1))]
        assert m(shuffled, b1, seed=0) == pytest.approx(value, rel=1e-9)
        assert m(b1, a1, seed=0) == pytest.approx(value, rel=1e-9)


def test_cross_entropies_are_cached_per_text(lm_context, corpora):
    lm = lm_scorer()
    first = lm.token_logprobs(corpora["a1"])
    before = lm.scored
    again = lm.token_logprobs(list(reversed(corpora["a1"])))
    assert lm.scored == before  # nothing rescored: served from the cache
    for x, y in zip(first, reversed(again)):
        np.testing.assert_array_equal(x, y)
    # The cached log-probabilities are the model's own: the same as scoring the text directly.
    from textmetric_bench.features.lm.model import token_logprobs

    model, tok = lm._loaded()
    direct = token_logprobs(model, tok, corpora["a1"][:3])
    for x, y in zip(first[:3], direct):
        np.testing.assert_allclose(x, y, atol=1e-5)


def test_text_spectra_follow_the_cached_cross_entropies(lm_context, corpora):
    texts = corpora["b1"][:5]
    rows = text_spectra(texts, max_tokens=256, grid_points=16, include_dc=False)
    for row, logprobs in zip(rows, lm_scorer().token_logprobs(texts)):
        freqs, values = cross_entropy_spectrum(-logprobs)
        np.testing.assert_allclose(row, on_grid(freqs, values, 16))
