"""A similarity (``higher_is_more_different=False``) is scored on its negation, in every measure.

The similarity is real: the cosine of the two corpora's mean MiniLM embeddings, on a small real
KSC study of the fortune pair. Registered as a similarity it must score exactly as its negation
registered as a distance; registered the wrong way round, the run must say so.
"""

import json
import logging
import shutil

import numpy as np
import pandas as pd
import pytest

from textmetric_bench.api import as_embeddings, metric
from textmetric_bench.api.registry import unregister
from textmetric_bench.measures.ifc import gap_closed, ifc_score
from textmetric_bench.measures.perturbation import relative_shift
from textmetric_bench.measures.robustness import robustness_score
from textmetric_bench.running.registry import compose_config
from textmetric_bench.tasks.ksc import run_ksc

KSC_MEASURES = ["rho", "omega2", "L", "A", "Aw"]


def mean_embedding_cosine(p, q, *, seed: int = 0) -> float:
    """Cosine similarity of the corpora's mean embeddings: 1 for corpora that point the same way."""
    a, b = as_embeddings(p).mean(axis=0), as_embeddings(q).mean(axis=0)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def negated_mean_embedding_cosine(p, q, *, seed: int = 0) -> float:
    """The same similarity turned into a distance by hand."""
    return -mean_embedding_cosine(p, q, seed=seed)


#: name -> (function, higher_is_more_different): declared right, then declared the wrong way round.
METRICS = {
    "cosine_similarity": (mean_embedding_cosine, False),
    "cosine_negated": (negated_mean_embedding_cosine, True),
    "cosine_similarity_unflagged": (mean_embedding_cosine, True),
    "cosine_negated_flagged": (negated_mean_embedding_cosine, False),
}


def register(name: str) -> None:
    fn, higher = METRICS[name]
    metric(name, inputs="embeddings", symmetric=True, higher_is_more_different=higher)(fn)


def ksc_config(cache_dir, mirror_dir, metrics):
    """A small real KSC study: the fortune pair, k = 4, n = 20, 2 repetitions."""
    return compose_config(
        [
            f"metrics=[{','.join(metrics)}]",
            "k=4",
            "n=20",
            "repetitions=2",
            "progress=false",
            f"data.cache_dir={cache_dir}",
            f"data.mirror={mirror_dir}",
        ]
    )


@pytest.fixture(scope="module")
def ksc_run(tmp_path_factory, cache_dir, mirror_dir):
    """(config, run directory, result) of one KSC run of the four registrations."""
    for name in METRICS:
        register(name)
    out = tmp_path_factory.mktemp("ksc")
    cfg = ksc_config(cache_dir, mirror_dir, METRICS)
    try:
        yield cfg, out, run_ksc(cfg, out)
    finally:
        for name in METRICS:
            unregister(name)


def per_metric(frame: pd.DataFrame, name: str, columns) -> np.ndarray:
    return frame[frame["metric"] == name].sort_values(["repetition"]).loc[:, columns].to_numpy(float)


def test_a_similarity_scores_exactly_as_its_negation(ksc_run):
    _, _, result = ksc_run
    similarity = per_metric(result.measures, "cosine_similarity", KSC_MEASURES)
    assert np.array_equal(similarity, per_metric(result.measures, "cosine_negated", KSC_MEASURES), equal_nan=True)
    assert np.isfinite(similarity).all()
    assert similarity[:, 0].mean() > 0.5  # right side up: ρ of the negation rises with the mixing gap
    # The distance table keeps the metric's own value, and z is of the oriented value.
    d = result.distances.sort_values(["repetition", "i", "j"])
    sim, neg = (d[d["metric"] == n] for n in ("cosine_similarity", "cosine_negated"))
    assert (sim["distance"].to_numpy() == -neg["distance"].to_numpy()).all() and (sim["distance"] > 0).all()
    assert (sim["z"].to_numpy() == neg["z"].to_numpy()).all()
    assert set(sim["orientation"]) == {"similarity"} and set(neg["orientation"]) == {"distance"}


def test_tables_and_charts_mark_the_similarity(ksc_run):
    _, out, _ = ksc_run
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["orientation"] == {
        "cosine_similarity": "similarity",
        "cosine_negated": "distance",
        "cosine_similarity_unflagged": "distance",
        "cosine_negated_flagged": "similarity",
    }
    measures = pd.read_csv(out / "measures.csv")
    assert set(measures.loc[measures["metric"] == "cosine_similarity", "orientation"]) == {"similarity"}
    table = pd.read_csv(out / "table3.csv", index_col="metric")
    assert table.loc["cosine_similarity", "orientation"] == "similarity"
    assert table.loc["cosine_negated", "orientation"] == "distance"
    text = (out / "table3.md").read_text()
    assert "| cosine_similarity (similarity, negated) |" in text and "| cosine_negated |" in text
    assert "scored on its negation" in text
    assert "cosine_similarity (similarity, negated)" in (out / "radar.svg").read_text()


