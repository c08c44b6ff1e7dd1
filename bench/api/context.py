"""The run's shared resources that metric helpers may read: the cache directory and the LM.

A metric is a pure function of two corpora and its parameters; but some metrics score texts
with the run's language model (FACE, the infilling score) and cache those per-text scores
beside the embeddings. Which LM and which cache directory are choices of the run
(``lm`` and ``data.cache_dir`` in the config), not of the metric, so they travel in a
``RunContext``: the CLI enters one for the whole task, the evaluation engine hands it to its
worker processes, and code outside a run (tests, notebooks) gets the default one: the
``conf/lm/smollm2.yaml`` model and ``$BENCH_CACHE_DIR`` (else ``~/.cache/textmetric-bench``).

``lm_scorer()`` gives a metric the context's per-text LM scores. Its implementation lives in
``textmetric_bench.features.lm.scores``, a lower layer, which the package declares as the entry point of
``LM_SCORER_GROUP`` (pyproject.toml): the API finds it there at the first call, as the registry finds metric plugins,
and imports nothing of the application.
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator, Mapping, Protocol, Sequence

from textmetric_bench import shipped_path
from textmetric_bench.api.scopes import pushed

_active: list["RunContext"] = []

#: The entry-point group whose ``default`` entry is a function returning the ``LMScores`` of a context.
LM_SCORER_GROUP = "textmetric_bench.lm_scorer"


@dataclass(frozen=True)
class RunContext:
    """``positions``: the known position of each corpus of the run, by ``textmetric_bench.api.positions.corpus_key``;
    read only through ``textmetric_bench.api.known_position`` by a metric that declares it needs them."""

    cache_dir: str
    lm: Mapping[str, Any] = field(default_factory=dict)
    positions: Mapping[str, float] = field(default_factory=dict, repr=False)


def default_lm() -> dict:
    """The LM config a run uses unless told otherwise (conf/lm/smollm2.yaml)."""
    import yaml

    return yaml.safe_load(shipped_path("conf/lm/smollm2.yaml").read_text())


def default_context() -> RunContext:
    cache = os.environ.get("BENCH_CACHE_DIR") or "~/.cache/textmetric-bench"
    return RunContext(str(Path(cache).expanduser()), default_lm())


def current_context() -> RunContext:
    """The innermost active context, else the default one."""
    return _active[-1] if _active else default_context()


@contextlib.contextmanager
def use_context(context: RunContext | None) -> Iterator[RunContext]:
    """Make ``context`` (None: leave the current one) the current context within this block."""
    if context is None:
        yield current_context()
        return
    with pushed(_active, context):
        yield context


class LMScores(Protocol):
    """Per-text scores from the run's causal LM (``lm_scorer()``), cached per text."""

    model_id: str

    def token_logprobs(self, texts: Sequence[str], *, max_tokens: int = 256) -> list: ...

    def continuation_logprobs(self, prompts: Sequence[str], continuations: Sequence[str]): ...

    def token_counts(self, texts: Sequence[str]) -> list[int]: ...


@functools.cache
def _scorer_factory():
    points = metadata.entry_points(group=LM_SCORER_GROUP, name="default")
    if not points:
        raise ImportError(
            f"no entry point 'default' in the group {LM_SCORER_GROUP!r}: the LM scorer is not installed; "
            "reinstall textmetric-bench (in a checkout: make venv)"
        )
    return next(iter(points)).load()


def lm_scorer(context: RunContext | None = None) -> LMScores:
    """The LM scorer of ``context`` (default: the current one), loaded on first use."""
    return _scorer_factory()(context or current_context())
