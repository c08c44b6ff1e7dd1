"""The public contract checks (``textmetric_bench.api.checks``) over every registered metric, built-ins and
installed plugins, twice: on the module's synthetic corpora (fast tier) and on real ones.

Ids read `<metric>-<check>`, so `pytest -k fid` selects one metric's checks.
The real corpora are samples of the embedded fortune pair, embedded with the real model, five draws
of 100 texts: the direction check averages over them, since a weak but real signal (ZIPF's gap
between the fortune sources is ~2.5 single-draw standard deviations) must not fail by the luck of one draw.
Whether a 50/50 mix lies between its sources is not a contract: responding monotonically to
mixing is what the KSC benchmark scores (ZIPF, for one, fails it on the fortune pair, since the
Zipf slope of a mix sits near one source's). tests/test_reference_metrics.py checks it for the
built-ins on 004's clinc150/banking77 pair.
"""

import numpy as np
import pytest

from textmetric_bench.api.checks import metric_checks
from textmetric_bench.api.registry import available_metrics, get_metric

# The reference rows oracle and chance (metrics/bounds.py) are no text metrics: the oracle needs known
# positions and chance ignores the texts, so their own checks are in tests/test_bounds.py.
REFERENCE_ROWS = {name for name in available_metrics() if get_metric(name).module == "textmetric_bench.metrics.bounds"}
METRICS = [name for name in available_metrics() if name not in REFERENCE_ROWS]
#: Opt-in metrics (a language-model pass over every text) run their checks on 2 draws of 100 texts
#: and only in the slow suite (`make test-slow`): on 2 CPU cores the LM needs minutes even for that.
OPT_IN = {name for name in METRICS if get_metric(name).opt_in}


def checks(names, **marks):
    return [
        pytest.param(name, check, id=f"{name}-{check_name}", marks=marks.get(name, []))
        for name in names
        for check_name, check in metric_checks(name)
    ]


@pytest.mark.parametrize("name,check", checks(sorted(set(METRICS) - OPT_IN)))
def test_metric_contract_on_synthetic_corpora(name, check):
    check()


@pytest.mark.parametrize("name,check", checks(METRICS, **{name: [pytest.mark.slow] for name in OPT_IN}))
def test_metric_contract(name, check, request):
    check(request.getfixturevalue("small_real_samples" if name in OPT_IN else "real_samples"))


def test_samples_embed_every_draw_in_one_call_and_each_sample_gets_its_own_vectors():
    """``ContractSamples.from_corpora`` calls ``embed`` once on all draws' texts (a length-batching embedder fills
    its batches that way) and hands each sample the rows of its own texts; a short answer is named."""
    from textmetric_bench.api.checks import SAMPLE_NAMES, ContractSamples

    a, b = [f"a text {i}" for i in range(60)], [f"b text number {i}" for i in range(60)]
    calls = []

    def fake_embed(texts):  # a fake: one vector per text, from the text itself
        calls.append(len(texts))
        return np.array([[len(t), int(t.rsplit(" ", 1)[1]), t.startswith("a")] for t in texts], dtype=float)

    samples = ContractSamples.from_corpora(a, b, embed=fake_embed, size=8, n_draws=3, seed=1)
    assert calls == [3 * 5 * 8]
    for texts, vectors in samples.draws:
        for name in SAMPLE_NAMES:
            np.testing.assert_array_equal(vectors[name], fake_embed(texts[name]))
    with pytest.raises(ValueError, match="embed gave 119 vectors for 120 texts"):
        ContractSamples.from_corpora(a, b, embed=lambda texts: fake_embed(texts)[1:], size=8, n_draws=3, seed=1)