def test_a_metric_flagged_the_wrong_way_round_is_reported(ksc_run, caplog, tmp_path):
    cfg, out, result = ksc_run
    warnings = result.info["orientation_warnings"]
    assert set(warnings) == {"cosine_similarity_unflagged", "cosine_negated_flagged"}
    assert warnings["cosine_similarity_unflagged"].endswith("register it with higher_is_more_different=False")
    assert "drop higher_is_more_different=False" in warnings["cosine_negated_flagged"]
    assert json.loads((out / "run.json").read_text())["orientation_warnings"] == warnings
    text = (out / "table3.md").read_text()
    notes = text[text.index("## Orientation") :]
    assert "`cosine_similarity_unflagged`" in notes and "`cosine_negated_flagged`" in notes
    assert "cosine_similarity`" not in notes and "`cosine_negated`" not in notes
    # The warning is logged as well: rerun in a copy of the directory (every evaluation is reused).
    again = shutil.copytree(out, tmp_path / "again")
    with caplog.at_level(logging.WARNING, logger="textmetric_bench.tasks.skeleton"):
        run_ksc(cfg, again)
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'cosine_similarity_unflagged'" in m and "higher_is_more_different=False" in m for m in logged)


def test_an_earlier_metric_keeps_its_orientation_after_its_plugin_is_gone(ksc_run, tmp_path, cache_dir, mirror_dir):
    _, out, result = ksc_run
    again = shutil.copytree(out, tmp_path / "again")
    unregister("cosine_similarity")
    try:
        later = run_ksc(ksc_config(cache_dir, mirror_dir, ["chi"]), again)
    finally:
        register("cosine_similarity")
    assert "cosine_similarity" in later.info["earlier_metrics"]
    assert later.info["orientation"]["cosine_similarity"] == "similarity"
    assert np.array_equal(
        per_metric(later.measures, "cosine_similarity", KSC_MEASURES),
        per_metric(result.measures, "cosine_similarity", KSC_MEASURES),
        equal_nan=True,
    )


def test_earlier_metrics_are_merged_in_planned_order_whatever_order_their_jobs_finished(
    ksc_run, tmp_path, cache_dir, mirror_dir
):
    """The log lists evaluations as they finished, which varies with the load; reversed here (the order two
    workers could finish them in), the merged rows and the measures summed over them stay the first run's."""
    _, out, result = ksc_run
    again = shutil.copytree(out, tmp_path / "again")
    log = again / "evaluations.jsonl"
    header, *rows = log.read_text().splitlines()
    log.write_text("\n".join([header, *reversed(rows), ""]))
    later = run_ksc(ksc_config(cache_dir, mirror_dir, ["chi"]), again)
    columns = ["metric", "repetition", "i", "j", "distance"]
    before = result.distances[columns].reset_index(drop=True)
    merged = later.distances.loc[later.distances["metric"] != "chi", columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(merged, before)
    for name in METRICS:
        assert np.array_equal(
            per_metric(later.measures, name, KSC_MEASURES),
            per_metric(result.measures, name, KSC_MEASURES),
            equal_nan=True,
        )


@pytest.mark.parametrize("s_size,s_inf", [([0.91, 0.93, 0.95], 0.94), ([0.2, 0.5], 0.4)])
def test_size_and_imbalance_robustness_do_not_change_with_the_sign(s_size, s_inf):
    s_size = np.array(s_size)
    assert robustness_score(-s_size, -s_inf) == robustness_score(s_size, s_inf)


def test_shift_and_gap_closed_read_a_negated_similarity_right():
    # Similarities: R and S alike (.9), perturbed S less (.8), the other source least (.5).
    same, perturbed, other = 0.9, 0.8, 0.5
    assert np.isnan(relative_shift(same, perturbed, other))  # raw: the gap s(R, O) − s(R, S) is negative
    assert relative_shift(-same, -perturbed, -other) == pytest.approx(0.25)  # a quarter of a domain change
    # IFC: self-similarity .95, g_0 at .4, g_T at .9: the similarity rises, most of the gap is closed.
    assert gap_closed(-0.4, -0.9, -0.95) == pytest.approx(0.5 / 0.55)
    assert ifc_score([0, 1, 2], [-0.4, -0.7, -0.9]) == 1.0


def test_a_built_in_metric_against_the_mixture_is_not_told_to_register_itself_again():
    """A built-in metric's orientation is the harness's: falling with the mixing gap on some corpora says how it
    behaves there, and the advice to register it with higher_is_more_different=False, which its user cannot
    follow, is for plugins only."""
    from textmetric_bench.measures.orientation import orientation_warnings

    measures = pd.DataFrame({"metric": ["zipf", "zipf", "mine", "mine"], "rho": [-0.9, -0.84, -0.9, -0.84]})
    warnings = orientation_warnings(measures, {"zipf": "distance", "mine": "distance"}, built_in={"zipf"})
    assert warnings["zipf"] == (
        "built-in metric 'zipf' (a distance) moves against the mixture on these corpora (mean ρ = -0.87 over 2 "
        "repetitions): its values fall as the mixing gap grows, so its ρ, ω², L and A count against it here"
    )
    assert warnings["mine"].endswith("register it with higher_is_more_different=False")
