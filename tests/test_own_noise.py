"""A stochastic metric's own noise beside the data's (own_noise.csv of the KSC task)."""

import json

import numpy as np
import pandas as pd
import pytest

from textmetric_bench.errors import ConfigError
from textmetric_bench.measures.own_noise import COLUMNS, own_noise_table
from textmetric_bench.running.registry import compose_config
from textmetric_bench.tasks.ksc import run_ksc
from textmetric_bench.tasks.own_noise import own_noise_pairs


def small_run(cache_dir, *overrides):
    return compose_config(
        ["k=4", "n=12", "repetitions=3", "progress=false", "reference=false", f"data.cache_dir={cache_dir}", *overrides]
    )


def test_pairs_are_the_widest_and_a_middle_gap():
    assert own_noise_pairs(7) == [(1, 4), (1, 7)]
    assert own_noise_pairs(3) == [(1, 2), (1, 3)]


def test_table_is_the_mean_per_pair_spread_and_its_ratio():
    rng = np.random.default_rng(0)
    own = pd.DataFrame(
        [("m", s, 1, j, rng.normal(j, 0.1)) for s in range(4) for j in (2, 3)],
        columns=["metric", "seed", "i", "j", "distance"],
    )
    data = pd.DataFrame(
        [("m", r, i, j, rng.normal(j, 1.0)) for r in range(5) for i, j in ((1, 2), (1, 3), (2, 3))],
        columns=["metric", "repetition", "i", "j", "distance"],
    )
    row = own_noise_table(own, data).iloc[0]
    own_sd = np.mean([own.loc[own["j"] == j, "distance"].std(ddof=1) for j in (2, 3)])
    data_sd = np.mean([data.loc[(data["i"] == 1) & (data["j"] == j), "distance"].std(ddof=1) for j in (2, 3)])
    assert row["seeds"] == 4 and row["own_sd"] == pytest.approx(own_sd) and row["data_sd"] == pytest.approx(data_sd)
    assert row["ratio"] == pytest.approx(own_sd / data_sd)


def test_bad_seed_count_is_rejected(tmp_path, cache_dir):
    with pytest.raises(ConfigError, match="own_noise.seeds"):
        run_ksc(small_run(cache_dir, "metrics=[chi]", "own_noise.seeds=1"), tmp_path)


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_ksc_run_writes_own_noise_of_its_stochastic_metrics(tmp_path, cache_dir):
    cfg = small_run(cache_dir, "metrics=[chi,mauve,classifier,chance]", "own_noise.seeds=3")
    result = run_ksc(cfg, tmp_path)
    table = pd.read_csv(tmp_path / "own_noise.csv")
    assert list(table.columns) == COLUMNS
    assert set(table["metric"]) == {"mauve", "classifier", "chance"}  # chi is deterministic: absent
    assert (table["seeds"] == 3).all()
    assert np.allclose(table["ratio"], table["own_sd"] / table["data_sd"], equal_nan=False)
    assert (table["own_sd"] > 0).all() and (table["data_sd"] > 0).all()
    # own_sd recomputed from the run's evaluation log: repetition -1 - s is seed s on repetition 0's corpora
    lines = [json.loads(line) for line in (tmp_path / "evaluations.jsonl").read_text().splitlines()[1:]]
    own = pd.DataFrame(
        [
            (row["key"][0], row["key"][2], row["key"][3], row["key"][4], row["distance"])
            for row in lines
            if row["key"][2] < 0
        ],
        columns=["metric", "seed", "i", "j", "distance"],
    )
    for name, row in table.set_index("metric").iterrows():
        spread = own[own["metric"] == name].groupby(["i", "j"])["distance"].std(ddof=1)
        assert len(spread) == 2 and row["own_sd"] == pytest.approx(spread.mean())
    assert json.loads((tmp_path / "run.json").read_text())["own_noise"]
    assert set(result.distances["repetition"]) == {0, 1, 2}  # the own-noise evaluations stay out of the tables
    again = len((tmp_path / "evaluations.jsonl").read_text().splitlines())
    run_ksc(cfg, tmp_path)  # resumed: nothing evaluated again
    assert len((tmp_path / "evaluations.jsonl").read_text().splitlines()) == again
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "own_noise.csv"), table)
