"""Built-in metric plugins: importing this package registers them all."""

from metrics import (  # noqa: F401  # noqa: F401  (opt-in: they score every text with the run's LM)  # noqa: F401  (000: divergences on clusters and n-gram LMs)
    chi,
    classifier,
    cluster_divergences,
    ctrleval,
    face,
    fid,
    irpr,
    mauve,
    ngram_divergences,
    prdc,
    zipf,
)
