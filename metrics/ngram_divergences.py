"""String-based plug-in divergences (000 §3.2): Kneser-Ney n-gram models, Monte Carlo estimates.

A Kneser-Ney smoothed n-gram model p̂ is fitted on each corpus (``textmetric_bench.metrics.kneser_ney``; 000 §5 used
KenLM 5-grams); each divergence of ``textmetric_bench.metrics.divergences`` is then estimated by Monte Carlo on the
corpora's own texts (000 eqs. 10, 12, 13), from log p̂ and log q̂ of every text of p and of q. A text
is its ``textmetric_bench.api.tokens`` tokens and an end symbol ``</s>``, each predicted from the previous
``order`` - 1 tokens (the start padded with ``<s>``); log-probabilities are in nats.

**One vocabulary per pair.** Both models are fitted and scored over the same closed vocabulary:
the words seen at least ``min_count`` (default 2) times in p and q together, ``</s>`` and one
``<unk>`` that stands for every rarer word in both corpora's texts; the lowest level's uniform
base is 1 / (size of that vocabulary) (``textmetric_bench.metrics.kneser_ney``). Per-token log-probabilities of
models with different vocabularies do not compare (Jurafsky & Martin, *Speech and Language
Processing*, 3rd ed., ch. 3, on perplexity), and 000 §4 likewise fits one clustering on both
corpora before comparing their histograms. Until version 2 each model had its own vocabulary and
one ``<unk>``: a word p̂ never saw got D V_p / (N_p (V_p + 1)) ≈ D / N_p, close to what a word
p̂ saw once gets (1 / N_p), whatever the word and whatever q was. On small or distant corpora,
where many words are unseen (of the tokens of 100 news descriptions, 36% occur in 100 clinc150
texts and only 58% in 100 other news descriptions), the KL then tracked the corpora's token
counts N, not their sources: on clinc150 vs news_category short descriptions (k = 7, n = 100, 5
repetitions) ngram_kl_backward scored A = .13 and ngram_auc A = .04. Now a word one model never
saw costs more the less the two vocabularies overlap, and the words seen once in the pair, whose
identity only the model trained on them knows (each model scores its own texts), are compared as
one ``<unk>`` whose rate each corpus has. There all five divergences reach A = .97-1.0; on the
shipped pairs no A fell by more than .005 and ρ by at most .03 (docs/metrics.md).

Also measured (same pairs and settings) and not kept: ``min_count`` = 1, every word its own
(A within .02; ρ lower by up to .07 on atis_news and clinc150/banking77); ``min_count`` = 3
(better on the fortune pair, worse on news headlines by category: A .92 against .95); and a
character-trigram spelling model of each corpus's words (an end-of-word symbol, unseen characters
sharing one back-off share) as the base distribution, so that unseen words spelled like the
corpus's own get more mass. That fixed the backward KL on clinc150 vs news descriptions (.13 ->
.99) but broke the forward KL there (1.0 -> .45) and the backward KL on the fortune pair (.90 ->
.57): a corpus with many rare words has a high novelty mass D V / N and forgives any unseen
English word. A spelling model shared by the pair, or renormalised over the joint vocabulary,
did the same.

``unit`` says what a Monte Carlo sample is:

- "text" is 000's estimator: a sample is a whole text, log p̂(x) the sum over its tokens, and
  the mixture r_λ mixes the two models' text probabilities. Each model scores its own training
  texts (000 eq. 12; its authors' code did the same), so the models memorise: per-text KLs grow
  with text length (1.9 nats between two 100-text samples of clinc150, 8 tokens a text; 5.7 of
  fortune computing, 18), and JS and AUC sit near their disjoint-support value log 2 = .69 (JS .50
  / .49 / .58 for same source / 50-50 mix / other source on fortune, 5 draws) and order KSC pairs
  poorly (ngram_js A = .67 / .83 / .43 on fortune / clinc150_banking77 / atis_news).
- "token" (default) makes each token in its context a sample: KL(p̂ ‖ q̂) becomes a rate in nats
  per token (the per-text estimate divided by the mean tokens per text, plus one for ``</s>``),
  e^KL - 1 the perplexity ratio PP_q̂ / PP_p̂ - 1 on p's texts (the perplexity that 000 eq. 7 is
  motivated by is per token), and JS and AUC compare the two models' next-token distributions
  averaged over each corpus's own contexts (r_λ mixes p̂(w | h) and q̂(w | h)). This is a
  departure from 000, which mixes whole-string probabilities.

The AUC divergence uses s = 0.2, 000 §5's value for strings (5 is for clusters); 000's authors'
code applied it to KenLM's log10 scores, i.e. s = 0.087 on nats (set ``scaling``).

Why not a library: nltk.lm's KneserNeyInterpolated (3.10) took about 2.6 s per pair of 100-text
clinc150/banking77 corpora at order 3 (its continuation counts scan every context on each query)
and gives probability 0 to any word absent from its training text (its lowest level has no
uniform floor), so 96 of 100 banking77 texts got log q̂ = -inf under a clinc150 model. KenLM's
pip package only queries ARPA files; its trainer (lmplz) is a separate C++ binary. Here each
corpus is tokenised once (``per_corpus``), and the two models of a pair, fitted on its
vocabulary, are shared by the five divergences (``per_pair``): tokenising, fitting and scoring a
pair of 100 clinc150/banking77 texts takes about 5 ms at order 1, 8 ms at order 3. Unlike KenLM
it uses one discount per order, not modified KN's three: at a few hundred texts the counts of 3s
and 4s that those need are often zero.

``order`` defaults to 1 (a smoothed unigram model, where Kneser-Ney reduces to absolute
discounting with a uniform floor), because every model scores its own training texts and the
higher orders memorise 100-text corpora: in-sample, the own model's fit then varies from corpus
to corpus and swamps the difference between corpora. On KSC (k = 7, n = 100, 5 repetitions)
order 1 beat orders 2, 3 and 5 on every divergence on all three shipped pairs (on fortune ngram_js
A = .92 against .76-.81, ngram_kl_backward .92 against .74-.78). 000's 5-grams had 5,000 texts a
side: raise ``order`` for corpora of that size.
"""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Sequence

