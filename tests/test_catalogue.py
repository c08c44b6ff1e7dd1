"""The metric catalogue (metrics/README.md) is generated from the registry and kept up to date."""

import pytest

from textmetric_bench.api.registry import (
    NOT_DECLARED,
    builtin_metrics,
    get_metric,
    metric,
    unregister,
)
from textmetric_bench.running.catalogue import CATALOGUE, catalogue_markdown, catalogue_row, main


def test_committed_catalogue_is_what_the_generator_writes():
    assert CATALOGUE.read_text(encoding="utf-8") == catalogue_markdown(), (
        "metrics/README.md is out of date: run python -m textmetric_bench.running.catalogue"
    )


@pytest.mark.parametrize("name", builtin_metrics())
def test_every_builtin_metric_declares_its_facts(name):
    info = get_metric(name)
    assert info.source != NOT_DECLARED and info.source.strip()
    assert info.value_range is not None
    assert info.failure_modes and all(mode.strip() for mode in info.failure_modes)
    assert f"`{name}`" in catalogue_markdown()


def test_stochastic_metrics_are_those_that_use_their_seed():
    stochastic = {n for n in builtin_metrics() if get_metric(n).stochastic}
    assert {"mauve", "classifier", "cluster_kl_forward", "cluster_auc", "chance"} <= stochastic
    assert not stochastic & {"fid", "chi", "zipf", "pr", "dc", "irpr", "oracle"}


@pytest.fixture
def fake_plugin_without_facts():
    @metric("fake_without_facts", inputs="texts", symmetric=True)
    def fake_without_facts(p, q, *, seed: int = 0) -> float:
        return 0.0

    yield get_metric("fake_without_facts")
    unregister("fake_without_facts")


def test_a_plugin_may_leave_the_facts_out(fake_plugin_without_facts):
    row = catalogue_row(fake_plugin_without_facts)
    assert row.count(NOT_DECLARED) == 3  # range, source, failure modes
    assert "fake_without_facts" not in catalogue_markdown()  # built-ins only


def test_check_flags_a_stale_file(tmp_path):
    stale = tmp_path / "README.md"
    stale.write_text("old\n")
    assert main(["--check"], path=stale) == 1
    assert main([], path=stale) == 0 and main(["--check"], path=stale) == 0


def test_bad_facts_are_rejected():
    def fake_bad_range(p, q, *, seed: int = 0) -> float:
        return 0.0

    with pytest.raises(TypeError, match="value_range"):
        metric("fake_bad_range", inputs="texts", symmetric=True, value_range=(1.0, 0.0))(fake_bad_range)
