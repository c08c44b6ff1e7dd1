"""The harness's Holm correction gives statsmodels' numbers bit for bit, without statsmodels' gc.collect()."""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from textmetric_bench.measures.chance import below_chance
from textmetric_bench.measures.holm import holm
from textmetric_bench.measures.paired import paired_comparisons
from textmetric_bench.reports.suite.groups import compare


@pytest.mark.parametrize(
    "p",
    [
        np.random.default_rng(3).uniform(0, 0.1, 15),
        np.random.default_rng(4).uniform(0, 1, 153),
        np.array([0.01, 0.01, 0.5, 1.0]),  # ties
        np.array([0.3, 0.3, 0.3, 0.3, 0.001]),  # ties above a small one
        np.array([1e-4, 0.02, 0.02, 0.9, 0.02]),  # ties out of order
        np.array([0.7]),
        np.array([0.2, 0.9, 0.6]),  # adjusted values above 1, clipped
        np.round(np.random.default_rng(5).uniform(0, 0.2, 60), 2),  # many ties
    ],
)
def test_holm_equals_statsmodels_bit_for_bit(p):
    ours = holm(p)
    theirs = multipletests(p, method="holm")[1]
    assert ours.dtype == np.float64
    assert ours.tobytes() == theirs.tobytes(), (ours, theirs)


def test_holm_keeps_the_input_order_and_takes_a_series():
    p = pd.Series([0.04, 0.001, 0.03], index=["x", "y", "z"])
    assert holm(p).tolist() == [pytest.approx(0.06), pytest.approx(0.003), pytest.approx(0.06)]
    assert holm([]).size == 0


def test_holm_refuses_a_matrix():
    with pytest.raises(ValueError, match="1-d"):
        holm(np.full((2, 2), 0.1))


def test_significance_tests_do_not_collect_garbage(monkeypatch):
    """statsmodels' multipletests calls gc.collect() (0.1-0.2 s a call with a run in memory); the harness's
    tests do not."""

    def fake_collect(*args):
        raise AssertionError("gc.collect() called")

    monkeypatch.setattr(gc, "collect", fake_collect)
    rng = np.random.default_rng(0)
    measures = pd.DataFrame(
        [{"repetition": r, "metric": m, "A": rng.uniform(0.3, 1)} for r in range(6) for m in "abcd"]
    )
    frame = paired_comparisons(measures, "A")
    assert frame["p_holm"].notna().all()
    summary = pd.DataFrame([{"metric": m, "measure": "A", "mean": 0.3, "std": 0.05, "n": 6} for m in "ab"])
    assert set(below_chance(summary)["metric"]) == {"a", "b"}
    values = rng.uniform(0, 1, (3, 12))
    compare(values, np.repeat(np.arange(4), 3), ["a", "b", "c"])
