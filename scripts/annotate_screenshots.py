"""Screenshots of the annotation app (``mag annotate``) for the docs (``docs/annotate_*.png``).

Copies three episodes of the bundled corpus into a scratch folder (a 12-step forum episode,
a tracker episode whose step the audit disputed, a MiniWoB++ episode), writes LLM-style
drafts for them and their audit records, starts the real app on a free port and captures
it in Debian Chromium at 1366x900::

    python scripts/annotate_screenshots.py                 # writes docs/annotate_*.png
    python scripts/annotate_screenshots.py --out /tmp/shots --chromium /usr/lib/chromium/chromium

``annotate_verify.png``: the Verify tab on step 11 of the forum episode (10 earlier guides),
opened at full resolution around the outlined gold target; ``annotate_zoom.png``: the same
step zoomed to its target (``t``); ``annotate_fit.png``: step 10, whose target (a text box)
is larger than the viewer, fitted whole;
``annotate_miniwob.png``: a 160x210 MiniWoB++ step scaled up; ``annotate_adjudicate.png``:
the Adjudicate tab on the disputed tracker step; ``annotate_adjudicate_guides.png``: a step
alice and bob verified differently; ``annotate_team.png``: the Team tab (progress, agreement).
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FORUM = "sites.forum.edit_own_post.seed-750325"
TRACKER = "sites.tracker.add_keyword.seed-23103"
MINIWOB = "click-checkboxes.seed-"  # the first episode of this template


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_corpus(raw: Path) -> dict[str, str]:
    """A scratch raw corpus of three bundled episodes with drafts and audit records.

    Returns the step ids shown: ``verify``, ``miniwob`` and ``disputed``.
    """
    from mag_dataset.dataset import bundled_raw_dir
    from mag_dataset.raw import SHARED_IMAGES_DIR, read_audit, read_episode, step_id, write_audit

    src = bundled_raw_dir()
    miniwob = next(p.name for p in sorted(src.iterdir()) if p.name.startswith(MINIWOB))
    raw.mkdir(parents=True)
    (raw / SHARED_IMAGES_DIR).symlink_to(src / SHARED_IMAGES_DIR)
    drafts = []
    for name in (FORUM, TRACKER, miniwob):
        shutil.copytree(src / name, raw / name)
        ep = read_episode(raw / name)
        for st in ep.steps:
            drafts.append({"step_id": step_id(ep.task_id, st.step_index), "model": "stub", "prompt_version": 1,
                           "draft": st.guide.replace("Click", "Press", 1).replace("Type", "Enter", 1)})
    (raw / "guide_drafts.jsonl").write_text("".join(json.dumps(d) + "\n" for d in drafts))
    audit = read_audit(src / "audit.jsonl")
    ids = {step_id(read_episode(raw / n).task_id, 0).rsplit(":", 1)[0] for n in (FORUM, TRACKER, miniwob)}
    write_audit(raw / "audit.jsonl", {k: v for k, v in audit.items() if k.rsplit(":", 1)[0] in ids})
    if (src / "audit_verdicts.jsonl").is_file():
        lines = [line for line in (src / "audit_verdicts.jsonl").read_text().splitlines()
                 if json.loads(line)["step_id"].rsplit(":", 1)[0] in ids]
        (raw / "audit_verdicts.jsonl").write_text("".join(line + "\n" for line in lines))
    forum = read_episode(raw / FORUM)
    return {"verify": step_id(forum.task_id, 10), "fit": step_id(forum.task_id, 9), "miniwob": step_id(read_episode(raw / miniwob).task_id, 0),
            "disputed": "sites.tracker.add_keyword.seed-23103:3"}


def seed_disagreement(raw: Path, ids: dict[str, str]) -> None:
    """alice and bob both verify the forum episode's first four steps (assigned with full
    overlap): they agree on three and disagree on the first, which goes to Adjudicate."""
    from mag_dataset.harness.annotation_session import Session

    s = Session(raw)
    try:
        forum = ids["verify"].rsplit(":", 1)[0]
        steps = [f"{forum}:{k}" for k in range(4)]
        s.store.assign(steps, ["alice", "bob"], overlap=1.0, seed=0)
        for k, sid in enumerate(steps):
            i = s.refs.index(s.by_id[sid])
            s.decide(i, "accept", "", "alice", seen_version=s.version(i), note="reads well")
            if k == 0:
                s.decide(i, "edit", "Open the board list and click the 'All Categories' link.", "bob",
                         seen_version=s.version(i), note="shorter")
            else:
                s.decide(i, "accept", "", "bob", seen_version=s.version(i))
        ids["split"] = steps[0]
    finally:
        s.close()


def shoot(out: Path, chromium: str) -> list[Path]:
    from playwright.sync_api import expect, sync_playwright

    from mag_dataset.harness.annotate_app import launch

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw"
        ids = make_corpus(raw)
        seed_disagreement(raw, ids)
        port = _free_port()
        app, session = launch(raw, annotator="alice", port=port, block=False)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True,
                                            args=["--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
                page = browser.new_page(viewport={"width": 1366, "height": 900})
                page.goto(f"http://127.0.0.1:{port}/")
                status = page.locator("#mag-status")
                expect(status).to_contain_text("Step 1 /", timeout=30000)

                def jump(sid: str) -> None:
                    page.locator("#mag-jump input, #mag-jump textarea").first.fill(sid)
                    page.locator("#mag-jump input, #mag-jump textarea").first.press("Enter")
                    expect(status).to_contain_text(sid, timeout=15000)
                    page.wait_for_timeout(400)  # the viewer fits the image once it is laid out

                def snap(name: str) -> None:
                    path = out / f"annotate_{name}.png"
                    page.screenshot(path=str(path))
                    written.append(path)

                jump(ids["verify"])
                snap("verify")
                page.locator("#mag-viewer [data-mag-zoom=target]").click()
                page.wait_for_timeout(200)
                snap("zoom")
                jump(ids["fit"])
                snap("fit")
                jump(ids["miniwob"])
                snap("miniwob")
                page.get_by_role("tab", name="Adjudicate").click()
                expect(page.locator("#mag-adj-info")).to_contain_text("Judges", timeout=15000)
                page.wait_for_timeout(400)
                snap("adjudicate")
                page.locator("#mag-adj-step input").click()
                page.get_by_role("option", name=f"{ids['split']} · guides disagree · open").click()
                expect(page.locator("#mag-adj-responses")).to_contain_text("bob", timeout=15000)
                page.wait_for_timeout(400)
                snap("adjudicate_guides")
                page.get_by_role("tab", name="Team").click()
                expect(page.locator("#mag-team")).to_contain_text("Agreement", timeout=15000)
                snap("team")
                browser.close()
        finally:
            app.close()
            session.close()
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs")
    ap.add_argument("--chromium", default="/usr/lib/chromium/chromium")
    args = ap.parse_args()
    for path in shoot(args.out, args.chromium):
        print(path)


if __name__ == "__main__":
    main()
