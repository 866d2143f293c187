"""Experiments: many simulations of one question, compared, swept and drawn.

``compare`` runs one workload under several configurations and diffs them job by
job; ``sweep`` runs a grid of them on a Dask cluster into one tidy table; ``plots``
and ``html_report`` turn results into figures and one self-contained page.
"""
