"""IFC on a GPU (``lm.device=cuda``): fine-tuning and sampling run there, and the same seed gives the same texts.
Skipped where CUDA is not available."""

from __future__ import annotations

import json

import pytest
import torch

from textmetric_bench.running.registry import compose_config
from textmetric_bench.tasks.ifc import run_ifc

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def test_ifc_fine_tunes_and_samples_on_the_gpu_and_a_rerun_gives_the_same_texts(tmp_path, cache_dir, mirror_dir):
    cfg = compose_config(
        [
            "task=ifc",
            "ifc.iterations=1",
            "ifc.train_per_step=16",
            "ifc.corpus_size=24",
            "ifc.repetitions=2",
            "metrics=[fid]",
            "progress=false",
            "lm.device=cuda",
            f"data.cache_dir={cache_dir}",
            f"data.mirror={mirror_dir}",
        ]
    )
    run_ifc(cfg, tmp_path)
    gen = tmp_path / "generated"
    for i in (0, 1):
        meta = json.loads((gen / f"iter_{i}.json").read_text())
        assert meta["device"].startswith("cuda") and meta["texts"] == 24
    first = (gen / "iter_1.jsonl").read_text()
    (gen / "iter_1.jsonl").unlink()
    run_ifc(cfg, tmp_path)  # resamples g_1 from the saved weights, on the GPU again
    assert (gen / "iter_1.jsonl").read_text() == first
