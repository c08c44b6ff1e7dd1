"""Every config group composes; each metric's node is generated from its signature; bad names fail early."""

import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
from typing import Any, Literal, Optional

import pandas as pd
import pytest
from checkout_copy import copy_checkout, installed_layout
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.api.registry import available_metrics, builtin_metrics, default_metrics, get_metric
from textmetric_bench.errors import ConfigError
from textmetric_bench.tasks.config import CONF_DIR, selected_metrics
from textmetric_bench.running.registry import compose_config
from textmetric_bench.running.metric_configs import config_type, metric_dataclass, metric_override_problems

GROUPS = sorted(p.name for p in CONF_DIR.iterdir() if p.is_dir() and p.name != "hydra")


def options(group):
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def compose_with(*overrides):
    return compose_config(list(overrides))


@pytest.mark.parametrize("group,option", [(g, o) for g in GROUPS for o in options(g)])
def test_every_group_option_composes(group, option):
    cfg = compose_with(f"{group}={option}")
    OmegaConf.to_container(cfg, resolve=True)  # every interpolation resolves
    assert cfg[group] is not None


# --- metric nodes: generated from the registry, one source of truth -------------------------------


@pytest.fixture(scope="module")
def default_config():
    """The default composition, composed once for the module (Hydra takes a tenth of a second per compose)."""
    return compose_with()


@pytest.mark.parametrize("name", available_metrics())
def test_every_metric_node_holds_its_signature_defaults(name, default_config):
    info = get_metric(name)
    assert OmegaConf.to_container(OmegaConf.structured(metric_dataclass(info))) == info.params
    assert OmegaConf.to_container(default_config.metric[name]) == info.params


@pytest.mark.parametrize("name", available_metrics())
def test_every_metric_node_composes_alone_and_is_selected(name):
    cfg = compose_with(f"metric=[{name}]", f"metrics=[{name}]")
    assert list(cfg.metric) == [name]
    ((info, params),) = selected_metrics(cfg)
    assert info.name == name and params == info.params


def test_no_config_file_lists_metrics():
    """Adding a built-in metric is one file: no conf/metric/, and no YAML names a metric."""
    assert not (CONF_DIR / "metric").exists()
    names = re.compile(r"\b(" + "|".join(map(re.escape, available_metrics())) + r")\b")
    for path in CONF_DIR.rglob("*.yaml"):
        assert not names.findall(path.read_text()), path


def test_the_default_node_holds_every_registered_metric():
    assert set(compose_with().metric) == set(available_metrics())


def test_default_config_runs_every_builtin_but_the_opt_in_ones_on_the_embedded_pair():
    cfg = compose_with()
    assert cfg.pair.name == "fortune_computing_people" and cfg.task.name == "ksc"
    opt_in = {n for n in builtin_metrics() if get_metric(n).opt_in}
    assert opt_in >= {"face_so", "ctrleval_coherence"}
    assert [m.name for m, _ in selected_metrics(cfg)] == default_metrics()
    assert {m.name for m, _ in selected_metrics(cfg)} >= set(builtin_metrics()) - opt_in
    assert not opt_in & {m.name for m, _ in selected_metrics(cfg)}
    assert [m.name for m, _ in selected_metrics(compose_with("metrics=default"))] == default_metrics()
    assert {m.name for m, _ in selected_metrics(compose_with("metrics=all"))} >= set(builtin_metrics())
    # a group inside a list: the default metrics and the two bounds, each once
    both = [m.name for m, _ in selected_metrics(compose_with("metrics=[default,oracle,chance,chi]"))]
    assert both == default_metrics() + ["oracle", "chance"]


def test_a_parameter_override_reaches_the_selected_parameters():
    cfg = compose_with(
        "metrics=[chi,zipf,mauve]",
        "metric.mauve.kmeans_num_redo=1",
        "metric.zipf.top=30",
        "metric.mauve.num_buckets=20",
        "metric.mauve.kmeans_max_iter=50",
    )
    params = {m.name: p for m, p in selected_metrics(cfg)}
    assert params["mauve"] == {
        **get_metric("mauve").params,
        "kmeans_num_redo": 1,
        "num_buckets": 20,
        "kmeans_max_iter": 50,
    }
    assert params["zipf"]["top"] == 30 and params["chi"] == get_metric("chi").params


