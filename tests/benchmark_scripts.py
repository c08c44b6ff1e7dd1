"""A script of tests/benchmarks/ as a module, for the tests that check what it writes: its directory goes on
sys.path first, as when the script is run, so the sibling scripts it imports (summary.py, quotes.py) are found."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from textmetric_bench import PROJECT_ROOT

BENCHMARKS = PROJECT_ROOT / "tests" / "benchmarks"


def benchmark_script(name: str) -> ModuleType:
    """tests/benchmarks/<name>.py, loaded as the module ``<name>_script``."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"{name}_script", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
