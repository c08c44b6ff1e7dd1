"""Every config group composes; conf/metric/ mirrors the registry; bad names fail early."""

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from bench.api.registry import builtin_metrics, get_metric
from bench.errors import ConfigError
from bench.tasks.config import CONF_DIR, selected_metrics

GROUPS = sorted(p.name for p in CONF_DIR.iterdir() if p.is_dir() and p.name != "hydra")


def options(group):
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def compose_with(*overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


@pytest.mark.parametrize("group,option", [(g, o) for g in GROUPS for o in options(g) if g != "metric"])
def test_every_group_option_composes(group, option):
    cfg = compose_with(f"{group}={option}")
    OmegaConf.to_container(cfg, resolve=True)  # every interpolation resolves
    assert cfg[group] is not None


@pytest.mark.parametrize("option", options("metric"))
def test_every_metric_config_composes_and_its_parameters_exist(option):
    cfg = compose_with(f"metric=[{option}]", f"metrics=[{option}]")
    (info, params), = selected_metrics(cfg)
    assert info.name == option
    assert set(params) <= set(info.params)


def test_metric_configs_match_the_registry():
    assert set(options("metric")) == set(builtin_metrics())


def test_default_config_runs_every_builtin_but_the_opt_in_ones_on_the_embedded_pair():
    cfg = compose_with()
    assert cfg.pair.name == "fortune_computing_people" and cfg.task.name == "ksc"
    opt_in = {n for n in builtin_metrics() if get_metric(n).opt_in}
    assert opt_in >= {"face_so", "ctrleval_coherence"}
    assert {m.name for m, _ in selected_metrics(cfg)} >= set(builtin_metrics()) - opt_in
    assert not opt_in & {m.name for m, _ in selected_metrics(cfg)}
    assert {m.name for m, _ in selected_metrics(compose_with("metrics=all"))} >= set(builtin_metrics())


def test_unknown_metric_name_suggests_the_closest():
    with pytest.raises(ConfigError, match="Did you mean fid"):
        selected_metrics(compose_with("metrics=[fdi]"))


def test_unknown_metric_parameter_is_rejected():
    with pytest.raises(ConfigError, match="no parameter"):
        selected_metrics(compose_with("metrics=[chi]", "+metric.chi.topp=10"))


def test_engine_defaults_are_the_documented_ones():
    engine = compose_with().engine
    assert (engine.timeout, engine.start_timeout, engine.retry_failed, engine.resume) == (600, 120, True, True)
