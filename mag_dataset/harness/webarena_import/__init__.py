"""Import WebArena result folders as raw episodes (``mag import-webarena``).

WebMRE (arXiv 2609.27353) is built from successful WebArena trajectories. WebArena's
``run.py`` (Zhou et al., 2024) writes, per task, ``render_<task_id>.html`` (the config, and per
step the URL, the accessibility tree, the screenshot, the raw prediction and the parsed
action), ``traces/<task_id>.zip`` (a Playwright trace: the calls with their points, DOM
snapshots, screencast frames) and a log with ``[Result] (PASS|FAIL) <config file>``; the task
itself is its config file (``intent``, ``intent_template_id``, ``sites``, ...). This package
turns the PASS tasks (all with ``include_failed``) into raw episodes ``webarena.<task_id>``.

Modules
    :mod:`.results` reads the folder's files without a browser (render files, logs,
    configs); :mod:`.convert` maps the actions (:data:`~.convert.WEBARENA_ACTIONS`), matches
    them to the trace's calls, lays the DOM snapshots out again for the candidates and
    boxes, and imports a folder with the bookkeeping every importer shares
    (:mod:`mag_dataset.harness.import_common`). Reading the trace archive and laying snapshots
    out are :mod:`mag_dataset.harness.trace_import`'s. Writing such folders from the sites'
    experts is :mod:`mag_dataset.sites.webarena_run`'s. The package exports what ``mag
    import-webarena`` and a caller of the importer need (:data:`__all__`); everything else is
    imported from the module that defines it.
"""

from __future__ import annotations

from mag_dataset.harness.webarena_import.convert import WebArenaImportError, WebArenaImportReport, import_webarena

__all__ = ["WebArenaImportError", "WebArenaImportReport", "import_webarena"]
