"""One fine-tuning step of the causal LM (IFC's, 004 §5, and the generated corpora's): length-bucketed batches
passed in parts of at most ``TRAIN_POSITIONS`` positions, AdamW (torch's fused kernel where it applies), the loss from
the last hidden states in chunks (``chunked_head_loss``), and a sparse gradient for an input embedding tied to the
output layer. What a step computes is versioned by ``BATCHING``, ``EMBEDDING_GRADIENT`` and ``LOSS_HEAD``: a corpus
made by another version is not reused.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from textmetric_bench.console import progress_bar
from textmetric_bench.features.lm.model import padded_batch, text_token_ids

log = logging.getLogger(__name__)

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


#: AdamW with torch's fused kernel (``torch.optim.AdamW(fused=True)``: one pass over a parameter, its gradient and
#: its two moments) instead of the default multi-tensor one, which makes several passes and a temporary the size of
#: the model: about a sixth less time a fine-tuning step. The same update to float32 rounding: bit for bit on our
#: Intel Xeon, not on our AMD EPYC (tested).
FUSED_ADAMW = True


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
    its activations (transformers' activation checkpointing, on ``torch.utils.checkpoint``):
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
    fused = FUSED_ADAMW and device.type in ("cpu", "cuda")
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0, fused=fused or None)
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
