"""The corpus collections a task evaluates: Known-Similarity Corpora, the size and imbalance samples, IFC sequences, perturbations, and their seeds."""
