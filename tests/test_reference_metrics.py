"""Each built-in metric against a well-known implementation, and facts specific to each metric.

References: prdc (PR, DC), mauve-text (MAUVE), scipy's sqrtm route (FID), scipy's
chi2_contingency and chisquare (CHI), scipy's linregress (ZIPF), scikit-learn (CLASSIFIER),
scipy's cosine cdist (IRPR). Inputs are the real fortune samples of ``real_samples`` and,
for the direction test, samples of 004's first pair (clinc150 vs banking77).
"""

import numpy as np
import pytest
from scipy import linalg, stats
from scipy.spatial.distance import cdist

from textmetric_bench.api.inputs import canonical_pair
from textmetric_bench.api.registry import builtin_metrics, get_metric
from textmetric_bench.api.tokens import token_counts, top_tokens
from textmetric_bench.data.corpora import load_pair
from textmetric_bench.errors import MetricError
from textmetric_bench.metrics.chi import chi
from textmetric_bench.metrics.classifier import classifier
from textmetric_bench.metrics.fid import fid
from textmetric_bench.metrics.irpr import irpr
from textmetric_bench.metrics.mauve import mauve
from textmetric_bench.metrics.prdc import dc, pr, precision_recall_density_coverage
from textmetric_bench.metrics.zipf import zipf, zipf_coefficient


@pytest.fixture(scope="module")
def vec(real_samples):
    return {name: np.asarray(v, dtype=np.float64) for name, v in real_samples.draws[0][1].items()}


@pytest.fixture(scope="module")
def txt(real_samples):
    return real_samples.draws[0][0]


# --- PR and DC: prdc.compute_prdc ---------------------------------------------------------


@pytest.mark.parametrize("real,fake,k", [("a1", "b1", 5), ("b1", "a1", 5), ("a1", "a2", 3), ("a1", "mix", 10)])
def test_prdc_matches_the_prdc_package(vec, real, fake, k, capsys):
    from prdc import compute_prdc

    x, y = vec[real], vec[fake][:90]  # unequal sizes
    expected = compute_prdc(real_features=x, fake_features=y, nearest_k=k)
    ours = precision_recall_density_coverage(x, y, nearest_k=k)
    for key, value in expected.items():
        assert ours[key] == pytest.approx(float(value), abs=1e-9), key
    f1 = lambda a, b: 2 * a * b / (a + b) if a + b else 0.0  # noqa: E731
    pr_f1 = f1(expected["precision"], expected["recall"])
    assert pr(x, y, nearest_k=k) == pytest.approx(1 - pr_f1, abs=1e-12)
    density = min(float(expected["density"]), 1.0)
    assert dc(x, y, nearest_k=k) == pytest.approx(1 - f1(density, expected["coverage"]), abs=1e-12)


def test_pr_parts_swap_with_the_corpora_and_dc_takes_p_as_the_reference(vec):
    # precision of (p, q) is the recall of (q, p), so PR's F1 is symmetric; DC is not
    forward = precision_recall_density_coverage(vec["a1"], vec["b1"][:90])
    backward = precision_recall_density_coverage(vec["b1"][:90], vec["a1"])
    assert (forward["precision"], forward["recall"]) == (backward["recall"], backward["precision"])
    assert forward["precision"] != forward["recall"]
    assert dc(vec["a1"], vec["b1"]) != pytest.approx(dc(vec["b1"], vec["a1"]), abs=1e-3)


def test_pr_and_dc_are_zero_for_a_corpus_against_itself(vec):
    assert pr(vec["a1"], vec["a1"]) == 0.0
    m = precision_recall_density_coverage(vec["a1"], vec["a1"])
    assert m["precision"] == m["recall"] == m["coverage"] == 1.0


def test_pr_with_too_few_texts_for_k_raises(vec):
    with pytest.raises(MetricError, match="more than 5 texts"):
        pr(vec["a1"][:5], vec["b1"])


# --- MAUVE: mauve-text ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"num_buckets": 6, "mauve_scaling_factor": 2.0},
        {
            "kmeans_explained_var": 0.5,
            "kmeans_num_redo": 2,
            "pca_max_data": 120,
            "divergence_curve_discretization_size": 10,
        },
    ],
)
def test_mauve_matches_mauve_text(vec, params):
    from mauve import compute_mauve

    x, y = canonical_pair(vec["a1"], vec["mix"])
    expected = compute_mauve(p_features=x, q_features=y, seed=7, **params).mauve
    assert mauve(vec["a1"], vec["mix"], seed=7, **params) == pytest.approx(1 - expected, abs=1e-12)


def test_mauve_of_a_corpus_against_itself_is_zero(vec):
    assert mauve(vec["a1"], vec["a1"], seed=0) == pytest.approx(0.0, abs=1e-9)


def test_mauve_rejects_more_buckets_than_texts(vec):
    with pytest.raises(MetricError, match="buckets"):
        mauve(vec["a1"][:3], vec["b1"][:3], num_buckets=10)


