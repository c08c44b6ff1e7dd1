"""The command line's head start on a first run: the embedding helper process starts importing its libraries
(about 5 s) while the command line itself imports, composes and checks its config (about 1.4 s) and builds the
corpora, instead of after all that.

Whether this run will embed every text is known only once Hydra has composed its config; the command line guesses
before, from what it can see at once: a plain run (no ``-`` flag, no sweep) whose embedding cache holds no vector
at all, as on a first run, with the embedding's numerics pinned (textmetric_bench.numerics). A wrong guess costs
one core for at most the seconds until the run knows better: ``run_task`` ends a helper started ahead that its
task does not warm (textmetric_bench.features.embedding_process.end_if_started_ahead), and the process's exit
ends it in any case.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from textmetric_bench.data.fetch import resolve_cache_dir

#: Overrides that set the cache directory (conf/config.yaml, ``data.cache_dir``) on the command line.
CACHE_KEYS = ("data.cache_dir", "+data.cache_dir", "++data.cache_dir")
#: Overrides that make a sweep, whose jobs a launcher may run in other processes: no guess.
SWEEP_KEYS = ("suite", "hydra.mode", "hydra/launcher", "hydra/sweeper")


def cache_root(args: Sequence[str]) -> Path:
    """The cache directory the run will use: the command line's ``data.cache_dir=``, else $BENCH_CACHE_DIR, else
    the shipped default."""
    given = [value for key, sep, value in (arg.partition("=") for arg in args) if sep and key in CACHE_KEYS]
    return resolve_cache_dir(given[-1] if given else None)


def no_vector_cached(root: Path) -> bool:
    """Whether the embedding cache under ``root`` holds no shard of any model (textmetric_bench.features.shard_cache
    lays them out as ``embeddings/<model>/<shard>.npz``)."""
    return not any((root / "embeddings").glob("*/*.npz"))


def likely_to_embed_everything(args: Sequence[str]) -> bool:
    """The guess (this module's docstring): a plain run with the pinned numerics and no vector in its cache."""
    from textmetric_bench.numerics import holds_pin

    if any(arg.startswith("-") for arg in args):  # --help, --cfg, --multirun ...: not one run, or none
        return False
    if any(arg.partition("=")[0].lstrip("+") in SWEEP_KEYS for arg in args):
        return False
    return holds_pin("MKL_CBWR") and no_vector_cached(cache_root(args))


def start_embedding_ahead(args: Sequence[str]) -> bool:
    """Start the embedding helper's imports now when ``likely_to_embed_everything``; True if started."""
    if not likely_to_embed_everything(args):
        return False
    from textmetric_bench.features.embedding_process import start_ahead

    start_ahead()
    return True
