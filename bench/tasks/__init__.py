"""The tasks a user runs (ksc, robustness, ifc, perturb, check) on one skeleton, and reading the run config."""
