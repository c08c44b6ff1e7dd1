"""Turn result tables into the paper's tables and charts (004 Table 3, Figures 2 and 4) and the HTML report.

Foldered by purpose: ``tables`` (Table 3 as csv and markdown, significance tables), ``figures`` (one module per
task's figures and what they share), ``html`` (the report page), ``sweep`` (many runs read together) and
``paper_table3`` (the reproduction of 004 Table 3, a study beside its data). ``bounds``, ``labels`` and
``reference_rows`` say how metrics, measures and scores are named wherever they are shown. The statistics behind
the numbers (intervals, summaries, paired tests) are ``textmetric_bench.measures``'; reports import nothing else of
the harness.
"""
