"""Recapture site episodes after the fact: the path by which stale screenshots arise.

WebMRE (arXiv 2609.27353) §3 built its corpus from trajectories whose observations were
re-rendered after the fact, and flagged a recaptured step *stale* when the recaptured page
may not show the state the action was taken in (59% of its steps). This module reproduces
that path on the sites, with the same cause: the observations are re-rendered by
**replaying the recorded actions on a site that has moved on** — the site is reset once at
the start of a recapture session and then *not* between episodes, so every replay sees
what the episodes replayed before it changed (a basket that already holds items, a ticket
with one more comment, an article with a newer revision), as a live site that kept being
used after the demonstrations were recorded.

For every step of a recaptured episode, *before* its action is replayed:

* the recaptured screenshot, written as ``<step>_recaptured.png``, becomes the step's
  ``screenshot`` (its Set-of-Mark image ``<step>_recaptured_som.png`` is redrawn from it with
  the step's recorded, action-time candidate menu: labels and boxes stay the ones the
  action was taken on; a corpus that stores no Set-of-Mark files, raw format v2, gets none:
  the builder renders it the same way);
* the action-time screenshot keeps its file and is named in
  ``metadata["action_time_screenshot"]``, with ``metadata["recaptured"] = true`` and the
  recaptured menu's size in ``metadata["recaptured_candidates"]``;
* a recaptured screenshot that is pixel-identical (RGB) to the action-time one is stored
  once: the step keeps its files and ``metadata["recaptured_identical"] = true`` (the
  stale rule then compares the file with itself and finds no difference, as it would with
  a second copy).

Originals are never overwritten: the new files are written first, then the episode file is
replaced atomically, then the action-time Set-of-Mark images (no longer referenced) are
removed, so an interrupted recapture leaves the episode as it was.

Then the step's recorded BrowserGym action is replayed. A recapture **knows when it
failed**: before a step is recaptured its replayed page is checked
(:func:`check_replayed_page`: the site's server still answers, the page is no browser error
page, its address and title are the recorded ones, the step's target is on it). The first
step that fails the check, or that follows an action that failed to replay, ends the
recapture of the episode: it records why in ``metadata["recapture_ended"]`` (keeping the
recaptured screenshot when the page is still the site's, its action-time one otherwise),
and every later step keeps its action-time screenshot (``recapture_ended_before``). So no
recaptured step shows an error page or a page its action was never taken on. A recaptured
step that differs from its action-time screenshot also stores the page it shows
(``metadata["shown_page"]``: address, title, and every candidate with its box and DOM
fingerprint) for the audit's judges (:mod:`mag_dataset.harness.page_audit`). ``mag unify`` then applies the stale
rule (:mod:`mag_dataset.harness.unify`: pixel comparison with documented thresholds)
and sets the ``stale`` flag; nothing here sets it by hand.

Usage::

    mag recapture --raw RAW --share 0.3 --seed 0     # recapture ~30% of the site episodes
    mag recapture --raw RAW --per-template 1         # or one episode of every template
    mag unify --raw RAW                               # flags stale steps from the evidence
    mag recapture --raw RAW --end-at-error-pages      # a recapture made before the check above
    mag recapture --raw RAW --undo                    # every recapture undone (to recapture anew)
"""

from __future__ import annotations

import dataclasses
import io
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mag_dataset.raw import (
    DELTA_SEP,
    RawEpisode,
    is_shared_image,
    iter_episode_dirs,
    read_episode,
    rewrite_episode_json,
    screenshot_bytes,
)

#: Suffixes of a recaptured step's new images.
RECAPTURED_SUFFIX = "_recaptured.png"
RECAPTURED_SOM_SUFFIX = "_recaptured_som.png"


@dataclass
class RecaptureReport:
    """What :func:`recapture_corpus` did."""

    episodes: int = 0
    steps: int = 0
    diverged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: ``(episode id, why)`` of the imported episodes no replay can recapture (:func:`not_recapturable`)
    not_recapturable: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> str:
        lines = [(f"recaptured {self.episodes} episodes ({self.steps} steps); replay diverged in "
                  f"{len(self.diverged)}; skipped {len(self.skipped)} (not site episodes or already recaptured)")]
        lines += [f"  not recapturable {eid}: {why}" for eid, why in self.not_recapturable]
        return "\n".join(lines)


