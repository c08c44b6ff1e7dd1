"""Matrix products whose float32 result does not depend on the BLAS, the CPU, the thread count or the batch.

Why: a BLAS sums a dot product in an order of its own choosing (by CPU vendor, instruction set, cache size,
thread count and matrix shape), so the same text came out ~1e-7 different on our AMD and Intel machines, and
MAUVE's k-means and CLASSIFIER's split amplified that into different tables. MKL's reproducibility switch
(``MKL_CBWR``) pins its branch on Intel CPUs only, and its vendor-neutral branch depends on the batch.

How: each product is made exact, so that no order of summation can change it. Every row of the left factor
and every column of the right one is scaled by a power of two and rounded to an integer of at most ``bits``
bits, where ``2 * bits + ceil(log2 K) <= 53``: then every product of two entries and every partial sum of
the K products is an integer below 2**53, which float64 holds exactly, and a float64 GEMM (any BLAS, any
order, with or without FMA) returns the exact integer result. Scaling it back by powers of two is exact too,
and the one rounding to float32 at the end is IEEE's. The only approximation is the rounding of the factors
to ``bits`` significant bits relative to their row's (column's) largest entry: 21 bits for K = 1,536, 22 for
K = 384, the full 24 of float32 for an attention head of 32; about what float32 GEMM loses to its own
rounding. Cost: a float64 GEMM and a few elementwise passes (docs/reproducibility.md has the measured speed).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from textmetric_bench.features.lm.adapter import attention_configs, set_attention

#: float64 holds every integer up to 2**53 exactly.
FLOAT64_INTEGER_BITS = 53
#: Where the name of this attention appears (the model config's attention implementation).
ATTENTION = "textmetric_exact"


def significant_bits(k: int) -> int:
    """The bits each factor keeps so that a sum of ``k`` products of them is an exact float64 integer."""
    return (FLOAT64_INTEGER_BITS - math.ceil(math.log2(max(k, 2)))) // 2


def scaled_integers(x: torch.Tensor, dim: int, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` as float64 integers of at most ``bits`` bits along ``dim``, and the exponents that undo the scaling.

    Each slice along ``dim`` is multiplied by ``2**(bits - e)``, where ``2**e`` bounds its largest magnitude
    (frexp), and rounded half to even: every step is exact or IEEE-rounded, so every CPU computes the same.
    """
    _, exponent = torch.frexp(x.abs().amax(dim=dim, keepdim=True))
    scaled = x.to(torch.float64)
    scaled.mul_(torch.exp2((bits - exponent).to(torch.float64))).round_()
    return scaled, exponent


def exact_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for float32 ``a`` (..., M, K) and ``b`` (..., K, N), the same on every machine and in every batch."""
    bits = significant_bits(a.shape[-1])
    b_int, b_exp = scaled_integers(b, -2, bits)
    return _exact_product(a, b_int, _unscale(b_exp, bits), bits)


def _unscale(exponent: torch.Tensor, bits: int) -> torch.Tensor:
    """The power of two that takes a factor's integers back to its values."""
    return torch.exp2((exponent - bits).to(torch.float64))


def _exact_product(a: torch.Tensor, b_int: torch.Tensor, b_unscale: torch.Tensor, bits: int) -> torch.Tensor:
    """``a @ b`` from ``b``'s integers and unscaling: the integer product (below 2**53, so exact whatever the
    BLAS does), scaled back by powers of two (exact) and rounded once to float32."""
    a_int, a_exp = scaled_integers(a, -1, bits)
    product = torch.matmul(a_int, b_int)
    product.mul_(_unscale(a_exp, bits)).mul_(b_unscale)
    return product.to(torch.float32)


class ExactLinear(nn.Module):
    """``nn.Linear`` (float32) through ``exact_matmul``; the weight's integers are computed once."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.bits = significant_bits(linear.in_features)
        weight = linear.weight.detach().to(torch.float32).t().contiguous()
        weight_int, weight_exp = scaled_integers(weight, -2, self.bits)
        self.register_buffer("weight_int", weight_int, persistent=False)
        self.register_buffer("weight_unscale", _unscale(weight_exp, self.bits), persistent=False)
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = _exact_product(x, self.weight_int, self.weight_unscale, self.bits)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bits={self.bits}"


def exact_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Transformers' eager attention (softmax(q kᵀ · scaling + mask) v), with both products exact."""
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    weights = exact_matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = nn.functional.softmax(weights, dim=-1)
    weights = nn.functional.dropout(weights, p=dropout, training=module.training)
    return exact_matmul(weights, value).transpose(1, 2).contiguous(), weights


def _register_attention() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION, exact_attention)


def make_exact(model: nn.Module) -> int:
    """Route every matrix product of a sentence-transformers (Hugging Face) model through ``exact_matmul``.

    Replaces each ``nn.Linear`` by an ``ExactLinear`` and sets the attention of every transformer inside to
    ``exact_attention``; returns how many layers were replaced. Raises ``TypeError`` when no transformers model
    with a settable attention implementation is inside. An architecture whose attention ignores that setting
    (computes its products itself) would keep the BLAS's there: tests/test_embedding_reproducible.py checks
    the default model's vectors under several MKL branches.
    """
    _register_attention()
    replaced = 0
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if type(child) is nn.Linear:
                setattr(module, name, ExactLinear(child))
                replaced += 1
    configs = attention_configs(model)
    if not configs:
        raise TypeError(f"{type(model).__name__}: no transformers model with an attention implementation inside")
    if not set_attention(configs, ATTENTION):
        raise TypeError(f"{type(model).__name__}: its attention implementation cannot be set")
    return replaced
