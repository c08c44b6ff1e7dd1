"""A study of its own: 004 Table 3 reproduced, with its numbers (the csv and md files in this folder) and the code
that collects them and writes README.md from README.template.md (``make regenerate``, step ``paper``)."""
