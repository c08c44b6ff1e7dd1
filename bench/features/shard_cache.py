"""Per-text values cached on disk as immutable shard files, safe under any number of parallel jobs.

One directory per producer (an embedding model, a language model and what it computes), holding
``.npz`` shards of (sha256 key of a text, value). Shards are only ever added, each written under a
hidden temporary name that the shard pattern does not match and then renamed into place
(``textmetric_bench.files``), so readers never see a partial file and need no lock. Writers take the
directory's file lock (``.lock``) for one chunk at a time: look again at the shards, compute one chunk
of what is still missing, write it, let go. So a value is computed by one job while the others wait
for it, never twice, and an interrupted or failing job keeps every chunk it wrote. A shard that
cannot be read is set aside (renamed ``*.corrupt``) and its texts are computed again.

A shard written by ``get_or_compute`` also holds the seconds its chunk took to compute
(``seconds``), so ``seconds_per_value`` tells what a cached value cost: the charge for reusing it
(``textmetric_bench.api.sharing``). Shards of older caches lack it and count as of unknown cost.

Two layouts: ``VectorCache`` holds one fixed-length vector per text (embeddings);
``RaggedCache`` holds one 1-D array of any length per text (per-token log-probabilities,
one log-probability per masked span).
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
import time
import uuid
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from textmetric_bench.files import atomic_write, held_lock, make_dirs, remove_stale_temporaries

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"


def text_key(text: str) -> str:
    """Cache key of one text within a producer's directory."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def slug(producer_id: str) -> str:
    """A directory name for ``producer_id``: readable prefix plus a hash of the whole id."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", producer_id)[:60]
    return f"{readable}-{hashlib.sha256(producer_id.encode()).hexdigest()[:12]}"


def shard_files(directory: Path) -> list[Path]:
    """The finished shards in ``directory`` (hidden names are temporaries of writers, never shards)."""
    return sorted(p for p in Path(directory).glob("*.npz") if not p.name.startswith("."))


class _ShardCache:
    """Shared machinery; subclasses say how a shard's arrays map to per-text values."""

    def __init__(self, directory: Path | str):
        self.dir = make_dirs(directory, "the cache")
        self._index: dict[str, np.ndarray] = {}
        self._seen: set[str] = set()
        self._swept = False  # stale temporaries removed once per process
        self._timed = [0.0, 0]  # compute seconds and values over the shards that recorded them

    def _decode(self, shard) -> tuple[list[str], list[np.ndarray]]:
        raise NotImplementedError

    def _encode(self, values: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _refresh(self) -> None:
        """Read shards written since the last look (by this or another job)."""
        for path in shard_files(self.dir):
            if path.name in self._seen:
                continue
            self._seen.add(path.name)
            try:
                with np.load(path, allow_pickle=False) as shard:
                    keys, values = self._decode(shard)
                    seconds = float(shard["seconds"]) if "seconds" in shard.files else None
            except Exception as exc:  # damaged shard: set aside, recompute its texts
                log.warning("cache shard %s is unreadable (%s); setting it aside", path, exc)
                try:
                    path.rename(path.with_suffix(".corrupt"))
                except OSError:
                    pass
                continue
            self._index.update(zip(keys, values))
            self._count_cost(seconds, len(keys))

    def _count_cost(self, seconds: float | None, n_values: int) -> None:
        if seconds is not None and np.isfinite(seconds) and seconds >= 0:
            self._timed[0] += seconds
            self._timed[1] += n_values

    def seconds_per_value(self) -> float | None:
        """Mean compute seconds of one value over the shards that recorded their cost; None if none did."""
        self._refresh()
        seconds, n_values = self._timed
        return seconds / n_values if n_values else None

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached values of those ``keys`` that are present."""
        self._refresh()
        return {k: self._index[k] for k in keys if k in self._index}

    def put(self, keys: Sequence[str], values: Sequence[np.ndarray], *, seconds: float | None = None) -> Path:
        """Write one new shard atomically (checked first: a shard that would not load is never written);
        ``seconds``: what computing its values took, if known."""
        keys = np.array(list(keys), dtype="U64")
        arrays = self._encode(values)
        _, decoded = self._decode({"keys": keys, **arrays})
        if seconds is not None:
            arrays["seconds"] = np.float64(seconds)
        buffer = io.BytesIO()
        np.savez(buffer, keys=keys, **arrays)
        final = atomic_write(
            self.dir / f"{uuid.uuid4().hex}.npz", buffer.getbuffer(), what=f"a cache shard of {len(keys)} texts"
        )
        self._seen.add(final.name)
        self._index.update(zip(keys.tolist(), decoded))
        self._count_cost(seconds, len(keys))
        return final

    def get_or_compute(
        self,
        keys: Sequence[str],
        items: Sequence,
        compute: Callable[[list], Sequence],
        *,
        chunk: int,
        label: str = "values",
        clock: Callable[[], float] = time.perf_counter,
    ) -> dict[str, np.ndarray]:
        """The values of ``keys``; missing ones are ``compute(items)``d one chunk at a time, in the given order.

        Each chunk is computed and written while holding the directory's lock, after looking at the
        shards once more, so a text another job is computing is waited for, not computed again. A
        fully cached request never takes the lock (a read-only shared cache works). Each shard
        records its chunk's compute time, read on ``clock`` (one that stops during one-time setup,
        such as loading a model, keeps that out of the recorded cost).
        """
        wanted = dict(zip(keys, items))
        found = self.get(list(wanted))
        missing = [k for k in wanted if k not in found]
        total = len(missing)
        while missing:
            with held_lock(self.dir / LOCK_FILE, f"computing {label} into {self.dir}"):
                if not self._swept:
                    remove_stale_temporaries(self.dir)
                    self._swept = True
                self._refresh()
                missing = [k for k in missing if k not in self._index]
                batch = missing[:chunk]
                if batch:
                    start = clock()
                    values = list(compute([wanted[k] for k in batch]))
                    seconds = clock() - start
                    if len(values) != len(batch):
                        raise RuntimeError(f"computing {label} gave {len(values)} values for {len(batch)} texts")
                    self.put(batch, values, seconds=seconds)
            missing = missing[len(batch) :]
            if batch and total > chunk:
                log.info("%s: %d of %d texts done", label, total - len(missing), total)
        found.update((k, self._index[k]) for k in wanted if k not in found)
        return found

    def __len__(self) -> int:
        self._refresh()
        return len(self._index)


class VectorCache(_ShardCache):
    """One float32 vector per text, all of one length."""

    def _decode(self, shard):
        keys, vectors = shard["keys"], shard["vectors"]
        if vectors.ndim != 2 or len(keys) != len(vectors) or not np.isfinite(vectors).all():
            raise ValueError("keys and vectors disagree or vectors are not finite")
        return keys.tolist(), list(vectors)

    def _encode(self, values):
        return {"vectors": np.asarray(values, dtype=np.float32)}


class RaggedCache(_ShardCache):
    """One float64 1-D array per text, of any length (stored concatenated with offsets)."""

    def _decode(self, shard):
        keys, flat, offsets = shard["keys"], shard["values"], shard["offsets"]
        if (
            offsets.ndim != 1
            or len(offsets) != len(keys) + 1
            or offsets[0] != 0
            or offsets[-1] != len(flat)
            or np.any(np.diff(offsets) < 0)
            or not np.isfinite(flat).all()
        ):
            raise ValueError("keys, offsets and values disagree or values are not finite")
        return keys.tolist(), [flat[a:b] for a, b in zip(offsets[:-1], offsets[1:])]

    def _encode(self, values):
        arrays = [np.asarray(v, dtype=np.float64).ravel() for v in values]
        offsets = np.concatenate([[0], np.cumsum([len(a) for a in arrays])]).astype(np.int64)
        flat = np.concatenate(arrays) if arrays else np.zeros(0)
        return {"values": flat, "offsets": offsets}
