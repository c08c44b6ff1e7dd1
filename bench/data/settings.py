"""The ``data`` block of the config (conf/config.yaml), typed: where corpora, cards and caches are found."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textmetric_bench.settings import SharedSettings, option


@dataclass(frozen=True)
class DataSettings(SharedSettings):
    """Where corpora, cards and caches are found (conf/config.yaml)."""

    block: ClassVar[str] = "data"

    cache_dir: str = option(
        "~/.cache/textmetric-bench",
        "downloaded corpora and embeddings are cached here ($BENCH_CACHE_DIR in the shipped config)",
        advice="a writable directory",
        example="/tmp/cache",
    )
    mirror: str | None = option(
        None,
        "a directory laid out as <corpus>/<file> used instead of the network ($BENCH_DATA_MIRROR)",
        advice="a directory, or null",
        example="../shared/datasets",
    )
    mirror_fallbacks: list[str | None] = option(
        [],
        "tried in order when `mirror` is unset; missing directories are skipped",
        advice="a list of directories",
        example=["../shared/datasets"],
    )
    cards: list[str] | str = option(
        [],
        "directories of your own cards (corpora/<name>.yaml, pairs/<name>.yaml), searched before datasets/",
        advice="a directory or a list of directories",
        example=["my_cards"],
    )

    def locations(self) -> tuple[Path, Path | None]:
        """(cache directory, mirror or None): ``mirror``, else the first fallback that is a directory."""
        cache_dir = Path(os.path.expanduser(self.cache_dir))
        if self.mirror:
            return cache_dir, Path(os.path.expanduser(self.mirror))
        for candidate in self.mirror_fallbacks:
            if candidate is None:  # ${checkout:...} when not running from a checkout
                continue
            path = Path(os.path.expanduser(candidate)).resolve()
            if path.is_dir():
                return cache_dir, path
        return cache_dir, None

    @property
    def card_directories(self) -> list[str]:
        """``cards`` as a list (one directory may be given as a string)."""
        return [self.cards] if isinstance(self.cards, str) else list(self.cards)
