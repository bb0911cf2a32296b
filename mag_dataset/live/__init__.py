"""The browser layer (extra ``[live]``): environments, observation processing, action execution,
the expert kit and the MiniWoB++ experts.

* :mod:`mag_dataset.live.env` — ``make_env(task)``: BrowserGym env on the system Chromium
  (no chat browser; ``browser_env`` around any task class, the sites' too),
  ``episode_outcome(env, info, terminated)`` / ``strict_success(info)``: MiniWoB's raw reward
  must be exactly 1.
* :mod:`mag_dataset.live.observe` — ``observe(obs)``: cropped raw / Set-of-Mark PNGs, candidate
  menu (ids = BrowserGym bids), exact screenshot<->page ``Conversion``.
* :mod:`mag_dataset.live.execute` — ``to_browsergym_action(action, view, conv)``.
* :mod:`mag_dataset.live.expert_kit` / :mod:`mag_dataset.live.experts` — the page helpers every
  expert uses; ``EXPERTS``: closed-loop scripted experts per MiniWoB++ task.

The sites' tasks and experts are built on this layer (:mod:`mag_dataset.sites`, their envs in
:mod:`mag_dataset.sites.env`); what drives them sits above both, in the harness: the recorder
(:mod:`mag_dataset.harness.recorder`, what ``mag record`` runs), recapture
(:mod:`mag_dataset.harness.recapture`) and the page evidence by replay
(:mod:`mag_dataset.harness.page_evidence`). This package imports neither.

A recorded step is built from an observation by :func:`mag_dataset.live.page_step.step_from_page`
(shared with live evaluation and the importers).

Playwright objects are bound to the thread that created them: create, step and close an env
from one thread. Importing this package imports nothing heavy; the submodules import
BrowserGym/Playwright/Pillow inside their functions.
"""
