"""FID: Fréchet distance between Gaussians fitted to two embedded corpora (Heusel et al. 2017; 004 §2).

d = ||mu_p - mu_q||^2 + Tr(S_p + S_q - 2 (S_p S_q)^{1/2}).
The trace of the matrix square root is taken as Tr((A S_q A)^{1/2}) with A = S_p^{1/2}:
A S_q A is symmetric positive semi-definite and similar to S_p S_q, so two symmetric
eigen-decompositions replace scipy's general ``sqrtm`` (faster, no complex parts); the two
routes agree to 1e-6 on real embeddings, also when n < d makes the covariances singular
(tests/test_reference_metrics.py). Covariances use the unbiased n - 1 divisor, as pytorch-fid.
"""

from __future__ import annotations

import numpy as np

from bench.api.inputs import as_embeddings, same_dims
from bench.api.registry import metric
from bench.api.sharing import per_corpus


@per_corpus
def gaussian_fit(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, covariance and covariance square root of one corpus: computed once per corpus in a run."""
    cov = np.cov(x, rowvar=False, ddof=1)
    return x.mean(axis=0), cov, _psd_sqrt(cov)


def _psd_sqrt(s: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(s)
    return (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ vecs.T


def frechet_distance(mu_p, cov_p, mu_q, cov_q, *, root_p=None) -> float:
    """Fréchet (Wasserstein-2) distance between N(mu_p, cov_p) and N(mu_q, cov_q).

    With ``root_p`` = cov_p^{1/2} given, a pair costs one symmetric eigen-decomposition.
    """
    root_p = _psd_sqrt(cov_p) if root_p is None else root_p
    middle = root_p @ cov_q @ root_p
    eig = np.linalg.eigvalsh((middle + middle.T) / 2.0)
    trace_sqrt = np.sqrt(np.clip(eig, 0.0, None)).sum()
    diff = mu_p - mu_q
    value = diff @ diff + np.trace(cov_p) + np.trace(cov_q) - 2.0 * trace_sqrt
    return float(max(value, 0.0))


@metric("fid", inputs="embeddings", symmetric=True, source="Heusel et al. 2017; 004 §2",
        value_range=(0.0, float("inf")),
        failure_modes=("small n (fewer texts than embedding dimensions): singular covariances, biased upward",),
        description="Fréchet distance between Gaussian fits of the embeddings")
def fid(p, q, *, seed: int = 0) -> float:
    """FID between two embedded corpora (deterministic; ``seed`` unused)."""
    x = as_embeddings(p, role="first corpus", min_rows=2)
    y = as_embeddings(q, role="second corpus", min_rows=2)
    same_dims(x, y)
    mu_p, cov_p, root_p = gaussian_fit(x)
    mu_q, cov_q, _ = gaussian_fit(y)
    return frechet_distance(mu_p, cov_p, mu_q, cov_q, root_p=root_p)
