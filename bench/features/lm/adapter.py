"""The one place that touches torch's and transformers' internals (names outside their public API), each behind a
function of ours, and the library versions they were tested with (``PINNED``; pyproject.toml pins the same, and
tests/test_lm_adapter.py checks that the installed versions still have every name used here).

Nothing else in the package names them: a library upgrade that moves one breaks here, in one module, and in its test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The versions every name below was tested with (torch exactly; transformers by minor).
PINNED = {"torch": "2.13.0", "transformers": "5.24"}


def attention_configs(model) -> list:
    """The configs inside ``model`` that carry transformers' attention implementation (``_attn_implementation``)."""
    return [m.config for m in model.modules() if hasattr(m, "config") and hasattr(m.config, "_attn_implementation")]


def set_attention(configs: list, name: str) -> bool:
    """Set the attention implementation of every config to ``name``; True if every one took it."""
    for config in configs:
        config._attn_implementation = name
    return attention_names(configs) == {name}


def attention_names(configs: list) -> set[str]:
    """The attention implementations the ``configs`` (``attention_configs``) carry."""
    return {config._attn_implementation for config in configs}


def tokenizers_backend(source: Path | str, declared: str | None) -> Any | None:
    """The tokenizer of ``source`` loaded directly as transformers' ``TokenizersBackend``, skipping AutoTokenizer's
    lookup, when ``declared`` (the class its tokenizer_config.json names; SmolLM2's) is that class; else None."""
    if declared != "TokenizersBackend":
        return None
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    return TokenizersBackend.from_pretrained(str(source))


def keep_cache_rows(cache, keep) -> None:
    """Keep only the batch rows ``keep`` of transformers' key/value cache (``DynamicCache``), in place."""
    cache.batch_select_indices(keep)
