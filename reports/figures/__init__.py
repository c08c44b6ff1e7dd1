"""Figures: one module per task's figures (ksc, robustness, ifc, perturb), the overview figures of a report,
and what they share (drawing, palette, radar, heatmap)."""
