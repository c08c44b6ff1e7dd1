"""Bad input fails before any long computation, with an error naming what is wrong and how to fix it.

Every case of the issue's list, and where its test lives:

| bad input | test |
|---|---|
| empty corpus | test_corpora.py::test_empty_corpus_after_normalisation_is_an_error; the "empty input raises" check of test_metric_contract.py |
| empty, headerless or malformed CSV/JSONL file | here (file, line and field named) |
| card whose parser options cannot work | here (delimiter, encoding, named column without header) |
| your own files and cards (missing file, unknown extension, missing field or column, too few texts, bad card option, cards directory) | test_own_corpora.py::test_a_bad_file_names_itself_the_line_or_field_and_the_fix and its neighbours; test_own_corpora_cli.py through the CLI |
| bad config values (seed, engine.*, devices, batch sizes, directories, ...) | test_config_validation.py, in-process and through the CLI |
| corpus smaller than k·n needs | test_ksc.py::test_too_small_source_says_how_many_texts_are_needed; test_end_to_end.py::test_bad_configuration_fails_fast_with_a_clear_message[n=5000] |
| robustness grid larger than the sources | test_robustness.py::test_small_sources_truncate_the_grid_and_say_so; here through the CLI |
| texts that are not strings | here (a card whose text field holds numbers; a metric given numbers) |
| duplicate-only corpora | here (one text repeated; two sides holding the same texts) |
| an all-zero embedding (no direction for cosines) | here (IRPR, CLASSIFIER) |
| NaN, wrong-shape or non-numeric embeddings from a custom embedder | test_embedding.py::test_nan_or_wrong_shape_from_an_embedder_is_a_clear_error; here through `embedder.factory` in a run |
| unknown metric name | test_config.py::test_unknown_metric_name_suggests_the_closest; test_plugins.py::test_unknown_metric_raises_with_suggestions |
| unknown pair or task name | test_corpora.py::test_unknown_name_suggests_a_card; here through the CLI |
| corrupted embedding shard | test_embedding.py::test_corrupted_shard_is_set_aside_and_recomputed; here in a run |
| corrupted cached corpus file | test_corpora.py::test_cached_file_with_wrong_checksum_is_fetched_again; here without mirror or network |
| checksum mismatch | test_corpora.py::test_tampered_mirror_file_is_rejected (mirror); here for a download |
| k < 3, n < k − 1 | test_ksc.py::test_impossible_parameters_are_rejected; test_end_to_end.py::test_bad_configuration_fails_fast_with_a_clear_message |

Metrics that raise, return NaN or hang are isolated, not rejected: test_runner.py, test_engine.py.
Fakes here stand in only for what must break (a card, an embedder, the network) and are named fake_*.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import time
import urllib.error
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_end_to_end import run_bench

from textmetric_bench.api.registry import get_metric
from textmetric_bench.data import corpora, fetch
from textmetric_bench.data.card_schema import CardFile, PairCard
from textmetric_bench.data.cards import corpus_card
from textmetric_bench.data.corpora import load_corpus, load_pair
from textmetric_bench.data.fetch import sha256_hex
from textmetric_bench.errors import DataError, EmbeddingError, MetricError
from textmetric_bench.running.registry import compose_config
from textmetric_bench.tasks.ksc import run_ksc

# --- corpora the cards describe wrongly ----------------------------------------------------------


def fake_jsonl_card(tmp_path: Path, name: str, records: list[dict], monkeypatch) -> Path:
    """A jsonl corpus card `name` (news_category's parser and normalisation) over ``records`` in a mirror."""
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    return fake_card(tmp_path, name, "texts.jsonl", data, "news_category", monkeypatch)


def fake_card(tmp_path: Path, name: str, file_name: str, data: bytes, like: str, monkeypatch, **parser) -> Path:
    """A corpus card `name` with corpus `like`'s parser (options changed by ``parser``) over one file in a mirror."""
    mirror = tmp_path / "mirror"
    (mirror / name).mkdir(parents=True, exist_ok=True)
    (mirror / name / file_name).write_bytes(data)
    base = corpus_card(like)
    card = dataclasses.replace(
        base,
        name=name,
        files=(CardFile(path=file_name, sha256=sha256_hex(data), url=f"https://example.org/{file_name}"),),
        parser=dataclasses.replace(base.parser, options={**base.parser.options, **parser}),
    )
    cards = getattr(corpora.corpus_card, "fake_cards", None)
    if cards is None:
        real = corpora.corpus_card
        cards = {}

        def fake_corpus_card(requested: str, search_path=None):
            return cards[requested] if requested in cards else real(requested)

        fake_corpus_card.fake_cards = cards  # type: ignore[attr-defined]
        monkeypatch.setattr(corpora, "corpus_card", fake_corpus_card)
    cards[name] = card
    return mirror


@pytest.mark.parametrize("value", [42, 3.5, None, ["a list"]])
def test_a_text_field_holding_no_text_names_the_corpus_field_and_line(value, tmp_path, monkeypatch):
    records = [{"headline": "a real headline"}, {"headline": value}]
    mirror = fake_jsonl_card(tmp_path, "fake_numbers", records, monkeypatch)
    with pytest.raises(DataError) as err:
        load_corpus("fake_numbers", cache_dir=tmp_path / "cache", mirror=mirror)
    message = str(err.value)
    for part in ("'fake_numbers'", "texts.jsonl", "line 2", "'headline'", "not a text", "parser.text_field"):
        assert part in message, message


CSV_WITH_HEADER = "banking77"  # header `text,category`
JSONL = "news_category"  # one object a line, text in `headline`


@pytest.mark.parametrize(
    "file_name,data,like,parser,parts",
    [
        ("texts.csv", b"", CSV_WITH_HEADER, {}, ["texts.csv is empty", "put texts in it"]),
        ("texts.jsonl", b"\n  \n", JSONL, {}, ["texts.jsonl is empty"]),
        ("texts.csv", b"text,category\n", CSV_WITH_HEADER, {}, ["holds no record", "only a header"]),
        (
            "texts.csv",
            b"utterance,category\nhello there,greet\n",
            CSV_WITH_HEADER,
            {},
            ["line 1 (the header)", "['utterance', 'category']", "no 'text'", "parser.text_column", "parser.header"],
        ),
        (
            "texts.csv",
            b"hello there,greet\nhow are you,greet\n",
            CSV_WITH_HEADER,
            {"header": False, "text_column": 2},
            ["line 1 has 2 column(s), no column 2", "parser.text_column"],
        ),
        (
            "texts.csv",
            b"text,category\nfine,a\ncaf\xe9 au lait,b\n",
            CSV_WITH_HEADER,
            {},
            ["line 3 is not valid utf-8", "parser.encoding"],
        ),
        ("texts.jsonl", b'{"headline": "one"}\n{"headline": "two"\n', JSONL, {}, ["line 2 is not valid JSON"]),
        (
            "texts.jsonl",
            b'{"title": "one"}\n',
            JSONL,
            {},
            ["line 1 has no field 'headline'", "['title']", "parser.text_field"],
        ),
        ("texts.jsonl", b'["one", "two"]\n', JSONL, {}, ["line 1 holds a JSON list, not an object"]),
    ],
    ids=[
        "empty-csv",
        "blank-jsonl",
        "csv-header-only",
        "csv-without-text-column",
        "csv-row-too-short",
        "csv-not-utf8",
        "jsonl-broken-line",
        "jsonl-without-field",
        "jsonl-not-objects",
    ],
)
def test_an_empty_or_malformed_corpus_file_names_the_file_the_line_and_the_fix(
    file_name, data, like, parser, parts, tmp_path, monkeypatch
):
    mirror = fake_card(tmp_path, "fake_own", file_name, data, like, monkeypatch, **parser)
    with pytest.raises(DataError) as err:
        load_corpus("fake_own", cache_dir=tmp_path / "cache", mirror=mirror)
    message = str(err.value)
    assert message.startswith("corpus 'fake_own': file ") and str(tmp_path / "cache") in message, message
    for part in parts:
        assert part in message, message
    assert "\n" not in message


def test_a_metric_given_numbers_instead_of_texts_says_so():
    with pytest.raises(MetricError, match="holds a int, not a str"):
        get_metric("chi")(["a text", 42], ["another text"])


@pytest.mark.parametrize("name", ["irpr", "classifier"])  # cosines and unit rows: a zero row has no direction
def test_an_all_zero_embedding_is_named_by_the_metrics_that_need_directions(name):
    rng = np.random.default_rng(0)
    p, q = rng.standard_normal((30, 8)), rng.standard_normal((30, 8))
    q[4] = 0.0
    with pytest.raises(MetricError, match="second corpus holds an all-zero embedding, which has no direction"):
        get_metric(name)(p, q)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("chi", {"top": -1}, "CHI: top must be an integer >= 1"),  # was the table of all tokens but the last
        ("chi", {"top": 0}, "CHI: top must be an integer >= 1"),  # was "neither corpus contains a word token"
        ("zipf", {"log_rank_resolution": -1}, "ZIPF: log_rank_resolution must be 0 (every rank) or positive"),
        ("cluster_js", {"kmeans_num_redo": 0}, "k-means: kmeans_num_redo must be an integer >= 1, not 0"),
        ("cluster_js", {"kmeans_max_iter": -1}, "k-means: kmeans_max_iter must be an integer >= 1, not -1"),
        ("mauve", {"kmeans_max_iter": 0}, "k-means: kmeans_max_iter must be an integer >= 1, not 0"),
        ("classifier", {"C": 0.0}, "CLASSIFIER: C (the SVM's regularisation) must be a positive number"),
    ],
)
def test_a_parameter_outside_its_range_is_refused_by_name(name, params, message):
    info = get_metric(name)
    rng = np.random.default_rng(0)
    if info.inputs == "texts":
        p = [f"the {w} of text {i}" for i, w in enumerate(["cat", "dog", "fish"] * 10)]
        q = [f"a {w} in text {i}" for i, w in enumerate(["bird", "cow", "fish"] * 10)]
    else:
        p, q = rng.standard_normal((40, 8)), rng.standard_normal((40, 8)) + 0.5
    info(p, q)  # the defaults take these corpora
    with pytest.raises(MetricError, match=re.escape(message)):
        info(p, q, **params)