# --- FID: scipy's sqrtm route (as in pytorch-fid) -----------------------------------------


def scipy_fid(x, y):
    mu_x, mu_y = x.mean(axis=0), y.mean(axis=0)
    s_x, s_y = np.cov(x, rowvar=False), np.cov(y, rowvar=False)
    root = linalg.sqrtm(s_x @ s_y).real
    return float((mu_x - mu_y) @ (mu_x - mu_y) + np.trace(s_x + s_y - 2 * root))


@pytest.mark.parametrize("dims", [40, None])  # full-rank covariances, then rank-deficient (n < d)
@pytest.mark.parametrize("pair", [("a1", "b1"), ("a1", "a2")])
def test_fid_matches_scipy_sqrtm(vec, dims, pair):
    x, y = (vec[n][:, :dims] for n in pair)
    assert fid(x, y) == pytest.approx(scipy_fid(x, y), rel=1e-6, abs=1e-9)


# --- CHI: scipy's chi2_contingency and chisquare ---------------------------------------------


def observed_table(p, q, top):
    cp, cq = token_counts(p), token_counts(q)
    vocab = top_tokens(cp + cq, top)
    return np.array([[cp[t] for t in vocab], [cq[t] for t in vocab]], dtype=float)


@pytest.mark.parametrize("top", [5000, 50])
def test_chi_is_scipys_contingency_statistic(txt, top):
    table = observed_table(txt["a1"], txt["b1"], top)
    expected = stats.chi2_contingency(table, correction=False).statistic
    assert chi(txt["a1"], txt["b1"], top=top, normalise="none") == pytest.approx(expected, rel=1e-10)
    # 004's authors' route: one goodness-of-fit test per corpus against the pooled frequencies
    e = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    two_tests = stats.chisquare(table[0], e[0]).statistic + stats.chisquare(table[1], e[1]).statistic
    assert expected == pytest.approx(two_tests, rel=1e-10)
    # phi^2 = chi^2 / N lies in [0, 1] for a 2-row table; the default divides by the dof
    assert chi(txt["a1"], txt["b1"], top=top) == chi(txt["a1"], txt["b1"], top=top, normalise="dof")
    phi2 = chi(txt["a1"], txt["b1"], top=top, normalise="tokens")
    assert phi2 == pytest.approx(expected / table.sum(), rel=1e-10) and 0 < phi2 <= 1
    assert chi(txt["a1"], txt["b1"], top=top, normalise="dof") == pytest.approx(
        expected / (table.shape[1] - 1), rel=1e-10
    )


# --- ZIPF: scipy's linregress ----------------------------------------------------------------


def test_zipf_coefficient_is_the_least_squares_slope(txt):
    freqs = np.array(sorted(token_counts(txt["a1"]).values(), reverse=True)[:5000], dtype=float)
    fit = stats.linregress(np.log(np.arange(1, len(freqs) + 1)), np.log(freqs))
    assert zipf_coefficient(txt["a1"]) == pytest.approx(-fit.slope, rel=1e-10)
    z_q = -stats.linregress(*_log_rank_freq(txt["b1"])).slope
    assert zipf(txt["a1"], txt["b1"]) == pytest.approx(abs(-fit.slope - z_q), rel=1e-10)


def _log_rank_freq(texts):
    freqs = np.array(sorted(token_counts(texts).values(), reverse=True)[:5000], dtype=float)
    return np.log(np.arange(1, len(freqs) + 1)), np.log(freqs)


def test_zipf_recovers_a_known_exponent():
    # 300 word types whose counts fall exactly as 10,000 / r^1.2 (rounded)
    words = [f"w{r}" for r in range(1, 301)]
    counts = [max(1, round(10_000 / r**1.2)) for r in range(1, 301)]
    corpus = [" ".join([w] * c) for w, c in zip(words, counts)]
    assert zipf_coefficient(corpus, top=100) == pytest.approx(1.2, abs=0.01)
    assert zipf_coefficient(corpus, top=100, log_rank_resolution=15) == pytest.approx(1.2, abs=0.01)


def test_zipf_needs_two_token_types():
    with pytest.raises(MetricError, match="at least 2"):
        zipf(["spam spam spam"], ["eggs and ham"])


# --- CLASSIFIER: scikit-learn cross-validation ------------------------------------------------


def test_classifier_is_the_held_out_balanced_accuracy(vec):
    """Default: scikit-learn's stratified 80/20 split, its RBF SVC, balanced accuracy on the 20%."""
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVC

    unit = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in (vec["a1"], vec["b1"][:80])]
    x, y = canonical_pair(*unit)
    data, labels = np.vstack([x, y]), np.r_[np.zeros(len(x)), np.ones(len(y))]
    train, test = train_test_split(np.arange(len(data)), test_size=0.2, stratify=labels, random_state=3)
    train = np.sort(train)
    svm = SVC(kernel="rbf", C=1.0, gamma="scale", class_weight="balanced").fit(data[train], labels[train])
    assert len(test) == 36
    assert classifier(vec["a1"], vec["b1"][:80], seed=3) == pytest.approx(
        balanced_accuracy_score(labels[test], svm.predict(data[test])), abs=1e-12
    )


