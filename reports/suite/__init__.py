"""Many settings read together: each metric's per-setting values (settings), ranks with Friedman and post-hoc
tests (ranks), critical-difference diagrams (cd) and the suite report (report); the metric cards are in
``textmetric_bench.reports.cards``."""
