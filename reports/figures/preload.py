"""What a run's forkserver imports for its figures (``textmetric_bench.reports.figures.parallel.PRELOAD``, given to
``textmetric_bench.engine.pool.start_worker_server`` by the tasks): the modules whose functions are drawing jobs, so
that a drawing process forked from it starts with matplotlib and them imported."""

from textmetric_bench.reports.figures import drawing, heatmap, ksc, overview, radar  # noqa: F401
