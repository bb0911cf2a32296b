"""The annotation app (``mag annotate``) for a team, in a real Gradio server and real Chromium:
two annotators on one step at once, the target viewer, jump and filters, unsaved edits, and
the decision controls above the fold at 1366x900."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sqlite3
from pathlib import Path

import harness_fixtures as hf
import pytest
from test_annotation import BROWSER_ARGS, free_port, in_thread, write_drafts

from mag_dataset.raw import read_audit, read_episode
from mag_dataset.schema import Action, AuditStatus

ROOT = Path(__file__).resolve().parents[1]


def _screenshots_module():
    spec = importlib.util.spec_from_file_location("annotate_screenshots", ROOT / "scripts" / "annotate_screenshots.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _responses(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as con:
        return list(con.execute("SELECT step_id, annotator, round, decision, guide, based_on FROM responses ORDER BY id"))


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("servers", [1, 2])
def test_two_annotators_on_one_step_at_once_both_kept_and_it_goes_to_adjudicate(tmp_path, chromium, servers):
    """alice and bob open the same undecided step in two browser contexts (on one server, or
    each on their own server over the same database) and decide at the same moment: one is
    saved, the other is refused with who decided what (nothing applied) and a fresh view;
    the refused one answers again, both responses are kept, the step is listed in Adjudicate,
    carol resolves it there and the tab has nothing open left."""
    from playwright.sync_api import expect, sync_playwright

    from mag_dataset.harness.annotate_app import launch

    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    write_drafts(raw)
    running = []
    for _ in range(servers):
        port = free_port()
        running.append((f"http://127.0.0.1:{port}/", *launch(raw, annotator="", port=port, block=False)))
    urls = {"alice": running[0][0], "bob": running[-1][0]}
    url = running[0][0]
    seen = {}

    def visit():
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS, headless=True)
            pages = {}
            for name in ("alice", "bob"):
                page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
                page.goto(urls[name])
                expect(page.locator("#mag-status")).to_contain_text("Step 1 / 4 · login.seed-0:0", timeout=30000)
                page.locator("#mag-annotator textarea, #mag-annotator input").first.fill(name)
                pages[name] = page
            pages["alice"].locator("#mag-guide textarea").fill("Alice's own words for step one.")
            # both decide on version 0 of the step, neither waiting for the other
            pages["alice"].locator("#mag-edit").click()
            pages["bob"].locator("#mag-accept").click()
            refused = None
            for _ in range(150):
                texts = {n: p.locator("#mag-warning").inner_text() for n, p in pages.items()}
                done = {n: "Step 2 / 4" in p.locator("#mag-status").inner_text() for n, p in pages.items()}
                stale = [n for n, t in texts.items() if "Not saved" in t]
                if stale and sum(done.values()) == 1:
                    refused = stale[0]
                    break
                pages["alice"].wait_for_timeout(100)
            assert refused is not None, (texts, done)
            winner = "bob" if refused == "alice" else "alice"
            seen["refused"], seen["winner"] = refused, winner
            page = pages[refused]
            warning = page.locator("#mag-warning")
            what = "edited to" if winner == "alice" else "accepted"
            expect(warning).to_contain_text(f"step login.seed-0:0 changed since you opened it: {winner} {what}")
            # the view is refreshed on the same step and shows the other's decision; the refused text stays
            expect(page.locator("#mag-status")).to_contain_text("Step 1 / 4 · login.seed-0:0")
            expect(page.locator("#mag-status")).to_contain_text(winner)
            mine = "Alice's own words for step one." if refused == "alice" else "LLM draft 0."
            expect(page.locator("#mag-guide textarea")).to_have_value(mine)
            assert [r[1] for r in _responses(raw / "annotations.sqlite")] == [winner]
            # answering again on the fresh view is accepted: both answers kept, they disagree
            page.locator("#mag-edit" if refused == "alice" else "#mag-accept").click()
            expect(page.locator("#mag-status")).to_contain_text("Step 2 / 4", timeout=15000)
            # the step is listed in Adjudicate, with both responses shown
            page.get_by_role("tab", name="Adjudicate").click()
            expect(page.locator("#mag-adj-step input")).to_have_value("login.seed-0:0 · guides disagree · open",
                                                                     timeout=15000)
            resp = page.locator("#mag-adj-responses")
            expect(resp).to_contain_text("alice edited: “Alice's own words for step one.”")
            expect(resp).to_contain_text("bob accepted the draft “LLM draft 0.”")
            # carol resolves it there (a new round) and the tab says nothing is open
            carol = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
            carol.goto(url)
            expect(carol.locator("#mag-status")).to_contain_text("Step", timeout=30000)
            carol.locator("#mag-annotator textarea, #mag-annotator input").first.fill("carol")
            carol.get_by_role("tab", name="Adjudicate").click()
            expect(carol.locator("#mag-adj-step input")).to_have_value("login.seed-0:0 · guides disagree · open",
                                                                      timeout=15000)
            carol.locator("#mag-adj-note input, #mag-adj-note textarea").first.fill("the draft says it")
            carol.locator("#mag-adj-accept").click()
            expect(carol.locator("#mag-adj-warning")).to_contain_text("Resolved login.seed-0:0: accepted.",
                                                                      timeout=15000)
            expect(carol.locator("#mag-adj-warning")).to_contain_text("No open step left.")
            expect(carol.locator("#mag-adj-step input")).to_have_value(
                "login.seed-0:0 · guides disagreed · resolved: accepted")
            # the Team tab: progress per annotator and agreement on the overlap (the one shared step)
            carol.get_by_role("tab", name="Team").click()
            team = carol.locator("#mag-team")
            expect(team).to_contain_text("Agreement on the overlap: 1 steps verified by two or more", timeout=15000)
            expect(team).to_contain_text("alice: 1 of 4 verified")
            browser.close()

    try:
        in_thread(visit)
    finally:
        for _, app, session in running:
            app.close()
            session.close()
    rows = _responses(raw / "annotations.sqlite")
    first = {"alice": ("login.seed-0:0", "alice", 1, "edit", "Alice's own words for step one."),
             "bob": ("login.seed-0:0", "bob", 1, "accept", "LLM draft 0.")}
    # the winner answered on version 0, the refused one again on version 1; carol on version 2
    assert rows == [(*first[seen["winner"]], 0), (*first[seen["refused"]], 1),
                    ("login.seed-0:0", "carol", 2, "accept", "LLM draft 0.", 2)]
    st = read_episode(raw / "login.seed-0").steps[0]
    assert (st.guide, st.guide_source.value) == ("LLM draft 0.", "llm")


def _corpus_with_a_point_step(raw: Path) -> dict[str, str]:
    """Three bundled episodes (scripts/annotate_screenshots.py) and a synthetic login episode
    whose last step is a point-only click."""
    ids = _screenshots_module().make_corpus(raw)
    ep = hf.login_episode("login.seed-7")
    steps = list(ep.steps)
    steps[3] = dataclasses.replace(steps[3], action=Action(type="click", coordinate=(125, 105)), target_bbox=None)
    hf.write(raw, dataclasses.replace(ep, steps=tuple(steps)))
    ids["point"] = "login.seed-7:3"
    return ids


@pytest.mark.browser
@pytest.mark.slow
def test_viewer_filters_jump_unsaved_edit_and_controls_above_the_fold(tmp_path, chromium):
    from playwright.sync_api import expect, sync_playwright

    from mag_dataset.harness.annotate_app import launch

    raw = tmp_path / "raw"
    ids = _corpus_with_a_point_step(raw)
    forum = read_episode(raw / ids["verify"].rsplit(":", 1)[0])
    target_step = forum.steps[int(ids["verify"].rsplit(":", 1)[1])]
    gold = next(c for c in target_step.candidates if c.id == target_step.action.element_id)
    disputed = sorted((s for s, r in read_audit(raw / "audit.jsonl").items() if r.status is AuditStatus.DISPUTED),
                      key=lambda s: (s.rsplit(":", 1)[0], int(s.rsplit(":", 1)[1])))
    assert ids["disputed"] in disputed
    port = free_port()
    app, session = launch(raw, annotator="alice", port=port, block=False)
    measured = {}

    def visit():
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/")
            status, warning = page.locator("#mag-status"), page.locator("#mag-warning")
            guide = page.locator("#mag-guide textarea")
            expect(status).to_contain_text("Step 1 /", timeout=30000)
            jump = page.locator("#mag-jump input, #mag-jump textarea").first

            def go(sid):
                jump.fill(sid)
                jump.press("Enter")
                expect(status).to_contain_text(sid, timeout=15000)
                expect(page.locator(f'#mag-viewer[data-step="{sid}"]')).to_have_count(1)
                page.wait_for_function("() => document.querySelector('#mag-viewer').dataset.scale")

            go(ids["verify"])
            # 10 earlier guides, and Accept / Save edit / Reject still inside the 900 px window
            assert page.locator("#mag-context li").count() == 10
            for bid in ("#mag-accept", "#mag-edit", "#mag-reject", "#mag-next"):
                box = page.locator(bid).bounding_box()
                assert box["y"] >= 0 and box["y"] + box["height"] <= 900, (bid, box)
                measured[bid] = box["y"] + box["height"]
            # and they stay in view when the page is scrolled to its end (a sticky panel)
            page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
            page.wait_for_function("() => window.scrollY > 300")
            box = page.locator("#mag-accept").bounding_box()
            assert 0 <= box["y"] and box["y"] + box["height"] <= 900, box
            measured["scrolled"] = [page.evaluate("window.scrollY"), box["y"] + box["height"]]
            page.evaluate("window.scrollTo(0, 0)")

            def overlay():
                return page.evaluate("""() => {
                  const v = document.querySelector('#mag-viewer'), img = v.querySelector('img');
                  const g = v.querySelector('#mag-viewer-gold').getBoundingClientRect(), i = img.getBoundingClientRect();
                  const k = i.width / img.naturalWidth;
                  return {scale: +v.dataset.scale, natural: [img.naturalWidth, img.naturalHeight], k,
                          box: [(g.left - i.left) / k, (g.top - i.top) / k, (g.right - i.left) / k, (g.bottom - i.top) / k]};
                }""")

            o = overlay()
            # the screenshot at full resolution, opened at 1:1, the gold box exactly over the gold element
            assert o["natural"] == [1280, 720] and o["scale"] == 1 and abs(o["k"] - 1) < 1e-6
            assert all(abs(a - b) <= 1.0 for a, b in zip(o["box"], gold.bbox)), (o, gold.bbox)
            expect(page.locator("#mag-viewer .mag-tlabel")).to_contain_text(f"target [{gold.id}]")
            measured["open"] = o
            # zoom to the target with the key: larger, and the box still on the gold element
            page.locator("#mag-status").click()
            page.keyboard.press("t")
            page.wait_for_function("() => +document.querySelector('#mag-viewer').dataset.scale > 1.5")
            o = overlay()
            assert all(abs(a - b) <= 1.0 for a, b in zip(o["box"], gold.bbox)), (o, gold.bbox)
            measured["target"] = o
            # the wheel zooms at the cursor, a drag pans
            port_box = page.locator("#mag-viewer .mag-vport").bounding_box()
            cx, cy = port_box["x"] + port_box["width"] / 2, port_box["y"] + port_box["height"] / 2
            page.mouse.move(cx, cy)
            before = o["scale"]
            page.mouse.wheel(0, 300)
            page.wait_for_function(f"() => +document.querySelector('#mag-viewer').dataset.scale < {before}")
            stage = page.locator("#mag-viewer .mag-vstage")
            x0 = stage.bounding_box()["x"]
            page.mouse.down()
            page.mouse.move(cx + 120, cy + 10, steps=5)
            page.mouse.up()
            assert abs(stage.bounding_box()["x"] - x0 - 120) < 2
            # the candidate list filters by id, role and text
            q = gold.text.split()[0].lower() if gold.text.strip() else gold.role.lower()
            expected = sum(q in f"{c.id} {c.role} {c.text}".lower() for c in target_step.candidates)
            page.locator("#mag-image .mag-cfilter").fill(q)
            expect(page.locator("#mag-image .mag-ccount")).to_have_text(f"{expected} shown")
            assert page.locator("#mag-image tr[data-q]:visible").count() == expected < len(target_step.candidates)

            # hovering a row draws its box; m swaps in the page without marks, and back
            row = page.locator("#mag-image tr[data-q]:visible").first
            row.hover()
            hover = page.locator("#mag-viewer .mag-hover")
            expect(hover).to_be_visible()
            assert [float(hover.get_attribute(k)) for k in ("x", "y")] == [float(v) for v in
                                                                            row.get_attribute("data-box").split(",")[:2]]
            page.locator("#mag-status").click()
            page.keyboard.press("m")
            expect(page.locator("#mag-viewer img.mag-som")).to_be_hidden()
            expect(page.locator("#mag-viewer img.mag-plain-img")).to_be_visible()
            assert page.evaluate("document.querySelector('#mag-viewer img.mag-plain-img').naturalWidth") == 1280
            page.keyboard.press("m")
            expect(page.locator("#mag-viewer img.mag-som")).to_be_visible()

            # an edit not saved is kept for its step and comes back with a warning
            guide.fill("My words, not saved yet.")
            page.locator("#mag-next").click()
            expect(status).to_contain_text(ids["verify"].rsplit(":", 1)[0] + ":11", timeout=15000)
            expect(guide).not_to_have_value("My words, not saved yet.")
            page.locator("#mag-prev").click()
            expect(status).to_contain_text(ids["verify"], timeout=15000)
            expect(guide).to_have_value("My words, not saved yet.")
            expect(warning).to_contain_text("unsaved edit of this step is back in the box")

            # a point-only step: the ring is centred on the recorded point; a small image is scaled up
            go(ids["point"])
            pt = page.evaluate("""() => {
              const v = document.querySelector('#mag-viewer'), img = v.querySelector('img');
              const g = v.querySelector('#mag-viewer-gold').getBoundingClientRect(), i = img.getBoundingClientRect();
              const k = i.width / img.naturalWidth;
              return {k, c: [((g.left + g.right) / 2 - i.left) / k, ((g.top + g.bottom) / 2 - i.top) / k],
                      pixelated: getComputedStyle(img).imageRendering};
            }""")
            assert pt["k"] > 2 and pt["pixelated"] == "pixelated"
            assert abs(pt["c"][0] - 125) <= 1 and abs(pt["c"][1] - 105) <= 1, pt
            expect(page.locator("#mag-viewer .mag-tlabel")).to_contain_text("target point (125, 105)")

            # a wrong id is a warning, nothing moves
            jump.fill("no.such.step:3")
            jump.press("Enter")
            expect(warning).to_contain_text("No step 'no.such.step:3' in this corpus", timeout=15000)
            expect(status).to_contain_text(ids["point"])

            # filters: disputed, then one episode; navigation stays inside them
            page.locator("#mag-show input").click()
            page.get_by_role("option", name="disputed", exact=True).click()
            expect(status).to_contain_text(disputed[0], timeout=15000)
            expect(page.locator("#mag-progress")).to_contain_text(f"{len(disputed)} steps match the filter")
            page.locator("#mag-show input").click()
            page.get_by_role("option", name="all", exact=True).click()
            episode = ids["miniwob"].rsplit(":", 1)[0]
            page.locator("#mag-episode input").click()
            page.get_by_role("option", name=episode, exact=True).click()
            n = len(read_episode(raw / episode).steps)
            expect(page.locator("#mag-progress")).to_contain_text(f"{n} steps match the filter", timeout=15000)
            expect(status).to_contain_text(f"{episode}:0")
            page.locator("#mag-prev").click()
            expect(warning).to_contain_text("No earlier step matches the filter.", timeout=15000)
            # on another tab the Verify keys do nothing (the step on Verify is not decided unseen)
            page.get_by_role("tab", name="Adjudicate").click()
            expect(page.locator("#mag-adj-info")).to_contain_text("Recorded action", timeout=15000)
            page.locator("#mag-adj-info").click()
            for key in ("a", "r", "n"):
                page.keyboard.press(key)
            page.wait_for_timeout(1500)
            page.get_by_role("tab", name="Verify").click()
            expect(status).to_contain_text(f"{episode}:0")
            browser.close()

    try:
        in_thread(visit)
    finally:
        app.close()
        session.close()
    assert _responses(raw / "annotations.sqlite") == []  # nothing was decided on this walk
    print(json.dumps(measured))


def test_filters_jump_progress_and_adjudication_list_without_a_browser(tmp_path):
    """The functions behind the Verify tab's filters, jump box and progress line, and the
    Adjudicate tab's list, on a corpus with assignments, drafts, an audit dispute and a
    guide disagreement."""
    from mag_dataset.harness.annotate_app import (
        adjudication_choices,
        find_step,
        matching_steps,
        progress_line,
        step_sites,
    )
    from mag_dataset.harness.annotation_session import Session
    from mag_dataset.raw import write_audit
    from mag_dataset.schema import AuditRecord

    raw = tmp_path / "raw"
    hf.make_corpus(raw, 2)
    write_drafts(raw, n_steps=3)  # login.seed-0:0..2 drafted
    write_audit(raw / "audit.jsonl", {"login.seed-1:2": AuditRecord(status="disputed", disputed=True)})
    s = Session(raw)
    try:
        sites = step_sites(s)
        assert len(sites) == 8 and {x for x, _ in sites} == {"login"}
        ids = [r.step_id for r in s.refs]
        pick = lambda m: [ids[i] for i in m]  # noqa: E731
        assert pick(matching_steps(s, sites, "drafted")) == ["login.seed-0:0", "login.seed-0:1", "login.seed-0:2"]
        assert pick(matching_steps(s, sites, "disputed")) == ["login.seed-1:2"]
        assert len(matching_steps(s, sites, "all", episode="login.seed-1")) == 4
        assert matching_steps(s, sites, "all", site="nowhere") == []
        s.store.assign(["login.seed-0:0", "login.seed-0:1", "login.seed-0:2"], ["alice", "bob"], overlap=1.0, seed=0)
        assert pick(matching_steps(s, sites, "mine", annotator="alice")) == ["login.seed-0:0", "login.seed-0:1",
                                                                              "login.seed-0:2"]
        assert s.first_undecided("alice") == 0
        s.decide(0, "accept", "", "alice", seen_version=0)
        s.decide(0, "reject", "", "bob", seen_version=1)  # they disagree
        assert pick(matching_steps(s, sites, "mine", annotator="alice")) == ["login.seed-0:1", "login.seed-0:2"]
        assert "login.seed-0:0" not in pick(matching_steps(s, sites, "undecided"))
        assert pick(matching_steps(s, sites, "disputed")) == ["login.seed-0:0", "login.seed-1:2"]
        line = progress_line(s, matching_steps(s, sites, "mine", annotator="alice"), "alice")
        assert line == "**1 of 3 verified** (alice) · your queue: 2 left · 2 steps match the filter", line
        assert adjudication_choices(s) == [("login.seed-1:2 · open", "login.seed-1:2"),
                                           ("login.seed-0:0 · guides disagree · open", "login.seed-0:0")]
        assert find_step(s, " login.seed-1:3 ") == 7 and find_step(s, "login.seed-1") == 4
        with pytest.raises(ValueError, match="no step 'login.seed-9:0' in this corpus; a step id looks like"):
            find_step(s, "login.seed-9:0")
        with pytest.raises(ValueError, match="unknown filter"):
            matching_steps(s, sites, "everything")
    finally:
        s.close()


def test_a_step_without_a_screenshot_is_shown_with_one_line(tmp_path):
    """A step imported without a screenshot (raw format: ``"screenshot": null``): the viewer
    says so and names mag recapture; the rest of the step's view still works."""
    from mag_dataset.harness.annotate_app import viewer_html
    from mag_dataset.harness.annotation_session import Session
    from mag_dataset.raw import write_episode

    raw = tmp_path / "raw"
    ep = hf.login_episode()
    steps = list(ep.steps)
    steps[1] = dataclasses.replace(steps[1], screenshot=None, som_screenshot=None)
    ep = dataclasses.replace(ep, steps=tuple(steps))
    write_episode(raw, ep, {k: v for k, v in hf.images_for(ep).items() if k})
    s = Session(raw)
    try:
        html = viewer_html(s, 1)
        assert html.startswith('<div class="mag-viewer-none"') and "no screenshot" in html and "mag recapture" in html
        v = s.view(1)
        assert v["image"] is None and v["guide"] == "Type 'pw' into the Password field."
        assert 'class="mag-viewer' in viewer_html(s, 0) and s.view(0)["image"] is not None
    finally:
        s.close()


