"""String-based plug-in divergences (000 §3.2): Kneser-Ney n-gram models, Monte Carlo estimates.

A Kneser-Ney smoothed n-gram model p̂ is fitted on each corpus (000 §5 used KenLM 5-grams); each
divergence of ``metrics.divergences`` is then estimated by Monte Carlo on the corpora's own texts
(000 eqs. 10, 12, 13), from log p̂ and log q̂ of every text of p and of q. A text is its
``bench.api.tokens`` tokens and an end symbol ``</s>``, each predicted from the previous ``order`` - 1
tokens (the start padded with ``<s>``); log-probabilities are in nats.

``unit`` says what a Monte Carlo sample is:

- "text" is 000's estimator: a sample is a whole text, log p̂(x) the sum over its tokens, and
  the mixture r_λ mixes the two models' text probabilities. Each model scores its own training
  texts (000 eq. 12; its authors' code did the same), so the models memorise: per-text KLs run to
  tens of nats even between samples of one source and grow with text length, and JS and AUC
  saturate at their disjoint-support values (JS 0.6921 / 0.6931 / 0.6931 for same source / 50-50
  mix / other source on clinc150 vs banking77, order 3). On the fortune pair the per-text
  backward KL put computing quotes closer to people quotes than to other computing quotes
  (50.6 vs 51.7 nats, 5 draws) because people quotes are shorter.
- "token" (default) makes each token in its context a sample: KL(p̂ ‖ q̂) becomes a rate in nats
  per token (the per-text estimate divided by the mean tokens per text, plus one for ``</s>``),
  e^KL - 1 the perplexity ratio PP_q̂ / PP_p̂ - 1 on p's texts (the perplexity that 000 eq. 7 is
  motivated by is per token), and JS and AUC compare the two models' next-token distributions
  averaged over each corpus's own contexts (r_λ mixes p̂(w | h) and q̂(w | h)). This is a
  departure from 000, which mixes whole-string probabilities.

The AUC divergence uses s = 0.2, 000 §5's value for strings (5 is for clusters); 000's authors'
code applied it to KenLM's log10 scores, i.e. s = 0.087 on nats (set ``scaling``).

The model is interpolated Kneser-Ney (Kneser & Ney 1995; Chen & Goodman 1998 §3): at the highest
order the discounted count, at lower orders the discounted continuation count (number of
distinct left neighbours), each level interpolated with the next lower one by the mass its
discount freed. ``discount`` = "auto" estimates one discount per order as Ney, Essen & Kneser
(1994), D = n1 / (n1 + 2 n2) from that order's counts of counts (0.5 when it has no singletons).
Unknown words: the unigram level is interpolated with the uniform distribution over the
model's words, ``</s>`` and one ``<unk>`` that every unseen word maps to, so a text of the other
corpus gets a finite probability; a context never seen backs off to the next lower order. The
probabilities of the words, ``</s>`` and ``<unk>`` sum to 1 in every context.

Why not a library: nltk.lm's KneserNeyInterpolated (3.10) took about 2.6 s per pair of 100-text
clinc150/banking77 corpora at order 3 (its continuation counts scan every context on each query)
and gives probability 0 to any word absent from its training text (its lowest level has no
uniform floor), so 96 of 100 banking77 texts got log q̂ = -inf under a clinc150 model. KenLM's
pip package only queries ARPA files; its trainer (lmplz) is a separate C++ binary. This model
precomputes every level once per corpus (``per_corpus``) and scores a pair in tens of
milliseconds. Unlike KenLM it uses one discount per order, not modified KN's three: at a few
hundred texts the counts of 3s and 4s that those need are often zero.

``order`` defaults to 1 (a smoothed unigram model, where Kneser-Ney reduces to absolute
discounting with a uniform floor), because every model scores its own training texts and the
higher orders memorise 100-text corpora: in-sample, the own model's fit then varies from corpus
to corpus and swamps the difference between corpora. With ``unit`` = "token", order 1 is the only
order at which all five divergences ranked same-source pairs closer on the fortune pair (orders
2-5 misranked the backward KL: 3.57 vs 3.49 nats per token at order 3) and on clinc150/banking77.
On fortune KSC (k = 7, n = 100, 5 repetitions) ngram_js reached A = .90, rho = .80 at order 1 and
A = .81, rho = .62 at order 3; only the forward KL did better at order 3 (rho .53 vs .33). 000's
5-grams had 5,000 texts a side: raise ``order`` for corpora of that size.
"""

