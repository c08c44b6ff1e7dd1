"""Nucleus sampling from a causal LM at the speed of its forward pass: KV cache, finished rows leave the batch.

``transformers``' ``generate`` keeps every row of a batch until the last one ends, and its top-p
sorts the whole vocabulary (49,152 tokens for SmolLM2) at every step. Here a batch of rows starts
from one prompt token, so every row has the same length and no padding; a row that samples EOS
leaves the batch (its keys and values too), so the model computes only the tokens sampled.

The nucleus of a row (``nucleus_edge``) is ``transformers``' ``TopPLogitsWarper``'s up to rounding at its edge:
its tokens in descending probability, ties by token id, kept while the mass of those before is below top_p (the
most probable always). One uniform draw u per row then picks, among the nucleus in token-id order, the first
token whose cumulative probability exceeds u times the nucleus' mass (``draw_in_nucleus``). On the CPU both are
computed by ``nucleus_kernel`` (numba) without sorting the vocabulary: a fine-tuned SmolLM2's nucleus at .95
holds hundreds to thousands of tokens, so a search among the most probable ones cost as much as a fifth of
sampling. Elsewhere (a GPU) by torch's sort, the same definition.

Determinism: one uniform draw per row and step from a ``torch.Generator`` seeded by the caller, and
the pinned CPU kernels (``textmetric_bench.numerics``), so the same seed, model and settings give
the same tokens in any process.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable


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


def nucleus_edge(probs, top_p: float):
    """The last token of each row's nucleus, by a full sort: (its probability, its token id, the nucleus' mass
    in float64). The nucleus is every token more probable than the last one, and those as probable with a
    smaller or equal token id."""
    import torch

    ordered, ids = torch.sort(probs, dim=-1, descending=True, stable=True)
    size = nucleus_mask_sorted(ordered, top_p).sum(dim=-1, keepdim=True)  # the mask is a prefix
    return (ordered.gather(-1, size - 1).squeeze(-1), ids.gather(-1, size - 1).squeeze(-1),
            torch.cumsum(ordered.double(), dim=-1).gather(-1, size - 1).squeeze(-1))


def draw_in_nucleus(probs, u, top_p: float):
    """One token a row by torch (any device): the first nucleus token, in token-id order, whose cumulative
    probability exceeds ``u`` times the nucleus' mass (the last nucleus token if rounding leaves none)."""
    import torch

    last_value, last_id, mass = nucleus_edge(probs, top_p)
    ids = torch.arange(probs.shape[-1], device=probs.device)
    inside = (probs > last_value[:, None]) | ((probs == last_value[:, None]) & (ids <= last_id[:, None]))
    cdf = torch.cumsum(torch.where(inside, probs.double(), 0.0), dim=-1)
    position = torch.searchsorted(cdf, (u * mass).unsqueeze(-1), right=True).squeeze(-1)
    return torch.minimum(position, torch.where(inside, ids, -1).amax(dim=-1))


def sample_nucleus(logits, *, top_p: float, temperature: float, generator):
    """One token per row of ``logits`` (rows x vocabulary) by nucleus sampling, one uniform draw per row."""
    import torch

    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    logits = logits.float()
    probs = torch.softmax(logits if temperature == 1 else logits / temperature, dim=-1)
    # drawn from the caller's CPU generator whatever the device, so a seed means the same draws everywhere
    u = torch.rand(probs.shape[0], generator=generator, dtype=torch.float64)
    if probs.device.type != "cpu":
        return draw_in_nucleus(probs, u.to(probs.device), top_p)
    from textmetric_bench.features.nucleus_kernel import draw_rows

    probs = probs.contiguous()
    chosen = torch.empty(probs.shape[0], dtype=torch.long)
    table = probs.numpy()
    bad = draw_rows(table, table.view("uint32"), u.numpy(), float(top_p), chosen.numpy())
    if bad >= 0:
        raise ValueError(f"the language model's probabilities of row {bad} are not finite (NaN or inf in its "
                         "logits): the model's weights or its input are broken")
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