def replayable(episode: RawEpisode) -> bool:
    """Whether a replay can recapture the episode: a site episode, or one imported from a run on
    the package's sites (``mag import-webarena`` stores its template in ``metadata["expert"]``)."""
    return episode.source == "sites" or str(episode.metadata.get("expert") or "").startswith("sites.")


def not_recapturable(episode: RawEpisode) -> str | None:
    """Why an imported episode cannot be recaptured (``metadata["not_recapturable"]``), or None."""
    why = episode.metadata.get("not_recapturable")
    return str(why) if why and not replayable(episode) else None


def site_of(episode: RawEpisode) -> str:
    """The package's site a replayable episode runs on (an imported one names WebArena's sites)."""
    if episode.source == "sites":
        return episode.site
    from mag_dataset.sites import task_class

    return task_class(str(episode.metadata["expert"])).site_class.name


def choose_episodes(episodes: list[RawEpisode], share: float, seed: int,
                    per_template: int | None = None) -> list[RawEpisode]:
    """The site episodes to recapture, in episode-id order (the replay order).

    ``random.Random(f"recapture:{seed}")`` shuffles the sorted ids. Without ``per_template``
    the first ``round(share * n)`` are chosen; with it, the first ``per_template`` episodes of
    every template in that shuffled order (``share`` is then ignored), so every template has
    recaptured episodes. An episode with a step without a screenshot (raw format: ``null``) is
    chosen whatever the share: only a recapture gives it one.
    """
    site_eps = sorted((e for e in episodes if replayable(e)), key=lambda e: e.episode_id)
    by_id = {e.episode_id: e for e in site_eps}
    ids = list(by_id)
    random.Random(f"recapture:{seed}").shuffle(ids)
    if per_template is None:
        chosen = set(ids[: round(share * len(ids))])
    else:
        taken: dict[str, int] = {}
        chosen = set()
        for i in ids:
            t = by_id[i].intent_template_id
            if taken.get(t, 0) < per_template:
                taken[t] = taken.get(t, 0) + 1
                chosen.add(i)
    chosen |= {e.episode_id for e in site_eps if any(not st.screenshot for st in e.steps)}
    return [e for e in site_eps if e.episode_id in chosen]


#: Text of Chromium's network error page (``chrome-error://chromewebdata/``).
ERROR_PAGE_MARKERS = ("This site can’t be reached", "This site can't be reached", "ERR_CONNECTION_REFUSED",
                      "ERR_CONNECTION_RESET", "ERR_EMPTY_RESPONSE", "ERR_NAME_NOT_RESOLVED", "ERR_TIMED_OUT")


