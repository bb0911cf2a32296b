"""The guide lint (issue 25 item 2): one test per rule on a crafted step, the bundled sample at
zero findings, the build's record of it, and ``mag lint-guides`` (regeneration included)."""

from __future__ import annotations

import dataclasses
import json
import shutil

from mag_dataset.builder.guide_lint import RULES, lint_corpus, lint_step, names_label
from mag_dataset.cli import main
from mag_dataset.dataset import bundled_raw_dir
from mag_dataset.raw import RawStep, copy_episodes, episode_path, iter_episode_dirs, read_episode
from mag_dataset.schema import Action, Candidate, GuideSource

CANDS = (Candidate("7", "link", "Basket", (10, 10, 80, 30)), Candidate("8", "textbox", "", (10, 40, 200, 70)),
         Candidate("9", "link", "Little Fox Orange Pajama …", (10, 80, 200, 100)))


def _step(action: Action, guide: str, **kw) -> RawStep:
    return RawStep(step_index=0, screenshot="step_000.webp", som_screenshot="", image_width=1280, image_height=720,
                   candidates=CANDS, action=action, target_bbox=None, guide=guide, **kw)


def _rules(step: RawStep, **kw) -> list[str]:
    return [f.rule for f in lint_step(step, "t:0", **kw)]


def test_press_key_rule():
    assert _rules(_step(Action(type="press", key="PageDown"), "Press PageDown to confirm what you entered.")) == ["press_key"]
    assert _rules(_step(Action(type="press", key="Escape"), "Press Escape to go on.")) == ["press_key"]
    assert _rules(_step(Action(type="press", key="Enter"), "Press Enter to scroll down.")) == ["press_key"]
    for key, guide in (("PageDown", "Press PageDown to move down to the 'Save changes' button."),  # a quoted label
                       ("Escape", "Press Escape to close the date picker."), ("Enter", "Press Enter to submit the search.")):
        assert _rules(_step(Action(type="press", key=key), guide)) == [], guide


def test_finish_kind_rule():
    change = _step(Action(type="finish", answer="done"), "The answer is now on screen: report 'done'.")
    assert _rules(change, answer="done") == ["finish_kind"]
    question = _step(Action(type="finish", answer="59"), "The change is saved, so finish the task.")
    assert _rules(question, answer="59") == ["finish_kind"]
    assert _rules(_step(Action(type="finish", answer="59"), "Report '59' as the answer."), answer="59") == []
    assert _rules(_step(Action(type="finish", answer="done"), "Everything is done: finish here."), answer="done") == []
    assert _rules(change) == []  # the task's answer unknown: not judged


def test_odd_characters_rule():
    step = _step(Action(type="click", element_id="7"), "Click the 'Basket \uf078' link.")
    assert [f.detail for f in lint_step(step, "t:0")] == ["U+F078"]
    assert _rules(_step(Action(type="click", element_id="7"), "Click the 'Basket\u200b' link.")) == ["odd_characters"]


def test_cut_label_rule():
    cut = _step(Action(type="click", element_id="7"), "Open the 'Basket' link, next to 'Little Fox Orange …'.")
    assert _rules(cut) == ["cut_label"]
    own = _step(Action(type="click", element_id="9"), "Click the 'Little Fox Orange Pajama …' link.")
    assert _rules(own) == []  # the page's own ellipsis
    assert _rules(_step(Action(type="click", element_id="7"), "Click the 'Basket' link under 'Write comment...'.")) == []


def test_unnamed_target_rule():
    assert _rules(_step(Action(type="click", element_id="7"), "Click the link at the top.")) == ["unnamed_target"]
    assert _rules(_step(Action(type="type", element_id="8", text="tea"), "Type 'tea' here.")) == ["unnamed_target"]
    assert _rules(_step(Action(type="type", element_id="8", text="tea"), "Type 'tea' into the search field.")) == []
    assert _rules(_step(Action(type="click", element_id="7"), "Open your basket: click 'basket'.")) == []
    long = "Good summary. The cable part deserves its own thread and more"
    assert names_label("Click 'Good summary. The cable part'.", long) and not names_label("Click 'Good'.", long)


def test_the_bundled_sample_has_no_finding_and_the_build_records_it():
    report = lint_corpus(bundled_raw_dir())
    assert report.steps >= 1000 and report.findings == [], [f.line() for f in report.findings[:5]]
    from mag_dataset.dataset import bundled_dataset

    folder = bundled_dataset()
    info = json.loads((folder / "build_info.json").read_text("utf-8"))
    assert info["guide_lint"]["findings"] == 0 and set(info["guide_lint"]["by_rule"]) == set(RULES)
    assert "Guide lint (`mag lint-guides`): " in (folder / "README.md").read_text("utf-8")


def test_cli_lints_and_regenerates_only_context_guides(tmp_path, capsys):
    """A context guide (a scroll or key press the expert's plan does not cover) spoilt with an
    icon-font glyph is found, and --regenerate writes the generator's guide again; the experts'
    plan guides and MiniWoB++'s template guides stay."""
    src = bundled_raw_dir()

    def context_step(name: str) -> int | None:
        ep = read_episode(src / name)
        return next((st.step_index for st in ep.steps if st.guide_source is GuideSource.CONTEXT_TEMPLATE), None)

    names = [next(p.name for p in iter_episode_dirs(src) if p.name.startswith("sites.") and context_step(p.name) is not None)]
    names += [p.name for p in iter_episode_dirs(src) if not p.name.startswith("sites.")][:1]
    raw = tmp_path / "raw"
    copy_episodes(src, raw, names)
    site, miniwob = (raw / n for n in names)
    ep = read_episode(site)
    k = context_step(names[0])
    spoilt = ep.steps[k]
    assert any(st.guide_source is GuideSource.PLAN for st in ep.steps)  # plans and context guides side by side
    from mag_dataset.raw import rewrite_episode_json

    bad = dataclasses.replace(spoilt, guide=spoilt.guide.rstrip(".") + " \ue0b6.")
    rewrite_episode_json(site, dataclasses.replace(ep, steps=(*ep.steps[:k], bad, *ep.steps[k + 1:])))
    before_miniwob = episode_path(miniwob).read_bytes()  # the bundled corpus is compacted: episode.json.gz
    assert main(["lint-guides", "--raw", str(raw)]) == 1
    out = capsys.readouterr().out
    assert "[odd_characters]" in out and "1 findings in" in out
    assert main(["lint-guides", "--raw", str(raw), "--regenerate"]) == 0
    out = capsys.readouterr().out
    assert "regenerated the context and plan guides of 1 episodes" in out and "0 findings" in out
    again = read_episode(site).steps
    assert sorted(p.name for p in site.iterdir() if p.name.startswith("episode.json")) == ["episode.json.gz"]  # its form kept
    assert again[k].guide == spoilt.guide  # the generator's guide again
    assert [st.guide for st in again if st.guide_source is GuideSource.PLAN] == \
        [st.guide for st in ep.steps if st.guide_source is GuideSource.PLAN]  # plans untouched
    assert episode_path(miniwob).read_bytes() == before_miniwob  # template guides untouched
    assert main(["lint-guides", "--raw", str(raw), "--limit", "-1"]) == 2
    assert "--limit must be 0 or more" in capsys.readouterr().err
    shutil.rmtree(raw)
    assert main(["lint-guides", "--raw", str(raw)]) == 2
    assert "raw corpus folder not found" in capsys.readouterr().err
