"""textmetric-bench: score corpus-level text-similarity metrics on Known-Similarity Corpora (004)."""

from importlib import resources
from pathlib import Path

__version__ = "0.1.0"

#: The folder holding the bench package: the checkout root, or site-packages for an installed wheel.
PROJECT_ROOT = Path(__file__).resolve().parent.parent

_PYPROJECT = PROJECT_ROOT / "pyproject.toml"
#: Running from a checkout (this project's pyproject.toml beside the packages), not from an installed wheel.
IN_CHECKOUT = _PYPROJECT.is_file() and 'name = "textmetric-bench"' in _PYPROJECT.read_text(encoding="utf-8")

#: Top-level folders of the repository that a wheel ships inside this package, under these names
#: (pyproject.toml, [tool.setuptools.package-dir]).
PACKAGED_AS = {"conf": "_conf", "datasets": "_datasets"}


def shipped_path(relative: str) -> Path:
    """Where the repository's ``relative`` path ("conf", "datasets/pairs", "reports/baselines/x.json") is at run time.

    From a checkout, in the checkout. Installed from the wheel: conf/ and datasets/ are package data of
    bench (bench/_conf, bench/_datasets), and the packages' own data files (reports/baselines/) are in place.
    The one place that knows where the configs and the built-in cards are.
    """
    if IN_CHECKOUT:
        return PROJECT_ROOT / relative
    top, _, rest = relative.partition("/")
    if top in PACKAGED_AS:
        return Path(str(resources.files(__name__).joinpath(PACKAGED_AS[top]))) / rest
    return PROJECT_ROOT / relative


def checkout_path(relative: str) -> Path | None:
    """``relative`` to the checkout root when running from a checkout (e.g. the team's mirror beside it), else None."""
    return PROJECT_ROOT / relative if IN_CHECKOUT else None
