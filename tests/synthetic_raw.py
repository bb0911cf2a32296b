"""Small synthetic raw corpora (format v1) for builder and loader tests.

Real PNG screenshots drawn with PIL: a page with a text field, a drop-down and a button,
and the same page with Set-of-Mark labels. Each episode types, selects, clicks, scrolls and
finishes, so targeted and untargeted actions are both present.

:func:`make_corpus` writes the default corpus (the session fixtures ``synthetic_corpus`` and
``built`` of ``conftest.py`` use it); :func:`family_corpus` writes episodes of the four site
families with template parameters, for the split and per-family statistics tests.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from mag_dataset.raw import (
    CORPUS_FILE,
    CORPUS_FORMAT,
    EPISODE_GZ_FILE,
    FORMAT_VERSION,
    RawEpisode,
    RawStep,
    episode_path,
    gzip_bytes,
    write_episode,
)
from mag_dataset.schema import Action, Candidate, box_center

W, H = 160, 120
BOXES = {"1": (10.0, 10.0, 110.0, 30.0), "2": (10.0, 40.0, 110.0, 60.0), "3": (10.0, 80.0, 60.0, 100.0)}
ROLES = {"1": ("textbox", "Username"), "2": ("combobox", "Colour"), "3": ("button", "Submit")}


def _png(step: int, som: bool, seed: int) -> bytes:
    im = Image.new("RGB", (W, H), (250, 250, 250))
    d = ImageDraw.Draw(im)
    for i, (cid, box) in enumerate(sorted(BOXES.items())):
        d.rectangle(box, outline=(40 * i, 80, 200 - 10 * step), width=1)
        d.text((box[0] + 3, box[1] + 3), ROLES[cid][1][: 3 + (seed % 5)], fill=(0, 0, 0))
        if som:
            d.rectangle((box[0], box[1], box[0] + 8, box[1] + 9), fill=(255, 0, 0))
            d.text((box[0] + 1, box[1]), cid, fill=(255, 255, 255))
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def _steps(seed: int, name: str) -> list[tuple[Action, str | None, str]]:
    return [
        (Action(type="type", element_id="1", coordinate=box_center(BOXES["1"]), text=f"{name}"), "1", f"Type '{name}' into the Username field."),
        (Action(type="select", element_id="2", coordinate=box_center(BOXES["2"]), value="Red"), "2", "Select 'Red' in the Colour list."),
        (Action(type="scroll", direction="down"), None, "Scroll down the page."),
        (Action(type="click", element_id="3", coordinate=(20.0, 85.0)), "3", "Click 'Submit'."),
        (Action(type="finish"), None, "The task is complete."),
    ][: 3 + seed % 3]


def make_episode(root: Path, template: str, seed: int) -> Path:
    """Write one synthetic episode ``<template>.seed-<seed>`` and return its folder."""
    task_id = f"{template}.seed-{seed}"
    name = f"user{seed}"
    steps, images = [], {}
    candidates = tuple(Candidate(id=c, role=ROLES[c][0], text=ROLES[c][1], bbox=b) for c, b in sorted(BOXES.items()))
    for i, (action, target, guide) in enumerate(_steps(seed, name)):
        shot, som = f"step_{i:03d}.png", f"step_{i:03d}_som.png"
        images[shot], images[som] = _png(i, False, seed), _png(i, True, seed)
        steps.append(
            RawStep(
                step_index=i,
                screenshot=shot,
                som_screenshot=som,
                image_width=W,
                image_height=H,
                candidates=candidates,
                action=action,
                target_bbox=BOXES[target] if target else None,
                guide=guide,
                url=f"file:///miniwob/{template}.html",
            )
        )
    ep = RawEpisode(
        episode_id=task_id,
        task_id=task_id,
        site=template,
        intent=f"Log in as {name} and pick Red ({template}).",
        intent_template_id=template,
        steps=tuple(steps),
        seed=seed,
        reward=1.0,
    )
    return write_episode(root, ep, images)


TEMPLATES = ("login-form", "pick-colour", "search-box", "held-out-a", "held-out-b")


def make_corpus(root: Path, seeds_per_template: int = 2, corpus_json: bool = True, split_seed: int = 7) -> dict[str, Any]:
    """Write a synthetic raw corpus; templates ``held-out-*`` go to test only.

    Returns:
        The corpus manifest written (or that would have been written).
    """
    root.mkdir(parents=True, exist_ok=True)
    splits: dict[str, str] = {}
    for t_i, template in enumerate(TEMPLATES):
        for k in range(seeds_per_template):
            seed = 10 * t_i + k
            make_episode(root, template, seed)
            task = f"{template}.seed-{seed}"
            splits[task] = "test" if template.startswith("held-out") or k == seeds_per_template - 1 else "train"
    manifest = {
        "format": CORPUS_FORMAT,
        "format_version": FORMAT_VERSION,
        "split_seed": split_seed,
        "held_out_templates": [t for t in TEMPLATES if t.startswith("held-out")],
        "splits": splits,
    }
    if corpus_json:
        (root / CORPUS_FILE).write_text(json.dumps(manifest, indent=1) + "\n", "utf-8")
    return manifest


#: family -> templates; the wiki has two templates only (one is held out, one stays in train)
FAMILIES = {
    "shop": ["shop.buy", "shop.wish", "shop.address", "shop.voucher"],
    "forum": ["forum.reply", "forum.topic", "forum.search"],
    "wiki": ["wiki.edit", "wiki.talk"],
    "miniwob": ["click-button", "enter-text", "login-user"],
}


def family_corpus(root: Path) -> Path:
    """Episodes of the four site families (:data:`FAMILIES`), 4 per template, as recorded on sites
    (``source``, ``site``, ``metadata["params"]``); site episodes 0 and 1 of a template share their
    parameters. Returns ``root``."""
    n = 0
    for family, templates in FAMILIES.items():
        for template in templates:
            for k in range(4):
                folder = make_episode(root, template, 100 * n + k)
                params = {"item": "p0" if k < 2 else f"p{k}", "qty": k % 2 if k >= 2 else 0}

                def fix(d, family=family, params=params):
                    if family != "miniwob":
                        d["source"], d["site"], d["metadata"] = "sites", family, {"params": params}
                    else:
                        d["source"], d["site"] = "miniwob", d["intent_template_id"]

                edit_episode(folder, fix)
            n += 1
    return root


def episode_doc(folder: Path) -> dict[str, Any]:
    """The JSON of an episode folder as stored, ``episode.json`` or (compacted) ``episode.json.gz``,
    read without validation (what a test inspects or spoils)."""
    path = episode_path(folder)
    assert path is not None, f"no episode file in {folder}"
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.name == EPISODE_GZ_FILE else data)


def edit_episode(folder: Path, fn) -> None:
    """Apply ``fn(dict)`` to an episode's JSON in place, in the form it is stored (to inject
    inconsistencies)."""
    path = episode_path(folder)
    assert path is not None, f"no episode file in {folder}"
    d = episode_doc(folder)
    fn(d)
    text = json.dumps(d, indent=1).encode("utf-8")
    path.write_bytes(gzip_bytes(text) if path.name == EPISODE_GZ_FILE else text)
