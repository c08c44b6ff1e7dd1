"""The blocks every task shares (engine, data, embedder, lm) are typed dataclasses, checked once, read as attributes.

Their defaults are the shipped files' values; a bad value is one line naming the key, the value and an example; a
mapping of a few keys (a metric helper's ``RunContext.lm``) means the defaults with those keys changed; and nothing
below the entry point reads one of these blocks from the raw config.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from textmetric_bench.data.settings import DataSettings
from textmetric_bench.engine.settings import EngineSettings
from textmetric_bench.errors import ConfigError
from textmetric_bench.features.embedder_settings import EmbedderSettings
from textmetric_bench.features.lm.settings import LMSettings
from textmetric_bench.running.registry import compose_config
from textmetric_bench.running.validate import SHARED, validate_config
from textmetric_bench.settings import default_of, key_of

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
#: Values the shipped files set by interpolation (an environment variable, the run's own option, the checkout).
INTERPOLATED = {"data.cache_dir", "data.mirror", "data.mirror_fallbacks", "lm.progress"}


def shipped_block(block: str) -> dict:
    if block in ("engine", "data"):
        return yaml.safe_load((CONF / "config.yaml").read_text())[block]
    name = {"embedder": "minilm", "lm": "smollm2"}[block]
    return yaml.safe_load((CONF / block / f"{name}.yaml").read_text())


@pytest.mark.parametrize("settings", SHARED, ids=lambda s: s.block)
def test_the_defaults_are_the_shipped_files_values_and_every_shipped_key_is_a_field(settings):
    import dataclasses

    shipped = shipped_block(settings.block)
    fields = {f.name: f for f in dataclasses.fields(settings)}
    assert set(shipped) <= set(fields), f"keys of the shipped {settings.block} block without a field"
    for name, f in fields.items():
        if key_of(f, settings) in INTERPOLATED or name not in shipped:
            continue
        assert default_of(f) == shipped[name], f"{key_of(f, settings)}: field default != shipped value"


@pytest.mark.parametrize(
    "override, line",
    [
        (
            "engine.workers=0",
            "engine.workers=0 is not valid: give a whole number >= 1 or 'auto', e.g. engine.workers=2",
        ),
        ("engine.timeout=-1", "engine.timeout=-1 is not valid: give a number of seconds > 0, or null for no limit"),
        ("engine.resume=maybe", "engine.resume='maybe' is not valid: give true or false, e.g. engine.resume=false"),
        ("embedder.device=gpu", "embedder.device='gpu' is not valid: give auto, cpu, cuda, cuda:N or mps"),
        ("embedder.batch_size=0", "embedder.batch_size=0 is not valid: give a whole number >= 1"),
        ("lm.engine=onnx", "lm.engine='onnx' is not valid: give auto, torch or ctranslate2"),
        ("lm.generation_threads=0", "lm.generation_threads=0 is not valid: give a whole number >= 1, auto, or null"),
        ("data.cards=3", "data.cards=3 is not valid: give a directory or a list of directories"),
    ],
)
def test_a_bad_shared_value_is_one_line_naming_key_value_and_example(override, line, tmp_path):
    cfg = compose_config([override, f"data.cache_dir={tmp_path / 'cache'}"])
    with pytest.raises(ConfigError) as raised:
        validate_config(cfg, tmp_path / "run")
    lines = str(raised.value).splitlines()
    assert [x for x in lines if x.startswith(override.split("=")[0] + "=")] == [
        next(x for x in lines if x.startswith(line))
    ]


def test_every_bad_shared_value_is_reported_at_once(tmp_path):
    cfg = compose_config(
        ["engine.workers=0", "lm.batch_size=0", "embedder.long_texts=cut", f"data.cache_dir={tmp_path}"]
    )
    with pytest.raises(ConfigError) as raised:
        validate_config(cfg, tmp_path / "run")
    said = str(raised.value)
    assert all(key in said for key in ("engine.workers=0", "lm.batch_size=0", "embedder.long_texts='cut'"))


def test_a_valid_config_gives_the_run_its_typed_blocks(tmp_path):
    cfg = compose_config(["engine.workers=2", "lm.engine=torch", "embedder.batch_size=8", f"data.cache_dir={tmp_path}"])
    run = validate_config(cfg, tmp_path / "run")
    assert (run.engine.worker_count, run.lm.engine, run.embedder.batch_size) == (2, "torch", 8)
    assert run.data.locations()[0] == tmp_path == run.cache_dir
    assert isinstance(run.engine, EngineSettings) and isinstance(run.data, DataSettings)


def test_a_mapping_of_a_few_keys_is_the_defaults_with_those_changed():
    lm = LMSettings.of({"engine": "torch", "threads": 2})
    assert (lm.engine, lm.threads, lm.name, lm.batch_size) == ("torch", 2, "SmolLM2-135M-Instruct", 16)
    assert LMSettings.of(lm) is lm
    assert pickle.loads(pickle.dumps(lm)) == lm  # it travels to the LM's worker processes
    assert EmbedderSettings.of(OmegaConf.create({"embedder": {"batch_size": 4}})).batch_size == 4
    with pytest.raises(ConfigError, match=r"lm\.workers=0 is not valid"):
        LMSettings.of({"workers": 0})


#: A shared block read from the raw config: attribute or key access on the composed config, or a select.
RAW_READ = re.compile(
    r"\b(cfg|config)\.(engine|embedder|lm|data)\b"
    r"|\b(cfg|config)\.get\(\s*[\"'](engine|embedder|lm|data)[\"']"
    r"|select\(\s*\w+,\s*[\"'](engine|embedder|lm|data)\."
    r"|\b(cfg_lm|lm_cfg)\.get\("
)


def test_nothing_below_the_entry_point_reads_a_shared_block_from_the_raw_config():
    package = ROOT / "bench"
    entry = {package / "__main__.py", package / "settings.py"}
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted(package.rglob("*.py"))
        if path not in entry and "session" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if RAW_READ.search(line) and not line.lstrip().startswith(("#", '"""'))
    ]
    assert found == [], "read these through the typed blocks (RunInputs.engine/.data/.embedder/.lm):\n" + "\n".join(
        found
    )
