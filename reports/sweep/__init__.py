"""Many runs read together: a multirun sweep's tables (aggregate) and the runs a report joins (runs)."""