import numpy as np

from textmetric_bench.api.inputs import as_texts
from textmetric_bench.api.registry import metric
from textmetric_bench.api.sharing import per_corpus, per_pair
from textmetric_bench.api.tokens import tokenize
from textmetric_bench.errors import MetricError
from textmetric_bench.metrics.divergences import Frontier, auc, register_divergences, sample_frontier
from textmetric_bench.metrics.kneser_ney import UNK, fit_kneser_ney


@per_corpus
def tokenised(texts: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """Every text as its ``textmetric_bench.api.tokens`` tokens."""
    return tuple(tuple(tokenize(t)) for t in texts)


@per_pair
def pair_log_probs(p: list[str], q: list[str], *, order: int, discount: float | str, min_count: int):
    """Per-token log p̂ and log q̂ of each text of p and of q, shared by the five n-gram divergences:
    (log p̂ on p, log q̂ on p, log p̂ on q, log q̂ on q), each a list with one array per text. Both
    models are fitted and scored over the pair's joint vocabulary (module note)."""
    if not (isinstance(min_count, int) and min_count >= 1):
        raise MetricError(f"n-gram divergences: min_count must be an integer >= 1, not {min_count!r}")
    counts = Counter(w for text in tokenised(p) + tokenised(q) for w in text)

    def kept(texts):  # the words seen min_count times in the pair; the rest are <unk>
        return [[w if counts[w] >= min_count else UNK for w in text] for text in texts]

    on_p, on_q = kept(tokenised(p)), kept(tokenised(q))
    model_p, model_q = (fit_kneser_ney(texts, order=order, discount=discount) for texts in (on_p, on_q))
    joint = len(model_p.vocabulary | model_q.vocabulary | {UNK})

    def score(model, texts):
        return [model.token_log_probabilities(t, joint) for t in texts]

    return score(model_p, on_p), score(model_q, on_p), score(model_p, on_q), score(model_q, on_q)


def ngram_frontier(
    p, q, *, seed: int = 0, order: int = 1, discount: float | str = "auto", unit: str = "token", min_count: int = 2
) -> Frontier:
    """The Monte Carlo divergence frontier of the two corpora's n-gram models, over texts or tokens
    (``seed`` unused: nothing is random)."""
    p, q = as_texts(p, role="first corpus"), as_texts(q, role="second corpus")
    if unit == "token":
        samples = np.concatenate
    elif unit == "text":
        samples = lambda per_text: np.array([lp.sum() for lp in per_text])  # noqa: E731
    else:
        raise MetricError(f"n-gram divergences: unit must be 'token' or 'text', not {unit!r}")
    log_probs = pair_log_probs(p, q, order=order, discount=discount, min_count=min_count)
    return sample_frontier(*(samples(lp) for lp in log_probs))


MODEL_PARAMETERS = """

``order``: n of the n-gram models; 1 for ~100-text corpora, where higher orders memorise (000: 5 on 5k
texts). ``discount``: Kneser-Ney discount per order; "auto" = n1 / (n1 + 2 n2) (Ney, Essen & Kneser 1994),
or a number in (0, 1]. ``unit``: a Monte Carlo sample is a "token" (nats per token; default) or a "text"
(000's per-string estimator). ``min_count``: words seen fewer times in the two corpora together are one
``<unk>`` in both models; 1 keeps every word.
"""


VERSION = "2"  # 2: one vocabulary per pair (min_count); Unicode-normalised tokens

NGRAM_FACTS = {
    "needs": ("tokens",),
    "failure_modes": (
        "Monte Carlo estimates: can be negative for close corpora (estimator bias)",
        "small n with little shared vocabulary: much mass on <unk>",
        "higher orders memorise ~100-text corpora",
    ),
}

register_divergences(
    "ngram",
    ngram_frontier,
    inputs="texts",
    notes=MODEL_PARAMETERS,
    version=VERSION,
    **NGRAM_FACTS,
    sources={
        suffix: f"000 {eqs}, §3.2"
        for suffix, eqs in (
            ("kl_forward", "eqs. 5, 13"),
            ("kl_backward", "eqs. 6, 12"),
            ("exp_kl", "eq. 7"),
            ("js", "eq. 8"),
        )
    },
    ranges={suffix: (-float("inf"), float("inf")) for suffix in ("kl_forward", "kl_backward", "js")}
    | {"exp_kl": (-1.0, float("inf"))},
    descriptions={
        "kl_forward": "Monte Carlo KL(p̂ ‖ q̂) of Kneser-Ney n-gram models (000 eqs. 5, 13)",
        "kl_backward": "Monte Carlo KL(q̂ ‖ p̂) of Kneser-Ney n-gram models (000 eqs. 6, 12)",
        "exp_kl": "e^KL(p̂ ‖ q̂) - 1 of Kneser-Ney n-gram models, Monte Carlo (000 eq. 7, §3.2)",
        "js": "Monte Carlo Jensen-Shannon divergence of Kneser-Ney n-gram models (000 eq. 8, §3.2)",
    },
    more={
        "exp_kl": (
            "\nPer token it is the perplexity ratio - 1; per text (unit=text) it raises an error once "
            "KL passes 709 nats, where e^KL overflows.\n"
        )
    },
)


@metric(
    "ngram_auc",
    inputs="texts",
    symmetric=True,
    version=VERSION,
    source="000 eq. 9, §3.2",
    value_range=(0.0, 1.0),
    **NGRAM_FACTS,
    description="1 - AUC of the Monte Carlo divergence frontier of Kneser-Ney n-gram models (000 eq. 9)",
)
def ngram_auc(
    p,
    q,
    *,
    seed: int = 0,
    order: int = 1,
    discount: float | str = "auto",
    unit: str = "token",
    min_count: int = 2,
    scaling: float = 0.2,
    curve_points: int = 25,
) -> float:
    """1 - AUC with s = 0.2, 000 §5's scaling for strings (``seed`` unused).

    ``scaling``: s in exp(-s KL) (000 §5: 0.2 for strings; its code's log10 KLs make that 0.087 on nats).
    ``curve_points``: mixture weights lambda on the frontier (MAUVE's discretisation).
    """
    frontier = ngram_frontier(p, q, order=order, discount=discount, unit=unit, min_count=min_count)
    return auc(frontier, scaling=scaling, points=curve_points)


ngram_auc.__doc__ = inspect.cleandoc(ngram_auc.__doc__) + MODEL_PARAMETERS
