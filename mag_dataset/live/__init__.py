"""Live MiniWoB++ tooling (extra ``[live]``): environments, observation processing, action
execution, scripted experts and the recorder.

* :mod:`mag_dataset.live.env` — ``make_env(task)``: BrowserGym env on the system Chromium,
  ``strict_success(info)``.
* :mod:`mag_dataset.live.observe` — ``observe(obs)``: screenshot / SoM PNGs, candidate menu,
  screenshot<->page ``Conversion``.
* :mod:`mag_dataset.live.execute` — ``to_browsergym_action(action, view, conv)``.

Importing this package imports nothing heavy; the submodules import BrowserGym/Playwright
inside their functions.
"""
