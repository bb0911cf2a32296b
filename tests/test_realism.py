"""The realistic part's measures next to WebMRE's (issue 25, "must show"): computed by the
builder into build_info, the card and the README block, each on a crafted corpus whose
answer is known; and the bundled corpus against its bars."""

from __future__ import annotations

import json

import pytest

from mag_dataset.builder import build_dataset
from mag_dataset.builder.realism import BARS, format_realism, opening, realism_statistics
from mag_dataset.card import README_BEGIN, README_END
from mag_dataset.builder.splits import write_corpus_manifest
from mag_dataset.raw import read_corpus

from synthetic_raw import FAMILIES, edit_episode, family_corpus

SITE_TEMPLATES = [t for f, ts in FAMILIES.items() if f != "miniwob" for t in ts]


def test_opening_is_five_words_without_case_or_punctuation():
    assert opening("Click 'Submit', then wait for the page.") == "click submit then wait for"
    assert opening("Scroll down.") == "scroll down"
    assert opening("To open Emma's basket, click it") == "to open emma's basket click"


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    root = family_corpus(tmp_path_factory.mktemp("realism") / "raw")
    # one click moved onto its box's exact centre, one intent repeated within its template
    edit_episode(root / "shop.buy.seed-1", lambda d: d["steps"][3]["action"].update(coordinate=[35.0, 90.0]))
    intent = json.loads((root / "shop.wish.seed-100" / "episode.json").read_text())["intent"]
    edit_episode(root / "shop.wish.seed-101", lambda d: d.update(intent=intent))
    write_corpus_manifest(root, 2)
    return root


def test_measures_of_a_crafted_corpus(raw, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# T\n\n{README_BEGIN}\n{README_END}\n", "utf-8")
    out = build_dataset(raw, tmp_path / "out", progress=False, readme=readme)
    info = json.loads((out / "build_info.json").read_text())
    r = info["realism"]
    eps = [e for e in read_corpus(raw) if e.source == "sites"]  # miniwob is not the realistic part
    steps = [s for e in eps for s in e.steps]
    assert (r["steps"], r["tasks"], r["templates"]) == (len(steps), len(eps), len(SITE_TEMPLATES))
    # "Type 'user<seed>' ..." is one episode's own; every other guide opens like another template's
    typed = sum(s.action.type.value == "type" for s in steps)
    assert r["shared_openings"] == round((len(steps) - typed) / len(steps), 4)
    assert r["distinct_guides"] == round((typed + 4) / len(steps), 4)  # + select, scroll, click, finish
    clicks = [s for s in steps if s.action.type.value == "click"]
    assert r["centre_clicks"] == round(1 / len(clicks), 4)
    assert r["repeated_intents"] == 1
    # lengths 3 + seed % 3 over seeds 100n..100n+3: 3, 4, 5, 3 -- never one fixed length
    assert r["fixed_length_templates"] == 0.0 and r["task_steps_max"] == 5
    assert r["stale"] == 0.0 and r["audit"] == {"confirmed": 0, "remapped": 0, "unmappable": 0, "disputed": 0}
    assert r["bars"]["centre_clicks"] == {"bar": "<= 20%", "met": True}
    assert r["bars"]["repeated_intents"]["met"] is False and r["bars"]["audit"]["met"] is False
    assert r["webmre"]["task_steps_max"] == 71 and r["webmre"]["stale"] == 0.59
    table = format_realism(r)
    assert "| stale steps (share) | 0.0% | 59.0% | >= 40% | **no** |" in table
    assert "| audit outcomes (confirmed / remapped / unmappable / disputed) | 0 / 0 / 0 / 0 | 54 / 225 / 128 / 58 |" in table
    assert table in (out / "README.md").read_text() and table in readme.read_text()


def test_a_corpus_without_sites_has_no_realism_block():
    assert realism_statistics([]) is None


def test_bars_are_the_issues():
    assert {m: (op, v) for m, op, v in BARS} == {
        "distinct_guides": (">=", 0.90), "shared_openings": ("<=", 0.30), "centre_clicks": ("<=", 0.20),
        "fixed_length_templates": ("<=", 0.50), "task_steps_max": (">=", 40), "stale": (">=", 0.40),
        "repeated_intents": ("<=", 0)}
