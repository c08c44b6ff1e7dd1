"""Built-in metric plugins: importing this package imports every module in it, which registers them all.

A new file here with a ``@metric``-decorated function is a new metric: no list to extend, no config
file to write (its Hydra node is generated from its signature, ``bench/tasks/metric_configs.py``).
"""

import pkgutil
from importlib import import_module

for _module in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
    import_module(_module.name)
