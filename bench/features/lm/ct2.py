"""The engine that scores texts for the LM metrics: CTranslate2 (the default) or torch (``lm.engine``).

CTranslate2 (OpenNMT's inference engine for Transformer models) runs the same float32 weights
through its own CPU kernels; on SmolLM2 it scored the same tokens 1.24-1.44x faster than torch on our Intel
Xeon with one thread and with two, 1.11x on our AMD EPYC (docs/performance.md), so it is the default: the
fastest engine whose scores match torch's. Its per-token log-probabilities equal torch's to
within ``TOKEN_TOLERANCE`` (absolute, per token) and a text's sum to within ``SUM_TOLERANCE``
(relative), tested in tests/test_lm_engine.py; not bit for bit, because its kernels sum in
their own order, so the scores have their own cache key (``engine_id``).

The float32 ``transformers`` checkpoint (``textmetric_bench.features.lm.model.checkpoint_path``) is
converted once into ``<cache_dir>/lm/<model-id + ctranslate2 version>/`` (a file lock, a
temporary directory renamed into place, like the GGUF conversion), then loaded as a
``ctranslate2.Generator`` with ``lm.threads`` threads. Its kernels are pinned like torch's
(``textmetric_bench.numerics.pin_ctranslate2_numerics``).

Only scoring goes through CTranslate2; IFC's fine-tuning and sampling stay on torch.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from textmetric_bench.errors import ConfigError
from textmetric_bench.features.embedding import model_files_digest, resolve_device
from textmetric_bench.features.lm.model import checkpoint_path, load_causal_lm, load_tokenizer, model_id
from textmetric_bench.features.lm.settings import LMConfig, LMSettings
from textmetric_bench.features.shard_cache import slug
from textmetric_bench.files import atomic_directory, held_lock, make_dirs, remove_stale_temporaries
from textmetric_bench.numerics import pin_ctranslate2_numerics

#: ``lm.engine`` when a config does not say (conf/lm/smollm2.yaml says the same): CTranslate2 where it is installed
#: (the extra ``ct2`` of textmetric-bench), torch otherwise.
#: What "matches torch" means for ``lm.engine=ctranslate2`` (tested): per token, absolute, in nats ...
TOKEN_TOLERANCE = 5e-4
#: ... and on a text's summed log-probability, relative.
SUM_TOLERANCE = 1e-5
INSTALL = "pip install 'textmetric-bench[ct2]' (or 'ctranslate2>=4.5,<5')"

log = logging.getLogger(__name__)


def lm_engine(cfg_lm: LMConfig) -> str:
    """The engine ``lm.engine`` names, checked: ``ctranslate2`` or ``torch``; ``auto`` (the default) is
    ``ctranslate2`` when the package is installed, else ``torch``, so the result is never ``auto`` (it keys the
    scores' cache)."""
    engine = LMSettings.of(cfg_lm).engine  # checked there: one of ENGINES
    if engine == "auto":
        return "ctranslate2" if ctranslate2_installed() else "torch"
    return engine


def ctranslate2_installed() -> bool:
    """Whether the ctranslate2 distribution is installed (its metadata, not an import: importing it is slow)."""
    try:
        ctranslate2_version()
    except ConfigError:
        return False
    return True


def ctranslate2_version() -> str:
    """The installed CTranslate2's version, or a ConfigError saying how to install it."""
    try:
        return importlib.metadata.version("ctranslate2")
    except importlib.metadata.PackageNotFoundError:
        raise ConfigError(
            f"lm.engine=ctranslate2 needs the ctranslate2 package, which is not installed: {INSTALL} "
            "(an extra of textmetric-bench), or set lm.engine=torch or lm.engine=auto"
        ) from None


def engine_id(cfg_lm: LMConfig) -> str:
    """``torch`` or ``ctranslate2==<version>``: part of the LM scores' cache key."""
    engine = lm_engine(cfg_lm)
    return engine if engine == "torch" else f"{engine}=={ctranslate2_version()}"


def _ctranslate2():
    ctranslate2_version()
    pin_ctranslate2_numerics()  # before its first computation, which reads the switches
    try:
        import ctranslate2
    except ImportError as exc:
        raise ConfigError(
            f"lm.engine=ctranslate2: the ctranslate2 package does not import ({exc}); "
            f"reinstall it ({INSTALL}) or set lm.engine=torch"
        ) from exc
    return ctranslate2


def converted_ctranslate2(cfg_lm: LMConfig, cache_dir: Path | str) -> Path:
    """The CTranslate2 model converted from the float32 checkpoint of ``cfg_lm``, converting it on first use."""
    lm = LMSettings.of(cfg_lm)
    source = checkpoint_path(lm, cache_dir)
    ident = f"{model_id(lm)}|{engine_id(lm.changed(engine='ctranslate2'))}|float32"
    if lm.path:  # a local directory: its files, not only its name
        ident += f"|files.{model_files_digest(source, mtimes=True)}"
    target = Path(cache_dir).expanduser() / "lm" / slug(ident)
    if (target / "model.bin").is_file():
        return target
    ctranslate2 = _ctranslate2()
    make_dirs(target.parent, "the CTranslate2 model")
    with held_lock(target.parent / f".{target.name}.lock", f"converting {source} for CTranslate2 into {target}"):
        if (target / "model.bin").is_file():  # another job converted it while this one waited
            return target
        remove_stale_temporaries(target.parent)
        needed = sum(f.stat().st_size for f in source.glob("*.safetensors")) + 16 * 2**20
        with atomic_directory(target, what="the CTranslate2 model", needed=needed) as tmp:
            ctranslate2.converters.TransformersConverter(str(source)).convert(str(tmp), quantization=None, force=True)
    return target


class CTranslate2LM:
    """A ``ctranslate2.Generator`` scoring token sequences as ``textmetric_bench.features.lm.model.batch_logprobs`` does."""

    def __init__(self, generator, tokenizer):
        self.generator, self.tokenizer = generator, tokenizer

    def score_sequences(self, seqs: Sequence[Sequence[int]], starts: Sequence[int]) -> list[np.ndarray]:
        """log p(token | preceding tokens) of the tokens ``seq[start:]`` of each sequence, as float64 arrays."""
        out = [np.zeros(0) for _ in seqs]
        rows = [i for i, seq in enumerate(seqs) if len(seq) > 1]  # one token has nothing to score
        if rows:
            tokens = [self.tokenizer.convert_ids_to_tokens([int(t) for t in seqs[i]]) for i in rows]
            # max_input_length=0: no truncation, as torch (the callers cut texts to lm-specific lengths)
            results = self.generator.score_batch(tokens, max_batch_size=len(rows), max_input_length=0)
            for i, result in zip(rows, results):
                values = np.asarray(result.log_probs, dtype=np.float64)
                if len(values) != len(seqs[i]) - 1:
                    raise RuntimeError(f"CTranslate2 scored {len(values)} tokens of a sequence of {len(seqs[i])}")
                out[i] = values[max(int(starts[i]), 1) - 1 :]
        return out


def scoring_device(cfg_lm: LMConfig) -> str:
    """The device ``lm.engine`` scores on (``cpu``, ``cuda``, ...), part of the scores' cache key.

    torch takes ``lm.device`` as it is (``auto``: the GPU when torch sees one). CTranslate2 runs on ``cpu`` or
    ``cuda``: with ``auto`` on the GPU only when CTranslate2 itself sees a CUDA device (its PyPI wheel needs CUDA 12
    and cuDNN 9), else on the CPU, saying so when torch would have used a GPU; an explicit ``cuda`` it cannot use,
    or another device, is a ConfigError.
    """
    lm = LMSettings.of(cfg_lm)
    requested = lm.device
    device = resolve_device(requested).split(":")[0]
    if lm_engine(lm) == "torch":
        return device
    if device == "cuda" and _ctranslate2().get_cuda_device_count() < 1:
        if requested == "auto":
            log.warning(
                "lm.device=auto: torch sees a GPU but CTranslate2 does not (its wheel needs CUDA 12 and "
                "cuDNN 9), so the LM metrics score on the CPU; lm.engine=torch scores on the GPU"
            )
            return "cpu"
        raise ConfigError(
            "lm.engine=ctranslate2 with lm.device=cuda, but this CTranslate2 sees no CUDA device "
            "(its PyPI wheel needs CUDA 12 and cuDNN 9); set lm.device=cpu or lm.engine=torch"
        )
    if device not in ("cpu", "cuda"):
        if requested == "auto":
            return "cpu"
        raise ConfigError(f"lm.engine=ctranslate2 runs on cpu or cuda, not {device!r}; set lm.engine=torch")
    return device


def load_ctranslate2_lm(cfg_lm: LMConfig, cache_dir: Path | str) -> tuple[CTranslate2LM, Any]:
    """(model, tokenizer) scoring with CTranslate2 on ``scoring_device``, ``lm.threads`` threads, float32."""
    lm = LMSettings.of(cfg_lm)
    device = scoring_device(lm.changed(engine="ctranslate2"))
    ctranslate2 = _ctranslate2()
    threads = lm.threads or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    model_dir = converted_ctranslate2(lm, cache_dir)
    generator = ctranslate2.Generator(
        str(model_dir), device=device, compute_type="float32", inter_threads=1, intra_threads=int(threads)
    )
    tokenizer = load_tokenizer(lm, cache_dir)
    return CTranslate2LM(generator, tokenizer), tokenizer


def load_scoring_lm(cfg_lm: LMConfig, cache_dir: Path | str):
    """(model, tokenizer) that ``batch_logprobs`` scores with, on ``lm.engine``."""
    if lm_engine(cfg_lm) == "ctranslate2":
        return load_ctranslate2_lm(cfg_lm, cache_dir)
    return load_causal_lm(cfg_lm, cache_dir)
