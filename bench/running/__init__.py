"""Running the tasks: the task registry, the composed config and its validation, the run itself, exit statuses,
sweeps and suites, regeneration of the shipped results, and the generated configs and docs (the tasks themselves are
in ``textmetric_bench.tasks``, above this layer)."""