def test_an_annotated_parameter_is_typed_and_an_unannotated_one_is_not():
    assert compose_with("metric.classifier.C=2").metric.classifier.C == 2.0  # float: 2 becomes 2.0
    with pytest.raises(ConfigCompositionException):
        compose_with("metric.mauve.kmeans_max_iter=abc")
    assert compose_with("metric.mauve.num_buckets=abc").metric.mauve.num_buckets == "abc"  # int | str: Any
    assert compose_with("metric.mauve.kmeans_num_redo=auto").metric.mauve.kmeans_num_redo == "auto"


@pytest.mark.parametrize(
    "hint,expected",
    [
        (int, int),
        (float, float),
        (bool, bool),
        (str, str),
        (Optional[int], int | None),  # noqa: UP045
        (float | None, float | None),
        (Literal["a", "b"], Any),
        (int | str, Any),
        (list[int], Any),
        (Any, Any),
    ],
)
def test_config_types_are_scalars_or_optional_scalars(hint, expected):
    assert config_type(hint) == expected


def test_unknown_metric_name_suggests_the_closest():
    with pytest.raises(ConfigError, match="Did you mean fid"):
        selected_metrics(compose_with("metrics=[fdi]"))


def test_unknown_metric_parameter_is_rejected():
    with pytest.raises(ConfigError, match="no parameter"):
        selected_metrics(compose_with("metrics=[chi]", "+metric.chi.topp=10"))
    with pytest.raises(ConfigCompositionException):  # without `+`, Hydra refuses the key itself
        compose_with("metrics=[chi]", "metric.chi.topp=10")


@pytest.mark.parametrize(
    "override,line",
    [
        (
            "metric.chi.topp=10",
            "metric 'chi' has no parameter(s) ['topp']; it takes ['normalise', 'top']; did you mean top?",
        ),
        ("+metric.chi.topp=10", "metric 'chi' has no parameter(s) ['topp']"),
        ("metric.chi={top:3,tpo:4}", "metric 'chi' has no parameter(s) ['tpo']"),
        ("metric.chi={topp:3,normalize:4}", "did you mean normalise for normalize, top for topp?"),
        (
            "metric.mauve.kmeans_max_iter=abc",
            (
                "metric.mauve.kmeans_max_iter='abc': parameter 'kmeans_max_iter' of "
                "metric 'mauve' takes a whole number, e.g. metric.mauve.kmeans_max_iter=500"
            ),
        ),
        ("metric.mauve.kmeans_max_iter=1,abc", "metric.mauve.kmeans_max_iter='abc'"),
        ("metric.face_so.include_dc=maybe", "takes true or false, e.g. metric.face_so.include_dc=false"),
        ("metric.chhi.top=3", "unknown metric 'chhi'. Did you mean chi"),
        ("metric=[chi,fdi]", "unknown metric 'fdi'. Did you mean fid"),
        ("metric={chi:{top:3}}", "metric= takes names of metrics (whose parameters are composed), not their settings"),
        ("metric={chi:{top:3}}", "set a parameter as metric.<metric>.<parameter>=<value>, e.g. metric.chi.top=3"),
        (
            "+metric.chi.top=3",
            ("+metric.chi.top: metric 'chi' has this parameter already; set it without the '+': metric.chi.top=3"),
        ),
    ],
)
def test_a_bad_metric_override_is_one_line_naming_metric_and_parameter(override, line):
    problems = metric_override_problems([override])
    assert len(problems) == 1 and line in problems[0], problems
    assert problems[0].startswith(override.split("=")[0]), problems  # the override first, as for every other key


def test_a_parameter_like_none_of_the_metrics_gets_no_suggestion():
    assert metric_override_problems(["metric.chi={colour:3}"]) == [
        "metric.chi={colour:3}: metric 'chi' has no parameter(s) ['colour']; it takes ['normalise', 'top']"
    ]


@pytest.mark.parametrize(
    "override",
    [
        "metric.chi.top=3",
        "metric.mauve.num_buckets=auto",
        "metric=registered",
        "metrics=[chi]",
        "metric.classifier.C=2,3",
        "~metric.chi.top",
        "++metric.chi.top=3",
        "hydra.run.dir=x",
    ],
)
def test_good_overrides_pass_the_metric_check(override):
    assert metric_override_problems([override]) == []


def test_the_command_line_names_a_missing_parameter_in_one_line(tmp_path):
    env = {
        **os.environ,
        "BENCH_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "textmetric_bench", "metrics=[chi]", "metric.chi.topp=10"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "error: metric.chi.topp=10: metric 'chi' has no parameter(s) ['topp']; it takes ['normalise', 'top']; did you "
        "mean top?"
    ], proc.stderr[-2000:]
    assert not (tmp_path / "outputs").exists()


