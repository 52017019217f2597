"""The analyses: each one computed once, from a dataset and its runs, as one typed result (dataclasses holding
``evalcore.meta.results.Estimate``s and the tables built from them), which the Alignment page's blocks
(``evalcore.views``), ``meta --json`` (``evalcore.cli``) and the exported HTML report (``evalcore.views.report``)
only render. A figure the three show is therefore the same number in all three (``tests/test_three_renderings.py``).

- ``correlations``: judge against human at each level and coefficient, with intervals (``alignment_table``);
- ``ceiling``: the human ceiling on the items each run is correlated on;
- ``systems``: per-system correlations P_i, the meta-correlation M, #CP, RTS-MCQ reliability, difficulty;
- ``labels``, ``preferences``: agreement on labels; pairwise verdicts against the humans' votes;
- ``items``: the judge's score beside the human score, item by item;
- ``bias``: writer, position, verbosity and self-preference bias, mean scores per system, score distributions;
- ``evaluation``: the whole of one run's meta-evaluation, dimension by dimension (what ``meta --json`` prints);
- ``inference``: the Alt-Test, PPI and Bradley-Terry rankings ``meta`` adds when asked.
"""
