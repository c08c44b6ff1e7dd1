"""Every bad config value fails before any corpus, model or text is touched, in one line naming it,
so a user fixes it in seconds rather than after minutes of embedding.

Most cases compose the config as the CLI does and call `validate_config`; a few run the real CLI from a
directory that is not the checkout and check that nothing was embedded. `fake_*` stand in for what must break.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.errors import ConfigError
from textmetric_bench.running.registry import compose_config
from textmetric_bench.running.validate import validate_config

TESTS_DIR = Path(__file__).parent


def compose_with(*overrides: str):
    return compose_config(list(overrides))


def problems(tmp_path: Path, *overrides: str) -> list[str]:
    """The lines `validate_config` reports for the default config with ``overrides`` (none: [])."""
    cfg = compose_with(f"data.cache_dir={tmp_path / 'cache'}", *overrides)
    try:
        validate_config(cfg, tmp_path / "run")
    except ConfigError as exc:
        return str(exc).splitlines()
    return []


# (overrides, what the one line must name: the key and the value as written)
BAD_VALUES = {
    "seed-negative": (["seed=-1"], ["seed=-1", "e.g. seed=0"]),
    "seed-not-a-number": (["seed=abc"], ["seed='abc'"]),
    "progress-not-a-flag": (["progress=maybe"], ["progress='maybe'", "true or false"]),
    "workers-many": (["engine.workers=many"], ["engine.workers='many'", "'auto'", "e.g. engine.workers=2"]),
    "workers-zero": (["engine.workers=0"], ["engine.workers=0"]),
    "timeout-negative": (["engine.timeout=-5"], ["engine.timeout=-5", "null for no limit"]),
    "timeout-zero": (["engine.timeout=0"], ["engine.timeout=0"]),
    "max-timeouts-negative": (["engine.max_timeouts=-1"], ["engine.max_timeouts=-1", "0 or null: never skip"]),
    "max-timeouts-fraction": (["engine.max_timeouts=2.5"], ["engine.max_timeouts=2.5", "e.g. engine.max_timeouts=3"]),
    "start-timeout-null": (["engine.start_timeout=null"], ["engine.start_timeout=null", "e.g. engine.start_timeout="]),
    "retry-failed-not-a-flag": (["engine.retry_failed=sometimes"], ["engine.retry_failed='sometimes'"]),
    "resume-a-number": (["engine.resume=2"], ["engine.resume=2"]),
    "blas-threads-zero": (["engine.blas_threads=0"], ["engine.blas_threads=0"]),
    "embedder-device-tpu": (["embedder.device=tpu"], ["embedder.device='tpu'", "cuda:N", "mps"]),
    "lm-device-cuda-x": (["lm.device=cuda:x"], ["lm.device='cuda:x'"]),
    "embedder-batch-zero": (["embedder.batch_size=0"], ["embedder.batch_size=0"]),
    "embedder-long-texts-unknown": (
        ["embedder.long_texts=clip"],
        ["embedder.long_texts='clip'", "truncate or windows"],
    ),
    "lm-batch-many": (["lm.batch_size=many"], ["lm.batch_size='many'"]),
    "lm-threads-zero": (["lm.threads=0"], ["lm.threads=0"]),
    "lm-workers-zero": (["lm.workers=0"], ["lm.workers=0", "'auto'", "e.g. lm.workers=2"]),
    "lm-engine-unknown": (["lm.engine=onnx"], ["lm.engine='onnx'", "torch or ctranslate2"]),
    "k-fraction": (["k=3.5"], ["k=3.5", "whole number"]),
    "k-too-small": (["k=2"], ["k=2"]),
    "n-too-small": (["k=7", "n=5"], ["n=5"]),
    "repetitions-zero": (["repetitions=0"], ["repetitions=0", "a whole number >= 1"]),
    "reference-not-a-directory": (["reference=/nonexistent/refs"], ["reference='/nonexistent/refs'", "auto", "false"]),
    "reference-true": (["reference=true"], ["reference=true", "e.g. reference=false"]),
    "metric-unknown": (["metrics=[fdi]"], ["'fdi'", "Did you mean fid"]),
    "metric-parameter-unknown": (["metrics=[chi]", "+metric.chi.topp=10"], ["'chi'", "topp"]),
    "pair-unknown": (["pair.name=nosuch"], ["unknown pair 'nosuch'"]),
    "mirror-missing": (["data.mirror=/nonexistent/mirror"], ["data.mirror='/nonexistent/mirror'"]),
    "robustness-grid": (["task=robustness", "sizes=[300]", "imbalance_total=10"], ["imbalance_total N=10"]),
    "robustness-sizes-words": (["task=robustness", "sizes=[small]"], ["sizes=['small']"]),
    "perturbation-unknown": (["task=perturb", "perturbations=[nosuch]"], ["unknown perturbation 'nosuch'"]),
    "perturb-n-too-small": (["task=perturb", "n=1"], ["n=1"]),
    "ifc-source-unknown": (["task=ifc", "ifc.source=nosuch"], ["unknown corpus 'nosuch'"]),
    "ifc-reference-share": (["task=ifc", "ifc.reference_share=1.5"], ["ifc.reference_share", "1.5"]),
    "ifc-repetitions-zero": (["task=ifc", "ifc.repetitions=0"], ["ifc.repetitions=0"]),
    "ifc-learning-rate": (["task=ifc", "ifc.learning_rate=-1"], ["ifc.learning_rate=-1"]),
    "ifc-top-p": (["task=ifc", "ifc.sampling.top_p=2"], ["ifc.sampling.top_p=2", "e.g. ifc.sampling.top_p=0.95"]),
    "ifc-setting-deleted": (["task=ifc", "~ifc.corpus_size"], ["ifc.corpus_size is missing"]),
    "robustness-setting-deleted": (["task=robustness", "~n_ref"], ["n_ref is missing"]),
    "check-z-negative": (["task=check", "check.z=-1"], ["check.z=-1"]),
    "check-measure-unknown": (["task=check", "check.measures=[B]"], ["check.measures=['B']", "omega2"]),
    "check-baseline-missing": (
        ["task=check", "check.baseline=/nonexistent/b.json"],
        ["check.baseline='/nonexistent/b.json'", "update=true"],
    ),
}


@pytest.mark.parametrize("overrides,parts", BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_a_bad_value_is_one_line_naming_the_key_and_the_value(overrides, parts, tmp_path):
    lines = problems(tmp_path, *overrides)
    assert len(lines) == 1, lines
    for part in parts:
        assert part in lines[0], lines[0]


@pytest.mark.parametrize("task", ["ksc", "robustness", "perturb", "ifc", "check"])
def test_every_task_default_config_is_valid(task, tmp_path):
    assert problems(tmp_path, f"task={task}") == []


@pytest.mark.parametrize(
    "override",
    [
        "engine.timeout=null",
        "engine.workers=auto",
        "embedder.device=cuda:1",
        "lm.device=mps",
        "lm.threads=null",
        "engine.timeout=0.5",
        "reference=false",
        "engine.max_timeouts=0",
        "engine.max_timeouts=null",
        "lm.engine=ctranslate2",
        "embedder.long_texts=windows",
    ],
)
def test_valid_alternatives_are_accepted(override, tmp_path):
    assert problems(tmp_path, override) == []


def test_all_bad_values_are_reported_at_once(tmp_path):
    lines = problems(tmp_path, "seed=-1", "engine.workers=many", "embedder.device=tpu", "metrics=[fdi]")
    assert [line.split("=")[0].split(" ")[0] for line in lines] == [
        "seed",
        "engine.workers",
        "embedder.device",
        "unknown",
    ]


def test_a_cache_under_a_regular_file_is_refused_and_nothing_is_created(tmp_path):
    (tmp_path / "somefile").write_text("not a directory")
    lines = problems(tmp_path, f"data.cache_dir={tmp_path / 'somefile' / 'cache'}")
    assert lines == [
        f"data.cache_dir='{tmp_path / 'somefile' / 'cache'}' is not valid: {tmp_path / 'somefile'} "
        f"is a file, not a directory; give a directory you can write, "
        f"e.g. data.cache_dir=~/.cache/textmetric-bench"
    ]


def test_a_new_cache_directory_is_probed_without_being_created(tmp_path):
    before = sorted(tmp_path.iterdir())
    assert problems(tmp_path, f"data.cache_dir={tmp_path / 'new' / 'cache'}") == []
    assert sorted(tmp_path.iterdir()) == before


def fake_mkdtemp_read_only(*args, **kwargs):
    raise OSError(errno.EROFS, "Read-only file system", kwargs.get("dir"))


def test_a_cache_on_a_read_only_file_system_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "mkdtemp", fake_mkdtemp_read_only)
    lines = problems(tmp_path)
    assert len(lines) == 2, lines  # the cache and the run directory
    assert lines[0].startswith(
        f"data.cache_dir='{tmp_path / 'cache'}' is not valid: cannot write in {tmp_path} (read-only file system)"
    )
    assert lines[1].startswith(f"hydra.run.dir='{tmp_path / 'run'}' is not valid")


# --- the real command line, from a directory that is not the checkout ------------------------------


def run_cli(
    tmp_path: Path, *args: str, code: str | None = None, prefix: tuple[str, ...] | list[str] = (sys.executable,)
) -> subprocess.CompletedProcess:
    """`python -m textmetric_bench ARGS` (or `python -c CODE ARGS`) of this checkout, run in a scratch directory with a
    fresh cache; ``prefix`` is the command that runs Python."""
    mirror = os.environ.get("BENCH_DATA_MIRROR") or str(PROJECT_ROOT.parent / "shared" / "datasets")
    env = {
        **os.environ,
        "BENCH_CACHE_DIR": str(tmp_path / "cache"),
        "BENCH_DATA_MIRROR": mirror,
        "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    command = [*prefix, "-m", "textmetric_bench"] if code is None else [*prefix, "-c", code]
    return subprocess.run(
        [*command, *args, "progress=false", "metrics=[fid]", "k=3", "n=6", "repetitions=1"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


CLI_CASES = {
    "workers-many": (["engine.workers=many"], "engine.workers='many'"),
    "seed-negative": (["seed=-1"], "seed=-1"),
    "cache-under-a-file": (["data.cache_dir={tmp}/somefile/cache"], "data.cache_dir='{tmp}/somefile/cache'"),
    "run-dir-under-a-file": (["hydra.run.dir={tmp}/somefile/run"], "hydra.run.dir='{tmp}/somefile/run'"),
}


@pytest.mark.parametrize("args,named", CLI_CASES.values(), ids=CLI_CASES.keys())
def test_the_command_line_refuses_a_bad_value_before_any_work(args, named, tmp_path):
    (tmp_path / "somefile").write_text("not a directory")
    run_dir = tmp_path / "run"
    proc = run_cli(tmp_path, f"hydra.run.dir={run_dir}", *(a.format(tmp=tmp_path) for a in args))
    assert proc.returncode != 0
    assert f"error: {named.format(tmp=tmp_path)} is not valid" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "cache" / "embeddings").exists()  # nothing was embedded
    assert not list(tmp_path.glob("**/evaluations.jsonl"))


def read_only_mount_available() -> bool:
    """Whether `unshare` can give a process its own read-only tmpfs (user and mount namespaces allowed)."""
    try:
        return (
            subprocess.run(
                ["unshare", "--map-root-user", "--mount", "true"], capture_output=True, timeout=10
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not read_only_mount_available(), reason="unshare cannot create a mount namespace here")
@pytest.mark.parametrize("key", ["data.cache_dir", "hydra.run.dir"])
def test_the_command_line_refuses_a_directory_on_a_read_only_file_system(key, tmp_path):
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    mount = [
        "unshare",
        "--map-root-user",
        "--mount",
        "sh",
        "-c",
        'mount -t tmpfs -o ro,size=1m tmpfs "$0" && exec "$@"',
        str(read_only),
        sys.executable,
    ]
    run_dir = read_only / "run" if key == "hydra.run.dir" else tmp_path / "run"
    cache = read_only / "cache" if key == "data.cache_dir" else tmp_path / "cache"
    proc = run_cli(tmp_path, f"hydra.run.dir={run_dir}", f"data.cache_dir={cache}", prefix=mount)
    value = run_dir if key == "hydra.run.dir" else cache
    assert proc.returncode != 0
    assert f"error: {key}='{value}' is not valid: cannot write in {read_only} (read-only file system)" in proc.stderr, (
        proc.stderr[-2000:]
    )
    assert "Traceback" not in proc.stderr
    assert not (cache / "embeddings").exists()


def fake_build_out_of_space(task, run):
    """Stands in for the KSC task's build when its shard write meets a full disk."""
    raise OSError(errno.ENOSPC, "No space left on device", str(run.cache_dir / "embeddings" / "m" / "shard.npz"))


