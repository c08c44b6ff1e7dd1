"""The same checks over every registered metric (built-ins and installed plugins).

Ids read `<metric>-<check>`, so `pytest -k fid` selects one metric's checks.
Corpora are real: samples of the embedded fortune pair, embedded with the real model.
Whether a 50/50 mix lies between its sources is not a contract: responding monotonically to
mixing is what the KSC benchmark scores (ZIPF, for one, fails it on the fortune pair, since the
Zipf slope of a mix sits near one source's). tests/test_reference_metrics.py checks it for the
built-ins on 004's clinc150/banking77 pair.
"""

import numpy as np
import pytest

from textmetric_bench.api.registry import available_metrics, get_metric


def check_returns_finite_float(m, s):
    value = m(*s.get(m, "a1", "b1"), seed=0)
    assert isinstance(value, float) and np.isfinite(value)


def check_same_seed_same_value(m, s):
    p, q = s.get(m, "a1", "b1")
    assert m(p, q, seed=11) == m(p, q, seed=11)


def check_order_invariant(m, s):
    p, q = s.get(m, "a1", "b1")
    rng = np.random.default_rng(5)
    shuffled_p = [p[i] for i in rng.permutation(len(p))]
    shuffled_q = [q[i] for i in rng.permutation(len(q))]
    if m.inputs == "embeddings":
        shuffled_p, shuffled_q = np.array(shuffled_p), np.array(shuffled_q)
    assert m(shuffled_p, shuffled_q, seed=3) == pytest.approx(m(p, q, seed=3), rel=1e-6, abs=1e-9)


# Direction checks average over 5 independent draws of 100 texts: a weak but real signal
# (ZIPF's gap between the fortune sources is ~2.5 single-draw standard deviations) must not
# fail by the luck of one draw.
def check_own_source_is_closer(m, s):
    sign = 1.0 if m.higher_is_more_different else -1.0  # a similarity: the own source is more similar
    assert sign * s.mean(m, "a1", "a2") < sign * s.mean(m, "a1", "b1")
    assert sign * s.mean(m, "b1", "b2") < sign * s.mean(m, "b1", "a1")



def check_symmetric_if_declared(m, s):
    p, q = s.get(m, "a1", "b1")
    if not m.symmetric:
        pytest.skip(f"{m.name} is declared asymmetric")
    assert m(p, q, seed=2) == pytest.approx(m(q, p, seed=2), rel=1e-6)


def check_empty_input_raises(m, s):
    p, _ = s.get(m, "a1", "b1")
    empty = np.zeros((0, np.asarray(p).shape[1])) if m.inputs == "embeddings" else []
    for args in ((empty, p), (p, empty)):
        with pytest.raises(Exception, match="(?i)empty"):
            m(*args, seed=0)


CHECKS = [check_returns_finite_float, check_same_seed_same_value, check_order_invariant,
          check_own_source_is_closer, check_symmetric_if_declared,
          check_empty_input_raises]


# The reference rows oracle and chance (metrics/bounds.py) are no text metrics: the oracle needs known
# positions and chance ignores the texts, so their own checks are in tests/test_bounds.py.
REFERENCE_ROWS = {name for name in available_metrics() if get_metric(name).module == "textmetric_bench.metrics.bounds"}


# Opt-in metrics (a language-model pass over every text) run their checks on 2 draws of 100 texts
# and only in the slow suite (`make test-slow`): on 2 CPU cores the LM needs minutes even for that.
@pytest.mark.parametrize(
    "name,check",
    [pytest.param(name, check, id=f"{name}-{check.__name__}",
                  marks=[pytest.mark.slow] if get_metric(name).opt_in else [])
     for name in available_metrics() if name not in REFERENCE_ROWS for check in CHECKS],
)
def test_metric_contract(name, check, request):
    samples = request.getfixturevalue("small_real_samples" if get_metric(name).opt_in else "real_samples")
    check(get_metric(name), samples)