def test_metric_params_of_the_check_baseline_are_plain_json():
    params = OmegaConf.to_container(compose_with("task=check").metric, resolve=True)
    assert json.loads(json.dumps(params)) == {n: get_metric(n).params for n in available_metrics()}


def test_from_the_checkout_the_team_mirror_and_the_baseline_are_beside_it():
    """The installed wheel's counterparts (no mirror, the shipped baseline) are in tests/test_installed_wheel.py."""
    cfg = compose_with("task=check")
    assert cfg.data.mirror_fallbacks == [str(PROJECT_ROOT / "../shared/datasets")]
    assert cfg.check.baseline == str(PROJECT_ROOT / "reports/baselines/ksc_fortune_computing_people.json")
    assert CONF_DIR == PROJECT_ROOT / "conf"


def test_a_composed_config_unpickles_in_a_fresh_process(tmp_path):
    """Launchers (joblib, Ray, submitit) send the config to processes that have not registered the nodes."""
    (tmp_path / "cfg.pkl").write_bytes(pickle.dumps(compose_with("metric.chi.top=7")))
    code = (
        "import pickle, sys; cfg = pickle.load(open(sys.argv[1], 'rb')); "
        "print(cfg.metric.chi.top, cfg.metric.chi._metadata.object_type.__name__)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "cfg.pkl")],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["7", "chi_params"]


def test_engine_defaults_are_the_documented_ones():
    engine = compose_with().engine
    assert (engine.timeout, engine.start_timeout, engine.retry_failed, engine.resume) == (600, 120, True, True)
    assert engine.max_timeouts == 3


# --- a built-in metric is one file -----------------------------------------------------------------

NEW_METRIC = '''
"""LENGTH_OFFSET: gap in mean characters per text, plus an offset (a test's one-file metric)."""

from textmetric_bench.api.inputs import as_texts
from textmetric_bench.api.registry import metric


@metric("length_offset", inputs="texts", symmetric=True)
def length_offset(p, q, *, seed: int = 0, offset: float = 0.0) -> float:
    """|mean length of p - mean length of q| in characters, + ``offset``."""
    mean = lambda corpus: sum(len(t) for t in as_texts(corpus)) / len(corpus)  # noqa: E731
    return abs(mean(p) - mean(q)) + offset
'''


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_new_file_in_metrics_is_a_metric_with_parameters_on_the_command_line(tmp_path, cache_dir):
    copy = copy_checkout(tmp_path / "checkout")
    (copy / "metrics" / "length_offset.py").write_text(textwrap.dedent(NEW_METRIC))
    out = tmp_path / "run"
    importable = installed_layout(copy, tmp_path / "importable")
    env = {**os.environ, "PYTHONPATH": str(importable), "BENCH_CACHE_DIR": str(cache_dir)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "textmetric_bench",
            "metrics=[length_offset]",
            "metric.length_offset.offset=1000",
            "k=3",
            "n=6",
            "repetitions=1",
            "engine.workers=1",
            "progress=false",
            f"hydra.run.dir={out}",
        ],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    distances = pd.read_csv(out / "distances.csv", keep_default_na=False)
    assert set(distances["metric"]) == {"length_offset"} and len(distances) == 3
    assert (distances["error"] == "").all()
    assert (distances["distance"] >= 1000).all()  # the override reached the function
    assert OmegaConf.load(out / ".hydra" / "config.yaml").metric.length_offset.offset == 1000


def test_every_metric_a_sweep_names_is_checked_before_any_job_runs():
    """Before, ``-m metrics=zipf,fdi`` ran zipf's jobs and refused fdi's one by one."""
    assert [p.split(".")[0] for p in metric_override_problems(["metrics=zipf,fdi"])] == [
        "metrics=zipf,fdi: unknown metric 'fdi'"
    ]
    assert [p.split(".")[0] for p in metric_override_problems(["metrics=[zipf,chii]"])] == [
        "metrics=[zipf,chii]: unknown metric 'chii'"
    ]
    (far,) = metric_override_problems(["metrics=[walk_gap]"])  # nothing close: how a metric of one's own registers
    assert "entry point (group textmetric_bench.metrics; a module on the path alone is not read" in far
    assert metric_override_problems(["metrics=glob(*)"]) == []  # not a list of names: the run's validation reads it
    for fine in ("metrics=default", "metrics=all", "metrics=[zipf,chi],[fid]", "metrics=default,[chi]"):
        assert metric_override_problems([fine]) == [], fine
