"""Size and imbalance robustness (004 §4.6-4.7): S and I by hand, the grid, the task in-process and end to end."""

import json

import numpy as np
import pandas as pd
import pytest
from figure_captions import assert_caption_warns
from test_end_to_end import console_columns, run_bench  # the Hydra app as a user starts it

from textmetric_bench.api.registry import metric, unregister
from textmetric_bench.collections.size_imbalance import (
    draw_sample_pair,
    feasible_grid,
    sample_seed,
    validate_robustness_parameters,
)
from textmetric_bench.errors import ConfigError, DataError
from textmetric_bench.measures.robustness import imbalance_robustness, robustness_score, size_robustness
from textmetric_bench.measures.run_warnings import run_warnings
from textmetric_bench.measures.summaries import most_repetitions
from textmetric_bench.reports.figures.robustness import robustness_figures
from textmetric_bench.running.registry import compose_config
from textmetric_bench.tasks.robustness import run_robustness

SMALL = ["sizes=[20,40,80]", "n_ref=100", "imbalance_total=100", "repetitions=2"]


def test_size_robustness_of_a_curve_converging_as_one_over_s():
    sizes = np.array([50, 250, 450])
    d_inf, c = 2.0, 10.0
    # |d_s - d_inf| = c / s = .2, .04, .0222...; mean .08741; normalised by d_inf = 2.
    expected = 1 - (0.2 + 0.04 + 10 / 450) / 3 / 2.0
    assert size_robustness(d_inf + c / sizes, d_inf) == pytest.approx(expected)
    # Under-estimating by the same amounts scores the same; the sum of eq. 8 would depend on |grid|.
    assert size_robustness(d_inf - c / sizes, d_inf) == pytest.approx(expected)
    assert size_robustness(np.full(3, d_inf), d_inf) == 1.0


def test_imbalance_robustness_is_normalised_by_the_asymptotic_distance():
    curve = np.array([3.0, 5.0])  # errors 1 and 1 around d_inf = 4
    assert imbalance_robustness(curve, 4.0) == pytest.approx(0.75)
    assert imbalance_robustness(curve * 10, 40.0) == pytest.approx(0.75)  # scale free


def test_scores_are_undefined_without_an_asymptotic_distance_or_with_a_missing_point():
    assert np.isnan(robustness_score([1.0, 2.0], 0.0))
    assert np.isnan(robustness_score([1.0, np.nan], 1.0))


@pytest.mark.parametrize(
    "args,message",
    [
        ((100, [], 100, 2), "sizes` is empty"),
        ((100, [0, 20], 100, 2), ">= 1"),
        ((100, [20, 100], 100, 2), "must exceed every size"),
        ((0, [20], 100, 2), "n_ref and repetitions"),
        ((100, ["x"], 100, 2), "must be integers"),
    ],
)
def test_bad_grids_are_rejected_before_anything_runs(args, message):
    with pytest.raises(ConfigError, match=message):
        validate_robustness_parameters(*args)


def test_small_sources_truncate_the_grid_and_say_so():
    grid = feasible_grid(3000, [50, 250, 450], 500, n_a=400, n_b=300)
    assert grid.n_ref == 300 and grid.sizes == (50, 250)
    # imbalance: s <= 400 from A and 500 - s <= 300 from B
    assert grid.imbalance_sizes == (250,)
    assert len(grid.truncated) == 3 and "n_ref capped" in grid.truncated[0]
    with pytest.raises(DataError, match="no point of the size curve"):
        feasible_grid(100, [50], 60, n_a=40, n_b=400)


def test_samples_depend_only_on_their_own_seed():
    a1, b1 = draw_sample_pair(1000, 1000, 50, 70, sample_seed(0, 3, "size", 50))
    a2, b2 = draw_sample_pair(1000, 1000, 50, 70, sample_seed(0, 3, "size", 50))
    other, _ = draw_sample_pair(1000, 1000, 50, 70, sample_seed(0, 3, "imbalance", 50))
    assert (a1 == a2).all() and (b1 == b2).all() and not (a1 == other).all()
    assert len(set(a1)) == 50 and len(set(b1)) == 70


@pytest.fixture
def fake_constructed_metrics():
    """A constructed metric with exact convergence, d = 1 + 10/|p| + 10/|q|, and one that fails
    whenever |q| > 70 (only the imbalance point s = 20 of the small grid)."""

    @metric("fake_convergence", inputs="texts", symmetric=True)
    def fake_convergence(p, q, *, seed: int = 0) -> float:
        return 1 + 10 / len(p) + 10 / len(q)

    @metric("fake_fails_on_large_q", inputs="texts", symmetric=False)
    def fake_fails_on_large_q(p, q, *, seed: int = 0) -> float:
        if len(q) > 70:
            raise RuntimeError("fake plugin cannot take so many texts")
        return 1.0 + 1.0 / len(p)

    yield
    for name in ("fake_convergence", "fake_fails_on_large_q"):
        unregister(name)


def robustness_config(cache_dir, *overrides):
    return compose_config(["task=robustness", *SMALL, "progress=false", f"data.cache_dir={cache_dir}", *overrides])