def test_a_corpus_of_one_repeated_text_is_rejected(tmp_path, monkeypatch):
    mirror = fake_jsonl_card(tmp_path, "fake_echo", [{"headline": " Same  text "}] * 50, monkeypatch)
    with pytest.raises(DataError, match=r"'fake_echo': its 50 raw texts are all duplicates of one text"):
        load_corpus("fake_echo", cache_dir=tmp_path / "cache", mirror=mirror)


def test_two_sides_holding_the_same_texts_are_rejected(tmp_path, monkeypatch):
    records = [{"headline": f"headline number {i}"} for i in range(30)]
    mirror = fake_jsonl_card(tmp_path, "fake_a", records, monkeypatch)
    fake_jsonl_card(tmp_path, "fake_b", records[::-1], monkeypatch)
    monkeypatch.setattr(
        corpora, "pair_card", lambda name, cards=None: PairCard(a="fake_a", b="fake_b", name=name, description="fake")
    )
    with pytest.raises(DataError, match="'fake_a' is empty once the texts it shares with the other side"):
        load_pair("fake_twins", cache_dir=tmp_path / "cache", mirror=mirror)


# --- the cache and the network -------------------------------------------------------------------


def fake_fetch_url_tampered(url: str, dest: Path) -> None:
    dest.write_text("atis_flight, a file the publisher changed\n", encoding="utf-8")


