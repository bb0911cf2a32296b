"""The ``mag`` subcommands: one module each, listed in :data:`mag_dataset.cli.COMMANDS`.

A command module holds ``add_arguments(parser)`` (its flags), ``run(args) -> int`` (turn the
flags into a library call and print its result) and a docstring with examples, shown as its
``--help`` epilog. Flags that several commands share are spelled once in :mod:`.options`.
Building, scoring, recording, auditing and the sites are library modules that these
commands call; the one shared helper layer is :mod:`.score`'s file-level functions
(``load_gold``, ``score_file``, ``declared_coord_space``), which ``mag compare``, scripts and
benchmarks reuse.
"""
