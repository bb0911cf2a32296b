"""Give recorded episodes the audit's page evidence by replaying them where they were recorded.

The rule-based judges of the label audit (:mod:`mag_dataset.harness.page_judges`) read the
DOM fingerprints that the recorder stores with every step (``metadata["dom"]``: the menu's
and the acted element's, plus the page title). Episodes recorded before the recorder stored
them get them here, without being recorded again: each episode is replayed from its own
start (a MiniWoB++ task at its seed, a site task on a **freshly reset** site, as the recorder
started it) and, at every step, the replayed page's screenshot is compared with the step's
action-time screenshot. Only a pixel-identical page (RGB) gives its fingerprints: then the DOM
read now is the DOM the action was taken on (a page that differs is observed again after
a short wait, :data:`SETTLE_TRIES` times in all, as it may still be painting; and each time,
screenshots over one caret blink are compared too, as a focused field's caret shows or not by
timing alone). The first step that differs ends the episode's
replay (its remaining steps get none, and the report names it); nothing else of a step changes
(images, actions, guides, candidates stay as they are).

Usage::

    mag recapture --raw RAW --evidence        # every episode without fingerprints
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mag_dataset.raw import RawEpisode, iter_episode_dirs, read_episode, rewrite_episode_json


#: Observations of a step's replayed page before it counts as different (the first, then one
#: after each wait): on a loaded machine a page may still be painting when first observed. A
#: replay run at nice 19 beside the test suite differed in 37 of 117 episodes; replayed again
#: alone, enter-text's was identical, book-flight's and email-inbox's still differ (their pages
#: depend on more than the seed), and so does the shop dashboard (its chart's hour axis is the
#: clock's).
SETTLE_TRIES = 4
SETTLE_WAIT_MS = 500

#: A focused text field's caret blinks (Chromium: shown 500 ms, hidden 500 ms), so whether a
#: recorded screenshot shows it is a matter of timing: an observation that differs is compared
#: again with :data:`CARET_SAMPLES` bare screenshots (BrowserGym's own capture, the same crop)
#: spread over one period. Without them a fixed retry of about one period saw the same phase
#: each time: the replay of a login-user step recorded with the caret shown differed in 1 of 4
#: runs (the CI suite failed on it once).
CARET_PERIOD_MS = 1000
CARET_SAMPLES = 8


@dataclass
class EvidenceReport:
    """What :func:`add_page_evidence` did."""

    episodes: int = 0
    steps: int = 0
    differed: list[str] = field(default_factory=list)
    skipped: int = 0

    def summary(self) -> str:
        return (f"fingerprinted {self.steps} steps of {self.episodes} episodes; the replayed page differed in "
                f"{len(self.differed)} episodes ({', '.join(self.differed[:5]) or 'none'}); "
                f"{self.skipped} episodes already had them")


def _action_time_png(folder: Path, step) -> "object":
    import io

    from PIL import Image

    from mag_dataset.raw import image_bytes

    name = step.metadata.get("action_time_screenshot") or step.screenshot
    with Image.open(io.BytesIO(image_bytes(folder, name))) as im:
        return im.convert("RGB")


def _target(step) -> str | None:
    """The acted element whose fingerprint is stored: none for a point-only click (its point is kept)."""
    if step.metadata.get("recorded_as") == "point_only":
        return None
    return step.action.element_id


def _identical(now, then) -> bool:
    import numpy as np

    return now.shape == then.shape and np.array_equal(now, then)


def _shown_within_a_blink(env, ob, then) -> bool:
    """Whether a screenshot of the env's page, cropped as ``ob``'s, equals ``then`` at some
    instant of one caret blink period."""
    import browsergym.core.env as bg_env  # the env's own screenshot function (patched by the sites' tasks)
    import numpy as np
    from PIL import Image

    page = env.unwrapped.page
    for _ in range(CARET_SAMPLES):
        if _identical(np.asarray(Image.fromarray(bg_env.extract_screenshot(page)).crop(ob.conv.crop)), then):
            return True
        page.wait_for_timeout(CARET_PERIOD_MS / CARET_SAMPLES)
    return False


def needs_evidence(episode: RawEpisode) -> bool:
    return any(not isinstance(st.metadata.get("dom"), dict) for st in episode.steps)


def episode_evidence(folder: Path, episode: RawEpisode) -> tuple[RawEpisode, int, str | None]:
    """Replay ``episode`` from its start and fingerprint its steps while the pages are identical.

    Returns:
        ``(episode with metadata["dom"] on the fingerprinted steps, how many, why it stopped or None)``.
    """
    import numpy as np

    from mag_dataset.live.env import make_env
    from mag_dataset.live.observe import dom_evidence, observe, observe_page
    from mag_dataset.sites.env import make_site_env

    task = str(episode.metadata.get("expert") or "")
    site_task = task.startswith("sites.")
    env = make_site_env(task, reset_site=True) if site_task else make_env(task)
    steps, done, why = list(episode.steps), 0, None
    try:
        obs, _ = env.reset(seed=int(episode.seed or 0))
        for i, st in enumerate(episode.steps):
            then = np.asarray(_action_time_png(folder, st))
            for attempt in range(SETTLE_TRIES):
                ob = observe_page(obs) if site_task else observe(obs)
                now = np.asarray(ob.image)
                same = _identical(now, then) or _shown_within_a_blink(env, ob, then)
                if same or attempt + 1 == SETTLE_TRIES:
                    break
                obs, *_ = env.step(f"noop({SETTLE_WAIT_MS})")  # a page still painting (a loaded machine)
            if not same:
                why = f"step {st.step_index}: the replayed page is not the recorded one"
                break
            meta = {**st.metadata, "dom": dom_evidence(ob, _target(st))}
            if site_task:
                meta["page_title"] = ob.title
            steps[i] = dataclasses.replace(st, metadata=meta)
            done += 1
            obs, *_ = env.step(str(st.metadata.get("browsergym_action") or "noop()"))
            if obs.get("last_action_error") and i + 1 < len(episode.steps):
                why = f"step {st.step_index}: the replayed action failed"
                break
    finally:
        env.close()
    return dataclasses.replace(episode, steps=tuple(steps)), done, why


def add_page_evidence(raw_dir: str | Path, log: Callable[[str], None] | None = None,
                      only: Callable[[RawEpisode], bool] | None = None) -> EvidenceReport:
    """Fingerprint every episode of a raw corpus that lacks the evidence (see the module docstring).

    Args:
        raw_dir: the raw corpus, updated in place (each episode file atomically, in the form it had).
        log: called with one line per episode.
        only: episodes to consider (default: all recorded by this package: sites and MiniWoB++).
    """
    report = EvidenceReport()
    for folder in iter_episode_dirs(Path(raw_dir)):
        ep = read_episode(folder)
        if ep.source not in ("sites", "miniwob") or (only is not None and not only(ep)):
            continue
        if not needs_evidence(ep):
            report.skipped += 1
            continue
        new, done, why = episode_evidence(folder, ep)
        if done:
            rewrite_episode_json(folder, new)
        report.episodes += 1
        report.steps += done
        if why:
            report.differed.append(ep.episode_id)
        if log:
            log(f"{ep.episode_id}: {done}/{len(ep.steps)} steps fingerprinted" + (f" ({why})" if why else ""))
    return report
