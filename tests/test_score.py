"""``textmetric_bench.score(metric, texts_a, texts_b)`` (bench/session/scoring.py): the value a benchmark run writes
into distances.csv for the same two corpora and metric seed, with the same embedder and cache."""

from __future__ import annotations

import pandas as pd
import pytest

import textmetric_bench
from textmetric_bench.collections.seeds import metric_seed
from textmetric_bench.errors import ConfigError
from textmetric_bench.running.failed_corpora import rebuild_collections

SEED = 4


@pytest.fixture(scope="module")
def benchmark_run(tmp_path_factory, cache_dir):
    """A small KSC run of a text metric, an embedding metric and a stochastic one (mauve's k-means)."""
    out = tmp_path_factory.mktemp("run") / "run"
    result = textmetric_bench.evaluate(
        ["chi", "fid", "mauve"],
        pair="fortune_computing_people",
        k=3,
        n=20,
        repetitions=2,
        seed=SEED,
        out_dir=out,
        progress=False,
        report=False,
        config={"data.cache_dir": str(cache_dir), "engine.workers": 1},
    )
    assert result.passed
    return result


def test_score_gives_the_runs_value_for_the_same_corpora_and_seed(benchmark_run, cache_dir):
    task, collections = rebuild_collections(benchmark_run.run_dir)
    distances = benchmark_run.distances
    checked = 0
    for evaluation in collections.evaluations:
        if evaluation.aside or evaluation.fields[0] != 1:  # repetition 1's three pairs
            continue
        row = dict(zip(task.fields, evaluation.fields))
        for metric, params in (("chi", {}), ("fid", {}), ("mauve", {})):
            logged = distances.loc[
                (distances["metric"] == metric)
                & (distances["repetition"] == row["repetition"])
                & (distances["i"] == row["i"])
                & (distances["j"] == row["j"]),
                "distance",
            ]
            value = textmetric_bench.score(
                metric,
                collections.corpora[evaluation.p],
                collections.corpora[evaluation.q],
                seed=metric_seed(SEED, 1),
                config={"data.cache_dir": str(cache_dir)},
                **params,
            )
            assert value == pytest.approx(float(logged.iloc[0]), rel=1e-12, abs=1e-12), (metric, row)
            checked += 1
    assert checked == 9


def test_score_refuses_what_a_run_refuses():
    texts = ["one text", "another text"]
    with pytest.raises(ConfigError, match="no parameter"):
        textmetric_bench.score("chi", texts, texts, bogus=1)
    with pytest.raises(ConfigError, match=r"did you mean seed=1 \(score\(\)'s own argument\)\?$"):
        textmetric_bench.score("fid", texts, texts, sed=1)  # a metric of no parameters
    with pytest.raises(ConfigError, match="texts_b is empty"):
        textmetric_bench.score("chi", texts, [])
    with pytest.raises(ConfigError, match="texts_a must be a list of strings"):
        textmetric_bench.score("chi", "one text", texts)
    with pytest.raises(ConfigError, match=r"^texts_a\[1\] is not a string but int 5 \(2 such items\)$"):
        textmetric_bench.score("chi", ["a text", 5, None], texts)
    with pytest.raises(ConfigError, match="unknown metric 'chii'"):
        textmetric_bench.score("chii", texts, texts)
    with pytest.raises(ConfigError, match="one metric"):
        textmetric_bench.score(["chi", "fid"], texts, texts)
    assert isinstance(pd.Series([textmetric_bench.score("chi", texts, ["other words here"])]).iloc[0], float)
    with pytest.raises(ConfigError, match="texts_b is a set, which has no fixed order"):
        textmetric_bench.score("chi", texts, set(texts))
    with pytest.raises(ConfigError, match=r"texts_a is a DataFrame: pass one column"):  # iterating gives column names
        textmetric_bench.score("chi", pd.DataFrame({"text": texts}), texts)
    with pytest.raises(ConfigError, match=r"texts_b is a dict: pass one column"):
        textmetric_bench.score("chi", texts, dict(enumerate(texts)))


def test_score_takes_a_column_or_an_array_of_texts_as_the_list():
    """A pandas column, a numpy array, a tuple or a generator of strings is the corpus its items make."""
    import numpy as np

    a = ["the cat sat on the mat", "a dog ran in the park", "the cat sat down"]
    b = ["stocks fell on monday", "the market rose again", "a dog ran home"]
    expected = textmetric_bench.score("chi", a, b)
    frame = pd.DataFrame({"text": a, "other": b})
    assert textmetric_bench.score("chi", frame["text"], frame["other"]) == expected
    assert textmetric_bench.score("chi", np.array(a), tuple(b)) == expected
    assert textmetric_bench.score("chi", (text for text in a), b) == expected
    assert textmetric_bench.score("chi", a, a) != expected  # the corpora are read, not ignored


def test_the_documented_calls_name_parameters_their_metrics_take():
    """docs/python-api.md's examples of ``score`` and its docstring's: every keyword but ``seed`` and ``config`` is a
    parameter of the named metric (both once showed ``scaling=5`` for mauve, which refuses it)."""
    import ast
    import re

    from textmetric_bench import PROJECT_ROOT
    from textmetric_bench.api.registry import get_metric

    page = (PROJECT_ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    calls = [line.split("#")[0].strip() for line in page.splitlines() if line.startswith("tb.score(")]
    assert len(calls) >= 3
    for call in calls:
        node = ast.parse(call).body[0].value
        if not isinstance(node.args[0], ast.Constant):  # a function decorated in the page's own cell
            continue
        info = get_metric(node.args[0].value)
        for keyword in node.keywords:
            if keyword.arg not in ("seed", "config"):
                assert keyword.arg in info.params, (call, sorted(info.params))
    named = re.findall(r"``(\w+)=[^`]*`` for (\w+)", textmetric_bench.score.__doc__ or "")
    assert named  # the docstring's example of a parameter
    for key, metric in named:
        assert key in get_metric(metric).params, (key, metric)