def fake_fetch_url_unreachable(url: str, dest: Path) -> None:
    raise urllib.error.URLError("network is unreachable")


def test_a_download_with_the_wrong_checksum_is_rejected_and_not_cached(tmp_path, monkeypatch):
    monkeypatch.delenv("BENCH_DATA_MIRROR", raising=False)
    monkeypatch.setattr(fetch, "_fetch_url", fake_fetch_url_tampered)
    with pytest.raises(DataError) as err:
        load_corpus("atis", cache_dir=tmp_path)
    message = str(err.value)
    spec = corpus_card("atis").files[0]
    for part in ("'atis'", spec.url, spec.sha256, "publisher may have changed it", "mirror"):
        assert part in message, message
    assert not list((tmp_path / "corpora" / "atis").iterdir())  # neither the file nor a partial one


def test_a_corrupted_cached_corpus_without_mirror_or_network_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.delenv("BENCH_DATA_MIRROR", raising=False)
    monkeypatch.setattr(fetch, "_fetch_url", fake_fetch_url_unreachable)
    cached = tmp_path / "corpora" / "atis" / corpus_card("atis").files[0].path
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"\x00\x01 half a file")
    with pytest.raises(DataError) as err:
        load_corpus("atis", cache_dir=tmp_path)
    for part in ("'atis'", "cannot download", "BENCH_DATA_MIRROR", "data.mirror"):
        assert part in str(err.value)


def ksc_config(cache_dir, *overrides):
    return compose_config(["k=3", "n=12", "repetitions=1", "progress=false", f"data.cache_dir={cache_dir}", *overrides])


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_corrupted_embedding_shards_are_set_aside_and_the_run_gives_the_same_tables(tmp_path, caplog):
    cache = tmp_path / "cache"
    first = run_ksc(ksc_config(cache, "metrics=[fid]"), tmp_path / "first")
    shards = list((cache / "embeddings").glob("*/*.npz"))
    assert shards
    shards[0].write_bytes(b"PK\x03\x04 truncated")
    for other in shards[1:]:
        other.write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="textmetric_bench.features.embedding"):
        second = run_ksc(ksc_config(cache, "metrics=[fid]"), tmp_path / "second")
    assert shards[0].name in caplog.text and "setting it aside" in caplog.text
    assert second.info["embedding"]["encoded"] == first.info["embedding"]["encoded"] > 0
    pd.testing.assert_series_equal(first.distances["distance"], second.distances["distance"])


