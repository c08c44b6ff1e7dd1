"""The LM adapter (bench/features/lm_adapter.py) is the only module that names torch's or transformers' internals,
and the installed versions are the pinned ones that still have every name it uses."""

from __future__ import annotations

import re
from importlib.metadata import version

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.features.lm_adapter import PINNED

#: Internals of the libraries, as code names them (a call, an attribute, an import), not as prose or a config
#: value ("TokenizersBackend" in a tokenizer_config.json) does.
INTERNALS = re.compile(r"torch\._\w+|\._attn_implementation\b|\bTokenizersBackend\b|\.batch_select_indices\b")


def test_no_module_but_the_adapter_names_a_library_internal():
    found = []
    for path in [*(PROJECT_ROOT / "bench").rglob("*.py"), *(PROJECT_ROOT / "metrics").rglob("*.py"),
                 *(PROJECT_ROOT / "tests").rglob("*.py")]:
        if path.name in ("lm_adapter.py", "test_lm_adapter.py"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if INTERNALS.search(line):
                found.append(f"{path.relative_to(PROJECT_ROOT)}:{number}: {line.strip()}")
    assert found == [], "library internals outside bench/features/lm_adapter.py:\n" + "\n".join(found)


def test_the_pinned_versions_are_installed_and_have_every_internal_the_adapter_uses():
    import torch
    from transformers import DynamicCache, LlamaConfig
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    assert version("torch").split("+")[0] == PINNED["torch"]
    assert version("transformers").startswith(PINNED["transformers"] + ".")
    assert callable(torch._fused_adamw_) and callable(torch._foreach_add_)
    assert hasattr(LlamaConfig(), "_attn_implementation")
    assert callable(DynamicCache.batch_select_indices) and callable(TokenizersBackend.from_pretrained)
