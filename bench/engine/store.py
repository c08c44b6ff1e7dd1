"""Every text of a run once (with its embedding), and each corpus as rows of them.

Worker processes do not receive the store as arguments: the parent writes it once to a
directory (``save``) and each worker opens it (``open``), the vectors memory-mapped, so
starting a worker costs the same whatever the corpus size and the vectors' pages are shared
by all workers through the page cache. The row lists (8 bytes per text of each corpus) are
read whole: indexing a memory map element by element cost a KSC study 0.6 s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from textmetric_bench.api.registry import MetricInfo
from textmetric_bench.errors import ConfigError


class CorpusStore:
    """``all_texts[i]`` and ``all_vectors[i]`` (None without embeddings); ``members[cid]`` = row indices."""

    def __init__(self, texts: Sequence[str], vectors: np.ndarray | None, members: Mapping[str, Sequence[int]]):
        self.all_texts = list(texts)
        self.all_vectors = vectors
        self.members = {cid: np.asarray(rows, dtype=np.int64) for cid, rows in members.items()}

    @classmethod
    def from_corpora(cls, corpora: Mapping[str, Sequence[str]], embed=None) -> "CorpusStore":
        """Index named text corpora; ``embed(texts) -> array`` is called once on the distinct texts."""
        index: dict[str, int] = {}
        members = {cid: [index.setdefault(t, len(index)) for t in texts] for cid, texts in corpora.items()}
        texts = list(index)
        return cls(texts, embed(texts) if embed is not None else None, members)

    def inputs(self, metric: MetricInfo, cid: str):
        """Corpus ``cid`` as the metric takes it: a list of texts or an array of embedding rows."""
        rows = self.members[cid]
        if metric.inputs == "embeddings":
            if self.all_vectors is None:
                raise ConfigError(f"metric {metric.name!r} needs embeddings but none were computed")
            return np.asarray(self.all_vectors[rows])
        texts = self.all_texts
        return [texts[r] for r in rows.tolist()]

    def texts_of(self, cids) -> list[str]:
        """The distinct texts of the corpora ``cids``, in row order."""
        rows = sorted({r for cid in cids for r in self.members[cid].tolist()})
        return [self.all_texts[r] for r in rows]

    def save(self, directory: Path | str) -> Path:
        """Write the store into ``directory`` (created) for ``open`` in other processes."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        ids = list(self.members)
        lengths = [len(self.members[c]) for c in ids]
        flat = np.concatenate([self.members[c] for c in ids]) if ids else np.zeros(0, np.int64)
        np.save(directory / "rows.npy", flat.astype(np.int64))
        np.save(directory / "offsets.npy", np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
        if self.all_vectors is not None:
            np.save(directory / "vectors.npy", np.ascontiguousarray(self.all_vectors))
        (directory / "texts.json").write_text(json.dumps({"ids": ids, "texts": self.all_texts}))
        return directory

    @classmethod
    def open(cls, directory: Path | str) -> "CorpusStore":
        """The store ``save`` wrote, with the vectors memory-mapped (read-only)."""
        directory = Path(directory)
        meta = json.loads((directory / "texts.json").read_text())
        rows = np.load(directory / "rows.npy")
        offsets = np.load(directory / "offsets.npy")
        vectors = np.load(directory / "vectors.npy", mmap_mode="r") if (directory / "vectors.npy").exists() else None
        store = cls.__new__(cls)
        store.all_texts = meta["texts"]
        store.all_vectors = vectors
        store.members = {cid: rows[a:b] for cid, a, b in zip(meta["ids"], offsets[:-1], offsets[1:])}
        return store
