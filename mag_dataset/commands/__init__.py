"""The ``mag`` subcommands: one module each, listed in :data:`mag_dataset.cli.COMMANDS`.

A command module holds ``add_arguments(parser)`` (its flags), ``run(args) -> int`` (turn the
flags into a library call and print its result) and a docstring with examples, shown as its
``--help`` epilog. Flags that several commands share are spelled once in :mod:`.options`.
Building, scoring, recording, auditing and the sites are library modules that these
commands call (scoring a file: :func:`mag_dataset.dataset.load_gold` and
:mod:`mag_dataset.score_file`, which ``mag score``, ``mag compare``, scripts and benchmarks share).
"""
