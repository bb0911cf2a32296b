"""The maintainer's path end to end on a few episodes, through the real commands:
raw → ``mag unify`` → ``mag draft-guides`` → verification (the app's Session) → ``mag audit``
(three stub judges on 127.0.0.1 that disagree) → adjudication → ``mag audit`` again →
``mag build`` → ``datasets.load_dataset`` → ``mag score``.

Checks that no label is lost or misfiled on the way: every verification reaches the
built rows with ``verified_by``, every audit outcome (and the adjudication) reaches both
views, the card counts them, and disputed / unmappable steps leave the element-level
denominators."""

from __future__ import annotations

import dataclasses
import json
import re

import harness_fixtures as hf
import pytest
from stub_openai import StubOpenAI

from mag_dataset.cli import main
from mag_dataset.raw import read_audit, read_episode
from mag_dataset.schema import Action

CONF, UNM = '{"verdict": "confirm"}', '{"verdict": "unmappable"}'


def remap(x: str) -> str:
    return json.dumps({"verdict": "remap", "element": x})


# (run, step) -> the three judges' answers; anything not listed: all confirm
PLAN = {
    (1, 0): (remap("2"), remap("2"), CONF),  # remapped
    (1, 1): (UNM, UNM, CONF),  # unmappable
    (1, 2): (CONF, remap("3"), UNM),  # disputed, stays disputed
    (2, 0): (CONF, CONF, "I think it is fine"),  # disputed (malformed), adjudicated to confirmed
}
EXPECTED = {(1, 0): "remapped", (1, 1): "unmappable", (1, 2): "disputed", (2, 0): "confirmed"}


def judge(j: int):
    def answer(body):
        text = body["messages"][1]["content"][1]["text"]
        run = int(re.search(r"\(run (\d+)\)", text).group(1))
        k = int(re.search(r"^Step (\d+) of", text, re.M).group(1)) - 1
        return PLAN.get((run, k), (CONF, CONF, CONF))[j]
    return answer


def drafter(body):
    text = body["messages"][1]["content"][1]["text"]
    action = re.search(r"^Action to take now: (.*)$", text, re.M).group(1)
    return f"Drafted: {action.split(' on element')[0]}."


@pytest.mark.slow
def test_maintainer_path_keeps_every_label(tmp_path, capsys):
    import datasets

    from mag_dataset.harness.annotate_app import Session

    raw = tmp_path / "raw"
    eps = hf.make_corpus(raw, 3)
    # run 2's last step was recorded as a point only: unify restores its element
    ep = eps[2]
    steps = list(ep.steps)
    steps[3] = dataclasses.replace(steps[3], action=Action(type="click", coordinate=(125, 105)))
    hf.write(raw, dataclasses.replace(ep, steps=tuple(steps)))
    (raw / "corpus.json").write_text(json.dumps({
        "format": "mag-raw-corpus", "format_version": 1, "split_seed": 0, "held_out_templates": [],
        "splits": {"login.seed-0": "train", "login.seed-1": "test", "login.seed-2": "test"}}))
    cache = str(tmp_path / "cache")

    assert main(["unify", "--raw", str(raw)]) == 0
    assert read_episode(raw / "login.seed-2").steps[3].action.element_id == "5"

    with StubOpenAI(responder=drafter) as llm:
        assert main(["draft-guides", "--raw", str(raw), "--base-url", llm.base_url, "--model", "drafter",
                     "--api-key-env", "none", "--cache-dir", cache]) == 0
        assert llm.count == 12
    assert "12 drafts for 12 steps" in capsys.readouterr().out

    # verification comes before the audit (the judges see the guides)
    s = Session(raw)
    idx = {r.step_id: i for i, r in enumerate(s.refs)}
    for k in range(4):
        s.decide(idx[f"login.seed-0:{k}"], "accept", "", "ann")
    s.decide(idx["login.seed-1:0"], "edit", "Type ann in the Username box.", "bob")
    s.decide(idx["login.seed-2:1"], "reject", "", "ann")
    s.close()

    stubs = [StubOpenAI(responder=judge(j)).start() for j in range(3)]
    try:
        spec = {"judges": [{"name": f"j{j}", "base_url": st.base_url, "model": f"m{j}", "api_key_env": None,
                            "max_retries": 0} for j, st in enumerate(stubs)]}
        (tmp_path / "judges.json").write_text(json.dumps(spec))
        audit = ["audit", "--raw", str(raw), "--judges", str(tmp_path / "judges.json"), "--cache-dir", cache,
                 "--steps", "all"]
        assert main(audit) == 0
        assert [st.count for st in stubs] == [12, 12, 12]
        out = capsys.readouterr().out
        assert "audited 12 steps: confirmed 8, remapped 1, unmappable 1, disputed 2" in out

        s = Session(raw)
        assert s.first_open() == "login.seed-1:2" and s.disputed() == ["login.seed-1:2", "login.seed-2:0"]
        assert all("verdicts current" in s.view(i)["audit"] for i in range(len(s.refs)))
        s.adjudicate("login.seed-2:0", "confirmed", None, "carol", "the menu entry is right")
        s.close()

        assert main(audit) == 0  # everything cached; the adjudication is kept
        assert [st.count for st in stubs] == [12, 12, 12]
        out = capsys.readouterr().out
        assert "(1 by human adjudication)" in out and "requests sent 0, cached answers 36" in out
    finally:
        for st in stubs:
            st.stop()
    assert main(["audit", "--raw", str(raw), "--replay"]) == 0
    recs = read_audit(raw / "audit.jsonl")
    got = {(int(sid.split(".seed-")[1].split(":")[0]), int(sid.split(":")[1])): r.status.value for sid, r in recs.items()}
    for key, status in EXPECTED.items():
        assert got[key] == status, key
    assert recs["login.seed-2:0"].adjudicated_by == "carol"

    assert main(["build", "--raw", str(raw), "--out", str(tmp_path / "ds")]) == 0
    rows = {}
    for view in ("som", "coord"):
        dd = datasets.load_dataset(str(tmp_path / "ds"), view)
        rows[view] = {r["step_id"]: r for split in dd for r in dd[split].remove_columns("screenshot")}
        assert len(rows[view]) == 12
        for sid, rec in recs.items():
            assert rows[view][sid]["audit_status"] == rec.status.value
    som = rows["som"]
    assert {sid: (r["verified_by"], r["guide_source"]) for sid, r in som.items() if r["verified_by"]} == {
        **{f"login.seed-0:{k}": ("ann", "llm") for k in range(4)},
        "login.seed-1:0": ("bob", "human"), "login.seed-2:1": ("ann", "template")}
    assert som["login.seed-1:0"]["guide"] == "Type ann in the Username box."
    assert som["login.seed-1:0"]["action"]["element_id"] == "2" and som["login.seed-1:0"]["original_element_id"] == "1"
    assert som["login.seed-2:3"]["coordinate_restored"]
    card = (tmp_path / "ds" / "README.md").read_text("utf-8")
    assert "audit: remapped" in card and "guide: human" in card and "| `verified_by` |" in card

    # scoring: gold actions as predictions; disputed and unmappable steps leave element-level denominators
    from mag_dataset.dataset import load_steps
    from mag_dataset.heuristic import heuristic_predictions
    from mag_dataset.predictions import write_predictions

    gold = load_steps(str(tmp_path / "ds"), "som", "test")
    write_predictions(tmp_path / "preds.jsonl", heuristic_predictions(gold, "som", "A"))
    assert main(["score", "--predictions", str(tmp_path / "preds.jsonl"), "--dataset", str(tmp_path / "ds"),
                 "--view", "som", "--contract", "A", "--out", str(tmp_path / "report.json")]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    c = report["counts"]
    assert (c["steps"], c["disputed"], c["unmappable"], c["element_level_excluded"]) == (8, 1, 1, 2)
    assert report["target_acc"]["n"] == 8 - 2
