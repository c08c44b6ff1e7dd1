"""constraints.txt, the lock `make venv` installs from, against pyproject.toml: every dependency (and every extra's) is
pinned there, at a version its bounds allow; every bound stops at a major (or tighter) so a fresh resolution stays on
the tested majors (docs/development.md, "Dependencies and the lock")."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from textmetric_bench import PROJECT_ROOT

EXTRAS = ("dev", "ray", "slurm", "notebook", "corpora")


def requirements() -> list[Requirement]:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = list(project["dependencies"])
    for extra in EXTRAS:
        listed += project["optional-dependencies"][extra]
    return [Requirement(line) for line in listed]


def pins() -> dict[str, Version]:
    found = {}
    for line in (PROJECT_ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)==(\S+)", line).groups()
            found[canonicalize_name(name.split("[")[0])] = Version(version)
    return found


def test_every_dependency_is_pinned_in_the_lock_within_its_bounds():
    locked = pins()
    for requirement in requirements():
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement} is not pinned in constraints.txt: run make lock"
        assert requirement.specifier.contains(locked[name], prereleases=True), (
            f"constraints.txt pins {name}=={locked[name]}, outside pyproject.toml's {requirement}: run make lock"
        )


def test_every_dependency_is_bounded_to_its_tested_major_or_tighter():
    locked = pins()
    for requirement in requirements():
        operators = {spec.operator for spec in requirement.specifier}
        assert operators & {"==", "<", "~=", "<="}, f"{requirement} has no upper bound"
        name = canonicalize_name(requirement.name)
        upper = [Version(s.version) for s in requirement.specifier if s.operator == "<"]
        if name in locked and upper:  # the bound lies at most one major above the tested version
            assert upper[0].major <= locked[name].major + 1 or locked[name].major == 0, requirement


def test_no_pin_carries_a_local_version_label():
    """A pin such as torch==2.13.0+cpu (this machine's wheel) refuses PyPI's torch 2.13.0, which a user installs
    elsewhere before the wheel (docs/getting-started.md); ==2.13.0 takes both."""
    labelled = [f"{name}=={version}" for name, version in pins().items() if version.local is not None]
    assert not labelled, f"constraints.txt pins local builds {labelled}: pin the public version (make lock drops it)"
