"""Per-text values cached on disk as immutable shard files, safe under parallel jobs.

One directory per producer (an embedding model, a language model and what it computes),
holding ``.npz`` shards of (sha256 key of a text, value). A job only ever writes new shards,
each to a temporary name and then ``os.replace``d into place, so processes and cluster nodes
sharing the directory never see a partial file and never overwrite each other. A shard that
cannot be read is set aside (renamed ``*.corrupt``) and its texts are computed again.

Two layouts: ``VectorCache`` holds one fixed-length vector per text (embeddings);
``RaggedCache`` holds one 1-D array of any length per text (per-token log-probabilities,
one log-probability per masked span).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import uuid
from pathlib import Path
from typing import Sequence

import numpy as np

log = logging.getLogger(__name__)


def text_key(text: str) -> str:
    """Cache key of one text within a producer's directory."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def slug(producer_id: str) -> str:
    """A directory name for ``producer_id``: readable prefix plus a hash of the whole id."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", producer_id)[:60]
    return f"{readable}-{hashlib.sha256(producer_id.encode()).hexdigest()[:12]}"


class _ShardCache:
    """Shared machinery; subclasses say how a shard's arrays map to per-text values."""

    def __init__(self, directory: Path | str):
        self.dir = Path(directory).expanduser()
        self.dir.mkdir(parents=True, exist_ok=True)
        self._index: dict[str, np.ndarray] = {}
        self._seen: set[str] = set()

    def _decode(self, shard) -> tuple[list[str], list[np.ndarray]]:
        raise NotImplementedError

    def _encode(self, values: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _refresh(self) -> None:
        """Read shards written since the last look (by this or another job)."""
        for path in sorted(self.dir.glob("*.npz")):
            if path.name in self._seen:
                continue
            self._seen.add(path.name)
            try:
                with np.load(path, allow_pickle=False) as shard:
                    keys, values = self._decode(shard)
            except Exception as exc:  # damaged shard: set aside, recompute its texts
                log.warning("cache shard %s is unreadable (%s); setting it aside", path, exc)
                try:
                    path.rename(path.with_suffix(".corrupt"))
                except OSError:
                    pass
                continue
            self._index.update(zip(keys, values))

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached values of those ``keys`` that are present."""
        self._refresh()
        return {k: self._index[k] for k in keys if k in self._index}

    def put(self, keys: Sequence[str], values: Sequence[np.ndarray]) -> Path:
        """Write one new shard atomically."""
        arrays = self._encode(values)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, keys=np.array(list(keys), dtype="U64"), **arrays)
            final = self.dir / f"{uuid.uuid4().hex}.npz"
            os.replace(tmp, final)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._seen.add(final.name)
        _, decoded = self._decode({"keys": np.array(list(keys), dtype="U64"), **arrays})
        self._index.update(zip(keys, decoded))
        return final

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
        if (offsets.ndim != 1 or len(offsets) != len(keys) + 1 or offsets[0] != 0
                or offsets[-1] != len(flat) or np.any(np.diff(offsets) < 0) or not np.isfinite(flat).all()):
            raise ValueError("keys, offsets and values disagree or values are not finite")
        return keys.tolist(), [flat[a:b] for a, b in zip(offsets[:-1], offsets[1:])]

    def _encode(self, values):
        arrays = [np.asarray(v, dtype=np.float64).ravel() for v in values]
        offsets = np.concatenate([[0], np.cumsum([len(a) for a in arrays])]).astype(np.int64)
        flat = np.concatenate(arrays) if arrays else np.zeros(0)
        return {"values": flat, "offsets": offsets}
