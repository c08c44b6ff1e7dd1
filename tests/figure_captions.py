"""A check shared by the tasks' end-to-end tests: a figure a run wrote carries the run's warnings in its caption.

The written PNG is compared with the same figure drawn here twice, with the warnings of the run's ``run.json``
and with none: a caption of warnings makes the figure taller, so the written file must have the height of the
first and not of the second.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PIL import Image


def height(png: Path) -> int:
    with Image.open(png) as image:
        return image.size[1]


def assert_caption_warns(
    written: Path,
    draw: Callable[[Sequence[str], Path], Path],
    warnings: Sequence[str],
    tmp: Path,
    *,
    rather_than: Sequence[str] = (),
):
    """``draw(warnings, out_dir)`` draws ``written``'s figure again into ``out_dir`` and returns its path;
    ``rather_than``: a longer list the figure must not carry (all the run's, where ``warnings`` are a metric's
    own)."""
    assert warnings, "the run has no warning to carry"
    warned, bare = draw(warnings, tmp / "warned"), draw((), tmp / "bare")
    assert height(warned) > height(bare), "a caption of warnings adds lines below the figure"
    assert height(written) == height(warned), f"{written.name} is drawn without the run's warnings"
    if rather_than:
        longer = draw(rather_than, tmp / "longer")
        assert height(longer) > height(warned), "the longer list adds lines"
        assert height(written) != height(longer), f"{written.name} carries warnings not about what it draws"