def test_an_os_error_escaping_a_task_is_one_line_and_its_traceback_goes_to_the_log(tmp_path):
    # `python -m textmetric_bench` with the task swapped for the fake (`python -m` runs bench/__main__.py as __main__).
    code = (
        "import runpy, textmetric_bench.tasks.ksc, test_config_validation as t; "
        "textmetric_bench.tasks.ksc.KSCTask.build = t.fake_build_out_of_space; runpy.run_module('textmetric_bench', run_name='__main__')"
    )
    run_dir = tmp_path / "run"
    proc = run_cli(tmp_path, f"hydra.run.dir={run_dir}", code=code)
    assert proc.returncode != 0
    shard = tmp_path / "cache" / "embeddings" / "m" / "shard.npz"
    assert proc.stderr.strip().splitlines() == [
        f"error: no space left on device writing {shard}: free space or set data.cache_dir=/another/dir"
    ]
    log_text = "".join(p.read_text() for p in run_dir.glob("*.log"))
    assert "Traceback" in log_text and "fake_build_out_of_space" in log_text


def test_a_missing_mirror_from_the_environment_says_where_it_was_set(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_DATA_MIRROR", str(tmp_path / "no-such-mirror"))
    found = problems(tmp_path)
    assert any("data.mirror=" in p and "(set by BENCH_DATA_MIRROR)" in p and "no such directory" in p for p in found), (
        found
    )