from __future__ import annotations

import inspect
from collections import Counter, defaultdict
from typing import NamedTuple, Sequence

import numpy as np

from bench.api.inputs import as_texts
from bench.api.registry import metric
from bench.api.sharing import per_corpus, per_pair
from bench.api.tokens import tokenize
from bench.errors import MetricError
from metrics.divergences import Frontier, auc, register_divergences, sample_frontier

START, END, UNK = "<s>", "</s>", "<unk>"


class KneserNey(NamedTuple):
    """An interpolated Kneser-Ney model: ``levels[k - 1]`` maps a context of k - 1 tokens to
    (discounted probability of each word seen after it, interpolation weight of level k - 1)."""

    order: int
    levels: tuple[dict[tuple[str, ...], tuple[dict[str, float], float]], ...]
    vocabulary: frozenset[str]  # words seen in training, and END

    def probability(self, word: str, context: Sequence[str]) -> float:
        """p(word | the last order - 1 tokens of context); unseen words count as <unk>."""
        p = 1.0 / (len(self.vocabulary) + 1)  # the uniform base over vocabulary and <unk>
        for k, level in enumerate(self.levels, start=1):
            entry = level.get(tuple(context[len(context) - k + 1:]) if k > 1 else ())
            if entry is not None:  # an unseen context leaves the lower order's estimate
                seen, weight = entry
                p = seen.get(word, 0.0) + weight * p
        return p

    def token_log_probabilities(self, tokens: Sequence[str]) -> np.ndarray:
        """Natural log-probability of each of a text's tokens, then of END, given its context."""
        known = [t if t in self.vocabulary else UNK for t in tokens]
        padded = [START] * (self.order - 1) + known + [END]
        return np.log([self.probability(padded[i], padded[i - self.order + 1:i])
                       for i in range(self.order - 1, len(padded))])

    def log_probability(self, tokens: Sequence[str]) -> float:
        """Natural log-probability of a text: its tokens, then END."""
        return float(self.token_log_probabilities(tokens).sum())


def _discount(counts, discount: float | str) -> float:
    if discount != "auto":
        return float(discount)
    of_counts = Counter(counts.values())
    n1, n2 = of_counts[1], of_counts[2]
    return n1 / (n1 + 2 * n2) if n1 else 0.5


def fit_kneser_ney(sentences: Sequence[Sequence[str]], *, order: int, discount: float | str = "auto") -> KneserNey:
    """Fit an interpolated Kneser-Ney model of ``order`` on tokenised sentences."""
    if not (isinstance(order, int) and order >= 1):
        raise MetricError(f"n-gram order must be an integer >= 1, not {order!r}")
    if discount != "auto" and not (isinstance(discount, (int, float)) and 0 < discount <= 1):
        raise MetricError(f"Kneser-Ney discount must be 'auto' or a number in (0, 1], not {discount!r}")
    counts = Counter()  # highest order: raw counts
    for tokens in sentences:
        padded = [START] * (order - 1) + list(tokens) + [END]
        counts.update(tuple(padded[i - order + 1:i + 1]) for i in range(order - 1, len(padded)))
    by_length = {order: counts}
    for k in range(order - 1, 0, -1):  # lower orders: continuation counts
        by_length[k] = Counter(gram[1:] for gram in by_length[k + 1])
    levels = []
    for k in range(1, order + 1):
        d = _discount(by_length[k], discount)
        grouped: dict[tuple, dict[str, int]] = defaultdict(dict)
        for gram, c in by_length[k].items():
            grouped[gram[:-1]][gram[-1]] = c
        level = {}
        for context, followers in grouped.items():
            total = sum(followers.values())
            level[context] = ({w: max(c - d, 0.0) / total for w, c in followers.items()},
                              d * len(followers) / total)
        levels.append(level)
    return KneserNey(order, tuple(levels), frozenset(w for (w,) in by_length[1]))


