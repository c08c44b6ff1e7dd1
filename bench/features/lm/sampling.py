"""Nucleus sampling from a causal LM at the speed of its forward pass: KV cache, finished rows leave the batch.

``transformers``' ``generate`` keeps every row of a batch until the last one ends, and its top-p
sorts the whole vocabulary (49,152 tokens for SmolLM2) at every step. Here a batch of rows starts
from one prompt token, or from prompts of one length (``textmetric_bench.collections.generated``), so every
row has the same length and no padding; a row that samples EOS or reaches its length leaves the batch (its
keys and values too), so the model computes only the tokens sampled.

The nucleus of a row is ``transformers``' (``TopPLogitsWarper``'s) up to rounding at its edge: its tokens in
descending probability, ties by token id, kept while the mass of those before is below top_p (the most probable
always). A fine-tuned SmolLM2's nucleus at .95 is wide (thousands of tokens), so finding it by sorting, or by
searching the most probable tokens first, cost as much as a fifth of sampling. ``sample_nucleus`` does not look
for it: it draws a token from the whole distribution (``propose``: by blocks of the vocabulary, then within the
block) and keeps it if it lies in the nucleus (``in_nucleus``: the mass of the tokens ahead of it is below top_p),
else draws again for that row. A draw kept this way follows the nucleus' renormalised probabilities exactly, and
one is kept with probability at least top_p, so a step needs about 1/top_p draws a row and a few passes over the
probabilities, none of them a sort. Rows not done after ``MAX_ROUNDS`` (a tiny top_p) draw the same way from
their probabilities outside the nucleus set to zero, the nucleus found by a full sort (``nucleus_by_sort``).

``sample_corpus`` draws a corpus of distinct normalised texts from BOS with it (IFC's g_i).

Determinism: the uniform draws come from a ``torch.Generator`` seeded by the caller, and the pinned CPU kernels
(``textmetric_bench.numerics``), so the same seed, model and settings give the same tokens in any process.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from textmetric_bench.console import progress_bar
from textmetric_bench.data.card_schema import Normalisation
from textmetric_bench.data.corpora import normalise_texts
from textmetric_bench.features.lm.adapter import keep_cache_rows

log = logging.getLogger(__name__)

#: How g_i is sampled: a corpus sampled otherwise is not reused. /1: the nucleus searched among the most probable
#: tokens and walked in descending probability; /2: a draw from the whole distribution, kept when it lies in the
#: nucleus (the same distribution, other tokens for the same seed). Before /1: transformers' generate.
SAMPLER = "kv-cache-nucleus/2"

BLOCK = 1024  # a draw picks a block of this many tokens, then a token within it
MAX_ROUNDS = 16  # draws a row before its nucleus is found by sorting (a draw is kept with probability >= top_p)


@dataclass
class SampledRows:
    """Token ids of every row (EOS left out), whether each row ended with EOS, and the forward passes' token count."""

    tokens: list[list[int]]
    ended: list[bool]
    computed_tokens: int


def nucleus_mask_sorted(sorted_probs, top_p: float):
    """For probabilities sorted in descending order along the last axis: which belong to the nucleus
    (the mass of the more probable tokens is below ``top_p``; the most probable is always kept)."""
    import torch

    before = torch.cumsum(sorted_probs.double(), dim=-1)
    before = torch.cat([torch.zeros_like(before[..., :1]), before[..., :-1]], dim=-1)
    keep = before < top_p
    keep[..., 0] = True
    return keep


def nucleus_by_sort(probs, top_p: float):
    """Which tokens of each row lie in its nucleus, by a full stable sort (ties: the smaller token id first)."""
    import torch

    ordered, ids = torch.sort(probs, dim=-1, descending=True, stable=True)
    return torch.zeros_like(probs, dtype=torch.bool).scatter_(-1, ids, nucleus_mask_sorted(ordered, top_p))