# --- a user's own embedder (embedder.factory) ----------------------------------------------------


def hashing_embedder(n_features: int = 64):
    """A real embedder a user might plug in: scikit-learn's hashed bag of words."""
    from sklearn.feature_extraction.text import HashingVectorizer

    vectorizer = HashingVectorizer(n_features=n_features, alternate_sign=False)
    return lambda texts: vectorizer.transform(texts).toarray()


FAKE_CALLS: list[int] = []


def fake_nan_embedder():
    def encode(texts):
        FAKE_CALLS.append(len(texts))
        out = np.ones((len(texts), 4))
        out[-1, 0] = np.nan
        return out

    return encode


def fake_flat_embedder():
    return lambda texts: np.ones(len(texts))


def fake_words_embedder():
    return lambda texts: [["not", "a", "number"] for _ in texts]


def fake_no_encoder():
    return 42


def test_a_custom_embedder_plugs_in_through_its_factory(tmp_path):
    cfg = ksc_config(
        tmp_path / "cache",
        "metrics=[fid]",
        "+embedder.factory=test_bad_input:hashing_embedder",
        "+embedder.options.n_features=32",
    )
    result = run_ksc(cfg, tmp_path / "run")
    assert result.info["embedding"]["model"] == "test_bad_input:hashing_embedder[('n_features', 32)]"
    assert result.failures == {} and len(result.measures) == 1
    assert (result.distances["distance"] > 0).all()


@pytest.mark.parametrize(
    "factory,message",
    [
        ("test_bad_input:fake_nan_embedder", r"returned NaN/inf for 1 of 8 texts"),
        ("test_bad_input:fake_flat_embedder", r"returned shape \(8,\) for 8 texts; expected \(8, dims\)"),
        ("test_bad_input:fake_words_embedder", "not an array of numbers"),
        ("test_bad_input:fake_no_encoder", "neither callable nor has an encode"),
        ("test_bad_input.fake_nan_embedder", "must read 'package.module:function'"),
        ("no_such_package.embed:make", "cannot import 'no_such_package.embed'"),
        ("test_bad_input:no_such_function", "has no 'no_such_function'"),
    ],
)
def test_a_broken_custom_embedder_fails_before_any_evaluation(factory, message, tmp_path):
    FAKE_CALLS.clear()
    cfg = ksc_config(tmp_path / "cache", "metrics=[fid]", f"+embedder.factory={factory}")
    with pytest.raises(EmbeddingError, match=message) as err:
        run_ksc(cfg, tmp_path / "run")
    assert factory.split(":")[0] in str(err.value)
    assert FAKE_CALLS in ([], [8])  # the probe of 8 texts failed; the 24 others were never encoded
    assert not (tmp_path / "run" / "evaluations.jsonl").exists()


# --- names and sizes through the command line -----------------------------------------------------


@pytest.mark.parametrize(
    "override,messages",
    [
        (["pair=nosuch"], ["there is no pair 'nosuch'; the choices of pair are", "fortune_computing_people"]),
        (["task=nosuch"], ["there is no task 'nosuch'; the choices of task are", "robustness"]),
        (["task.name=nosuch"], ["unknown task 'nosuch'", "ksc"]),
        (["pair.name=fortune_computing_ppl"], ["unknown pair", "Did you mean 'fortune_computing_people'"]),
        (
            ["task=robustness", "sizes=[3000]", "imbalance_total=3001"],
            ["no point of the size curve fits sources fortune_computing", "lower `sizes`"],
        ),
    ],
)
def test_unknown_names_and_impossible_grids_fail_fast_on_the_command_line(override, messages, tmp_path, cache_dir):
    start = time.monotonic()
    proc = run_bench(*override, "metrics=[fid]", f"hydra.run.dir={tmp_path}", cache_dir=cache_dir, timeout=120)
    output = proc.stderr + proc.stdout
    assert proc.returncode != 0
    for message in messages:
        assert message in output, output[-2000:]
    assert "Traceback" not in output
    assert time.monotonic() - start < 60  # nothing was embedded or evaluated
    assert not (tmp_path / "evaluations.jsonl").exists()