@pytest.mark.browser
@pytest.mark.slow
def test_an_adjudication_on_a_stale_view_is_refused_in_the_browser(tmp_path, chromium):
    """alice and bob open the same disputed audit step; alice resolves it, then bob, still on
    the view from before: bob's is refused with what alice decided, the audit file keeps
    alice's, and bob's tab shows the step afresh."""
    from playwright.sync_api import expect, sync_playwright
    from test_annotation import disputed_corpus

    from mag_dataset.harness.annotate_app import launch

    raw = tmp_path / "raw"
    disputed_corpus(raw)
    port = free_port()
    app, session = launch(raw, annotator="", port=port, block=False)

    def visit():
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS, headless=True)
            pages = {}
            for name in ("alice", "bob"):
                page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
                page.goto(f"http://127.0.0.1:{port}/")
                expect(page.locator("#mag-status")).to_contain_text("Step 1 / 4", timeout=30000)
                page.locator("#mag-annotator textarea, #mag-annotator input").first.fill(name)
                page.get_by_role("tab", name="Adjudicate").click()
                expect(page.locator("#mag-adj-step input")).to_have_value("login.seed-0:1 · open", timeout=15000)
                pages[name] = page
            pages["alice"].locator("#mag-adj-outcome").get_by_label("confirmed").check()
            pages["alice"].locator("#mag-adj-resolve").click()
            expect(pages["alice"].locator("#mag-adj-warning")).to_contain_text("Resolved login.seed-0:1 as confirmed.",
                                                                              timeout=15000)
            bob = pages["bob"]
            bob.locator("#mag-adj-outcome").get_by_label("unmappable").check()
            bob.locator("#mag-adj-resolve").click()
            expect(bob.locator("#mag-adj-warning")).to_contain_text(
                "Not saved: step login.seed-0:1 changed since you opened it: alice confirmed", timeout=15000)
            expect(bob.locator("#mag-adj-info")).to_contain_text("Adjudicated: confirmed by alice")
            expect(bob.locator("#mag-adj-outcome input:checked")).to_have_count(0)
            browser.close()

    try:
        in_thread(visit)
    finally:
        app.close()
        session.close()
    assert [(r[1], r[3]) for r in _responses(raw / "annotations.sqlite")] == [("alice", "confirmed")]
    rec = read_audit(raw / "audit.jsonl")["login.seed-0:1"]
    assert (rec.status, rec.adjudicated_by) == (AuditStatus.CONFIRMED, "alice")
