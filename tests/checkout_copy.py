"""A copy of the checkout for tests that change or build it, and a plugin package installed apart (a module of its own: `conftest` is ambiguous
between tests/ and tests/benchmarks/ when the whole suite is collected)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from textmetric_bench import PROJECT_ROOT

CHECKOUT_PARTS = ("bench", "metrics", "reports", "conf", "datasets", "pyproject.toml", "README.md")


def copy_checkout(dest: Path) -> Path:
    """A copy of the checkout's packages, configs, cards and build files at ``dest`` (to change or build it)."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in CHECKOUT_PARTS:
        if (PROJECT_ROOT / part).is_dir():
            shutil.copytree(PROJECT_ROOT / part, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(PROJECT_ROOT / part, dest / part)
    return dest


def installed_layout(checkout: Path, dest: Path) -> Path:
    """``checkout``'s folders laid out as the wheel installs them (``dest/textmetric_bench/...``); returns ``dest``.

    The mapping is read from the checkout's pyproject.toml ([tool.setuptools.package-dir]), so this layout is the
    wheel's. Put ``dest`` first on PYTHONPATH to run that checkout, or hand it to grimp.
    """
    import tomllib

    mapping = tomllib.loads((checkout / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in sorted(mapping.items(), key=lambda item: item[0].count(".")):
        shutil.copytree(
            checkout / folder,
            dest.joinpath(*package.split(".")),
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    return dest


def installed_metadata(checkout: Path, dest: Path) -> Path:
    """The distribution metadata the installation of ``checkout`` writes (name, version and every entry-point group
    of its pyproject.toml) as ``dest/<name>-<version>.dist-info``: with ``dest`` first on PYTHONPATH it stands in
    for the venv's, as ``pip install -e .`` of that checkout would. Returns the folder."""
    import tomllib

    project = tomllib.loads((checkout / "pyproject.toml").read_text())["project"]
    info = dest / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()) + "\n"
            for group, entries in groups.items()
        )
    )
    return info


def install_package(source: Path, site: Path) -> Path:
    """pip-install the package at ``source`` into the directory ``site`` (put it on PYTHONPATH to use it), without
    network and without touching the running venv; built from a copy, so no build files land in ``source``."""
    build = shutil.copytree(source, site.parent / f"{site.name}-build", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(build),
        ],
        check=True,
        cwd=build,
    )
    return site
