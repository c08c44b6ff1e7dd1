"""Built-in metric plugins: importing this package registers them all."""

from metrics import chi, classifier, fid, irpr, mauve, prdc, zipf  # noqa: F401
