"""Live MiniWoB++ tooling (extra ``[live]``): environments, observation processing, action
execution, scripted experts and the recorder of the bundled sample corpus.

* :mod:`mag_dataset.live.env` — ``make_env(task)``: BrowserGym env on the system Chromium
  (no chat browser), ``episode_outcome(env, info, terminated)`` / ``strict_success(info)``:
  MiniWoB's raw reward must be exactly 1.
* :mod:`mag_dataset.live.observe` — ``observe(obs)``: cropped raw / Set-of-Mark PNGs, candidate
  menu (ids = BrowserGym bids), exact screenshot<->page ``Conversion``.
* :mod:`mag_dataset.live.execute` — ``to_browsergym_action(action, view, conv)``.
* :mod:`mag_dataset.live.experts` — ``EXPERTS``: closed-loop scripted experts per task.
* :mod:`mag_dataset.live.recorder` — ``record_episode``, ``record_corpus`` (here, or one Ray
  task per attempt: ``record_corpus_ray``): what ``mag record`` runs.
* :mod:`mag_dataset.live.recapture` — re-render site episodes on a site that has moved on.

A recorded step is built from an observation by :func:`mag_dataset.live.page_step.step_from_page`
(shared with live evaluation and the importers).

Playwright objects are bound to the thread that created them: create, step and close an env
from one thread. Importing this package imports nothing heavy; the submodules import
BrowserGym/Playwright/Pillow inside their functions.
"""
