"""A run imports its scoring's libraries and its figure modules before it embeds (tasks/skeleton.py,
``RUN_IMPORTS``), so that none of them is imported on the run's tail: scoring a KSC collection, summarising,
comparing and writing the tables after ``import_ahead`` imports nothing more of scipy, statsmodels, patsy or
matplotlib. In a fresh interpreter, where nothing else imported them first."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import json, sys, tempfile
from pathlib import Path
import numpy as np, pandas as pd
from textmetric_bench.tasks.skeleton import RUN_IMPORTS, import_ahead

import_ahead(RUN_IMPORTS)
before = set(sys.modules)
from textmetric_bench.measures.ksc import collection_measures
from textmetric_bench.reports.tables.files import write_tables

rng = np.random.default_rng(0)
k = 5
i, j = np.array([(a, b) for a in range(1, k + 1) for b in range(a + 1, k + 1)]).T
rows = []
for metric in ("m1", "m2", "m3"):
    for repetition in range(5):
        distance = (j - i) + rng.normal(0, 1, i.size)
        rows.append({"metric": metric, "repetition": repetition, **collection_measures(i, j, distance, np.full(i.size, 0.01), k)})
with tempfile.TemporaryDirectory() as out:
    write_tables(pd.DataFrame(rows), Path(out), title="t", repetitions=5)
libraries = ("scipy", "statsmodels", "patsy", "matplotlib")
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.split(".")[0] in libraries)))
"""


def test_scoring_and_writing_the_tables_import_nothing_more_after_the_run_s_imports():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == []
