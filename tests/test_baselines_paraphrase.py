"""baselines.paraphrase: target-renaming paraphrases from a local chat-completions stub (real HTTP),
cached, label-checked, readable by baselines.mediation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for `baselines`

from baselines import common, mediation, paraphrase  # noqa: E402
from mag_dataset.testing.tiny_vlm import tiny_steps  # noqa: E402
from stub_openai import StubOpenAI  # noqa: E402

#: the tiny steps' targets (labels Username, Submit) renamed by function; scroll/finish have no target
BY_FUNCTION = {"Username": "Type 'Cheree' into the field that identifies your account.",
               "Submit": "Click the button that sends the form.", None: "Move further down the page."}


def _examples(n=4):
    return [common.Example(s, im) for s, im in tiny_steps(n)]


def _label_of(body):
    text = next(p["text"] for p in body["messages"][1]["content"] if p["type"] == "text")
    for label in ("Username", "Submit"):
        if f"labelled {label!r}" in text:
            return label
    return None


def _args(stub, tmp_path, **kw):
    base = dict(base_url=stub.base_url, model="stub-writer", output=str(tmp_path / "para.jsonl"), api_key_env="",
                cache_dir=str(tmp_path / "cache"), backoff=0.01, concurrency=2)
    base.update(kw)
    return paraphrase.ParaphraseArguments(**base)


def test_paraphrases_are_written_checked_cached_and_read_by_mediation(tmp_path, capsys):
    examples = _examples()
    with StubOpenAI(responder=lambda body: BY_FUNCTION[_label_of(body)]) as stub:
        records = paraphrase.run(_args(stub, tmp_path), examples)
        assert stub.count == 4
        body = next(b for b in stub.requests if _label_of(b) == "Username")  # requests run concurrently
        assert body["messages"][0]["content"] == paraphrase.SYSTEM_PROMPT and "never by its label" in body[
            "messages"][0]["content"]
        parts = body["messages"][1]["content"]
        assert parts[0]["type"] == "image_url" and parts[0]["image_url"]["url"].startswith("data:image/png;base64,")
        assert "Current guide: Type 'Cheree' into the Username field." in parts[1]["text"]
        first = (tmp_path / "para.jsonl").read_bytes()
        (tmp_path / "para.jsonl").unlink()
        paraphrase.run(_args(stub, tmp_path), examples)
        assert stub.count == 4, "the rerun is answered from the cache"
        assert (tmp_path / "para.jsonl").read_bytes() == first
    assert [r["label"] for r in records] == ["Username", "Submit", None, None]
    for r in records:
        assert not paraphrase.label_present(r["guide"], r["label"])
    got = mediation.read_paraphrases(tmp_path / "para.jsonl", [e.step.step_id for e in examples])
    assert got[examples[1].step.step_id] == "Click the button that sends the form."
    prov = json.loads(common.provenance_path(tmp_path / "para.jsonl").read_text())
    assert prov["model"] == "stub-writer" and prov["steps"] == 4 and prov["follow_ups"] == 0
    assert "cache hits: 4" in capsys.readouterr().err


def test_a_paraphrase_that_keeps_the_label_gets_one_follow_up(tmp_path):
    def respond(body):
        label = _label_of(body)
        if label == "Submit" and len(body["messages"]) == 2:
            return "Click the SUBMIT   button."  # the label, in other case and spacing
        return BY_FUNCTION[label]

    with StubOpenAI(responder=respond) as stub:
        records = paraphrase.run(_args(stub, tmp_path), _examples())
        assert stub.count == 5
        follow = stub.requests[-1]["messages"]
        assert follow[2] == {"role": "assistant", "content": "Click the SUBMIT   button."}
        assert '"Submit"' in follow[3]["content"]
    assert records[1]["guide"] == "Click the button that sends the form."


def test_a_label_that_survives_the_follow_up_stops_with_one_line_and_no_file(tmp_path):
    from mag_dataset.cli import UserError

    with StubOpenAI(responder=lambda body: "Use the Username box.") as stub:
        with pytest.raises(UserError, match=r"1 paraphrase\(s\) still name the target's label.*'Username'"):
            paraphrase.run(_args(stub, tmp_path), _examples())
        assert stub.count == 5
    assert not (tmp_path / "para.jsonl").exists()


def test_label_check_ignores_case_and_spacing():
    assert paraphrase.label_present("press  the sign  IN link", "Sign in")
    assert not paraphrase.label_present("press the link that logs you in", "Sign in")
    assert not paraphrase.label_present("anything", None)
    assert paraphrase.clean('\n "Click the button that sends the form."\nExtra line') == \
        "Click the button that sends the form."
