"""textmetric-bench: score corpus-level text-similarity metrics on Known-Similarity Corpora (004)."""

from pathlib import Path

__version__ = "0.1.0"

#: The checkout root: holds conf/ and datasets/ next to the packages.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
