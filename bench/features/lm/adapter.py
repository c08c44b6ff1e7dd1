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


def fused_adamw_step(
    params: list,
    grads: list,
    first: list,
    second: list,
    steps: list,
    *,
    lr: float,
    betas: tuple[float, float],
    weight_decay: float,
    eps: float,
) -> None:
    """One AdamW step on ``params`` in place with torch's fused kernel, as ``torch.optim.AdamW(fused=True)`` runs
    it (``torch._foreach_add_`` counts the step, ``torch._fused_adamw_`` updates), without its per-step overhead."""
    import torch

    torch._foreach_add_(steps, 1)
    torch._fused_adamw_(
        params,
        grads,
        first,
        second,
        [],
        steps,
        amsgrad=False,
        lr=lr,
        beta1=betas[0],
        beta2=betas[1],
        weight_decay=weight_decay,
        eps=eps,
        maximize=False,
        grad_scale=None,
        found_inf=None,
    )


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
    """Keep only the batch rows ``keep`` of a key/value cache (transformers' ``DynamicCache``, or ours,
    ``textmetric_bench.features.lm.llama.KVCache``, by its ``keep_rows``), in place."""
    if hasattr(cache, "keep_rows"):
        cache.keep_rows(keep)
    else:
        cache.batch_select_indices(keep)
