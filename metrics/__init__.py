"""Built-in metric plugins: importing this package imports every module in it, which registers them all.

A new file here with a ``@metric``-decorated function is a new metric: no list to extend, no config
file to write (its Hydra node is generated from its signature, ``bench/running/metric_configs.py``).

A module that fails to import is recorded and reported by every run (console, log, ``run.json``, exit status 3),
and the other metrics still run (``textmetric_bench.api.registry.import_metric_module``).
"""

import pkgutil

from textmetric_bench.api.registry import import_metric_module

for _module in pkgutil.walk_packages(__path__, prefix=f"{__name__}.", onerror=lambda name: None):
    import_metric_module(_module.name)