def test_known_convergence_gives_the_hand_computed_s_and_i(tmp_path, cache_dir, fake_constructed_metrics):
    cfg = robustness_config(cache_dir, "metrics=[fake_convergence,fake_fails_on_large_q,chi]")
    result = run_robustness(cfg, tmp_path)
    # d(A, B) = 1 + 10/100 + 10/100 = 1.2. Size curve 1 + 20/s at s = 20, 40, 80: errors .8, .3, .05.
    # Imbalance 1 + 10/s + 10/(100 - s): 1.625, 1.41667, 1.625: errors .425, .21667, .425.
    mine = result.measures[result.measures["metric"] == "fake_convergence"]
    assert result.info["asymptotic_distance"]["fake_convergence"] == pytest.approx(1.2)
    assert mine["S"].to_numpy() == pytest.approx([1 - (0.8 + 0.3 + 0.05) / 3 / 1.2] * 2)
    assert mine["I"].to_numpy() == pytest.approx([1 - (0.425 + 0.65 / 3 + 0.425) / 3 / 1.2] * 2)
    # A partial failure is recorded and costs only the curve it hit.
    failing = result.measures[result.measures["metric"] == "fake_fails_on_large_q"]
    assert failing["S"].notna().all() and failing["I"].isna().all()
    assert "cannot take so many" in result.failures["fake_fails_on_large_q"]
    # Outputs: every evaluation in curves.csv, the S/I table, one figure per metric.
    curves = pd.read_csv(tmp_path / "curves.csv", keep_default_na=False)
    assert len(curves) == 3 * 2 * (1 + 3 + 3)
    assert list(pd.read_csv(tmp_path / "measures.csv").columns) == ["metric", "orientation", "repetition", "S", "I"]
    table = (tmp_path / "table3.md").read_text()
    assert "| S | I |" in table and "Failed metrics" in table and "Asymptotic distance" in table
    for name in ("fake_convergence", "chi", "all"):
        assert (tmp_path / f"robustness_{name}.png").stat().st_size > 10_000
    # Same config and seed, same samples: chi's curves repeat exactly.
    again = run_robustness(cfg, tmp_path / "again")
    pd.testing.assert_frame_equal(result.distances.drop(columns="seconds"), again.distances.drop(columns="seconds"))


def test_s_and_i_join_a_ksc_run_on_one_radar(tmp_path, cache_dir):
    from textmetric_bench.measures.summaries import summarise_measures
    from textmetric_bench.reports.figures.radar import radar_chart
    from textmetric_bench.tasks.ksc import run_ksc

    rob = run_robustness(robustness_config(cache_dir, "metrics=[chi]"), tmp_path / "rob")
    ksc_cfg = compose_config(
        ["k=4", "n=12", "repetitions=2", "metrics=[chi]", "progress=false", f"data.cache_dir={cache_dir}"]
    )
    ksc = run_ksc(ksc_cfg, tmp_path / "ksc")
    merged = ksc.measures.merge(rob.measures, on=["metric", "repetition"], how="outer")
    png, svg = radar_chart(summarise_measures(merged), tmp_path / "radar")
    labels = svg.read_text()
    assert ">S<" in labels and ">I<" in labels and ">ρ<" in labels


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_end_to_end_small_grid_on_the_embedded_pair(tmp_path, cache_dir):
    out = tmp_path / "run"
    proc = run_bench("task=robustness", *SMALL, "metrics=[fid,chi]", f"hydra.run.dir={out}", cache_dir=cache_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shown = console_columns(proc.stdout)  # the table's header as plain text, across its blocks of columns
    assert "S" in shown and shown[shown.index("S") + 1 :][:1] == ["I"], proc.stdout[-2000:]
    info = json.loads((out / "run.json").read_text())
    assert info["grid"]["sizes"] == [20, 40, 80] and not info["failures"]
    assert info["regime"] == "sentence"  # the fortune pair: both sides' median words a text
    measures = pd.read_csv(out / "measures.csv")
    assert len(measures) == 4 and np.isfinite(measures[["S", "I"]].to_numpy()).all()
    # FID is biased upwards on small samples: the size curve approaches d(A, B) from above.
    curves = pd.read_csv(out / "curves.csv")
    fid = curves[(curves["metric"] == "fid") & (curves["curve"] == "size")].groupby("s")["distance"].mean()
    d_inf = info["asymptotic_distance"]["fid"]
    assert fid[20] > fid[80] > d_inf
    for name in ("robustness_fid.png", "robustness_chi.png", "robustness_all.png", "table3.md", "table3.csv"):
        assert (out / name).stat().st_size > 0, name
    assert not (out / "radar.png").exists()
    reps = most_repetitions(measures)  # 2 repetitions: each figure says so under it, chi's own of it alone
    for name, warnings in (
        ("robustness_all", run_warnings(info, reps)),
        ("robustness_chi", run_warnings(info, reps, metric="chi")),
    ):

        def draw(shown, where, name=name):
            paths = robustness_figures(
                curves,
                measures,
                where,
                imbalance_total=info["grid"]["imbalance_total"],
                setting=info["title"],
                warnings=shown,
            )
            return next(p for p in paths if p.stem == name)

        assert_caption_warns(out / f"{name}.png", draw, warnings, tmp_path / name)


def test_a_grid_larger_than_n_fails_with_a_clear_message(tmp_path, cache_dir):
    proc = run_bench(
        "task=robustness",
        "sizes=[50,3000]",
        "metrics=[chi]",
        f"hydra.run.dir={tmp_path}",
        cache_dir=cache_dir,
        timeout=120,
    )
    assert proc.returncode != 0 and "must exceed every size" in proc.stderr + proc.stdout


def test_a_robustness_run_scores_oracle_and_chance(tmp_path, cache_dir):
    """The bounds in a real run: the oracle knows every sample's source (S = I = 1), chance does not."""
    result = run_robustness(robustness_config(cache_dir, "metrics=[oracle,chance]"), tmp_path)
    assert not result.failures
    measures = result.measures.set_index("metric")
    assert (measures.loc["oracle", ["S", "I"]].to_numpy() == 1.0).all()
    assert (measures.loc["chance", ["S", "I"]].to_numpy() < 1.0).all()
