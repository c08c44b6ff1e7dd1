"""The self-contained HTML report of run and sweep directories (``python -m textmetric_bench.reports``)."""
