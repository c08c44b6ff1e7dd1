"""Squared Euclidean distances from BLAS products, shared by CLASSIFIER's RBF kernel and PR/DC's k-NN balls.

|a|^2 + |b|^2 - 2 a.b: the formula of libsvm's RBF kernel and of scikit-learn's
``euclidean_distances`` (before its clip at 0 and root), from one matrix product instead of n x m
dot products, without scikit-learn's input checks (they took a third of PR/DC's time at n = 100).
"""

from __future__ import annotations

import numpy as np

from textmetric_bench.api.sharing import per_pair


def squared_distances(x: np.ndarray, *, dtype=np.float64) -> np.ndarray:
    """|a|^2 + |b|^2 - 2 a.b between all rows of ``x``, computed in ``dtype`` (float64 or float32).

    The squared norms are read off the Gram matrix's diagonal, so a row's distance to itself
    cancels to exactly 0 (an RBF kernel value of exactly 1, as in libsvm); with norms summed another
    way (einsum) libsvm's solver took another path in 1-3% of CLASSIFIER's folds of same-source
    corpora, moving decision values by up to 5e-4.
    """
    x = x.astype(dtype, copy=False)
    gram = x @ x.T
    sq = np.diagonal(gram).copy()
    return _add_squared_norms(gram, sq, sq)


def cross_squared_distances(a: np.ndarray, b: np.ndarray, *, dtype=np.float64) -> np.ndarray:
    """|a|^2 + |b|^2 - 2 a.b between the rows of ``a`` and of ``b`` (one BLAS product, in row blocks), computed
    in ``dtype``."""
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    return _add_squared_norms(a @ b.T, np.einsum("ij,ij->i", a, a), np.einsum("ij,ij->i", b, b))


