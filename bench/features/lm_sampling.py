"""Nucleus sampling from a causal LM at the speed of its forward pass: KV cache, finished rows leave the batch.

``transformers``' ``generate`` keeps every row of a batch until the last one ends, and its top-p
sorts the whole vocabulary (49,152 tokens for SmolLM2) at every step. Here a batch of rows starts
from one prompt token, so every row has the same length and no padding; a row that samples EOS
leaves the batch (its keys and values too), so the model computes only the tokens sampled. The nucleus is
searched among the 1,024 most probable tokens, then the 8,192 most probable for rows whose nucleus
is larger, then the whole vocabulary sorted (an untuned SmolLM2 needs more than 1,024 tokens in
29% of its steps, more than 8,192 in 0.3%): the same nucleus as ``transformers``'
``TopPLogitsWarper`` up to rounding at its edge (a token is kept while the mass of the tokens more
probable than it is below top_p), for about a fifth of the cost of the sort (64 rows: 0.06 s, 0.3 s).

Determinism: one uniform draw per row and step from a ``torch.Generator`` seeded by the caller, and
the pinned CPU kernels (``textmetric_bench.numerics``), so the same seed, model and settings give
the same tokens in any process.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

NUCLEUS_CANDIDATES = (1024, 8192)  # tokens searched for the nucleus, in turn, before sorting the whole vocabulary


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

    before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
    keep = before < top_p
    keep[..., 0] = True
    return keep


def sample_nucleus(logits, *, top_p: float, temperature: float, generator):
    """One token per row of ``logits`` (rows x vocabulary) by nucleus sampling, one uniform draw per row."""
    import torch

    probs = torch.softmax(logits.float() / temperature, dim=-1)
    # drawn from the caller's CPU generator whatever the device, so a seed means the same draws everywhere
    u = torch.rand(probs.shape[0], generator=generator, dtype=torch.float64).to(probs.device)
    chosen = torch.empty(probs.shape[0], dtype=torch.long, device=probs.device)
    todo = torch.arange(probs.shape[0], device=probs.device)
    for k in (*NUCLEUS_CANDIDATES, probs.shape[-1]):
        k = min(k, probs.shape[-1])
        if k == probs.shape[-1]:
            top_probs, top_ids = torch.sort(probs[todo], dim=-1, descending=True)
            inside = torch.ones(len(todo), dtype=torch.bool, device=probs.device)
        else:
            top_probs, top_ids = torch.topk(probs[todo], k, dim=-1, sorted=True)
            # the nucleus lies within these k tokens once their mass reaches top_p
            inside = top_probs.sum(dim=-1) >= top_p
        if inside.any():
            rows, p, ids = todo[inside], top_probs[inside], top_ids[inside]
            kept = torch.where(nucleus_mask_sorted(p, top_p), p, torch.zeros_like(p)).double()
            cdf = torch.cumsum(kept, dim=-1)
            position = torch.searchsorted(cdf, (u[rows] * cdf[:, -1]).unsqueeze(-1), right=True)
            chosen[rows] = ids.gather(-1, position.clamp_(max=k - 1)).squeeze(-1)
        todo = todo[~inside]
        if not len(todo):
            break
    return chosen


def sample_rows(model, *, n: int, start_token: int, end_token: int, max_new_tokens: int, top_p: float,
                temperature: float, batch_size: int, generator,
                on_batch: Callable[[int], None] = lambda rows: None) -> SampledRows:
    """``n`` token sequences sampled from ``start_token`` alone, in batches of ``batch_size`` rows.

    A row stops at ``end_token`` (left out of its tokens) or after ``max_new_tokens`` tokens.
    ``on_batch(rows)`` after each batch.
    """
    import torch
    from transformers import DynamicCache

    device = next(model.parameters()).device
    # transformers 5 names the cache argument `cache` (`past_key_values` is deprecated there)
    cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    tokens: list[list[int]] = []
    ended: list[bool] = []
    computed = 0
    with torch.inference_mode():
        for first in range(0, n, batch_size):
            size = min(batch_size, n - first)
            rows = [[] for _ in range(size)]
            done = [False] * size
            alive = torch.arange(size)
            step_ids = torch.full((size, 1), start_token, dtype=torch.long, device=device)
            cache = DynamicCache()
            for _ in range(max_new_tokens):
                computed += len(alive)
                logits = model(input_ids=step_ids, **{cache_arg: cache}, use_cache=True, logits_to_keep=1).logits
                nxt = sample_nucleus(logits[:, -1], top_p=top_p, temperature=temperature, generator=generator)
                finished = nxt == end_token
                for row, token, stop in zip(alive.tolist(), nxt.tolist(), finished.tolist()):
                    if stop:
                        done[row] = True
                    else:
                        rows[row].append(token)
                if finished.all():
                    break
                if finished.any():
                    keep = (~finished).nonzero().flatten()
                    cache.batch_select_indices(keep)
                    alive, nxt = alive[keep.cpu()], nxt[keep]
                step_ids = nxt.unsqueeze(-1)
            tokens += rows
            ended += done
            on_batch(size)
    return SampledRows(tokens, ended, computed)
