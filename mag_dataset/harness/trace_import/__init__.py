"""Import Playwright trace archives as raw episodes (``mag import-trace``).

A trace archive is what ``context.tracing.start(screenshots=True, snapshots=True)`` ...
``context.tracing.stop(path="trace.zip")`` writes, the format of the ``trace/*.zip`` files in
WebArena's published execution traces: ``trace.trace`` (JSON lines: one ``before`` / ``input``
/ ``after`` event per API call, ``frame-snapshot`` events holding the DOM before and at each
action, ``screencast-frame`` events naming JPEG frames), ``trace.network`` (the resources the
page loaded) and ``resources/`` (the frames and resource bodies by SHA-1). Trace formats 3
and 4 (Playwright before 1.4x, as in WebArena's 2023 traces) hold one ``action`` event per call
instead; they are read the way Playwright's own ``traceModernizer`` reads them.

What becomes a step
    Each page action among the trace's API calls: ``click`` / ``dblclick`` / ``tap`` /
    ``check`` / ``uncheck`` (click), ``fill`` / ``type`` (type), ``press`` and
    ``keyboard.press`` (press), ``selectOption`` (select; several options are joined by
    :data:`mag_dataset.harness.import_common.MULTI_OPTION_SEPARATOR`, as the BrowserGym importer
    does), ``hover``, ``mouse.click`` / ``mouse.dblclick`` (a click at a point),
    ``mouse.wheel`` (scroll), ``goto`` (goto; the first one, which opens the start page, is
    not a step), ``goBack`` / ``goForward``. Calls that do not act (waits, evaluations,
    queries, screenshots) are skipped; a call that failed is skipped; an action with no
    equivalent (``setInputFiles``, ``dragAndDrop``...) refuses the trace with its name.

    The screenshot of a step is the last screencast frame of its page before the call
    started. Playwright's DOM snapshots hold no element boxes (only frames' and canvases'),
    so the candidates come from laying the step's snapshot out again in Chromium at the
    recorded viewport, with the recorded resources, form values and scroll positions (as
    Playwright's trace viewer renders it), and reading it as the site recorder reads a live
    page (:func:`mag_dataset.live.observe.observe_page`). The acted element is the one the
    snapshot marks ``__playwright_target__``; its box is the target box and the recorded
    pointer position (inside the box, else its centre) the gold coordinate. A pointer action
    with no element (``mouse.click``) becomes a coordinate-only step with the page's
    candidates, for ``mag unify`` to restore.

The trace holds no task text: the intent (and site, template, seed) come from ``--intent``,
from a JSON file mapping trace names to them (``--tasks``), or from WebArena's config files
(``--webarena-configs``).

Modules
    :mod:`.archive` (reading an archive's events under caps), :mod:`.snapshots` (laying DOM
    snapshots out again and reading them) and :mod:`.convert` (calls into steps, one archive
    into an episode, a batch into a corpus). What it shares with the other importers is
    :mod:`mag_dataset.harness.import_common`'s. The package exports what ``mag import-trace``
    and a caller of the importer need (:data:`__all__`); everything else is imported from the
    module that defines it.
"""

from __future__ import annotations

from mag_dataset.harness.trace_import.archive import TraceImportError
from mag_dataset.harness.trace_import.convert import TraceImportReport, TraceTask, import_traces

__all__ = ["TraceImportError", "TraceImportReport", "TraceTask", "import_traces"]