@per_pair
def pair_products(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T``: the one BLAS product of a pair, computed once per pair in a run and shared by the metrics that
    need it (PR, DC, IRPR), each charged its full cost; read-only."""
    products = a @ b.T
    products.flags.writeable = False
    return products


def squared_distance_rows(products: np.ndarray, sq_rows: np.ndarray, sq_columns: np.ndarray, rows: slice) -> np.ndarray:
    """Rows ``rows`` of |a|^2 + |b|^2 - 2 a.b from the pair's ``products`` and squared norms: the values of
    ``cross_squared_distances``, bit for bit, a block at a time."""
    return _plus_squared_norms(products[rows] * -2.0, sq_rows[rows], sq_columns)


def root_threshold(radii: np.ndarray) -> np.ndarray:
    """t_i with sqrt(max(c, 0)) < radii[i] exactly when c < t_i, for every float64 c (radii >= 0, as
    computed: a correctly rounded root): the smallest float whose rounded root reaches the radius, or -inf
    for a radius of 0. Comparing squared distances with it gives the comparison of their roots, bit for
    bit, without n x m square roots."""
    radii = np.asarray(radii, dtype=np.float64)
    t = radii * radii
    with np.errstate(invalid="ignore"):
        while (short := np.sqrt(t) < radii).any():  # the root of r*r rounded below r: step up
            t[short] = np.nextafter(t[short], np.inf)
        while (long := np.sqrt(np.nextafter(t, -np.inf)) >= radii).any():  # a smaller float reaches r too
            t[long] = np.nextafter(t[long], -np.inf)
    t[radii <= 0] = -np.inf  # sqrt(max(c, 0)) >= 0: nothing lies inside a ball of radius 0
    return t


def _add_squared_norms(products: np.ndarray, sq_rows: np.ndarray, sq_columns: np.ndarray) -> np.ndarray:
    """``sq_rows[i] + sq_columns[j] - 2 products[i, j]``, overwriting ``products``, in row blocks (no n x n
    temporary)."""
    products *= -2.0
    for start in range(0, len(products), 512):
        rows = slice(start, start + 512)
        _plus_squared_norms(products[rows], sq_rows[rows], sq_columns)
    return products


def _plus_squared_norms(block: np.ndarray, sq_rows: np.ndarray, sq_columns: np.ndarray) -> np.ndarray:
    """``block += sq_rows[:, None] + sq_columns[None, :]`` (``block`` already holds -2 a.b): the one formula of
    ``_add_squared_norms`` and ``squared_distance_rows``, so both give the same values bit for bit."""
    block += sq_rows[:, None] + sq_columns[None, :]
    return block


#: Unit roundoff of float32.
FLOAT32_UNIT = 2.0**-24


def float32_product_error(dims: int) -> float:
    """c such that |fl32(a.b) - a.b| <= c |a| |b| when a and b (any floats) are rounded to float32 and their
    ``dims`` products summed in float32 in any order, with or without FMA (the dot-product bound
    gamma_n of Higham, *Accuracy and Stability of Numerical Algorithms*, eq. 3.5, plus the rounding
    of both inputs)."""
    u = FLOAT32_UNIT
    gamma = dims * u / (1.0 - dims * u)
    return gamma * (1.0 + u) ** 2 + 2.0 * u + u * u


#: ``kth_nearest_squared_distances`` screens in float32 from this many rows (measured: 2,500 rows 8% faster
#: than float64, 5,700 rows 28%; 1,500 rows no faster).
SCREEN_FROM_ROWS = 2048


def kth_nearest_squared_distances(x: np.ndarray, k: int, *, group: int = 32) -> np.ndarray:
    """Every row's k-th smallest squared distance to the rows of ``x`` (its own, 0, included): the value
    ``squared_distances(x)`` and ``np.partition`` give: exactly below ``SCREEN_FROM_ROWS`` rows, and from
    there up to the order in which float64 sums the one dot product that decides it (1e-13 relative), at
    up to 30% less cost.

    The n x n distances are computed in float32 (twice BLAS's float64 speed), with a rigorous bound E_i on
    how far each of row i's values can be from its float64 value (``float32_product_error``). The row's
    float32 k-th smallest w_i is then within E_i of the float64 one, so every column whose float64
    distance is at or below the float64 k-th smallest has a float32 distance at most w_i + 2 E_i. Among
    those few candidates (about k + 1 a row, found through ``group_minima``), the float32 order is the
    float64 order wherever neighbouring values differ by more than 2 E_i: then the float32 k-th candidate
    is the float64 k-th and only its distance is computed again in float64. A row where it is not so has
    all its candidates computed again.
    """
    n, dims = x.shape
    if n < SCREEN_FROM_ROWS:  # float64 throughout: its Gram matrix costs less than the screening's steps
        d = squared_distances(x)
        if n // group <= k + 1:  # small: partition in place, no copy
            d.partition(k, axis=1)
            return d[:, k].copy()  # a copy: a view would keep the n x n matrix alive in the memo
        return kth_smallest_per_row(d, k, group=group)
    sq = np.einsum("ij,ij->i", x, x)
    x32 = x.astype(np.float32)
    dist = x32 @ x32.T  # float32 Gram matrix, then |a|^2 + |b|^2 - 2 a.b in place, 512 rows at a time
    dist *= np.float32(-2.0)
    sq32 = sq.astype(np.float32)
    for start in range(0, n, 512):
        dist[start : start + 512] += sq32[start : start + 512, None] + sq32[None, :]
    norms = np.sqrt(sq)
    u = FLOAT32_UNIT
    # |dist - float64 value| <= 2 c |a||b| + 3 u (|a|^2 + |b|^2) + 2 u |a||b| (float32 sums) + float64's own
    # error (1e-13 of the same terms), maximised over the row's columns; doubled as a margin
    bound = 2.0 * (
        (2.0 * float32_product_error(dims) + 2.0 * u + 1e-13) * norms * norms.max()
        + (3.0 * u + 1e-13) * (sq + sq.max())
    )
    groups, minima = group_minima(dist, group)
    limit = kth_from_group_minima(dist, minima, k, group).astype(np.float64) + 2.0 * bound
    rows, chosen = np.nonzero(minima <= limit[:, None])  # the groups holding every candidate
    columns = group_columns(chosen, groups, group, n)
    rows = np.broadcast_to(rows[:, None], columns.shape)
    valid = columns >= 0
    rows, columns = rows[valid], columns[valid]
    values = dist[rows, columns].astype(np.float64)
    within = values <= limit[rows]
    rows, columns, values = rows[within], columns[within], values[within]
    order = np.lexsort((values, rows))  # each row's candidates by float32 distance
    rows, columns, values = rows[order], columns[order], values[order]
    counts = np.bincount(rows, minlength=n)
    first = np.cumsum(counts) - counts
    at = first + k
    gap = 2.0 * bound
    below = np.where(k > 0, values[at] - values[np.maximum(at - 1, 0)], np.inf)
    above = np.where(counts > k + 1, values[np.minimum(at + 1, len(values) - 1)] - values[at], np.inf)
    settled = (below > gap) & (above > gap)
    result = np.empty(n)
    i = np.flatnonzero(settled)
    result[i] = _float64_squared_distances(x, sq, i, columns[at[i]])
    for i in np.flatnonzero(~settled):  # rare: near-ties at the k-th place, every candidate in float64
        own = slice(first[i], first[i] + counts[i])
        exact = _float64_squared_distances(x, sq, np.full(counts[i], i), columns[own])
        result[i] = np.partition(exact, k)[k]
    return result


def _float64_squared_distances(x: np.ndarray, sq: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """|a|^2 + |b|^2 - 2 a.b in float64 for the row pairs (rows[t], columns[t]); 0 for a row with itself."""
    exact = (sq[rows] + sq[columns]) - 2.0 * np.einsum("ij,ij->i", x[rows], x[columns])
    exact[rows == columns] = 0.0  # exactly, as from the Gram matrix's diagonal
    return exact


def group_minima(d: np.ndarray, size: int) -> tuple[int, np.ndarray]:
    """(G, the minimum of each row's column groups): column c < G * ``size`` is in group c mod G, so each
    minimum is one vectorised pass over ``size`` contiguous slices; the columns left over (fewer than
    ``size``) make group G."""
    n, m = d.shape
    groups = m // size
    minima = d[:, : groups * size].reshape(n, size, groups).min(axis=1)
    if groups * size < m:
        minima = np.hstack([minima, d[:, groups * size :].min(axis=1, keepdims=True)])
    return groups, minima


def group_columns(chosen: np.ndarray, groups: int, size: int, m: int) -> np.ndarray:
    """The columns of groups ``chosen`` (any shape) of ``group_minima``, in a new last axis of ``size``;
    -1 pads the shorter last group."""
    columns = chosen[..., None] + groups * np.arange(size)
    rest = m - groups * size
    if rest:
        tail = np.where(np.arange(size) < rest, groups * size + np.arange(size), -1)
        columns = np.where((chosen == groups)[..., None], tail, columns)
    return columns


def kth_from_group_minima(d: np.ndarray, minima: np.ndarray, k: int, size: int) -> np.ndarray:
    """The k-th smallest value (0-based) of every row of ``d``, given its ``group_minima``: exactly
    ``np.partition(d, k, axis=1)[:, k]``.

    The k + 1 groups with the smallest minima hold every value below the row's k-th smallest and enough
    values equal to it: any value outside them is at least the largest of those k + 1 minima, which are
    k + 1 values of the row. So the partition runs on (k + 1) x ``size`` candidates per row.
    """
    n, m = d.shape
    if minima.shape[1] <= k + 1:  # too few groups to leave any out
        return np.partition(d, k, axis=1)[:, k]
    chosen = np.argpartition(minima, k, axis=1)[:, : k + 1]
    columns = group_columns(chosen, m // size, size, m).reshape(n, -1)
    candidates = np.take_along_axis(d, np.maximum(columns, 0), axis=1)
    candidates[columns < 0] = np.inf
    return np.partition(candidates, k, axis=1)[:, k]


def kth_smallest_per_row(d: np.ndarray, k: int, *, group: int = 32) -> np.ndarray:
    """The k-th smallest value (0-based) of every row of ``d``: exactly ``np.partition(d, k, axis=1)[:, k]``,
    at about a fifth of its cost on large matrices (one pass for the group minima, then a partition of
    (k + 1) x ``group`` candidates per row; ``kth_from_group_minima``)."""
    if d.shape[1] // group <= k + 1:  # too few groups to leave any out
        return np.partition(d, k, axis=1)[:, k]
    return kth_from_group_minima(d, group_minima(d, group)[1], k, group)
