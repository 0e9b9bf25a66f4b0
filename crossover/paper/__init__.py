"""The paper's numbers: every value the paper quotes, computed from the results as LaTeX macros.

``python -m crossover.paper.numbers --results experiments/results --out paper/generated/numbers.tex``

=========  ====================================================================
module     what it holds
=========  ====================================================================
numbers    the entry point: every macro, written to one file
facts      macros read straight from the measured rows (no fits)
fits       macros from fitted models: parameters, accuracy, crossovers
claims     public claims, the rule of thumb, best modes, cost, peaks, held-out accuracy
zoo        predicting one's own model: the module zoo's accuracy
latex      numbers as LaTeX text and macro files
=========  ====================================================================
"""
