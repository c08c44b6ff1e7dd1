"""The opt-in LM metrics run in every task: KSC and robustness through the CLI (run context, prepare
hook, engine workers), IFC scoring in-process; each distinct text is scored by the LM once."""

import json

import pandas as pd
import pytest
from test_end_to_end import run_bench

from textmetric_bench.api.registry import get_metric
from textmetric_bench.collections.ifc import ifc_pairs, reference_samples
from textmetric_bench.engine import CorpusStore, Job, run_jobs

LM_METRICS = "metrics=[face_so,face_spear,ctrleval_coherence]"


def lm_shards(cache_dir):
    return sorted(p.name for p in (cache_dir / "lm_scores").rglob("*.npz"))


@pytest.mark.slow  # ~30-60 s: in `make test-slow`, keeping the default suite under 15 min
def test_ksc_with_lm_metrics_scores_each_text_once_and_workers_agree(tmp_path, cache_dir, smollm2):
    first, second = tmp_path / "serial", tmp_path / "workers"
    proc = run_bench("k=3", "n=6", "repetitions=2", LM_METRICS, f"hydra.run.dir={first}", cache_dir=cache_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    distances = pd.read_csv(first / "distances.csv", keep_default_na=False)
    assert set(distances.metric) == {"face_so", "face_spear", "ctrleval_coherence"}
    assert (distances.error == "").all() and (distances.distance >= 0).all()
    table = (first / "table3.md").read_text()
    assert "face_so" in table and "ctrleval_coherence" in table and "Failed metrics" not in table
    shards = lm_shards(cache_dir)
    assert shards  # token log-probabilities and infilling scores were cached
    # Same corpora with 2 worker processes: every score comes from the cache (no new shard) and the
    # distances are identical.
    proc = run_bench(
        "k=3", "n=6", "repetitions=2", LM_METRICS, "engine.workers=2", f"hydra.run.dir={second}", cache_dir=cache_dir
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert lm_shards(cache_dir) == shards
    again = pd.read_csv(second / "distances.csv", keep_default_na=False)
    pd.testing.assert_frame_equal(distances.drop(columns="seconds"), again.drop(columns="seconds"))


@pytest.mark.slow  # ~30-60 s: in `make test-slow`, keeping the default suite under 15 min
def test_robustness_with_an_lm_metric(tmp_path, cache_dir, smollm2):
    proc = run_bench(
        "task=robustness",
        "sizes=[4,8]",
        "n_ref=16",
        "imbalance_total=12",
        "repetitions=1",
        "metrics=[face_so]",
        f"hydra.run.dir={tmp_path}",
        cache_dir=cache_dir,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    measures = pd.read_csv(tmp_path / "measures.csv")
    assert set(measures.metric) == {"face_so"} and measures[["S", "I"]].notna().all().all()
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["metrics"] == ["face_so"] and info["failures"] == {} and info["asymptotic_distance"]["face_so"] > 0


def test_ifc_scoring_with_an_lm_metric(lm_context, intent_texts):
    a, b = intent_texts["a"], intent_texts["b"]
    pool = a[:40]
    samples = reference_samples(len(pool), 8, 2, seed=0)
    corpora, plan = ifc_pairs({0: b[:8], 1: a[100:108]}, pool, samples)
    jobs = [Job(key=(kind, i, r), metric="face_sam", p=p, q=q, seed=r) for kind, i, r, p, q in plan]
    out = run_jobs(jobs, CorpusStore.from_corpora(corpora), {"face_sam": (get_metric("face_sam"), {})}, progress=False)
    assert len(out) == 2 * 3 and all(not o.failed and o.distance > 0 for o in out.values())
    assert sorted({key[0] for key in out}) == ["generated", "self"]
