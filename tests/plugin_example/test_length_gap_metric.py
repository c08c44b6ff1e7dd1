"""The plugin's own tests: the harness's contract checks on its metric, without a model or a download.

Run from this directory once the package is installed (`pip install .`): `pytest`.
"""

from textmetric_bench.api.checks import ContractSamples, parametrize_with_checks

#: Corpora of our own for the same checks: one-line notes and longer sentences.
NOTES = [f"note {i} done" if i % 3 else f"note {i}" for i in range(60)]
SENTENCES = [f"the meeting about item {i} moved to the afternoon of day {i % 7}" for i in range(60)]


@parametrize_with_checks(["length_gap"])
def test_length_gap_keeps_the_contract(name, check):
    check()  # the synthetic corpora of textmetric_bench.api.checks


@parametrize_with_checks(["length_gap"])
def test_length_gap_keeps_the_contract_on_our_corpora(name, check):
    check(ContractSamples.from_corpora(NOTES, SENTENCES, size=10, n_draws=2))
