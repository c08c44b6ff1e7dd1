"""Scores of a metric computed from its distances: rho, omega^2, L, A, A^w, T (004 §4), S and I, IFC, perturbation shift,
failures per repetition, and the orientation rule every one of them follows; and the statistics over repetitions
that tasks and reports share: intervals, summaries per metric and measure, paired comparisons between metrics."""
