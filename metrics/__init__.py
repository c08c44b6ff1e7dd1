"""Built-in metric plugins: importing this package registers them all."""

from metrics import chi, classifier, fid, irpr, mauve, prdc, zipf  # noqa: F401
from metrics import ctrleval, face  # noqa: F401  (opt-in: they score every text with the run's LM)
from metrics import cluster_divergences, ngram_divergences  # noqa: F401  (000: divergences on clusters and n-gram LMs)
