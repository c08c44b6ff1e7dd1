"""What the evaluation workers' forkserver imports for the figures (``textmetric_bench.engine.pool.PRELOAD``): the
modules whose functions ``textmetric_bench.reports.figures.parallel`` runs as jobs, so that a drawing process forked
from it starts with matplotlib and them imported."""

from textmetric_bench.reports.figures import heatmap, ksc, overview, parallel, radar  # noqa: F401
