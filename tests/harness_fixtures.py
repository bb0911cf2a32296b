"""Synthetic raw episodes (real PNGs drawn with PIL) for the harness tests."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from mag_dataset.raw import RawEpisode, RawStep, write_episode
from mag_dataset.schema import Action, Candidate

W, H = 160, 120

#: A small login form: two fields, a checkbox inside a label row, and a button.
FORM = (
    Candidate("1", "textbox", "Username", (10, 10, 150, 30)),
    Candidate("2", "textbox", "Password", (10, 40, 150, 60)),
    Candidate("3", "generic", "Remember me row", (10, 70, 150, 90)),
    Candidate("4", "checkbox", "Remember me", (12, 72, 28, 88)),
    Candidate("5", "button", "Submit", (100, 95, 150, 115)),
)


def draw(cands: tuple[Candidate, ...] | list[Candidate], shift: int = 0, som: bool = False, extra: str = "") -> bytes:
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    for i, c in enumerate(cands):
        x0, y0, x1, y1 = c.bbox
        d.rectangle((x0 + shift, y0, x1 + shift, y1), outline=(40 * i % 255, 90, 160), fill=(230, 230 - 20 * i, 250))
        if som:
            d.text((x0 + 1, y0 + 1), c.id, fill=(200, 0, 0))
    if extra:
        d.rectangle((0, 0, W - 1, H - 1), fill=(20, 20, 20))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def step(i: int, action: Action, target: str | None, cands=FORM, guide: str = "", **kw: Any) -> RawStep:
    box = next(c.bbox for c in cands if c.id == target) if target else None
    if action.coordinate is not None and target is None and "target_bbox" not in kw:
        x, y = action.coordinate
        box = (x, y, x, y)
    return RawStep(
        step_index=i,
        screenshot=f"step_{i:03d}.png",
        som_screenshot=f"step_{i:03d}_som.png",
        image_width=W,
        image_height=H,
        candidates=tuple(cands),
        action=action,
        target_bbox=kw.pop("target_bbox", box),
        guide=guide or f"Do step {i}.",
        **kw,
    )


def login_episode(name: str = "login.seed-0", template: str = "login") -> RawEpisode:
    steps = (
        step(0, Action(type="type", element_id="1", coordinate=(80, 20), text="ann"), "1", guide="Type 'ann' into the Username field."),
        step(1, Action(type="type", element_id="2", coordinate=(80, 50), text="pw"), "2", guide="Type 'pw' into the Password field."),
        step(2, Action(type="click", element_id="4", coordinate=(20, 80)), "4", guide="Click the 'Remember me' checkbox."),
        step(3, Action(type="click", element_id="5", coordinate=(125, 105)), "5", guide="Click the 'Submit' button."),
    )
    return RawEpisode(
        episode_id=name, task_id=name, site="login", intent="Log in as ann with password pw.",
        intent_template_id=template, steps=steps, source="synthetic", seed=0, reward=1.0,
    )


def images_for(ep: RawEpisode) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for st in ep.steps:
        out[st.screenshot] = draw(st.candidates)
        out[st.som_screenshot] = draw(st.candidates, som=True)
    return out


def write(root: Path, ep: RawEpisode, extra_images: dict[str, bytes] | None = None) -> Path:
    return write_episode(root, ep, {**images_for(ep), **(extra_images or {})})


def make_corpus(root: Path, n: int = 2) -> list[RawEpisode]:
    import dataclasses

    # distinct intents, so that no two steps make the same request to a model
    eps = [dataclasses.replace(login_episode(f"login.seed-{i}"), intent=f"Log in as ann with password pw (run {i}).")
           for i in range(n)]
    for ep in eps:
        write(root, ep)
    return eps
