"""IFC (004 §5): the score and its parts, and a tiny end-to-end run with the real model that resumes."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from figure_captions import assert_caption_warns

from textmetric_bench.collections.ifc import reference_samples, split_source
from textmetric_bench.errors import ConfigError, DataError
from textmetric_bench.measures.ifc import constant_distance, gap_closed, ifc_score, type_token_ratio
from textmetric_bench.measures.run_warnings import run_warnings
from textmetric_bench.reports.figures.ifc import ifc_figures
from textmetric_bench.running.registry import compose_config
from textmetric_bench.tasks.ifc import run_ifc


def test_ifc_score_is_one_when_the_distance_falls_at_every_step():
    assert ifc_score([0, 1, 2, 3, 4], [5.0, 4.0, 3.5, 1.0, 0.2]) == pytest.approx(1.0)
    assert ifc_score([0, 1, 2, 3, 4], [0.2, 1.0, 3.5, 4.0, 5.0]) == pytest.approx(-1.0)
    assert 0 < ifc_score([0, 1, 2, 3], [4.0, 2.0, 3.0, 1.0]) < 1
    assert math.isnan(ifc_score([0, 1, 2], [1.0, 1.0, 1.0]))
    assert constant_distance([1.0, 1.0, 1.0]) and not constant_distance([1.0, 1.0, 2.0])
    assert not constant_distance([1.0]) and not constant_distance([1.0, float("nan")])  # one point; a failed one


def test_gap_closed_is_the_share_of_the_gap_to_the_self_distance():
    assert gap_closed(first=3.0, last=2.0, self_distance=1.0) == pytest.approx(0.5)
    assert gap_closed(first=3.0, last=1.0, self_distance=1.0) == pytest.approx(1.0)
    assert gap_closed(first=3.0, last=4.0, self_distance=1.0) == pytest.approx(-0.5)
    assert math.isnan(gap_closed(first=1.0, last=0.5, self_distance=1.0))  # no gap to close


def synthetic_ifc_distances(per_metric: dict[str, list[list[float]]]) -> pd.DataFrame:
    """IFC distances: per metric, one list of d(reference, g_i) per repetition, and a self-distance of 0.1 each."""
    rows = []
    for metric, repetitions in per_metric.items():
        for r, values in enumerate(repetitions):
            rows += [
                {"metric": metric, "kind": "generated", "iteration": i, "repetition": r, "distance": d, "error": ""}
                for i, d in enumerate(values)
            ]
            rows.append({"metric": metric, "kind": "self", "iteration": math.nan, "repetition": r, "distance": 0.1})
    frame = pd.DataFrame(rows)
    frame["error"] = frame["error"].fillna("")
    return frame


def test_the_ifc_table_gives_the_bootstrap_interval_every_view_gives():
    """Two repetitions of IFC .5 and -.5: a Student t-interval with one degree of freedom is [-6.35, 6.35], far
    outside IFC's range, and the HTML report (summarise_measures) showed [-.5, .5]: one interval, the bootstrap's."""
    from textmetric_bench.measures.ifc import ifc_measures
    from textmetric_bench.measures.summaries import summarise_measures
    from textmetric_bench.tasks.ifc import ifc_summary

    distances = synthetic_ifc_distances({"fid": [[3.0, 1.0, 2.0], [2.0, 1.0, 3.0]]})
    measures, failures = ifc_measures(distances)
    assert not failures and sorted(measures["IFC"]) == [-0.5, 0.5]
    row = ifc_summary(distances, measures).iloc[0]
    reference = summarise_measures(measures.assign(orientation="distance")).set_index("measure").loc["IFC"]
    assert (row["IFC_ci_low"], row["IFC_ci_high"]) == (reference["ci_low"], reference["ci_high"])
    assert -1 <= row["IFC_ci_low"] <= row["IFC"] <= row["IFC_ci_high"] <= 1


def test_the_ifc_page_warns_of_few_repetitions_and_says_why_an_ifc_is_missing():
    """The page the console prints: the few-repetitions warning (as Table 3's page), and a metric whose distance
    did not change over the iterations is marked as such, not left as a bare –."""
    from textmetric_bench.measures.ifc import ifc_measures
    from textmetric_bench.reports.tables.ifc_markdown import ifc_markdown
    from textmetric_bench.tasks.ifc import ifc_summary

    distances = synthetic_ifc_distances(
        {"fid": [[3.0, 2.0, 1.0], [3.0, 1.0, 2.0]], "classifier": [[0.9, 0.9, 0.9], [0.9, 0.9, 0.9]]}
    )
    measures, _ = ifc_measures(distances)
    summary = ifc_summary(distances, measures)
    assert summary.set_index("metric")["constant_repetitions"].to_dict() == {"classifier": 2, "fid": 0}
    page = ifc_markdown(summary, pd.DataFrame(), title="IFC", repetitions=2)
    assert "**Warning: only 2 repetitions (fewer than 5)" in page
    assert "| classifier | – (d constant in 2 of 2) |" in page and "d constant: in so many repetitions" in page
    assert "| fid | .750 [.500, 1.000] |" in page
    five = synthetic_ifc_distances({"fid": [[3.0, 2.0, 1.0]] * 5})
    assert "Warning" not in ifc_markdown(ifc_summary(five, ifc_measures(five)[0]), pd.DataFrame(), title="IFC")
    assert "d constant" not in ifc_markdown(ifc_summary(five, ifc_measures(five)[0]), pd.DataFrame(), title="IFC")


def test_type_token_ratio_counts_distinct_word_tokens():
    assert type_token_ratio(["the cat", "The dog!"]) == pytest.approx(3 / 4)
    assert math.isnan(type_token_ratio(["...", ""]))


def test_training_and_reference_pools_are_disjoint_and_samples_are_halves():
    texts = [f"text {i}" for i in range(100)]
    train, ref = split_source(texts, 0.4, seed=3)
    assert len(ref) == 40 and len(train) == 60 and not set(train) & set(ref)
    assert split_source(texts, 0.4, seed=3) == (train, ref)
    for a, b in reference_samples(len(ref), 20, repetitions=3, seed=0):
        assert len(a) == len(b) == 20 and not set(a) & set(b)
    with pytest.raises(DataError, match="lower ifc.corpus_size"):
        reference_samples(len(ref), 21, repetitions=1, seed=0)


def ifc_config(cache_dir, mirror_dir, *overrides):
    return compose_config(
        [
            "task=ifc",
            "ifc.iterations=2",
            "ifc.train_per_step=16",
            "ifc.corpus_size=24",
            "ifc.repetitions=2",
            "ifc.sampling.batch_size=32",
            "metrics=[fid,chi]",
            "progress=false",
            "lm.device=cpu",
            f"data.cache_dir={cache_dir}",
            f"data.mirror={mirror_dir}",
            *overrides,
        ]
    )


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, cache_dir, mirror_dir, smollm2):
    """g_0, g_1, g_2 of 24 texts each from banking77, 16 texts a fine-tuning step, the real SmolLM2."""
    out = tmp_path_factory.mktemp("ifc-run")
    cfg = ifc_config(cache_dir, mirror_dir)
    return cfg, out, run_ifc(cfg, out)


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_tiny_run_generates_every_corpus_and_scores_it(tiny_run, tmp_path):
    cfg, out, result = tiny_run
    gen = out / "generated"
    for i in range(3):
        texts = [json.loads(line)["text"] for line in (gen / f"iter_{i}.jsonl").read_text().splitlines()]
        assert len(texts) == 24 and len(set(texts)) == 24
        assert all(t == " ".join(t.split()) and t for t in texts)  # normalised like the source
        meta = json.loads((gen / f"iter_{i}.json").read_text())
        assert meta["config"]["corpus_size"] == 24 and isinstance(meta["sample_seed"], int)
        assert (meta["train_loss"] is None) == (i == 0)
    d = pd.read_csv(out / "ifc_distances.csv")
    assert set(d["metric"]) == {"fid", "chi"} and (d["error"].isna() | (d["error"] == "")).all()
    assert len(d) == 2 * 2 * (3 + 1)  # metrics x repetitions x (g_0..g_2 + self-distance)
    assert np.isfinite(d["distance"]).all()
    measures = pd.read_csv(out / "measures.csv")
    assert list(measures.columns) == ["metric", "orientation", "repetition", "IFC"] and len(measures) == 4
    assert measures["IFC"].between(-1, 1).all()
    summary = pd.read_csv(out / "ifc_summary.csv")
    assert {"IFC", "gap_closed", "self_distance"} <= set(summary.columns)
    ttr = pd.read_csv(out / "ifc_ttr.csv")
    assert list(ttr["corpus"]) == ["source", "reference", "reference", "g_0", "g_1", "g_2"]
    for name in ("ifc_fid.png", "ifc_chi.png", "ifc_all.png", "table3.md"):
        assert (out / name).stat().st_size > 0
    assert "| fid |" in (out / "table3.md").read_text()
    info = json.loads((out / "run.json").read_text())
    for name, metric in (("ifc_all", None), ("ifc_chi", "chi")):  # 2 repetitions: each figure says so under it

        def draw(shown, where, name=name):
            paths = ifc_figures(result.distances, result.summary, where, setting=info["title"], warnings=shown)
            return next(p for p in paths if p.stem == name)

        assert_caption_warns(out / f"{name}.png", draw, run_warnings(info, metric=metric), tmp_path / name)


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_g0_is_farther_from_the_source_than_a_reference_sample_is(tiny_run):
    _, _, result = tiny_run
    for row in result.summary.itertuples():
        assert row.first_distance > row.self_distance, row.metric


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_rerun_regenerates_only_the_deleted_corpus(tiny_run):
    cfg, out, _ = tiny_run
    gen = out / "generated"
    stamps = {i: (gen / f"iter_{i}.jsonl").stat().st_mtime_ns for i in range(2)}
    weights = (gen / "checkpoint" / "model.safetensors").stat().st_mtime_ns
    before_loss = json.loads((gen / "iter_2.json").read_text())["train_loss"]
    assert isinstance(before_loss, float)
    (gen / "iter_2.jsonl").unlink()
    result = run_ifc(cfg, out)
    assert result.info["generated_now"] == [2]
    assert {i: (gen / f"iter_{i}.jsonl").stat().st_mtime_ns for i in range(2)} == stamps
    assert (gen / "checkpoint" / "model.safetensors").stat().st_mtime_ns == weights  # no step was retrained
    assert json.loads((gen / "iter_2.json").read_text())["train_loss"] == before_loss  # as recorded by step 2
    assert len((gen / "iter_2.jsonl").read_text().splitlines()) == 24


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_deleted_middle_corpus_is_rebuilt_by_replaying_its_seeded_step(tiny_run):
    cfg, out, _ = tiny_run
    gen = out / "generated"
    before = json.loads((gen / "iter_1.json").read_text())
    later = (gen / "iter_2.jsonl").stat().st_mtime_ns
    weights = (gen / "checkpoint" / "model.safetensors").stat().st_mtime_ns
    (gen / "iter_1.jsonl").unlink()
    result = run_ifc(cfg, out)
    after = json.loads((gen / "iter_1.json").read_text())
    assert result.info["generated_now"] == [1]
    assert after["train_seed"] == before["train_seed"]
    assert after["train_loss"] == pytest.approx(before["train_loss"], rel=1e-3)  # the same step again
    assert (gen / "iter_2.jsonl").stat().st_mtime_ns == later
    assert (gen / "checkpoint" / "model.safetensors").stat().st_mtime_ns == weights  # step 2 stays saved


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_rerun_missing_g0_and_the_last_corpus_samples_the_last_from_the_saved_weights(tiny_run):
    """g_0 needs the base model; g_2 then comes from the saved weights of step 2, not from replaying steps 1-2."""
    cfg, out, _ = tiny_run
    gen = out / "generated"
    before = {i: (gen / f"iter_{i}.jsonl").read_text() for i in (0, 2)}
    loss = json.loads((gen / "iter_2.json").read_text())["train_loss"]
    weights = (gen / "checkpoint" / "model.safetensors").stat().st_mtime_ns
    for i in (0, 2):
        (gen / f"iter_{i}.jsonl").unlink()
    result = run_ifc(cfg, out)
    assert result.info["generated_now"] == [0, 2]
    meta = json.loads((gen / "iter_2.json").read_text())
    assert meta["seconds"]["train"] == 0 and meta["training"] is None and meta["train_loss"] == loss  # nothing replayed
    assert {i: (gen / f"iter_{i}.jsonl").read_text() for i in (0, 2)} == before  # the same weights, the same texts
    assert (gen / "checkpoint" / "model.safetensors").stat().st_mtime_ns == weights


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_scoring_again_with_another_metric_needs_no_generation(tiny_run, cache_dir, mirror_dir):
    _, out, _ = tiny_run
    cfg = ifc_config(cache_dir, mirror_dir, "ifc.generate=false", "metrics=[chi]")
    before = pd.read_csv(out / "ifc_distances.csv")
    figures = sorted(p.name for p in out.glob("*.png"))
    result = run_ifc(cfg, out)
    assert result.info["generated_now"] == [] and result.info["metrics_this_run"] == ["chi"]
    # Results add up: fid, scored by the earlier run only, keeps every row, and every figure is still drawn.
    after = pd.read_csv(out / "ifc_distances.csv")
    assert set(result.measures["metric"]) == {"fid", "chi"} and len(after) == len(before)
    key = ["metric", "kind", "iteration", "repetition"]
    pd.testing.assert_frame_equal(
        after.sort_values(key).drop(columns=["seconds", "attempts"]).reset_index(drop=True),
        before.sort_values(key).drop(columns=["seconds", "attempts"]).reset_index(drop=True),
    )
    assert sorted(p.name for p in out.glob("*.png")) == figures


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_changed_generation_settings_are_refused_in_a_used_directory(tiny_run, cache_dir, mirror_dir):
    _, out, _ = tiny_run
    cfg = ifc_config(cache_dir, mirror_dir, "ifc.learning_rate=0.001")
    with pytest.raises(ConfigError, match="learning_rate"):
        run_ifc(cfg, out)


def test_scoring_without_corpora_says_to_generate_first(tmp_path, cache_dir, mirror_dir):
    cfg = ifc_config(cache_dir, mirror_dir, "ifc.generate=false")
    with pytest.raises(DataError, match="ifc.generate=true"):
        run_ifc(cfg, tmp_path)