def test_classifier_with_folds_is_the_cross_validated_balanced_accuracy(vec):
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.svm import SVC

    unit = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in (vec["a1"], vec["b1"][:80])]
    x, y = canonical_pair(*unit)
    data, labels = np.vstack([x, y]), np.r_[np.zeros(len(x)), np.ones(len(y))]
    predicted = cross_val_predict(
        SVC(kernel="rbf", C=1.0, gamma="scale", class_weight="balanced"),
        data,
        labels,
        cv=StratifiedKFold(n_splits=5, shuffle=True, random_state=3),
    )
    assert classifier(vec["a1"], vec["b1"][:80], seed=3, folds=5) == pytest.approx(
        balanced_accuracy_score(labels, predicted), abs=1e-12
    )


def test_classifier_is_near_chance_within_a_source_and_high_across(vec, real_samples):
    # one split holds out 40 texts (steps of .025), so single values spread: look at the mean over draws and seeds
    draws = [{k: np.asarray(v, dtype=np.float64) for k, v in draw[1].items()} for draw in real_samples.draws[:3]]
    same = [classifier(d["a1"], d["a2"], seed=s) for d in draws for s in range(4)]
    assert all(0.25 < v < 0.8 for v in same) and 0.4 < np.mean(same) < 0.6, same
    assert np.mean([classifier(vec["a1"], vec["b1"], seed=s) for s in range(3)]) > 0.7


def test_classifier_names_the_minimum_corpus_size(vec):
    with pytest.raises(MetricError, match="at least 5 texts in each corpus"):
        classifier(vec["a1"][:4], vec["b1"])


# --- IRPR: scipy's cosine distance ----------------------------------------------------------


def test_irpr_matches_scipy_cosine_nearest_neighbours(vec):
    d = cdist(vec["a1"], vec["mix"], metric="cosine")
    precision, recall = 1 - d.min(axis=1).mean(), 1 - d.min(axis=0).mean()
    expected = 1 - 2 * precision * recall / (precision + recall)
    assert irpr(vec["a1"], vec["mix"]) == pytest.approx(expected, abs=1e-12)


def test_irpr_of_a_corpus_against_itself_is_zero(vec):
    assert irpr(vec["a1"], vec["a1"]) == pytest.approx(0.0, abs=1e-12)


# --- Direction on 004's first pair ------------------------------------------------------------

DRAWS = 5


@pytest.fixture(scope="module")
def clinc_banking(mirror_dir, cache_dir, embedder):
    """Embedded pools of 400 clinc150 and 250 banking77 texts (004's first pair)."""
    a, b = load_pair("clinc150_banking77", cache_dir=cache_dir, mirror=mirror_dir)
    rng = np.random.default_rng(11)
    pool_a = [a.texts[i] for i in rng.choice(len(a.texts), 400, replace=False)]
    pool_b = [b.texts[i] for i in rng.choice(len(b.texts), 250, replace=False)]
    return (pool_a, embedder.embed(pool_a)), (pool_b, embedder.embed(pool_b))


def direction_draws(pools, inputs):
    """DRAWS sets of disjoint 100-text corpora a1, a2 (clinc150), b1 (banking77) and a 50/50 mix."""
    (texts_a, vecs_a), (texts_b, vecs_b) = pools
    if inputs == "embeddings":
        take_a, take_b, join = (lambda i: vecs_a[i]), (lambda i: vecs_b[i]), np.vstack
    else:
        take_a, take_b = (lambda i: [texts_a[k] for k in i]), (lambda i: [texts_b[k] for k in i])
        join = lambda parts: parts[0] + parts[1]  # noqa: E731
    rng = np.random.default_rng(5)
    for _ in range(DRAWS):
        ia, ib = rng.permutation(len(texts_a)), rng.permutation(len(texts_b))
        mix = join([take_a(ia[200:250]), take_b(ib[100:150])])
        yield take_a(ia[:100]), take_a(ia[100:200]), mix, take_b(ib[:100])


# Opt-in LM metrics score 1,500 texts here (minutes on 2 cores): slow suite only.
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.slow] if get_metric(n).opt_in else [])
        for n in builtin_metrics()
        if get_metric(n).module != "textmetric_bench.metrics.bounds"
    ],
)
def test_direction_on_clinc150_banking77(clinc_banking, name):
    # Averaged over draws: at n = 100 a single draw can misorder a noisy metric (PR orders
    # same < mix < other in about 7 draws of 10, DC in 9), while every mean is ordered.
    m = get_metric(name)
    values = np.array(
        [
            [m(a1, c, seed=r) for c in (a2, mix, b1)]
            for r, (a1, a2, mix, b1) in enumerate(direction_draws(clinc_banking, m.inputs))
        ]
    )
    same, half, other = values.mean(axis=0)
    assert same < half < other
