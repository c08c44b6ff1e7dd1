"""Generating Increasingly Fine-tuned Corpora (004 §5): fine-tune a causal LM on the source step by step
and sample a corpus g_i after each step.

Format. Each source text is one training sequence ``BOS text EOS`` (loss on every token of it) and
every g_i is sampled from ``BOS`` alone, so g_0 is what the model says unprompted and each step
pulls it toward the source; the instruct model's chat prompt is not used, so nothing but the
fine-tuning tells the model what to write. A step is one epoch over m texts drawn afresh from the
training pool, with a fresh AdamW optimiser (each step is an independent fine-tuning call, as when
004's authors re-ran a fine-tuning script), so the weights alone carry the state between steps.

Lengths. A sample ends at EOS or after the source's ``length_quantile`` token length; a sample cut
there without EOS (an untuned model rambles) is truncated to a length drawn from the source's
token lengths, so every g_i has source-like lengths. Texts are normalised like the source corpus
(strip, collapse whitespace, drop empties, de-duplicate) and sampling refills what was dropped.

Resume. g_i is saved as ``iter_<i>.jsonl`` with ``iter_<i>.json`` (its settings, seeds, loss,
timings); the weights after the furthest step are kept in ``checkpoint/`` with ``ifc_step.json``
(the step, the settings and every step's training loss). A re-run skips every g_i on disk and
re-derives a model state it lacks by replaying the seeded steps from the nearest state not past it (the saved
weights when they are, else the base model); a g_i sampled from the saved
weights records the loss its step had when it was trained. Files get the usual permissions.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from textmetric_bench.collections.seeds import repetition_seed
from textmetric_bench.console import adopt_library_loggers, progress_bar
from textmetric_bench.data.card_schema import Normalisation
from textmetric_bench.data.corpora import normalise_texts
from textmetric_bench.errors import ConfigError
from textmetric_bench.features.lm import padded_batch, return_freed_memory, save_causal_lm, text_token_ids
from textmetric_bench.features.lm_adapter import fused_adamw_step
from textmetric_bench.files import atomic_write, make_dirs, remove_stale_temporaries

log = logging.getLogger(__name__)

TRAIN_STREAM, SAMPLE_STREAM = 3, 4  # seed streams beside KSC's 0 (collections) and 1 (metrics)
#: How g_i is sampled: a corpus sampled otherwise is not reused. /1: the nucleus searched among the most probable
#: tokens and walked in descending probability; /2: a draw from the whole distribution, kept when it lies in the
#: nucleus (the same distribution, other tokens for the same seed). Before /1: transformers' generate.
SAMPLER = "kv-cache-nucleus/2"
#: How a fine-tuning step batches its texts (before: in their shuffled order, padded to the longest).
BATCHING = "length-bucketed/1, 256 positions a pass"
#: How the gradient of an input embedding tied to the output layer is formed (``sparse_tied_embedding``); before:
#: dense, one vocabulary-sized tensor a pass. The same sum in another order, so other bits: corpora made before are
#: not reused. (Adding the rows in place rather than through autograd's sum changed no bit, so not this version.)
EMBEDDING_GRADIENT = "tied-sparse/1"
#: How a fine-tuning pass computes its loss from the last hidden states (``head_loss``); before: the model's own
#: output layer and loss over every position at once. The same loss in other sums, so other bits.
LOSS_HEAD = "chunked-head/1"


@dataclass(frozen=True)
class GenerationPlan:
    """Every setting that shapes the corpora g_i; ``iterations`` may grow between runs."""

    source: str
    lm: str
    seed: int
    iterations: int
    train_per_step: int
    corpus_size: int
    learning_rate: float
    train_batch_size: int
    top_p: float
    temperature: float
    sample_batch_size: int
    length_quantile: float
    max_sample_rounds: int
    sampler: str = SAMPLER
    batching: str = BATCHING
    embedding_gradient: str = EMBEDDING_GRADIENT
    loss_head: str = LOSS_HEAD
    #: memory against time only: the weights, and so the corpora, are the same either way (tested)
    recompute_activations: bool = True

    def fingerprint(self) -> dict:
        """The settings a saved g_i must share with this plan to be reused."""
        return {k: v for k, v in asdict(self).items() if k not in ("iterations", "recompute_activations")}


def _int_seed(seed: int, index: int, stream: int) -> int:
    return int(repetition_seed(seed, index, stream).generate_state(1)[0])


@dataclass(frozen=True)
class TrainingStep:
    """What one fine-tuning step did: its mean loss over batches, its loss over all predicted tokens (which
    does not depend on how texts are batched), the text tokens it trained on and the positions its
    batches held (tokens plus padding), and its seconds."""

    loss: float
    tokens: int
    positions: int
    seconds: float
    token_loss: float = float("nan")

    @property
    def padding_share(self) -> float:
        return 1 - self.tokens / self.positions if self.positions else 0.0


def length_bucketed_batches(lengths: Sequence[int], batch_size: int, rng: np.random.Generator) -> list[list[int]]:
    """Indices in batches of ``batch_size`` of similar length, the batches in random order.

    The indices are sorted by length (ties keep their given order, already shuffled), cut into
    batches, and the batches shuffled: padding nearly vanishes, while each update still sees
    ``batch_size`` texts and the order of updates stays random.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches = [order[b : b + batch_size] for b in range(0, len(order), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


#: Positions (texts x padded length) one forward pass of fine-tuning holds; a longer batch is passed in parts
#: whose gradients add up to the batch's. Its logits (positions x vocabulary, float32) and their gradients
#: are most of a step's peak memory: 256 positions are about 150 MB of them.
TRAIN_POSITIONS = 256


#: AdamW's fused kernel (one pass over a parameter, its gradient and its two moments) instead of the default
#: multi-tensor one, which makes several passes and a temporary the size of the model: about a sixth less time a
#: fine-tuning step. The same update to float32 rounding: bit for bit on our Intel Xeon, not on our AMD EPYC (tested).
FUSED_ADAMW = True


class FusedAdamW:
    """AdamW with torch's fused kernel (``textmetric_bench.features.lm_adapter.fused_adamw_step``), called as ``torch.optim.AdamW(fused=True)`` calls
    it: the same update bit for bit (tested), without ``torch.optim.Optimizer``, whose first use imports
    torch's dynamo compiler (about 70 MiB of the fine-tuning process: docs/performance.md). Parameters without a gradient
    are left as they are; the state of a parameter is made at its first update."""

    def __init__(
        self,
        params,
        *,
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.state: dict = {}  # parameter -> (step, first moment, second moment)

    def step(self) -> None:
        import torch

        with torch.no_grad():
            groups: dict = {}
            for p in self.params:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("fused AdamW takes no sparse gradient")
                if p not in self.state:
                    self.state[p] = (
                        torch.zeros((), dtype=torch.float32, device=p.device),
                        torch.zeros_like(p, memory_format=torch.preserve_format),
                        torch.zeros_like(p, memory_format=torch.preserve_format),
                    )
                groups.setdefault((p.device, p.dtype), []).append(p)
            for params in groups.values():
                steps, first, second = (list(t) for t in zip(*(self.state[p] for p in params)))
                fused_adamw_step(
                    params,
                    [p.grad for p in params],
                    first,
                    second,
                    steps,
                    lr=self.lr,
                    betas=self.betas,
                    weight_decay=self.weight_decay,
                    eps=self.eps,
                )

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None


def micro_batches(rows: Sequence[int], lengths: Sequence[int], budget: int) -> list[list[int]]:
    """``rows`` in consecutive parts of at most ``budget`` padded positions each (one row at least)."""
    parts: list[list[int]] = [[]]
    for row in rows:
        part = parts[-1]
        if part and (len(part) + 1) * max(lengths[r] for r in (*part, row)) > budget:
            parts.append(part := [])
        part.append(row)
    return parts


def sparse_tied_embedding(model):
    """The model's input embedding when it shares its weight with the output layer (SmolLM2, GPT-2), else None.

    Fine-tuning then adds the embedding's gradient into the shared weight's as rows (``sparse_rows``: the rows of
    the batch's tokens) instead of a dense gradient the size of the vocabulary: the output layer's gradient is dense
    anyway, and the two add up to the dense gradient of the shared weight, so the optimiser sees no difference,
    while a pass allocates, zeroes and adds one vocabulary-sized tensor less (for SmolLM2, 49,152 x 576 floats:
    about 100 MiB at the peak of a step, and a tenth of its time). An untied embedding keeps its dense gradient
    (fused AdamW takes no sparse one).
    """
    import torch

    inputs, outputs = model.get_input_embeddings(), model.get_output_embeddings()
    if (
        isinstance(inputs, torch.nn.Embedding)
        and outputs is not None
        and inputs.weight is outputs.weight
        and inputs.max_norm is None
        and not inputs.scale_grad_by_freq
    ):
        return inputs
    return None


def sparse_rows(ids, weight, padding_idx):
    """``embedding(ids, weight)`` whose gradient for ``weight`` is added into ``weight.grad`` in place, as sparse
    rows: one per distinct token (a token's positions summed in a fixed order: coalesced; none for ``padding_idx``).

    Autograd does not see ``weight`` here: the lookup's output is a leaf of its own, and a hook on it adds the
    rows when its gradient arrives, the last of a backward pass. By then the output layer's dense gradient of the
    shared weight is in ``weight.grad`` (autograd accumulates a leaf's gradient as soon as it is complete), and the
    rows go into it one value per element: the same bits as autograd's own sum of the two, without the
    vocabulary-sized tensor that sum allocates at the end of every backward pass (108 MiB for SmolLM2; the
    process's peak moved less, docs/performance.md). Were the rows first, they would start a zero gradient that
    the dense one then adds into: the same bits again.
    """
    import torch

    output = torch.nn.functional.embedding(ids, weight.detach(), padding_idx)
    if not (torch.is_grad_enabled() and weight.requires_grad):
        return output

    def add_rows(grad):
        flat_ids, flat = ids.reshape(-1), grad.reshape(-1, grad.shape[-1])
        if padding_idx is not None:
            keep = flat_ids != padding_idx
            flat_ids, flat = flat_ids[keep], flat[keep]
        rows = torch.sparse_coo_tensor(flat_ids[None], flat, weight.shape, check_invariants=False).coalesce()
        if weight.grad is None:
            weight.grad = torch.zeros_like(weight)
        weight.grad.index_add_(0, rows.indices()[0], rows.values())

    output.requires_grad_(True)
    output.register_hook(add_rows)
    return output


@contextmanager
def sparse_tied_gradient(model):
    """Within the block, a tied input embedding (``sparse_tied_embedding``) passes its gradient as ``sparse_rows``;
    after it, the model has its own forward again. Yields the embedding, or None for an untied model (unchanged)."""
    embedding = sparse_tied_embedding(model)
    if embedding is None:
        yield None
        return
    embedding.forward = lambda ids: sparse_rows(ids, embedding.weight, embedding.padding_idx)  # shadows the class's
    try:
        yield embedding
    finally:
        del embedding.forward


#: Positions whose logits (positions x vocabulary, float32) ``head_loss`` holds at once: 64 x 49,152 floats are
#: 12 MiB, where the model's own loss held about four such tensors of every position of a pass (256: 4 x 48 MiB).
LOSS_POSITIONS = 64
#: The most bytes of probabilities (positions x vocabulary, float32) the loss keeps from its forward pass for its
#: backward pass, instead of computing the logits again: a pass of 256 positions (``TRAIN_POSITIONS``) keeps 48 MiB.
KEPT_PROBABILITIES_BYTES = 64 * 2**20


def chunked_head_loss(hidden, weight, targets, chunk: int = LOSS_POSITIONS, keep_bytes: int = KEPT_PROBABILITIES_BYTES):
    """The mean cross-entropy of ``targets`` (n) under logits ``hidden @ weight.T`` (n x vocabulary), ``chunk``
    positions at a time. The forward pass keeps the softmax of every position for the backward pass when it fits in
    ``keep_bytes``; otherwise the backward pass computes the logits again, chunk by chunk (the same values: the same
    products of the same inputs). The backward pass adds the output layer's gradient into ``weight.grad`` in place
    when it already holds one (the second part of a batch), so no vocabulary-sized tensor besides the gradient is
    made. It turns the kept probabilities into that gradient in place, so a second backward pass through the same
    graph (``retain_graph=True``) is refused by autograd, naming the modified tensor.
    """
    import torch

    class ChunkedHeadLoss(torch.autograd.Function):
        @staticmethod
        def forward(ctx, hidden, weight):
            n, vocabulary = hidden.shape[0], weight.shape[0]
            keep = n * vocabulary * hidden.element_size() <= keep_bytes
            kept = torch.empty((n, vocabulary), dtype=hidden.dtype, device=hidden.device) if keep else None
            total = torch.zeros((), dtype=torch.float64, device=hidden.device)
            for s in range(0, n, chunk):
                logits = hidden[s : s + chunk] @ weight.T
                picked = logits.gather(1, targets[s : s + chunk, None]).squeeze(1)
                total += (torch.logsumexp(logits, dim=-1) - picked).double().sum()
                if keep:
                    kept[s : s + chunk] = torch.softmax(logits, dim=-1)  # (exp(x - lse) would err by lse's rounding)
            ctx.save_for_backward(hidden, weight, *([kept] if keep else []))
            return (total / max(n, 1)).float()

        @staticmethod
        def backward(ctx, grad):
            hidden, weight, *kept = ctx.saved_tensors
            n = hidden.shape[0]
            scale = grad.to(hidden.dtype) / max(n, 1)
            grad_hidden = torch.empty_like(hidden)
            into = weight.grad if weight.grad is not None and weight.grad.layout == torch.strided else None
            grad_weight = torch.zeros_like(weight) if into is None else into
            for s in range(0, n, chunk):
                h = hidden[s : s + chunk]
                probs = kept[0][s : s + chunk] if kept else torch.softmax(h @ weight.T, dim=-1)
                probs[torch.arange(len(h), device=h.device), targets[s : s + chunk]] -= 1
                probs.mul_(scale)
                grad_hidden[s : s + chunk] = probs @ weight
                grad_weight.addmm_(probs.T, h)
            return grad_hidden, (grad_weight if into is None else None)

    return ChunkedHeadLoss.apply(hidden, weight)


def own_loss(model):
    """``loss(ids, mask, labels)``: the model's own causal-LM loss."""
    return lambda ids, mask, labels: model(input_ids=ids, attention_mask=mask, labels=labels).loss


def head_loss(model, sample: tuple | None = None):
    """``loss(ids, mask, labels)``: the model's causal-LM loss through ``chunked_head_loss`` when its output layer
    is a plain linear map of its decoder's last hidden states, else the model's own loss.

    Whether it is plain is checked on ``sample`` (ids, mask, labels; a row or two): the two losses must agree to
    float32 rounding, or the model's own is used (a model that scales or caps its logits, say) and a warning says so.
    """
    import torch

    head, decoder = model.get_output_embeddings(), getattr(model, "get_decoder", lambda: None)()
    if not (isinstance(head, torch.nn.Linear) and head.bias is None and decoder is not None):
        return own_loss(model)

    def loss(ids, mask, labels):
        hidden = decoder(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
        targets = labels[:, 1:]
        scored = targets != -100
        return chunked_head_loss(hidden[:, :-1][scored], head.weight, targets[scored])

    if sample is not None:
        with torch.no_grad():
            own, ours = float(own_loss(model)(*sample)), float(loss(*sample))
        if not abs(own - ours) <= 1e-4 * abs(own):  # measured on SmolLM2: 2.5e-6 (ours the nearer to float64's)
            log.warning(
                "fine-tuning uses the model's own loss: its output layer is not a plain linear map of the "
                "decoder's states (loss %.6g, not %.6g)",
                own,
                ours,
            )
            return own_loss(model)
    return loss


def fine_tune_step(
    model,
    tokenizer,
    texts: Sequence[str],
    *,
    learning_rate: float,
    batch_size: int,
    seed: int,
    max_tokens: int = 256,
    recompute_activations: bool = False,
    progress: bool = True,
    desc: str = "fine-tuning",
) -> TrainingStep:
    """One epoch of causal-LM training over ``texts`` (each ``BOS text EOS``) in length-bucketed batches.

    A batch's loss is the mean over its predicted tokens, as one forward pass gives it; a batch of more
    than ``TRAIN_POSITIONS`` positions is passed in parts, each weighted by its share of the tokens.

    ``recompute_activations`` runs each decoder layer's forward pass again in the backward pass instead of keeping
    its activations (the model's activation checkpointing, transformers' or ``textmetric_bench.features.llama``'s):
    about 250 MB less at the peak of a default step, about a quarter more fine-tuning time, and the same weights
    bit for bit (the layers have no dropout, and the recomputation runs the same kernels).
    """
    import torch

    start_time = time.perf_counter()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(texts))
    seqs = [text_token_ids(tokenizer, texts[i], add_eos=True)[:max_tokens] for i in order]
    lengths = [len(s) for s in seqs]
    batches = length_bucketed_batches(lengths, batch_size, rng)
    device = next(model.parameters()).device
    if FUSED_ADAMW and device.type in ("cpu", "cuda"):
        optimiser = FusedAdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    else:
        optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    checkpointing = recompute_activations and getattr(model, "supports_gradient_checkpointing", False)
    use_cache = getattr(model.config, "use_cache", None)
    if checkpointing:
        model.config.use_cache = False  # no KV cache in training; said here, not warned by transformers
        # transformers 5.2x renamed gradient checkpointing to activation checkpointing; the old name warns there
        name = "activation" if hasattr(model, "activation_checkpointing_enable") else "gradient"
        getattr(model, f"{name}_checkpointing_enable")(**{f"{name}_checkpointing_kwargs": {"use_reentrant": False}})
    model.train()
    losses, tokens, positions, predicted, summed = [], 0, 0, 0, 0.0
    bar = progress_bar(len(batches), desc=desc, unit="step", enabled=progress, leave=False)
    device_batch = lambda part: tuple(
        t.to(device) for t in padded_batch([seqs[i] for i in part], tokenizer.pad_token_id)
    )
    loss_of = head_loss(model, device_batch(batches[0][:2])) if batches else own_loss(model)
    with sparse_tied_gradient(model):
        for rows in batches:
            in_batch, batch_sum = sum(lengths[i] - 1 for i in rows), 0.0
            for part in micro_batches(rows, lengths, TRAIN_POSITIONS):
                ids, mask, labels = device_batch(part)
                tokens, positions = tokens + int(mask.sum()), positions + mask.numel()
                loss = loss_of(ids, mask, labels)
                share = sum(lengths[i] - 1 for i in part)
                (loss * (share / in_batch) if share != in_batch else loss).backward()
                batch_sum += float(loss.detach()) * share
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            optimiser.zero_grad()  # gradients set to None, torch.optim's default too
            losses.append(batch_sum / in_batch)
            predicted, summed = predicted + in_batch, summed + batch_sum
            bar.update()
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    bar.close()
    if checkpointing:
        getattr(model, f"{name}_checkpointing_disable")()
        model.config.use_cache = use_cache
    model.eval()
    return TrainingStep(
        float(np.mean(losses)) if losses else float("nan"),
        tokens,
        positions,
        time.perf_counter() - start_time,
        summed / predicted if predicted else float("nan"),
    )


def sample_corpus(
    model,
    tokenizer,
    n: int,
    *,
    token_lengths: Sequence[int],
    top_p: float,
    temperature: float,
    batch_size: int,
    seed: int,
    normalisation: Normalisation,
    length_quantile: float = 0.99,
    max_rounds: int = 4,
    progress: bool = True,
    desc: str = "sampling",
) -> tuple[list[str], dict]:
    """``n`` distinct normalised texts sampled from BOS by nucleus sampling, lengths like the source's.

    Returns (texts, statistics). Stops with fewer texts (and a warning) once ``max_rounds * n``
    samples were drawn, e.g. when a collapsed model keeps repeating itself.
    """
    import torch

    from textmetric_bench.features.lm_sampling import sample_rows

    lengths = np.asarray(token_lengths, dtype=int)
    cap = max(1, int(np.ceil(np.quantile(lengths, length_quantile))))
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    kept: dict[str, None] = {}
    drawn = cut = tokens = computed = 0
    bar = progress_bar(n, desc=desc, unit="text", enabled=progress, leave=False)
    while len(kept) < n and drawn < max_rounds * n:
        size = min(n - len(kept), max_rounds * n - drawn)
        sampled = sample_rows(
            model,
            n=size,
            start_token=bos,
            end_token=tokenizer.eos_token_id,
            max_new_tokens=cap + 1,
            top_p=top_p,
            temperature=temperature,
            batch_size=batch_size,
            generator=generator,
        )
        computed += sampled.computed_tokens
        raw = []
        for row, ended in zip(sampled.tokens, sampled.ended):
            tokens += len(row) + ended
            if not ended:  # no EOS within the cap: cut to a source-like length
                row = row[: int(rng.choice(lengths))]
                cut += 1
            raw.append(tokenizer.decode(row, skip_special_tokens=True))
        drawn += size
        before = len(kept)
        for text in normalise_texts(raw, normalisation):
            if len(kept) < n:
                kept.setdefault(text, None)
        bar.update(len(kept) - before)
    bar.close()
    if len(kept) < n:
        log.warning("sampling gave only %d distinct texts of %d after %d draws", len(kept), n, drawn)
    return list(kept), {
        "drawn": drawn,
        "cut_without_eos": cut,
        "max_new_tokens": cap + 1,
        "sampled_tokens": tokens,
        "computed_tokens": computed,
        "device": str(next(model.parameters()).device),
        "threads": torch.get_num_threads(),
    }


# --- the corpora on disk -----------------------------------------------------------------------------


def corpus_file(gen_dir: Path, i: int) -> Path:
    return Path(gen_dir) / f"iter_{i}.jsonl"


def read_corpus(gen_dir: Path, i: int) -> list[str]:
    """The texts of g_i."""
    with open(corpus_file(gen_dir, i), encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()]


def finished_iterations(gen_dir: Path, plan: GenerationPlan | None = None) -> list[int]:
    """Iterations whose corpus and metadata are both on disk; raise if they were made otherwise."""
    done = []
    for meta_path in sorted(Path(gen_dir).glob("iter_*.json")):
        i = int(meta_path.stem.split("_")[1])
        if not corpus_file(gen_dir, i).is_file():
            continue
        if plan is not None:
            saved = json.loads(meta_path.read_text())["config"]
            diff = {k: (saved.get(k), v) for k, v in plan.fingerprint().items() if saved.get(k) != v}
            if diff:
                changes = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in diff.items())
                raise ConfigError(
                    f"{meta_path} was generated with other settings ({changes}); run in a new "
                    f"directory or delete {gen_dir} to regenerate"
                )
        done.append(i)
    return sorted(done)


def _save_corpus(gen_dir: Path, i: int, texts: list[str], meta: dict) -> None:
    atomic_write(
        corpus_file(gen_dir, i), "".join(json.dumps({"text": t}) + "\n" for t in texts), what=f"the IFC corpus g_{i}"
    )
    atomic_write(gen_dir / f"iter_{i}.json", json.dumps(meta, indent=2), what=f"the metadata of g_{i}")


CHECKPOINT_STATE = "ifc_step.json"


def _checkpoint_state(gen_dir: Path, plan: GenerationPlan) -> dict | None:
    """The record of the saved weights (``step``, ``losses`` by step), if they were made by this plan."""
    state = gen_dir / "checkpoint" / CHECKPOINT_STATE
    if not state.is_file():
        return None
    saved = json.loads(state.read_text())
    if saved.get("config") != plan.fingerprint():
        log.warning("ignoring %s: made with other settings", state.parent)
        return None
    return {"step": int(saved["step"]), "losses": dict(saved.get("losses") or {})}


def generate_ifc(
    plan: GenerationPlan,
    gen_dir: Path | str,
    *,
    training_pool: Sequence[str],
    token_lengths: Sequence[int],
    normalisation: Normalisation,
    load_model: Callable[[Path | None], tuple],
    progress: bool = True,
) -> list[int]:
    """Make every missing g_0..g_T in ``gen_dir``; returns the iterations generated now.

    ``load_model(path)`` gives (model, tokenizer): the base model for None, else saved weights.
    """
    gen_dir = make_dirs(gen_dir, "the IFC corpora")
    remove_stale_temporaries(gen_dir)  # e.g. half a checkpoint of a run that was killed while saving it
    done = set(finished_iterations(gen_dir, plan))
    todo = [i for i in range(plan.iterations + 1) if i not in done]
    if todo:
        log.info("IFC: generating g_%s in %s (found %d on disk)", todo, gen_dir, len(done))
    return_freed_memory()  # what loading the libraries and the corpora left free: ~30 MiB off every step's peak
    model = tokenizer = None
    saved = _checkpoint_state(gen_dir, plan)
    saved_step = saved["step"] if saved else None
    losses: dict[str, float] = saved["losses"] if saved else {}  # training loss of each step, by step
    step = saved_step
    training: dict[str, dict] = {}  # tokens and padding of each step trained by this run
    bar = progress_bar(len(todo), desc="IFC iterations", unit="corpus", enabled=progress)
    for i in todo:
        train_seconds = 0.0
        # (re)start from the nearest state not past step i: the saved weights when they are ahead of the model in
        # memory (loading them is faster than replaying the steps between), else the base model
        behind_saved = model is not None and saved_step is not None and step < saved_step <= i
        if model is None or step > i or behind_saved:
            use_saved = saved_step is not None and saved_step <= i
            model, tokenizer = load_model(gen_dir / "checkpoint" if use_saved else None)
            adopt_library_loggers()
            step = saved_step if use_saved else 0
        while step < i:
            step += 1
            train_seed = _int_seed(plan.seed, step, TRAIN_STREAM)
            pick = np.random.default_rng(train_seed).choice(len(training_pool), plan.train_per_step, replace=False)
            trained = fine_tune_step(
                model,
                tokenizer,
                [training_pool[j] for j in pick],
                learning_rate=plan.learning_rate,
                batch_size=plan.train_batch_size,
                seed=train_seed,
                recompute_activations=plan.recompute_activations,
                progress=progress,
                desc=f"fine-tuning step {step}",
            )
            losses[str(step)] = trained.loss
            training[str(step)] = {
                "token_loss": trained.token_loss,
                "tokens": trained.tokens,
                "positions": trained.positions,
                "padding_share": round(trained.padding_share, 4),
            }
            train_seconds += trained.seconds
            if saved_step is None or step > saved_step:
                record = {
                    "step": step,
                    "config": plan.fingerprint(),
                    "losses": {s: v for s, v in losses.items() if int(s) <= step},
                }
                save_causal_lm(
                    model,
                    tokenizer,
                    gen_dir / "checkpoint",
                    what=f"the IFC weights after step {step}",
                    extra={CHECKPOINT_STATE: json.dumps(record, indent=2)},
                )
                saved_step = step
        # g_i comes from the weights after step i: trained now, or saved by an earlier run
        train_seed = _int_seed(plan.seed, i, TRAIN_STREAM) if i > 0 else None
        loss = losses.get(str(i)) if i > 0 else None
        sample_seed = _int_seed(plan.seed, i, SAMPLE_STREAM)
        start = time.perf_counter()
        texts, stats = sample_corpus(
            model,
            tokenizer,
            plan.corpus_size,
            token_lengths=token_lengths,
            top_p=plan.top_p,
            temperature=plan.temperature,
            batch_size=plan.sample_batch_size,
            seed=sample_seed,
            normalisation=normalisation,
            length_quantile=plan.length_quantile,
            max_rounds=plan.max_sample_rounds,
            progress=progress,
            desc=f"sampling g_{i}",
        )
        meta = {
            "iteration": i,
            "texts": len(texts),
            "sample_seed": sample_seed,
            "train_seed": train_seed,
            "train_loss": loss,
            "training": training.get(str(i)),
            "seconds": {"train": round(train_seconds, 2), "sample": round(time.perf_counter() - start, 2)},
            **stats,
            "config": plan.fingerprint(),
        }
        _save_corpus(gen_dir, i, texts, meta)
        log.info("IFC: g_%d has %d texts (loss %s)", i, len(texts), loss)
        bar.update()
    bar.close()
    model = tokenizer = None
    return_freed_memory()  # scoring comes next, in worker processes of its own
    return todo
