"""Turning the Hydra config into validated choices (metrics, data locations, seeds)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from textmetric_bench import checkout_path, shipped_path
from textmetric_bench.api.context import RunContext, default_lm
from textmetric_bench.api.registry import MetricInfo, available_metrics, default_metrics, get_metric
from textmetric_bench.data.settings import DataSettings
from textmetric_bench.errors import ConfigError
from textmetric_bench.features.embedder_settings import EmbedderSettings
from textmetric_bench.features.lm.settings import LMSettings
from textmetric_bench.features.embedding import Embedder, custom_embedder, sentence_transformer

log = logging.getLogger(__name__)

CONF_DIR = shipped_path("conf")

# ${shipped:reports/baselines/x.json}: a repository file where it is at run time (checkout or installed wheel);
# ${checkout:../shared/datasets}: a path beside the checkout, null when installed (textmetric_bench.shipped_path, checkout_path).
if not OmegaConf.has_resolver("shipped"):
    OmegaConf.register_new_resolver("shipped", lambda relative: str(shipped_path(relative)))
if not OmegaConf.has_resolver("checkout"):
    OmegaConf.register_new_resolver(
        "checkout", lambda relative: None if checkout_path(relative) is None else str(checkout_path(relative))
    )


def corpus_label(source: Any) -> str:
    """A corpus as the run directory names it: a card's name, or a file's name without its folder and extension."""
    from textmetric_bench.data.local_files import is_corpus_file

    return Path(str(source)).stem if is_corpus_file(str(source)) else str(source)


if not OmegaConf.has_resolver("corpus_label"):
    OmegaConf.register_new_resolver("corpus_label", corpus_label)


def pair_label(*, _root_: DictConfig) -> str:
    """The pair as the run directory names it: its name, or ``<a>_vs_<b>`` for your own two files (``pair=files``)."""
    pair = _root_.get("pair")
    if pair is None:
        return "pair"
    name = str(pair.get("name", "pair"))
    sides = [key for key in ("a", "b") if key in pair and not OmegaConf.is_missing(pair, key) and pair[key]]
    if len(sides) < 2:  # a card's pair, or files not yet given (validation names what is missing)
        return name
    return f"{corpus_label(pair.a)}_vs_{corpus_label(pair.b)}"


if not OmegaConf.has_resolver("pair_label"):
    OmegaConf.register_new_resolver("pair_label", pair_label)


def selected_metrics(cfg: DictConfig, unnamed: Sequence[str] = ("default",)) -> list[tuple[MetricInfo, dict]]:
    """The metrics named by ``cfg.metrics`` with their parameters from ``cfg.metric.<name>``; ``unnamed``: those
    run when ``metrics`` is not given (null), the task's choice (``Task.unnamed_metrics``)."""
    chosen = cfg.get("metrics")
    if chosen is None:
        listed = [str(n) for n in unnamed]
    elif isinstance(chosen, str):
        listed = [n.strip() for n in chosen.split(",")]
    elif isinstance(chosen, (list, ListConfig)):
        listed = [str(n) for n in chosen]
    else:
        raise ConfigError(f"`metrics` must be 'default', 'all', a name or a list of names, not {chosen!r}")
    groups = {"all": available_metrics, "default": default_metrics}  # a group may stand in a list too
    names = [name for item in listed for name in (groups[item]() if item in groups else [item])]
    if not names:
        raise ConfigError("`metrics` selects no metric; use `metrics=default` or name some")
    out = []
    for name in dict.fromkeys(names):
        info = get_metric(name)
        out.append((info, metric_params(cfg, info)))
    return out


def metric_params(cfg: DictConfig, info: MetricInfo) -> dict:
    """The parameters ``cfg.metric.<name>`` gives metric ``info`` (checked against its signature)."""
    node = (cfg.get("metric") or {}).get(info.name)
    params = OmegaConf.to_container(node, resolve=True) if node is not None else {}
    info.check_params(params)
    return params


def run_context(cfg: DictConfig, cache_dir: Path | None = None) -> RunContext:
    """The run context a Hydra run config describes (``data.cache_dir``, or ``cache_dir`` as already read, and ``lm``)."""
    cache_dir = data_locations(cfg)[0] if cache_dir is None else cache_dir
    lm = LMSettings.of(cfg).as_dict() if "lm" in cfg else default_lm()
    return RunContext(str(cache_dir), lm)


def data_locations(cfg: DictConfig) -> tuple[Path, Path | None]:
    """(cache directory, mirror or None) from ``cfg.data``."""
    return DataSettings.of(cfg).locations()


def build_embedder(cfg: DictConfig | EmbedderSettings, cache_dir: Path | None = None) -> Embedder:
    """The configured embedder (the config's ``embedder`` block, or its typed settings) with its cache under
    ``data.cache_dir`` (or ``cache_dir`` as already read); ``embedder.factory`` ("package.module:function", options
    in ``embedder.options``) plugs in a user's own."""
    if cache_dir is None:
        if not isinstance(cfg, DictConfig):
            raise TypeError("build_embedder needs cache_dir when given the embedder's settings")
        cache_dir = data_locations(cfg)[0]
    e = EmbedderSettings.of(cfg)
    if e.factory:
        if e.long_texts != "truncate":
            log.warning(
                "embedder.long_texts=%s is not used: a custom embedder (embedder.factory) states no window, "
                "so it reads each text whole or cuts it as it does itself",
                e.long_texts,
            )
        return custom_embedder(e.factory, options=dict(e.options or {}), cache_dir=cache_dir)
    return sentence_transformer(
        model=e.model,
        package=e.package,
        path=e.path,
        device=e.device,
        batch_size=e.batch_size,
        cache_dir=cache_dir,
        long_texts=e.long_texts,
    )
