"""Scores of a metric computed from its distances: rho, omega^2, L, A, A^w, T (004 §4), S and I, IFC, perturbation shift,
failures per repetition, and the orientation rule every one of them follows; and the statistics over repetitions
that tasks and reports share: intervals, summaries per metric and measure, paired comparisons between metrics."""

#: The libraries the measures import where they use them (so that importing a measure stays cheap): scipy's
#: statistics (ρ, L, every bootstrap interval) and statsmodels' ANOVA (ω²). A run imports them ahead of its scoring
#: (textmetric_bench.tasks.skeleton.RUN_IMPORTS), while its embedding helper and workers start.
LIBRARIES = ("scipy.stats", "statsmodels.formula.api", "statsmodels.stats.anova")