@per_corpus
def tokenised(texts: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """Every text as its ``bench.api.tokens`` tokens."""
    return tuple(tuple(tokenize(t)) for t in texts)


@per_corpus
def corpus_model(texts: Sequence[str], *, order: int, discount: float | str) -> KneserNey:
    """The Kneser-Ney model of one corpus, fitted once per corpus in a run."""
    return fit_kneser_ney(tokenised(texts), order=order, discount=discount)


@per_pair
def pair_log_probs(p: list[str], q: list[str], *, order: int, discount: float | str):
    """Per-token log p̂ and log q̂ of each text of p and of q, shared by the five n-gram divergences:
    (log p̂ on p, log q̂ on p, log p̂ on q, log q̂ on q), each a list with one array per text."""
    model_p, model_q = corpus_model(p, order=order, discount=discount), corpus_model(q, order=order, discount=discount)
    on_p, on_q = tokenised(p), tokenised(q)
    score = lambda model, texts: [model.token_log_probabilities(t) for t in texts]  # noqa: E731
    return score(model_p, on_p), score(model_q, on_p), score(model_p, on_q), score(model_q, on_q)


def ngram_frontier(p, q, *, seed: int = 0, order: int = 1, discount: float | str = "auto",
                   unit: str = "token") -> Frontier:
    """The Monte Carlo divergence frontier of the two corpora's n-gram models, over texts or tokens
    (``seed`` unused: nothing is random)."""
    p, q = as_texts(p, role="first corpus"), as_texts(q, role="second corpus")
    if unit == "token":
        samples = np.concatenate
    elif unit == "text":
        samples = lambda per_text: np.array([lp.sum() for lp in per_text])  # noqa: E731
    else:
        raise MetricError(f"n-gram divergences: unit must be 'token' or 'text', not {unit!r}")
    return sample_frontier(*(samples(lp) for lp in pair_log_probs(p, q, order=order, discount=discount)))


MODEL_PARAMETERS = """

``order``: n of the n-gram models; 1 for ~100-text corpora, where higher orders memorise (000: 5 on 5k
texts). ``discount``: Kneser-Ney discount per order; "auto" = n1 / (n1 + 2 n2) (Ney, Essen & Kneser 1994),
or a number in (0, 1]. ``unit``: a Monte Carlo sample is a "token" (nats per token; default) or a "text"
(000's per-string estimator).
"""


register_divergences("ngram", ngram_frontier, inputs="texts", notes=MODEL_PARAMETERS, descriptions={
    "kl_forward": "Monte Carlo KL(p̂ ‖ q̂) of Kneser-Ney n-gram models (000 eqs. 5, 13)",
    "kl_backward": "Monte Carlo KL(q̂ ‖ p̂) of Kneser-Ney n-gram models (000 eqs. 6, 12)",
    "exp_kl": "e^KL(p̂ ‖ q̂) - 1 of Kneser-Ney n-gram models, Monte Carlo (000 eq. 7, §3.2)",
    "js": "Monte Carlo Jensen-Shannon divergence of Kneser-Ney n-gram models (000 eq. 8, §3.2)"},
    more={"exp_kl": ("\nPer token it is the perplexity ratio - 1; per text (unit=text) it raises an error once "
                     "KL passes 709 nats, where e^KL overflows.\n")})


@metric("ngram_auc", inputs="texts", symmetric=True,
        description="1 - AUC of the Monte Carlo divergence frontier of Kneser-Ney n-gram models (000 eq. 9)")
def ngram_auc(p, q, *, seed: int = 0, order: int = 1, discount: float | str = "auto", unit: str = "token",
              scaling: float = 0.2, curve_points: int = 25) -> float:
    """1 - AUC with s = 0.2, 000 §5's scaling for strings (``seed`` unused).

    ``scaling``: s in exp(-s KL) (000 §5: 0.2 for strings; its code's log10 KLs make that 0.087 on nats).
    ``curve_points``: mixture weights lambda on the frontier (MAUVE's discretisation).
    """
    return auc(ngram_frontier(p, q, order=order, discount=discount, unit=unit), scaling=scaling,
               points=curve_points)


ngram_auc.__doc__ = inspect.cleandoc(ngram_auc.__doc__) + MODEL_PARAMETERS
