"""textmetric-bench (import textmetric_bench): score corpus-level text-similarity metrics on Known-Similarity Corpora (004)."""

from importlib import resources
from pathlib import Path

from textmetric_bench.numerics import pin_cpu_numerics

pin_cpu_numerics()  # before torch first computes (textmetric_bench.numerics says why)

__version__ = "0.1.0"

#: The checkout root when running from a checkout (bench/ is this package's folder there); in an installed wheel,
#: the package folder's parent (site-packages), where no pyproject.toml of ours lies.
PROJECT_ROOT = Path(__file__).resolve().parent.parent

_PYPROJECT = PROJECT_ROOT / "pyproject.toml"
#: Running from a checkout (this project's pyproject.toml beside bench/), not from an installed wheel.
IN_CHECKOUT = _PYPROJECT.is_file() and 'name = "textmetric-bench"' in _PYPROJECT.read_text(encoding="utf-8")

#: Top-level folders of the repository and where the wheel installs them inside this package
#: (pyproject.toml, [tool.setuptools.package-dir]).
PACKAGED_AS = {"conf": "_conf", "datasets": "_datasets", "metrics": "metrics", "reports": "reports"}


def shipped_path(relative: str) -> Path:
    """Where the repository's ``relative`` path ("conf", "datasets/pairs", "reports/baselines/x.json") is at run time.

    From a checkout, in the checkout. Installed from the wheel, inside this package: conf/ and datasets/ as
    package data (textmetric_bench/_conf, _datasets), metrics/ and reports/ as its subpackages. The one place
    that knows where the configs, the built-in cards and the shipped results are.
    """
    if IN_CHECKOUT:
        return PROJECT_ROOT / relative
    top, _, rest = relative.partition("/")
    if top in PACKAGED_AS:
        return Path(str(resources.files(__name__).joinpath(PACKAGED_AS[top]))) / rest
    return PROJECT_ROOT / relative


#: The Python API (``textmetric_bench.session``), reached as ``textmetric_bench.evaluate`` etc. and imported on first
#: use only: ``import textmetric_bench`` stays cheap (no pandas, Hydra or torch until a run is asked for).
API = ("evaluate", "score", "check", "load_run", "reference_rows", "Result")


def __getattr__(name: str):
    if name in API:
        from textmetric_bench import session

        return getattr(session, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])


def checkout_path(relative: str) -> Path | None:
    """``relative`` to the checkout root when running from a checkout (e.g. the team's mirror beside it), else None."""
    return PROJECT_ROOT / relative if IN_CHECKOUT else None
