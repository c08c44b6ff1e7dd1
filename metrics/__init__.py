"""Built-in metric plugins: importing this package registers them all."""

from metrics import chi, fid  # noqa: F401
