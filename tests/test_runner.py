"""The KSC runner in-process: failing plugins are isolated, results are reproducible from the seed."""

import math

import pandas as pd
import pytest

from textmetric_bench.api.registry import metric, unregister
from textmetric_bench.running.registry import compose_config
from textmetric_bench.tasks.ksc import run_ksc


@pytest.fixture
def fake_failing_metrics():
    """Fakes that misbehave in the three ways a plugin can: raise, NaN, not a number."""

    @metric("fake_raises", inputs="texts", symmetric=True)
    def fake_raises(p, q, *, seed: int = 0) -> float:
        raise RuntimeError("fake plugin exploded")

    @metric("fake_nan", inputs="texts", symmetric=True)
    def fake_nan(p, q, *, seed: int = 0) -> float:
        return math.nan

    @metric("fake_string", inputs="texts", symmetric=True)
    def fake_string(p, q, *, seed: int = 0) -> float:
        return "far"  # type: ignore[return-value]

    yield ["fake_raises", "fake_nan", "fake_string"]
    for name in ("fake_raises", "fake_nan", "fake_string"):
        unregister(name)


def ksc_config(cache_dir, *overrides):
    return compose_config(["k=4", "n=12", "repetitions=2", "progress=false", f"data.cache_dir={cache_dir}", *overrides])


def test_failing_plugins_are_recorded_and_the_others_finish(tmp_path, cache_dir, fake_failing_metrics):
    cfg = ksc_config(cache_dir, f"metrics=[chi,{','.join(fake_failing_metrics)}]")
    result = run_ksc(cfg, tmp_path)
    assert set(result.measures["metric"]) == {"chi"}
    assert set(result.failures) == set(fake_failing_metrics)
    assert "fake plugin exploded" in result.failures["fake_raises"]
    assert "nan" in result.failures["fake_nan"]
    assert "str" in result.failures["fake_string"]
    distances = pd.read_csv(tmp_path / "distances.csv", keep_default_na=False)
    failed = distances[distances["metric"] != "chi"]
    assert (failed["error"] != "").all() and len(failed) == 3 * 2 * 6
    report = (tmp_path / "table3.md").read_text()
    assert "Failed metrics" in report and "fake_raises" in report


def test_same_seed_same_tables_other_seed_other_collections(tmp_path, cache_dir):
    one = run_ksc(ksc_config(cache_dir, "metrics=[chi]", "seed=5"), tmp_path / "one")
    two = run_ksc(ksc_config(cache_dir, "metrics=[chi]", "seed=5"), tmp_path / "two")
    other = run_ksc(ksc_config(cache_dir, "metrics=[chi]", "seed=6"), tmp_path / "other")
    pd.testing.assert_series_equal(one.distances["distance"], two.distances["distance"])
    assert not one.distances["distance"].equals(other.distances["distance"])


def test_adding_repetitions_keeps_the_earlier_ones(tmp_path, cache_dir):
    short = run_ksc(ksc_config(cache_dir, "metrics=[chi]", "repetitions=1"), tmp_path / "short")
    longer = run_ksc(ksc_config(cache_dir, "metrics=[chi]", "repetitions=3"), tmp_path / "long")
    first = longer.distances[longer.distances["repetition"] == 0].reset_index(drop=True)
    pd.testing.assert_series_equal(short.distances["distance"], first["distance"])
    assert len(longer.measures) == 3


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_parallel_workers_give_the_serial_tables(tmp_path, cache_dir):
    serial = run_ksc(ksc_config(cache_dir, "metrics=[chi,fid,mauve,dc]"), tmp_path / "serial")
    parallel = run_ksc(ksc_config(cache_dir, "metrics=[chi,fid,mauve,dc]", "engine.workers=2"), tmp_path / "parallel")
    pd.testing.assert_frame_equal(serial.distances.drop(columns="seconds"), parallel.distances.drop(columns="seconds"))
