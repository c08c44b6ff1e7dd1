"""The embedder's exact matrix products (textmetric_bench.features.exact_gemm): exact, and so independent of the
BLAS's order of summation (its thread count, the batch, the memory layout), and as accurate as float32 GEMM."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from textmetric_bench.features.exact_gemm import ExactLinear, exact_matmul, scaled_integers, significant_bits


def _factors(m: int, k: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Factors with the spread of magnitudes of real activations: rows and columns scaled over 2**±12."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g) * torch.exp2(torch.randint(-12, 12, (m, 1), generator=g).float())
    b = torch.randn(k, n, generator=g) * torch.exp2(torch.randint(-12, 12, (1, n), generator=g).float())
    return a, b


@pytest.mark.parametrize("k", [2, 32, 384, 1536, 2048, 4096])
def test_the_integers_and_their_sums_fit_a_float64_exactly(k):
    bits = significant_bits(k)
    assert 2 * bits + math.ceil(math.log2(k)) <= 53
    assert 2 * (bits + 1) + math.ceil(math.log2(k)) > 53  # and no bit is given away
    a, _ = _factors(4, k, 1)
    ints, _ = scaled_integers(a, -1, bits)
    assert torch.equal(ints, ints.round()) and ints.abs().max() <= 2**bits


def test_the_product_is_the_exact_product_of_the_scaled_factors_rounded_once():
    """Checked against Python's integers, which have no rounding at all."""
    a, b = _factors(5, 384, 7)
    bits = significant_bits(384)
    a_int, a_exp = scaled_integers(a, -1, bits)
    b_int, b_exp = scaled_integers(b, -2, bits)
    got = exact_matmul(a, b)
    for i in range(5):
        for j in range(7):
            exact = sum(int(x) * int(y) for x, y in zip(a_int[i].tolist(), b_int[:, j].tolist()))
            value = Fraction(exact) * Fraction(2) ** (int(a_exp[i, 0]) + int(b_exp[0, j]) - 2 * bits)
            assert got[i, j].item() == np.float32(float(value)), (i, j)  # float(): exact here (|exact| < 2**53)


def test_the_product_does_not_depend_on_batch_threads_or_layout():
    """What a BLAS varies between machines (the blocking and order of its sums) cannot move an exact product."""
    a, b = _factors(300, 1536, 384, seed=1)
    whole = exact_matmul(a, b)
    rows = torch.cat([exact_matmul(a[i : i + 7], b) for i in range(0, 300, 7)])
    one_row = torch.cat([exact_matmul(a[i : i + 1], b) for i in range(0, 300, 50)])
    columns = torch.cat([exact_matmul(a, b[:, j : j + 5]) for j in range(0, 384, 5)], dim=1)
    transposed_layout = exact_matmul(a.t().contiguous().t(), b.t().contiguous().t())
    batched = exact_matmul(a.view(3, 100, 1536), b.expand(3, 1536, 384)).reshape(300, 384)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        single_thread = exact_matmul(a, b)
    finally:
        torch.set_num_threads(threads)
    for other in (rows, columns, transposed_layout, batched, single_thread):
        assert torch.equal(whole, other)
    assert torch.equal(whole[::50], one_row)


def test_the_product_is_as_accurate_as_float32_gemm():
    a, b = _factors(64, 1536, 96, seed=2)
    exact64 = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()  # the size of the terms, which bounds any GEMM's rounding error
    ours = ((exact_matmul(a, b).double() - exact64).abs() / scale).max().item()
    float32_gemm = ((torch.matmul(a, b).double() - exact64).abs() / scale).max().item()
    assert ours < 1e-6 and ours < 4 * float32_gemm + 1e-7, (ours, float32_gemm)


def test_exact_linear_is_linear_through_the_exact_product():
    torch.manual_seed(0)
    linear = torch.nn.Linear(384, 1536)
    exact = ExactLinear(linear)
    x = torch.randn(2, 9, 384)
    with torch.no_grad():
        got, want = exact(x), linear(x)
    assert torch.equal(got, exact_matmul(x, linear.weight.detach().t().contiguous()) + linear.bias.detach())
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    assert exact.bits == significant_bits(384) and got.dtype == torch.float32


def test_a_nan_or_an_infinity_propagates_instead_of_vanishing():
    a, b = _factors(3, 32, 4)
    a[1, 5] = float("nan")
    out = exact_matmul(a, b)
    assert torch.isnan(out[1]).all() and torch.isfinite(out[[0, 2]]).all()
