"""The five divergences of 000 §2.2 (eqs. 5-9), shared by the cluster and n-gram metrics.

Not a plugin: ``textmetric_bench.metrics.cluster_divergences`` and ``textmetric_bench.metrics.ngram_divergences`` register them.
Every divergence of two distributions p and q is a function of the divergence frontier
λ -> (KL(p ‖ r_λ), KL(q ‖ r_λ)), r_λ = λ p + (1 - λ) q (000 eq. 8), which comes in two forms:

- ``histogram_frontier(p, q)``: exact, on two probability vectors (cluster histograms, 000 §4);
- ``sample_frontier(...)``: Monte Carlo (000 §3.2.1, eq. 10) from the log-probabilities that
  two models give to texts drawn from p and texts drawn from q; log r_λ(x) is
  logaddexp(log λ + log p(x), log(1 - λ) + log q(x)), and KL(p ‖ r_λ) is the mean of
  log p(x) - log r_λ(x) over p's texts.

Each is exposed as a distance: 0 for identical distributions, larger = more different.

- ``kl_forward``  KL(p ‖ q) (eq. 5), as it is.
- ``kl_backward`` KL(q ‖ p) (eq. 6), as it is.
- ``exp_kl``      e^KL(p ‖ q) (eq. 7) minus 1, its value for identical distributions: footnote 4's
                  "shifted divergence". (000's authors' code used exp(-0.1 KL) instead, a
                  similarity; e^KL - 1 is the paper's definition made a distance.)
- ``js``          (KL(p ‖ r_.5) + KL(q ‖ r_.5)) / 2 (eq. 8), as it is; at most log 2.
- ``auc``         1 - AUC of the frontier (e^{-s KL(q ‖ r_λ)}, e^{-s KL(p ‖ r_λ)}) (eq. 9), λ on
                  MAUVE's grid linspace(1e-6, 1 - 1e-6, points) plus the end points (1, 0) and
                  (0, 1); the area is the trapezoid rule along λ, equal to mauve-text's area for a
                  monotone (exact) frontier and defined for a Monte Carlo one that is not.

Exact values are floored at 0 (rounding can give -1e-17); Monte Carlo estimates are not, since
a negative estimate is sampling noise that a floor would turn into ties.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

from textmetric_bench.api.registry import metric
from textmetric_bench.errors import MetricError


@dataclass(frozen=True)
class Frontier:
    """λ -> (KL(p ‖ r_λ), KL(q ‖ r_λ)), and whether the values are exact or Monte Carlo estimates."""

    kl_to_mixture: Callable[[float], tuple[float, float]]
    exact: bool

    def __call__(self, lam: float) -> tuple[float, float]:
        return self.kl_to_mixture(lam)


def laplace_histogram(counts, alpha: float = 1.0) -> np.ndarray:
    """(counts + alpha) / (N + K alpha): additive smoothing (000 §5, α = 1 = a Dirichlet(1) prior)."""
    counts = np.asarray(counts, dtype=np.float64)
    if alpha < 0 or not np.isfinite(alpha):
        raise MetricError(f"Laplace smoothing alpha must be a finite number >= 0, not {alpha!r}")
    if counts.ndim != 1 or (counts < 0).any() or counts.sum() + alpha * counts.size <= 0:
        raise MetricError("a histogram needs non-negative counts with a positive total")
    smoothed = counts + alpha
    return smoothed / smoothed.sum()


def _probability_vector(x, role: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise MetricError(f"{role} must be a non-empty 1-D probability vector, got shape {x.shape}")
    if not np.isfinite(x).all() or (x < 0).any() or abs(x.sum() - 1.0) > 1e-9:
        raise MetricError(f"{role} must hold non-negative numbers summing to 1 (sums to {x.sum():.6g})")
    return x


def histogram_frontier(p, q) -> Frontier:
    """The exact frontier of two probability vectors over the same bins."""
    p, q = _probability_vector(p, "p"), _probability_vector(q, "q")
    if p.shape != q.shape:
        raise MetricError(f"p and q must have the same bins, got {p.size} and {q.size}")

    from scipy.special import rel_entr  # on use: the registry imports this module in every run, IFC's too

    def kl_to_mixture(lam: float) -> tuple[float, float]:
        r = lam * p + (1.0 - lam) * q
        return float(rel_entr(p, r).sum()), float(rel_entr(q, r).sum())

    return Frontier(kl_to_mixture, exact=True)


def _log_probs(x, role: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise MetricError(f"{role} must be a non-empty 1-D array of log-probabilities")
    if not np.isfinite(x).all():
        raise MetricError(
            f"{role} holds non-finite log-probabilities; the model must give every "
            "text a positive probability (smooth it)"
        )
    return x


def sample_frontier(logp_on_p, logq_on_p, logp_on_q, logq_on_q) -> Frontier:
    """The Monte Carlo frontier: ``logp_on_q`` is log p(x) for the texts x drawn from q, etc."""
    lp_p, lq_p = _log_probs(logp_on_p, "log p on p's texts"), _log_probs(logq_on_p, "log q on p's texts")
    lp_q, lq_q = _log_probs(logp_on_q, "log p on q's texts"), _log_probs(logq_on_q, "log q on q's texts")
    if lp_p.shape != lq_p.shape or lp_q.shape != lq_q.shape:
        raise MetricError("each sample needs one log p and one log q per text")

    def log_mixture(lp: np.ndarray, lq: np.ndarray, lam: float) -> np.ndarray:
        with np.errstate(divide="ignore"):  # log 0 = -inf at λ = 0 or 1 leaves the other term
            return np.logaddexp(np.log(lam) + lp, np.log1p(-lam) + lq)

    def kl_to_mixture(lam: float) -> tuple[float, float]:
        return (
            float(np.mean(lp_p - log_mixture(lp_p, lq_p, lam))),
            float(np.mean(lq_q - log_mixture(lp_q, lq_q, lam))),
        )

    return Frontier(kl_to_mixture, exact=False)


def _floor(frontier: Frontier, value: float) -> float:
    return max(value, 0.0) if frontier.exact else value


def kl_forward(frontier: Frontier) -> float:
    """KL(p ‖ q) (000 eq. 5): r_0 = q."""
    return _floor(frontier, frontier(0.0)[0])


def kl_backward(frontier: Frontier) -> float:
    """KL(q ‖ p) (000 eq. 6): r_1 = p."""
    return _floor(frontier, frontier(1.0)[1])


def exp_kl(frontier: Frontier) -> float:
    """e^KL(p ‖ q) - 1 (000 eq. 7, shifted by its value 1 for p = q, footnote 4)."""
    kl = kl_forward(frontier)
    with np.errstate(over="ignore"):
        value = float(np.expm1(kl))
    if not np.isfinite(value):
        raise MetricError(
            f"exponentiated KL overflows: KL(p ‖ q) = {kl:.1f} nats > 709; "
            "use the forward KL, which ranks pairs identically"
        )
    return value


def js(frontier: Frontier) -> float:
    """Jensen-Shannon divergence (000 eq. 8), in nats."""
    to_p, to_q = frontier(0.5)
    return _floor(frontier, 0.5 * (to_p + to_q))


def auc(frontier: Frontier, *, scaling: float = 5.0, points: int = 25) -> float:
    """1 - area under the divergence frontier scaled by s = ``scaling`` (000 eq. 9; MAUVE)."""
    if not (np.isfinite(scaling) and scaling > 0):
        raise MetricError(f"AUC divergence: scaling s must be a positive number, not {scaling!r}")
    if not (isinstance(points, (int, np.integer)) and points >= 1):
        raise MetricError(f"AUC divergence: points must be a positive integer, not {points!r}")
    kls = np.array([frontier(lam) for lam in np.linspace(1e-6, 1 - 1e-6, int(points))])
    x = np.concatenate([[1.0], np.exp(-scaling * kls[:, 1]), [0.0]])  # e^{-s KL(q ‖ r_λ)}
    y = np.concatenate([[0.0], np.exp(-scaling * kls[:, 0]), [1.0]])  # e^{-s KL(p ‖ r_λ)}
    area = float(np.sum(0.5 * (y[1:] + y[:-1]) * (x[:-1] - x[1:])))
    return _floor(frontier, 1.0 - area)


DIVERGENCES: dict[str, Callable[..., float]] = {
    "kl_forward": kl_forward,
    "kl_backward": kl_backward,
    "exp_kl": exp_kl,
    "js": js,
    "auc": auc,
}


def register_divergences(
    prefix: str,
    frontier: Callable[..., Frontier],
    *,
    inputs: str,
    descriptions: dict[str, str],
    notes: str = "",
    more: dict[str, str] | None = None,
    version: str = "1",
    sources: dict[str, str] | None = None,
    ranges: dict[str, tuple[float, float]] | None = None,
    needs: tuple[str, ...] = (),
    failure_modes: tuple[str, ...] = (),
    stochastic: bool = False,
) -> None:
    """Register ``<prefix>_kl_forward``, ``_kl_backward``, ``_exp_kl`` and ``_js``: each the divergence of
    ``frontier(p, q, *, seed, **params)``, taking the frontier's keyword parameters with their defaults.

    ``descriptions`` maps each suffix to its one-line description; ``notes`` (the parameters' meaning)
    ends every docstring, after what ``more`` says of that suffix. ``version`` is each metric's declared
    version (``textmetric_bench.api.registry.metric``); ``sources`` and ``ranges`` (by suffix; ranges default to
    ``RANGES``), ``needs``, ``failure_modes`` and ``stochastic`` are its catalogue facts. Each metric is published in the frontier's module under its
    name, so worker processes find it there.
    """
    module = sys.modules[frontier.__module__]
    params = [p for p in inspect.signature(frontier).parameters.values() if p.kind is p.KEYWORD_ONLY]
    P = inspect.Parameter
    signature = inspect.Signature([P("p", P.POSITIONAL_OR_KEYWORD), P("q", P.POSITIONAL_OR_KEYWORD), *params])
    for suffix, (divergence, symmetric) in FRONTIER_DIVERGENCES.items():
        name = f"{prefix}_{suffix}"
        fn = _divergence_metric(frontier, divergence)
        fn.__signature__ = signature  # type: ignore[attr-defined]
        fn.__name__ = fn.__qualname__ = name
        fn.__module__ = frontier.__module__
        fn.__doc__ = descriptions[suffix] + (more or {}).get(suffix, "") + notes
        register = metric(
            name,
            inputs=inputs,
            symmetric=symmetric,
            description=descriptions[suffix],
            version=version,
            source=(sources or {})[suffix],
            value_range={**RANGES, **(ranges or {})}[suffix],
            needs=needs,
            failure_modes=failure_modes,
            stochastic=stochastic,
        )
        setattr(module, name, register(fn))


#: Range of each divergence of two distributions: KL and e^KL - 1 unbounded, JS at most ln 2 (nats).
RANGES = {"kl_forward": (0.0, np.inf), "kl_backward": (0.0, np.inf), "exp_kl": (0.0, np.inf), "js": (0.0, np.log(2))}

#: The divergences a frontier family registers, with whether each is symmetric (``auc`` has its own parameters).
FRONTIER_DIVERGENCES = {
    "kl_forward": (kl_forward, False),
    "kl_backward": (kl_backward, False),
    "exp_kl": (exp_kl, False),
    "js": (js, True),
}


def _divergence_metric(frontier: Callable[..., Frontier], divergence: Callable[[Frontier], float]):
    def divergence_metric(p, q, *, seed: int = 0, **params) -> float:
        return divergence(frontier(p, q, seed=seed, **params))

    return divergence_metric