def _path_and_query(url: str) -> str:
    """A page's address without scheme, host and port (the sites may be served on other ports)."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    return parts.path.rstrip("/") + ("?" + parts.query if parts.query else "")


def _page_text(obs: dict) -> str:
    from mag_dataset.live.observe import parse_elements

    try:
        return " ".join(e.own_text for e in parse_elements(obs).values() if e.own_text)[:4000]
    except (KeyError, TypeError, ValueError):
        return ""


def _error_page(obs: dict) -> str | None:
    """Why the observed page is a browser error page, or None."""
    url = str(obs.get("url") or "")
    if url.startswith("chrome-error://"):
        text = _page_text(obs)
        code = next((m for m in ERROR_PAGE_MARKERS if m.startswith("ERR_") and m in text), "")
        return f"a browser error page ({url}{', ' + code if code else ''})"
    text = _page_text(obs)
    if any(m in text for m in ERROR_PAGE_MARKERS[:2]):
        return "a browser error page (\"This site can't be reached\")"
    return None


def _matches(st, ob) -> list[tuple[float, str]]:
    """``(similarity, bid)`` of every element of the replayed page that may be the step's target:
    by its DOM fingerprint (at least the page judge's least similarity), else by the role and
    text of its recorded candidate. Empty for an untargeted step."""
    from mag_dataset.live.observe import DOM_MIN_SIMILARITY, Fingerprint, fingerprint_similarity
    from mag_dataset.live.observe import fingerprint

    dom = st.metadata.get("dom") or {}
    scored: list[tuple[float, str]] = []
    if dom.get("target"):
        want = Fingerprint.from_dict(dom["target"])
        for bid in ob.elements:
            fp = fingerprint(ob.elements, bid)
            if fp:
                sim = fingerprint_similarity(want, Fingerprint.from_dict(fp))
                if sim >= DOM_MIN_SIMILARITY:
                    scored.append((sim, bid))
    else:
        target = st.action.element_id or st.metadata.get("expert_element_id")
        old = next((c for c in st.candidates if c.id == target), None) if target else None
        if old is not None:
            scored = [(1.0, c.id) for c in ob.candidates if c.role == old.role and c.text == old.text]
    return scored


def replayed_target(st, ob) -> str | None:
    """The step's target on the replayed page: its bid there, or None (untargeted steps too).

    The best of :func:`_matches`; among equals, the one nearest the recorded box. A page that
    moved on (a new topic above the recorded one, a comment before a form) gives the same
    element another bid and another place.
    """
    scored = _matches(st, ob)
    if not scored:
        return None
    best = max(sim for sim, _ in scored)
    ties = [bid for sim, bid in scored if sim == best]
    if len(ties) > 1 and st.target_bbox:
        x0, y0, x1, y1 = st.target_bbox
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2

        def distance(bid: str) -> float:
            box = _box(ob, bid)
            return float("inf") if box is None else abs((box[0] + box[2]) / 2 - cx) + abs((box[1] + box[3]) / 2 - cy)

        ties.sort(key=distance)
    return ties[0]


def _box(ob, bid: str) -> tuple[float, float, float, float] | None:
    """``bid``'s box on the replayed page, in screenshot pixels (None: it has none)."""
    cand = next((c for c in ob.candidates if c.id == bid), None)
    if cand is not None:
        return tuple(cand.bbox)  # type: ignore[return-value]
    el = ob.elements.get(bid)
    if el is None or el.bbox is None:
        return None
    dx, dy = ob.conv.crop[0], ob.conv.crop[1]  # Element boxes are in the full screenshot, before the crop
    return (el.bbox[0] - dx, el.bbox[1] - dy, el.bbox[2] - dx, el.bbox[3] - dy)


def _target_missing(st, ob) -> str | None:
    """Why the step's target is not on the replayed page, or None (untargeted steps: None)."""
    from mag_dataset.live.observe import Fingerprint

    dom = st.metadata.get("dom") or {}
    target = st.action.element_id or st.metadata.get("expert_element_id")
    if not dom.get("target") and not any(c.id == target for c in st.candidates):
        return None
    if replayed_target(st, ob) is not None:
        return None
    if dom.get("target"):
        want = Fingerprint.from_dict(dom["target"])
        return f"the target ({want.role or want.tag} {want.name[:40]!r}) is not on the replayed page"
    old = next(c for c in st.candidates if c.id == target)
    return f"the target ({old.role} {old.text[:40]!r}) is not on the replayed page"


_POINT = re.compile(r"(mouse_(?:move|click|dblclick|down|up))\(([-\d.]+), ([-\d.]+)")
_BID_CALL = re.compile(r"^(\w+)\('([^']*)'")


def retarget(st, ob, action: str) -> tuple[str, dict | None]:
    """The step's recorded BrowserGym ``action`` aimed at its target where the replayed page has it.

    A click or hover given as a point moves with the target's box (the same relative place
    inside it); an action naming a bid (``fill``, ``select_option``, ``click``) names the
    target's bid on the replayed page. A target that moved out of the screenshot is acted on
    by its bid (BrowserGym scrolls it into view). Returns the action and what changed
    (``{"from", "to"}``), or the action unchanged and None: untargeted steps, a target not
    found (the check before the step ends the replay then) or one that did not move.
    """
    matches = {b for _, b in _matches(st, ob)}
    bid = replayed_target(st, ob)
    if bid is None:
        return action, None
    points = _POINT.findall(action)
    if points:  # still on an element that may be the target: as recorded (a person clicks where it is)
        x, y = float(points[-1][1]) - ob.conv.crop[0], float(points[-1][2]) - ob.conv.crop[1]
        if any(box is not None and box[0] <= x <= box[2] and box[1] <= y <= box[3]
               for box in (_box(ob, b) for b in matches)):
            return action, None
    if points and st.target_bbox:
        new = _box(ob, bid)
        if new is None:
            return action, None
        old = st.target_bbox
        if tuple(round(v, 1) for v in new) == tuple(round(v, 1) for v in old):
            return action, None
        cx, cy = (new[0] + new[2]) / 2, (new[1] + new[3]) / 2
        if not (0 <= cx < ob.width and 0 <= cy < ob.height):  # scrolled out of view by the change
            clicks = any(name != "mouse_move" for name, _, _ in points)
            out = f"click('{bid}')" if clicks else f"hover('{bid}')"
            return out, {"from": action, "to": out}
        # the same relative place in the box: screenshot px -> BrowserGym's full-screenshot px
        px0, py0 = ob.conv.to_browsergym((old[0], old[1]))
        px1, py1 = ob.conv.to_browsergym((old[2], old[3]))
        nx0, ny0 = ob.conv.to_browsergym((new[0], new[1]))
        nx1, ny1 = ob.conv.to_browsergym((new[2], new[3]))

        def moved(m: re.Match) -> str:
            x, y = float(m.group(2)), float(m.group(3))
            fx = (x - px0) / (px1 - px0) if px1 > px0 else 0.5
            fy = (y - py0) / (py1 - py0) if py1 > py0 else 0.5
            fx, fy = min(max(fx, 0.0), 1.0), min(max(fy, 0.0), 1.0)
            return f"{m.group(1)}({round(nx0 + fx * (nx1 - nx0), 1)}, {round(ny0 + fy * (ny1 - ny0), 1)}"

        out = _POINT.sub(moved, action)
        return out, ({"from": action, "to": out} if out != action else None)
    call = _BID_CALL.match(action)
    if call and call.group(2) not in matches and call.group(2) in (st.action.element_id, st.metadata.get("expert_element_id"),
                                                            (st.metadata.get("dom") or {}).get("bid")):
        out = f"{call.group(1)}('{bid}'" + action[call.end():]
        return out, {"from": action, "to": out}
    return action, None


#: How far the test run's ports are from the sites' default ports (tests/_site_env.py): the
#: recorded origins of an episode recorded before episodes named them (metadata ``site_origins``)
TEST_PORT_OFFSET = 10000


def origin_map(episode: RawEpisode) -> dict[str, str]:
    """Recorded site origin -> the origin the site is served at now, for every site of the
    episode's task (a cross-site task goes to its other sites by URL).

    The recorder stores where the sites were served (``metadata["site_origins"]``); an episode
    recorded before it did is taken to have been recorded at a site's default port or the test
    run's (default + :data:`TEST_PORT_OFFSET`), the two places the package serves sites.
    """
    from mag_dataset.sites import task_class

    cls = task_class(str(episode.metadata.get("expert")))
    recorded = episode.metadata.get("site_origins") or {}
    out = {}
    for site_cls in (cls.site_class, *cls.other_sites):
        now = site_cls().base_url
        then = [recorded[site_cls.name]] if site_cls.name in recorded else [
            f"http://127.0.0.1:{site_cls.default_port + k}" for k in (0, TEST_PORT_OFFSET)]
        out.update({origin.rstrip("/"): now for origin in then if origin.rstrip("/") != now})
    return out


def _to_served(action: str, origins: dict[str, str]) -> str:
    """``action`` with every recorded site origin in it (a ``goto`` URL) replaced by the served one."""
    for then, now in origins.items():
        action = re.sub(re.escape(then) + r"(?=[/'\"]|$)", now, action)
    return action


def check_replayed_page(st, obs: dict, ob, server_ok: bool | None = None) -> str | None:
    """Why the replayed page cannot stand for step ``st``'s page, or None when it can.

    In order: the server stopped answering, a browser error page, another address than the
    recorded one (path and query; host and port may differ), another title (when the step
    recorded one), the step's target missing (its fingerprint, else its role and text).
    """
    if server_ok is False:
        return "the site's server stopped answering"
    error = _error_page(obs)
    if error:
        return error
    recorded = str(st.metadata.get("page_url") or st.url or "")
    if recorded and _path_and_query(recorded) != _path_and_query(ob.url):
        return f"the replay is on {_path_and_query(ob.url) or '/'}, not {_path_and_query(recorded) or '/'}"
    title, shown_title = st.metadata.get("page_title"), ob.title
    if title and shown_title is not None and title != shown_title:
        return f"the page title is {shown_title!r}, not {title!r}"
    return _target_missing(st, ob)


def shown_page(ob) -> dict:
    """What a recaptured step stores of the page it shows, for the audit's judges."""
    from mag_dataset.live.observe import fingerprint

    return {"url": ob.url, "title": ob.title,
            "elements": [{"id": c.id, "role": c.role, "text": c.text, "bbox": [round(v, 2) for v in c.bbox],
                          "fingerprint": fingerprint(ob.elements, c.id)} for c in ob.candidates]}


def recapture_episode(folder: Path, episode: RawEpisode, *, reset_site: bool = False) -> tuple[RawEpisode, dict[str, bytes], bool]:
    """Replay one site episode without resetting its site and re-render every step's observation.

    The recapture of the episode **ends** at the first step whose replayed page cannot stand
    for the step's page (:func:`check_replayed_page`: the server stopped answering, a browser
    error page, another address or title, the target missing) or after an action that failed
    to replay. That step records why in ``metadata["recapture_ended"]``; it keeps the
    recaptured screenshot when the page is the site's (another address, the target gone: the
    audit judges it as it is) and its action-time screenshot when it is no page of the site
    (an error page, no server). Later steps keep their action-time screenshots.

    Returns:
        ``(new episode, new image files, diverged)``; the caller writes them.
    """
    import numpy as np
    from PIL import Image

    from mag_dataset.live.observe import observe_page
    from mag_dataset.som import draw_som, encode_png
    from mag_dataset.sites import task_class
    from mag_dataset.sites.env import make_site_env
    from mag_dataset.sites.manager import health

    task = str(episode.metadata.get("expert") or "")
    if not task.startswith("sites."):
        raise ValueError(f"{episode.episode_id}: not a site episode (metadata.expert = {task!r})")
    site = task_class(task).site_class()
    health_url = site.running_url() + site.health_path  # read once: a dying server leaves its record
    origins = origin_map(episode)  # recorded at other ports (the test run's): go where the sites are now
    # a WebArena run's pages were drawn without scrollbars (Playwright's headless default): so is its replay
    env = make_site_env(task, reset_site=reset_site, scrollbars=episode.source != "webarena")
    images: dict[str, bytes] = {}
    steps = []
    ended: dict | None = None
    try:
        obs, _ = env.reset(seed=int(episode.seed or 0))
        for st in episode.steps:
            if ended is not None:  # at or past the end: the step keeps its action-time screenshot
                key = "recapture_ended" if st.step_index == ended["step"] else "recapture_ended_before"
                steps.append(dataclasses.replace(st, metadata={**st.metadata, "recaptured": False,
                                                               key: ended if key == "recapture_ended" else ended["step"]}))
                continue
            ob = observe_page(obs)
            server_ok = health(health_url, timeout=5.0)[0]
            why = check_replayed_page(st, obs, ob, server_ok)
            if why is not None:
                ended = {"step": st.step_index, "reason": why}
                if not server_ok or why.startswith("a browser error page"):
                    steps.append(dataclasses.replace(st, metadata={**st.metadata, "recaptured": False,
                                                                   "recapture_ended": ended}))
                    continue
            shot = ob.image
            identical = False  # a step without a screenshot (imported without one) gets the recaptured one
            if st.screenshot:
                with Image.open(io.BytesIO(screenshot_bytes(folder, st))) as before:
                    identical = before.size == shot.size and np.array_equal(np.asarray(before.convert("RGB")),
                                                                            np.asarray(shot))
            stem = f"step_{st.step_index:03d}" if is_shared_image(st.screenshot) or not st.screenshot else \
                Path(st.screenshot).stem
            stem = base = stem.split(DELTA_SEP, 1)[0]  # a difference's own stem ('~' would make a new one)
            n = 0
            while any((folder / (stem + suffix)).exists() for suffix in (RECAPTURED_SUFFIX, RECAPTURED_SOM_SUFFIX)):
                n += 1  # never over a file of the folder: another image's difference may be taken from it
                stem = f"{base}-r{n}"
            if identical:  # store each screenshot once: the recapture is the action-time file, pixel for pixel
                new_shot, new_som = st.screenshot, st.som_screenshot
            else:
                new_shot, new_som = stem + RECAPTURED_SUFFIX, stem + RECAPTURED_SOM_SUFFIX
                images[new_shot] = ob.png
                if st.som_screenshot:  # a corpus that stores Set-of-Mark files (raw format v1) gets one
                    images[new_som] = encode_png(draw_som(shot, list(st.candidates)))
                else:  # none stored: the builder renders it from the screenshot and the menu
                    new_som = ""
            meta = {**st.metadata, "recaptured": True, "action_time_screenshot": st.screenshot,
                    "recaptured_identical": identical, "recaptured_candidates": len(ob.candidates),
                    "recapture_diverged": ended is not None}
            if not identical:
                meta["shown_page"] = shown_page(ob)
            if ended is not None:
                meta["recapture_ended"] = ended
            steps.append(dataclasses.replace(st, screenshot=new_shot, som_screenshot=new_som, metadata=meta))
            if ended is None:
                action, moved = retarget(st, ob, _to_served(str(st.metadata.get("browsergym_action") or "noop()"),
                                                            origins))
                if moved is not None:  # the page moved on: the target is elsewhere (kept for the record)
                    steps[-1] = dataclasses.replace(steps[-1], metadata={**steps[-1].metadata,
                                                                         "recapture_retargeted": moved})
                obs, _, terminated, truncated, _ = env.step(action)
                if obs.get("last_action_error"):  # the next step's page was never reached
                    ended = {"step": st.step_index + 1, "reason": "the replayed action of step "
                             f"{st.step_index} failed: {str(obs['last_action_error']).splitlines()[0][:160]}"}
    finally:
        env.close()
    diverged = ended is not None
    new = dataclasses.replace(episode, steps=tuple(steps),
                              metadata={**episode.metadata, "recaptured": {"diverged": diverged,
                                                                           "site_reset_before": reset_site,
                                                                           **({"ended": ended} if ended else {})}})
    return new, images, diverged


#: The metadata a recaptured step carries that an undone recapture drops.
_RECAPTURE_KEYS = ("recaptured_identical", "recaptured_candidates", "recapture_diverged", "shown_page",
                   "action_time_screenshot", "stale_check", "recapture_ended", "recapture_ended_before",
                   "recapture_retargeted")


def _shows_error_page(folder: Path, st) -> bool:
    from PIL import Image

    from mag_dataset.error_pages import is_error_screenshot

    m = st.metadata
    if not m.get("recaptured") or m.get("recaptured_identical") or not m.get("action_time_screenshot"):
        return False
    with Image.open(io.BytesIO(screenshot_bytes(folder, st))) as im:
        return is_error_screenshot(im, str((m.get("shown_page") or {}).get("url") or ""))


def end_at_error_page(folder: Path, episode: RawEpisode) -> tuple[RawEpisode, list[str]] | None:
    """Apply today's rule to an episode recaptured before it: end its recapture at the first
    recaptured step whose screenshot is a browser error page.

    That step and every later recaptured one get their action-time screenshots back and lose
    their recapture (``recaptured: false``, not stale), recording why as a recapture made now
    would (``recapture_ended`` on the step, ``recapture_ended_before`` after it).

    Returns:
        ``(new episode, image files no longer referenced)``, or None when no step shows one.
    """
    first = next((st.step_index for st in episode.steps if _shows_error_page(folder, st)), None)
    if first is None:
        return None
    ended = {"step": first, "reason": "a browser error page (\"This site can't be reached\"), found in the "
                                      "recaptured screenshot by mag recapture --end-at-error-pages"}
    steps, dropped = [], []
    for st in episode.steps:
        if st.step_index < first or not st.metadata.get("recaptured"):
            steps.append(st)
            continue
        why = {"recapture_ended": ended} if st.step_index == first else {"recapture_ended_before": first}
        restored, gone = _action_time_step(st, {"recaptured": False, **why})
        steps.append(restored)
        dropped += gone
    meta = {**episode.metadata, "recaptured": {**(episode.metadata.get("recaptured") or {}), "diverged": True,
                                               "ended": ended}}
    return dataclasses.replace(episode, steps=tuple(steps), metadata=meta), dropped


def _action_time_step(st, metadata: dict) -> tuple[object, list[str]]:
    """A recaptured step with its action-time screenshot back (not stale), its recapture
    metadata replaced by ``metadata``; and the recaptured image files it no longer names."""
    m = {k: v for k, v in st.metadata.items() if k not in _RECAPTURE_KEYS and k != "recaptured"}
    action_time = str(st.metadata.get("action_time_screenshot", st.screenshot) or "")  # "": it had none
    if st.screenshot == action_time:  # stored once (pixel-identical) or never recaptured: files unchanged
        return dataclasses.replace(st, stale=False, metadata={**m, **metadata}), []
    # the recapture removed the action-time Set-of-Mark file: the builder renders it again
    gone = [n for n in (st.screenshot, st.som_screenshot) if n and not is_shared_image(n)]  # shared: compact removes it
    return dataclasses.replace(st, screenshot=action_time, som_screenshot="", stale=False,
                               metadata={**m, **metadata}), gone


def undo_recapture(episode: RawEpisode) -> tuple[RawEpisode, list[str]] | None:
    """The episode as it was recorded, before any recapture (its DOM evidence kept); and the
    recaptured image files it no longer names. None when it was never recaptured."""
    if not episode.metadata.get("recaptured"):
        return None
    steps, dropped = [], []
    for st in episode.steps:
        restored, gone = _action_time_step(st, {})
        steps.append(restored)
        dropped += gone
    meta = {k: v for k, v in episode.metadata.items() if k != "recaptured"}
    return dataclasses.replace(episode, steps=tuple(steps), metadata=meta), dropped


def _rewrite_each(raw_dir: str | Path, change: Callable[[Path, RawEpisode], tuple[RawEpisode, list[str]] | None],
                  describe: Callable[[RawEpisode, int], str], log: Callable[[str], None] | None) -> list[str]:
    """Apply ``change`` to every recaptured episode of a raw corpus, in place: each changed
    episode's file (``episode.json``, or ``episode.json.gz`` when compacted) is replaced
    atomically, then the images it no longer names are removed.
    Returns the ids of the episodes changed."""
    changed = []
    for folder in iter_episode_dirs(Path(raw_dir)):
        ep = read_episode(folder)
        result = change(folder, ep) if ep.metadata.get("recaptured") else None
        if result is None:
            continue
        new, dropped = result
        rewrite_episode_json(folder, new)
        for name in dropped:
            (folder / name).unlink(missing_ok=True)
        changed.append(ep.episode_id)
        if log:
            log(f"{ep.episode_id}: {describe(new, len(dropped))}")
    return changed


def undo_recaptures(raw_dir: str | Path, log: Callable[[str], None] | None = None) -> list[str]:
    """:func:`undo_recapture` on every recaptured episode of a raw corpus, in place. Returns their ids.

    A maintainer's step before recapturing a corpus again with a newer recapture (``mag
    unify`` then clears the stale flags).
    """
    return _rewrite_each(raw_dir, lambda folder, ep: undo_recapture(ep),
                         lambda new, n: f"recapture undone; {n} recaptured images removed", log)


def end_at_error_pages(raw_dir: str | Path, log: Callable[[str], None] | None = None) -> list[str]:
    """:func:`end_at_error_page` on every recaptured episode of a raw corpus, in place.
    Returns the ids of the episodes changed."""
    return _rewrite_each(raw_dir, end_at_error_page,
                         lambda new, n: (f"recapture ended at step {new.metadata['recaptured']['ended']['step']} "
                                         f"(a browser error page); {n} recaptured images removed"), log)


def recapture_corpus(raw_dir: str | Path, share: float, seed: int = 0,
                     log: Callable[[str], None] | None = None, *, reset_first: bool = True,
                     per_template: int | None = None, drift: int | None = None,
                     drift_level: int = 1) -> RecaptureReport:
    """Recapture a seeded share of a raw corpus' site episodes in place (see the module docstring).

    Args:
        raw_dir: raw corpus folder (format v1: PNG screenshots), updated in place.
        share: share of the site episodes to recapture (:func:`choose_episodes`).
        seed: picks which episodes.
        per_template: recapture this many episodes of every template instead of a share.
        log: called with one line per recaptured episode.
        reset_first: reset each site before its first recaptured episode (the default: the
            replays start from the seeded state, so the result does not depend on what was done
            on the site before); False replays on the site exactly as it is now.
        drift: a drift seed: before *every* episode its site is reset and moved on with
            :meth:`mag_dataset.sites.base.Site.drift` (``drift``, ``drift_level``), so each
            replay sees the same site that moved on since the demonstration (what changed is
            stored in the episode's ``metadata["recaptured"]["drift"]``). None: the reset-once
            path above.

    Each site's first recaptured episode starts from a reset site (unless ``reset_first`` is
    False); later ones do not. Episodes already recaptured are skipped (rerunning changes
    nothing). Each episode folder is updated atomically: new images first under temporary
    names, then the JSON.
    """
    raw_dir = Path(raw_dir)
    folders = {read_episode(f).episode_id: f for f in iter_episode_dirs(raw_dir)}
    episodes = [read_episode(f) for f in folders.values()]
    report = RecaptureReport(not_recapturable=[(e.episode_id, why) for e in episodes
                                               if (why := not_recapturable(e)) is not None])
    seen_sites: set[str] = set()
    for ep in choose_episodes(episodes, share, seed, per_template):
        if ep.metadata.get("recaptured"):
            report.skipped.append(ep.episode_id)
            continue
        folder = folders[ep.episode_id]
        first = site_of(ep) not in seen_sites and reset_first
        seen_sites.add(site_of(ep))
        drifted = None
        if drift is not None:
            from mag_dataset.sites import site_class

            site = site_class(site_of(ep))()
            site.reset()
            drifted = {"seed": drift, "level": drift_level, "changes": site.drift(drift, drift_level)}
            first = False
        new, images, diverged = recapture_episode(folder, ep, reset_site=first)
        if drifted is not None:
            new = dataclasses.replace(new, metadata={**new.metadata, "recaptured": {
                **new.metadata["recaptured"], "site_reset_before": True, "drift": drifted}})
        for name, data in images.items():
            tmp = folder / f".{name}.tmp"
            tmp.write_bytes(data)
            tmp.replace(folder / name)
        rewrite_episode_json(folder, new)
        kept = {st.som_screenshot for st in new.steps}
        for st in ep.steps:  # the action-time SoM images of changed steps are no longer referenced
            if st.som_screenshot and st.som_screenshot not in kept:
                (folder / st.som_screenshot).unlink(missing_ok=True)
        report.episodes += 1
        report.steps += len(new.steps)
        if diverged:
            report.diverged.append(ep.episode_id)
        if log:
            log(f"{ep.episode_id}: {len(new.steps)} steps recaptured{' (replay diverged)' if diverged else ''}")
    return report