def propose(probs, u):
    """One token a row drawn from the whole distribution by inverse CDF at ``u``: first a block of ``BLOCK``
    tokens by the blocks' float32 sums, then a token within the block by its float64 cumulative sum, scaled to
    the block's own total so that every draw lands inside the block."""
    import torch

    rows, vocab = probs.shape
    blocks = -(-vocab // BLOCK)
    padded = probs if vocab == blocks * BLOCK else torch.nn.functional.pad(probs, (0, blocks * BLOCK - vocab))
    by_block = padded.view(rows, blocks, BLOCK)
    sums = by_block.sum(dim=-1).double()
    cdf = sums.cumsum(dim=-1)
    target = (u * cdf[:, -1]).unsqueeze(-1)
    block = torch.searchsorted(cdf, target, right=True).clamp_(max=blocks - 1)
    start = torch.where(block > 0, cdf.gather(1, (block - 1).clamp(min=0)), 0.0)
    inner = by_block[torch.arange(rows, device=probs.device), block.squeeze(-1)].double().cumsum(dim=-1)
    within = (target - start) / sums.gather(1, block) * inner[:, -1:]
    position = torch.searchsorted(inner, within, right=True).clamp_(max=BLOCK - 1)
    return (block * BLOCK + position).squeeze(-1).clamp_(max=vocab - 1)


def in_nucleus(probs, x, top_p: float, scratch=None):
    """Whether token ``x[r]`` lies in row r's nucleus: the mass of the tokens ahead of it (more probable, or as
    probable with a smaller id) is below ``top_p``. That mass is summed in float32, and again in float64 for the
    rows where it might decide otherwise (within the float32 sum's error bound of top_p, or with ties)."""
    import torch

    vocab = probs.shape[-1]
    p_x = probs.gather(1, x.unsqueeze(-1))
    out = None if scratch is None else scratch.view(-1)[: probs.numel()].view_as(probs)
    ahead = torch.mul(probs, probs > p_x, out=out).sum(dim=-1).double()
    bound = vocab * 2.0**-23  # twice the error bound of a float32 sum of non-negative terms adding up to 1
    check = ((ahead - top_p).abs() < bound) | ((probs == p_x).sum(dim=-1) > 1)
    if check.any():
        rows = check.nonzero().squeeze(-1)
        p, p_row, x_row = probs[rows], p_x[rows], x[rows]
        ids = torch.arange(vocab, device=probs.device)
        before = (p > p_row) | ((p == p_row) & (ids < x_row.unsqueeze(-1)))
        ahead[rows] = torch.where(before, p.double(), 0.0).sum(dim=-1)
    return (ahead < top_p) & (p_x.squeeze(-1) > 0)


def sample_nucleus(logits, *, top_p: float, temperature: float, generator, scratch=None):
    """One token per row of ``logits`` (rows x vocabulary) by nucleus sampling (module docstring). ``scratch``:
    a float32 tensor of at least the logits' size on their device, reused between calls (saves allocating it)."""
    import torch

    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    logits = logits.float()
    probs = torch.softmax(logits if temperature == 1 else logits / temperature, dim=-1)
    broken = ~torch.isfinite(probs.sum(dim=-1))
    if broken.any():
        raise ValueError(
            f"the language model's probabilities of row {int(broken.nonzero()[0])} are not finite "
            "(NaN or inf in its logits): the model's weights or its input are broken"
        )
    chosen = torch.empty(probs.shape[0], dtype=torch.long, device=probs.device)
    pending = torch.arange(probs.shape[0], device=probs.device)
    rows = probs
    for _ in range(MAX_ROUNDS):
        # drawn from the caller's CPU generator whatever the device, so a seed means the same draws everywhere
        u = torch.rand(len(pending), generator=generator, dtype=torch.float64).to(probs.device)
        x = propose(rows, u)
        kept = rows.gather(1, x.unsqueeze(-1)).squeeze(-1) > 0 if top_p == 1 else in_nucleus(rows, x, top_p, scratch)
        chosen[pending[kept]] = x[kept]
        pending = pending[~kept]
        if not len(pending):
            return chosen
        rows = probs[pending]
    u = torch.rand(len(pending), generator=generator, dtype=torch.float64).to(probs.device)
    chosen[pending] = propose(torch.where(nucleus_by_sort(rows, top_p), rows, 0.0), u)
    return chosen


def new_cache(model):
    """An empty KV cache for ``model``: transformers' ``DynamicCache``."""
    from transformers import DynamicCache

    return DynamicCache()


def sample_rows(
    model,
    *,
    n: int,
    start_token: int | None = None,
    end_token: int,
    max_new_tokens: int,
    top_p: float,
    temperature: float,
    batch_size: int,
    generator,
    prompts: Sequence[Sequence[int]] | None = None,
    row_limits: Sequence[int] | None = None,
    on_batch: Callable[[int], None] = lambda rows: None,
) -> SampledRows:
    """``n`` token sequences sampled from ``start_token`` alone, or continuing ``prompts`` (``n`` rows of token ids,
    all of one length, so a batch needs no padding: each batch passes its prompts at once, then samples a token a
    step), in batches of ``batch_size`` rows; the tokens returned are the new ones.

    A row stops at ``end_token`` (left out of its tokens) or after ``max_new_tokens`` tokens (``row_limits[i]`` for
    row i, when given). ``on_batch(rows)`` after each batch. From one start token the draws are those of a prompt
    of that one token (the same tensors pass the model).
    """
    import torch

    if prompts is None:
        if start_token is None:
            raise ValueError("sample_rows needs start_token or prompts")
        prompts = [[start_token]] * n
    if len(prompts) != n or len({len(p) for p in prompts}) > 1 or not all(prompts):
        raise ValueError(
            f"sample_rows needs {n} prompts of one length (at least one token), got "
            f"{len(prompts)} of lengths {sorted({len(p) for p in prompts})[:5]}"
        )
    limits = [max_new_tokens] * n if row_limits is None else [min(int(x), max_new_tokens) for x in row_limits]
    if len(limits) != n or min(limits, default=1) < 1:
        raise ValueError(f"sample_rows needs {n} row limits of at least one token")
    device = next(model.parameters()).device
    # transformers 5 names the cache argument `cache` (`past_key_values` is deprecated there)
    cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    tokens: list[list[int]] = []
    ended: list[bool] = []
    computed = 0
    with torch.inference_mode():
        for first in range(0, n, batch_size):
            size = min(batch_size, n - first)
            rows: list[list[int]] = [[] for _ in range(size)]
            done = [False] * size
            alive = torch.arange(size)
            batch_limits = torch.tensor(limits[first : first + size])
            step_ids = torch.tensor(prompts[first : first + size], dtype=torch.long, device=device)
            cache = new_cache(model)
            scratch = None
            for step in range(int(batch_limits.max())):
                computed += step_ids.numel()
                logits = model(input_ids=step_ids, **{cache_arg: cache}, use_cache=True, logits_to_keep=1).logits
                if scratch is None:  # one buffer for the batch's steps: a fresh 40 MB a step costs its page faults
                    scratch = torch.empty(logits[:, -1].shape, dtype=torch.float32, device=logits.device)
                nxt = sample_nucleus(
                    logits[:, -1], top_p=top_p, temperature=temperature, generator=generator, scratch=scratch
                )
                finished = nxt == end_token
                for row, token, stop in zip(alive.tolist(), nxt.tolist(), finished.tolist()):
                    if stop:
                        done[row] = True
                    else:
                        rows[row].append(token)
                leaving = finished | (batch_limits[alive] <= step + 1).to(finished.device)
                if leaving.all():
                    break
                if leaving.any():
                    keep = (~leaving).nonzero().flatten()
                    keep_cache_rows(cache, keep)
                    alive, nxt = alive[keep.cpu()], nxt[keep]
                step_ids = nxt.unsqueeze(-1)
            tokens += rows
            ended += done
            on_batch(size)
    return SampledRows(tokens, ended, computed)


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
