"""The modules of the scorer; its public API is :mod:`mag_dataset.scoring` (import from there).

- :mod:`.metrics`: every metric declared once (name, titles, where it applies, its per-step
  rule, a one-line description), and the names derived from that table.
- :mod:`.gold`: :class:`~.gold.GoldSteps`, the one scoring input (one view's steps and, in the
  coord view, the som menus).
- :mod:`.text`: the text metrics (argument normalisation, token F1, BLEU, ROUGE-L).
- :mod:`.step`: one output on one step -> :class:`~.step.StepScore` (format gate, coordinate
  conversion, every metric, the error taxonomy).
- :mod:`.fingerprint`: the dataset fingerprint of the gold steps.
- :mod:`.aggregate`: per-step scores -> :class:`~.aggregate.Report` (means, denominators,
  breakdowns, seeds, the task-level bootstrap, counts, provenance).
- :mod:`.render`: the plain-text table ``mag score`` prints.

Pure like the scorer: no I/O, no clock, no model. Nothing here imports
:mod:`mag_dataset.scoring`, which imports these modules.
"""
