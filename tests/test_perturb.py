"""Perturbation sensitivity (000 §6.2): each perturbation by hand, the relative shift, task=perturb end to end."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from figure_captions import assert_caption_warns
from test_end_to_end import console_columns, run_bench  # the Hydra app as a user starts it

from textmetric_bench.collections.perturbation_samples import (
    draw_samples,
    perturbation_rng,
    validate_perturb_parameters,
)
from textmetric_bench.collections.perturbations import (
    PERTURBATIONS,
    get_perturbation,
    perturb_corpus,
    remove_articles,
    remove_stopwords,
    shuffle_words,
    split_core,
    swap_first_halves,
    truncate,
)
from textmetric_bench.errors import ConfigError, DataError
from textmetric_bench.measures.perturbation import perturbation_measures, relative_shift
from textmetric_bench.measures.run_warnings import run_warnings
from textmetric_bench.reports.figures.perturb import perturbation_cells, perturbation_heatmap, perturbation_markdown
from textmetric_bench.tasks.perturb import summarise_shifts

TEXT = "The cat saw an owl and A hawk (the one) in theory."


def test_a_word_is_a_whitespace_token_and_its_core_drops_surrounding_punctuation():
    assert split_core("(The,") == ("(", "The", ",")
    assert split_core("don't") == ("", "don't", "")
    assert split_core("...") == ("...", "", "")


@pytest.mark.parametrize(
    "text,expected",
    [
        ("The quick brown fox jumps over the lazy dog.", "The quick brown"),  # 9 words -> 3
        ("one two three four five six seven", "one two"),  # 7/3 = 2.33 -> 2
        ("one two three four five", "one two"),  # 5/3 = 1.67 -> 2
        ("one two", "one"),  # at least one word
        ("alone", "alone"),
        ("  first\nsecond   third fourth fifth sixth ", "first\nsecond"),  # a prefix, spacing kept
    ],
)
def test_truncation_keeps_the_first_third_of_the_words(text, expected):
    assert truncate(text) == expected


def test_article_removal_is_case_insensitive_matches_whole_words_and_keeps_punctuation():
    assert remove_articles(TEXT) == "cat saw owl and hawk (one) in theory."
    assert remove_articles("Is that a car?") == "Is that car?"
    assert remove_articles("I want a.") == "I want."  # trailing marks join the previous word
    assert remove_articles("The") == "The"  # would be empty: keeps its first word
    unchanged = "no articles\nhere, only words"
    assert remove_articles(unchanged) is unchanged  # untouched text keeps its exact spacing


def test_stopword_removal_uses_the_scikit_learn_list():
    assert remove_stopwords("Can you tell me the balance of my account?") == "tell balance account?"
    assert remove_stopwords("The cat sat (on the mat) all day.") == "cat sat (mat) day."
    assert remove_stopwords("Can you do it?") == "Can"  # every word a stopword: the first one stays
    assert remove_stopwords("pay my bill") == "pay"  # 'bill' is in the Glasgow list (documented)


def test_shuffling_two_distinct_words_must_swap_them_and_a_single_word_cannot_change():
    rng = np.random.default_rng(0)
    assert all(shuffle_words("hello world", rng) == "world hello" for _ in range(20))
    assert shuffle_words("go go", rng) == "go go" and shuffle_words("alone", rng) == "alone"


def test_shuffling_is_a_seeded_permutation_that_changes_every_text():
    texts = ["a b c d e f", "one two three", "x y"]
    first = perturb_corpus("shuffle_words", texts, np.random.default_rng(7))
    assert first == perturb_corpus("shuffle_words", texts, np.random.default_rng(7))
    assert all(new != old and sorted(new.split()) == sorted(old.split()) for new, old in zip(first, texts))
    others = {tuple(perturb_corpus("shuffle_words", texts, np.random.default_rng(s))) for s in range(10)}
    assert len(others) > 1


def test_two_texts_swap_their_first_halves_whatever_the_seed():
    texts = ["one two three four", "five six seven"]  # halves: 2 + 2 words, 2 + 1 words
    for seed in range(5):
        assert swap_first_halves(texts, np.random.default_rng(seed)) == ["five six three four", "one two seven"]
    assert swap_first_halves(["alone here"], np.random.default_rng(0)) == ["alone here"]


@pytest.mark.parametrize("size", [3, 4, 7])
def test_swapping_gives_every_text_a_strangers_first_half_and_keeps_its_own_second_half(size):
    texts = [f"h{i} t{i}" for i in range(size)]
    out = swap_first_halves(texts, np.random.default_rng(3))
    assert out == swap_first_halves(texts, np.random.default_rng(3))
    heads = [t.split()[0] for t in out]
    assert [t.split()[1] for t in out] == [f"t{i}" for i in range(size)]
    assert sorted(heads) == sorted(f"h{i}" for i in range(size))  # each first half used once
    assert all(h != f"h{i}" for i, h in enumerate(heads))


def test_unknown_perturbation_names_the_closest_and_the_config_is_checked():
    with pytest.raises(ConfigError, match="Did you mean 'shuffle_words'"):
        get_perturbation("shuffle_word")
    assert validate_perturb_parameters("20", 2, "truncate, shuffle_words") == (20, 2, ["truncate", "shuffle_words"])
    with pytest.raises(ConfigError, match="n >= 2"):
        validate_perturb_parameters(1, 2, list(PERTURBATIONS))
    with pytest.raises(ConfigError, match="at least one"):
        validate_perturb_parameters(20, 2, [])
    with pytest.raises(DataError, match="needs 100 texts of A"):
        draw_samples(90, 500, 50, 0, 0)


def test_samples_are_disjoint_and_perturbation_generators_independent_of_each_other():
    ref, same, other = draw_samples(300, 200, 100, 0, 1)
    assert not set(ref) & set(same) and len(set(other)) == 100
    assert (draw_samples(300, 200, 100, 0, 1)[0] == ref).all()
    a = perturbation_rng(0, 1, "shuffle_words").integers(1 << 30, size=4)
    assert (a == perturbation_rng(0, 1, "shuffle_words").integers(1 << 30, size=4)).all()
    assert not (a == perturbation_rng(0, 1, "swap_halves").integers(1 << 30, size=4)).all()


def test_relative_shift_places_the_perturbed_distance_between_same_source_and_other_source():
    assert relative_shift(1.0, 1.5, 3.0) == pytest.approx(0.25)
    assert relative_shift(1.0, 0.5, 3.0) == pytest.approx(-0.25)
    assert relative_shift(1.0, 7.0, 3.0) == pytest.approx(3.0)  # farther than the domain change
    assert np.isnan(relative_shift(2.0, 2.5, 2.0)) and np.isnan(relative_shift(2.0, 2.5, 1.0))
    assert np.isnan(relative_shift(1.0, np.nan, 3.0))


def constructed_distances():
    """good: d_a = 1, d_c = 3, d_b = 1.5, 2.5, 2.0 (shifts .25, .75, .5); flaky: gap <= 0 in repetition 1;
    blind: never separates the sources."""
    rows = []
    for r, (b, flaky_c) in enumerate([(1.5, 2.0), (2.5, 0.5), (2.0, 3.0)]):
        rows += [
            ("good", r, "same", 1.0),
            ("good", r, "truncate", b),
            ("good", r, "other", 3.0),
            ("flaky", r, "same", 1.0),
            ("flaky", r, "truncate", 1.5),
            ("flaky", r, "other", flaky_c),
            ("blind", r, "same", 2.0),
            ("blind", r, "truncate", 2.0),
            ("blind", r, "other", 2.0),
        ]
    frame = pd.DataFrame(rows, columns=["metric", "repetition", "condition", "distance"])
    return frame.assign(seconds=0.0, error="")


def test_shifts_summarise_with_a_t_interval_and_non_positive_gaps_are_flagged_not_divided(tmp_path):
    measures, failures = perturbation_measures(constructed_distances(), ["truncate"])
    assert not failures and len(measures) == 9
    good = measures[measures["metric"] == "good"]
    assert good["shift"].to_numpy() == pytest.approx([0.25, 0.75, 0.5])
    summary = summarise_shifts(measures).set_index("metric")
    half = stats.t.ppf(0.975, 2) * 0.25 / np.sqrt(3)  # sd of (.25, .75, .5) is .25
    assert summary.loc["good", ["mean", "std", "ci_low", "ci_high"]].to_numpy(float) == pytest.approx(
        [0.5, 0.25, 0.5 - half, 0.5 + half]
    )
    # flaky: shift (1.5 - 1) / (c - 1) = .5 and .25 where the gap is positive; repetition 1 is left out.
    assert summary.loc["flaky", "mean"] == pytest.approx(0.375) and summary.loc["flaky", "n"] == 2
    assert summary.loc["flaky", "gap_not_positive"] == 1 and summary.loc["good", "gap_not_positive"] == 0
    gaps = np.array([1.0, -0.5, 2.0])  # flaky's d_c - d_a per repetition
    assert summary.loc["flaky", "gap_cv"] == pytest.approx(gaps.std(ddof=1) / gaps.mean())
    assert summary.loc["good", "gap_cv"] == 0 and np.isnan(summary.loc["blind", "gap_cv"])
    assert np.isnan(summary.loc["blind", "mean"]) and summary.loc["blind", "gap_not_positive"] == 3

    cells = perturbation_cells(summary.reset_index())
    assert cells.loc["good", "truncate"].startswith("+50.0% ±25.0 [")
    assert cells.loc["flaky", "flag"] == "gap ≤ 0 in 1 of 3 repetitions; noisy gap (sd/mean 1.51)"
    assert cells.loc["good", "flag"] == ""
    assert cells.loc["blind", "truncate"] == "–" and "3 of 3" in cells.loc["blind", "flag"]
    text = perturbation_markdown(summary.reset_index(), {}, title="constructed")
    assert "| good | +50.0% ±25.0" in text and "(c) d(R, O)" in text
    assert perturbation_heatmap(summary.reset_index(), tmp_path / "perturb_heatmap.png").stat().st_size > 5_000


def test_a_failed_evaluation_is_recorded_and_costs_only_its_shift():
    distances = constructed_distances()
    hit = (distances["metric"] == "good") & (distances["repetition"] == 0) & (distances["condition"] == "truncate")
    distances.loc[hit, ["distance", "error"]] = [np.nan, "RuntimeError: boom"]
    measures, failures = perturbation_measures(distances, ["truncate"])
    assert "boom" in failures["good"]
    assert measures.loc[measures["metric"] == "good", "shift"].isna().tolist() == [True, False, False]
    text = perturbation_markdown(summarise_shifts(measures), {}, title="t", failures=failures)
    assert (
        "## Failed metrics" in text
        and "- `good`: 1 of 9 evaluations failed in 1 repetition: repetition 0: RuntimeError: boom" in text
    )


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_end_to_end_perturbation_run_on_the_embedded_pair(tmp_path, cache_dir):
    out = tmp_path / "run"
    proc = run_bench(
        "task=perturb", "n=40", "repetitions=2", "metrics=[fid,chi,pr]", f"hydra.run.dir={out}", cache_dir=cache_dir
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the console prints the table as plain aligned columns (perturbation.md keeps the pipes), in blocks of columns
    # that fit the terminal (100 columns in a pipe), each led by the metric column
    shown = console_columns(proc.stdout)
    assert shown == ["truncate", "remove_articles", "remove_stopwords", "swap_halves", "shuffle_words", "flag"], (
        proc.stdout[-2000:]
    )
    for name in (
        "distances.csv",
        "measures.csv",
        "perturbation.csv",
        "perturbation.md",
        "run.json",
        "perturb_heatmap.png",
        "report.html",
    ):
        assert (out / name).stat().st_size > 0, name
    info = json.loads((out / "run.json").read_text())
    assert not info["failures"] and info["perturbations"]["truncate"]["words_ratio"] < 0.4
    distances = pd.read_csv(out / "distances.csv", keep_default_na=False)
    assert len(distances) == 3 * 2 * 7 and (distances["error"] == "").all()
    measures = pd.read_csv(out / "measures.csv")
    assert len(measures) == 3 * 5 * 2 and (measures["gap"] > 0).all()  # every metric tells the domains apart
    chi = measures[measures["metric"] == "chi"].set_index(["perturbation", "repetition"])
    # CHI counts words: shuffling words, or swapping halves within the sample, leaves its distance exactly.
    assert (chi.loc["shuffle_words", "shift"] == 0).all() and (chi.loc["swap_halves", "shift"] == 0).all()
    assert (chi.loc["truncate", "d_perturbed"] != chi.loc["truncate", "d_same"]).all()
    assert (chi.loc["remove_stopwords", "shift"] > 0.5).all()  # a third of the tokens gone: far from R
    fid = measures[(measures["metric"] == "fid") & (measures["perturbation"] == "truncate")]
    assert (fid["shift"] > 0.1).all()  # embeddings see the length change
    summary = pd.read_csv(out / "perturbation.csv")
    assert_caption_warns(  # 2 repetitions: the heatmap says so under it
        out / "perturb_heatmap.png",
        lambda shown, where: perturbation_heatmap(summary, where / "h.png", title=info["title"], warnings=shown),
        run_warnings(info),
        tmp_path / "redrawn",
    )
    report = (out / "report.html").read_text()
    assert "Perturbation sensitivity (000 §6.2)" in report and report.count("<img") >= 1

    # With a KSC run of the same pair, the shift table joins that pair's section, beside Table 3.
    from omegaconf import OmegaConf

    from textmetric_bench.reports.html.report import build_report
    from textmetric_bench.running.registry import compose_config
    from textmetric_bench.tasks.ksc import run_ksc

    ksc_cfg = compose_config(
        ["k=4", "n=12", "repetitions=2", "metrics=[chi]", "progress=false", f"data.cache_dir={cache_dir}"]
    )
    run_ksc(ksc_cfg, tmp_path / "ksc")
    (tmp_path / "ksc" / ".hydra").mkdir()
    OmegaConf.save(ksc_cfg, tmp_path / "ksc" / ".hydra" / "config.yaml")  # as the Hydra app leaves it
    joint = build_report([tmp_path / "ksc", out], tmp_path / "joint")["report_html"].read_text()
    assert joint.count("<h2>") == 1 and "KSC k=4" in joint and "Perturbation sensitivity (000 §6.2)" in joint
