"""The LM adapter (bench/features/lm/adapter.py) is the only module that names torch's or transformers' internals,
and the installed versions are the pinned ones that still have every name it uses; no module imports a private
module of any other library (Hydra's ``hydra._internal``, say)."""

from __future__ import annotations

import re
from importlib.metadata import version

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.features.lm.adapter import PINNED

#: Internals of the libraries, as code names them (a call, an attribute, an import), not as prose or a config
#: value ("TokenizersBackend" in a tokenizer_config.json) does.
INTERNALS = re.compile(r"torch\._\w+|\._attn_implementation\b|\bTokenizersBackend\b|\.batch_select_indices\b")


#: An import of a private module of a library (``from hydra._internal.utils import ...``); our own are ours.
PRIVATE_MODULES = re.compile(r"^\s*(from|import)\s+(?!textmetric_bench\b)[\w.]*\._[a-z]\w*")
SOURCES = ("bench", "metrics", "reports", "tests")


def lines_matching(pattern: re.Pattern, skip: tuple[str, ...] = ()) -> list[str]:
    found = []
    for path in [p for top in SOURCES for p in (PROJECT_ROOT / top).rglob("*.py")]:
        if path.name in skip or path.relative_to(PROJECT_ROOT).as_posix() in skip:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(PROJECT_ROOT)}:{number}: {line.strip()}")
    return found


def test_no_module_but_the_adapter_names_a_library_internal():
    found = lines_matching(INTERNALS, skip=("bench/features/lm/adapter.py", "test_lm_adapter.py"))
    assert found == [], "library internals outside bench/features/lm/adapter.py:\n" + "\n".join(found)


def test_no_module_reaches_into_a_private_module_of_a_library():
    assert PRIVATE_MODULES.search("from hydra._internal.utils import get_args_parser")
    assert PRIVATE_MODULES.search("    import sklearn.utils._testing") and not PRIVATE_MODULES.search("x._cache.get()")
    assert not PRIVATE_MODULES.search("from textmetric_bench._conf import x")
    found = lines_matching(PRIVATE_MODULES, skip=("test_lm_adapter.py",))
    assert found == [], "private modules of a library:\n" + "\n".join(found)


def test_the_pinned_versions_are_installed_and_have_every_internal_the_adapter_uses():
    from transformers import DynamicCache, LlamaConfig
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    assert version("torch").split("+")[0] == PINNED["torch"]
    assert version("transformers").startswith(PINNED["transformers"] + ".")
    assert hasattr(LlamaConfig(), "_attn_implementation")
    assert callable(DynamicCache.batch_select_indices) and callable(TokenizersBackend.from_pretrained)
