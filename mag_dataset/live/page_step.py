"""From an observed page to a recorded step: the one place recorders build a :class:`~mag_dataset.raw.RawStep`.

The MiniWoB++/site recorder (:mod:`mag_dataset.harness.recorder`), live evaluation
(:mod:`mag_dataset.harness.live_eval`) and the importers (:mod:`mag_dataset.harness.browsergym_import`,
:mod:`mag_dataset.harness.trace_import`) all write raw episodes step by step from what they
observed. This module holds what they share: the naming rules (:func:`episode_id_for`,
:func:`site_and_template`, :func:`step_image_names`) and :func:`step_from_page`. It holds
no browser code (the observation itself is :mod:`mag_dataset.live.observe`'s) and no file
I/O (episodes are written by :func:`mag_dataset.raw.write_episode`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from mag_dataset.raw import RawStep
from mag_dataset.schema import Action, Candidate, GuideSource


def site_and_template(task_id: str) -> tuple[str, str]:
    """``(site, intent_template_id)`` of a recorded task: a MiniWoB++ task (``click-button`` or
    ``miniwob.click-button``) is its own site and template; a site task ``sites.shop.buy``
    is site ``shop``, template ``shop.buy``; any other BrowserGym id is both."""
    if task_id.startswith("miniwob."):
        name = task_id.split(".", 1)[1]
        return name, name
    if task_id.startswith("sites."):
        _, site, template = task_id.split(".", 2)
        return site, f"{site}.{template}"
    return task_id, task_id


def episode_id_for(task_id: str, seed: int) -> str:
    """The episode (folder) id of ``task_id`` at ``seed``: ``click-button.seed-3``,
    ``sites.shop.buy.seed-3`` (the recorder's and live evaluation's one rule)."""
    return f"{task_id if task_id.startswith('sites.') else site_and_template(task_id)[0]}.seed-{seed}"


def step_image_names(index: int) -> tuple[str, str]:
    """The one naming rule of a recorded step's files: ``(step_007.png, step_007_som.png)``."""
    return f"step_{index:03d}.png", f"step_{index:03d}_som.png"


class CapturedPage(Protocol):
    """What a recorder holds of one observed page: a :class:`mag_dataset.live.observe.Observation`,
    the importer's processed observation, or a :class:`PageCapture`. ``som_png`` is read only
    when the step stores a Set-of-Mark image."""

    png: bytes
    som_png: bytes
    width: int
    height: int
    candidates: Sequence[Candidate]
    url: str


@dataclass(frozen=True)
class PageCapture:
    """A :class:`CapturedPage` built by hand (e.g. from a Playwright trace's screenshot)."""

    png: bytes
    width: int
    height: int
    candidates: tuple[Candidate, ...]
    url: str = ""
    som_png: bytes = b""


def store_step_images(images: dict[str, bytes], index: int, page: CapturedPage, som: bool = True) -> tuple[str, str]:
    """Put the screenshot (and, with ``som``, the Set-of-Mark image) of ``page`` into ``images``
    under the names of step ``index`` (:func:`step_image_names`).

    Returns:
        ``(screenshot, som_screenshot)`` file names; ``som_screenshot`` is ``""`` without ``som``.
    """
    shot, som_name = step_image_names(index)
    images[shot] = page.png
    if not som:
        return shot, ""
    images[som_name] = page.som_png
    return shot, som_name


def step_from_page(
    page: CapturedPage,
    images: dict[str, bytes],
    *,
    step_index: int,
    action: Action,
    target_bbox: tuple[float, float, float, float] | None,
    guide: str,
    guide_source: GuideSource = GuideSource.TEMPLATE,
    metadata: dict[str, Any] | None = None,
    url: str | None = None,
    image_index: int | None = None,
    som: bool = True,
    viewport: tuple[int, int] | None = None,
    device_pixel_ratio: float | None = None,
) -> RawStep:
    """The raw step recorded from an observed page; its images go into ``images``.

    The one place a recorder (:mod:`mag_dataset.harness.recorder`), live evaluation
    (:mod:`mag_dataset.harness.live_eval`) and the importers turn an observation into a
    :class:`RawStep`: image names by :func:`step_image_names`, size, candidate menu and URL
    from the page.

    Args:
        page: the page as observed before the action.
        images: file name -> bytes of the episode, updated in place.
        step_index: the step's index in the episode.
        action: the gold action.
        target_bbox: its target's box (screenshot px), None for an untargeted action.
        guide: the step's guide; ``guide_source`` says where it came from.
        metadata: the step's free-form metadata.
        url: the URL to store instead of ``page.url``.
        image_index: the index the image files are named by, when it differs from
            ``step_index`` (live evaluation names them by attempt).
        som: store the page's Set-of-Mark image (False: rendered at build time, format v2).
        viewport: the page's CSS viewport ``(width, height)``, when known.
        device_pixel_ratio: screenshot px per CSS px, when known.
    """
    shot, som_name = store_step_images(images, step_index if image_index is None else image_index, page, som)
    return RawStep(
        step_index=step_index,
        screenshot=shot,
        som_screenshot=som_name,
        image_width=page.width,
        image_height=page.height,
        viewport_width=viewport[0] if viewport else None,
        viewport_height=viewport[1] if viewport else None,
        device_pixel_ratio=device_pixel_ratio,
        candidates=tuple(page.candidates),
        action=action,
        target_bbox=target_bbox,
        guide=guide,
        guide_source=guide_source,
        url=page.url if url is None else url,
        metadata={} if metadata is None else metadata,
    )
