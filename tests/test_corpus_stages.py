"""The corpus-stage record (``corpus.json`` ``stages``): written by every stage that rewrites a raw
corpus, in order, checked against the canonical order, carried into ``build_info.json`` and the card.

Real raw corpora, as the unify, compact and builder tests make them (:mod:`harness_fixtures`,
:mod:`synthetic_raw`); the stages run through ``mag`` as a user runs them.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import harness_fixtures as hf
import pytest

import mag_dataset
from mag_dataset.builder import BuildError, build_dataset, prepare_corpus, raw_fingerprint
from mag_dataset.cli import main
from mag_dataset.raw import (
    CORPUS_FILE,
    STAGE_RULES,
    STAGES_KEY,
    StageEntry,
    StageRecordError,
    StageRun,
    append_stage,
    content_fingerprint,
    order_problems,
    out_of_date,
    read_stages,
    stage_warning,
)
from mag_dataset.schema import Action

BUNDLED = Path(mag_dataset.__file__).parent / "data" / "raw"


def coord_only_corpus(raw: Path) -> Path:
    """Two episodes, one with a point-only click for ``mag unify`` to restore."""
    ep = hf.login_episode("coord.seed-0")
    steps = list(ep.steps)
    steps[2] = hf.step(2, Action(type="click", coordinate=(20, 80)), None)
    hf.write(raw, dataclasses.replace(ep, steps=tuple(steps)))
    hf.write(raw, hf.login_episode("plain.seed-0"))
    return raw


@pytest.fixture()
def audit_args(tmp_path):
    """``mag audit`` arguments minus ``--raw``: a panel of three stub endpoints that confirm every step."""
    from stub_openai import StubOpenAI

    stubs = [StubOpenAI(responder=lambda body: '{"verdict": "confirm"}').start() for _ in range(3)]
    spec = {"judges": [dict(name=f"judge{i}", base_url=s.base_url, model=f"stub-{i}", api_key_env=None, timeout=2.0,
                            max_retries=0) for i, s in enumerate(stubs)]}
    (tmp_path / "judges.json").write_text(json.dumps(spec))
    yield ["--judges", str(tmp_path / "judges.json"), "--cache-dir", str(tmp_path / "cache"), "--steps", "all",
           "--no-progress"]
    for s in stubs:
        s.stop()


def stages_of(raw: Path) -> list[str]:
    return [e.stage for e in read_stages(raw)]


def test_the_table_names_known_stages_only_and_the_order_is_acyclic():
    for name, rule in STAGE_RULES.items():
        assert set(rule.after) <= set(STAGE_RULES), name
        assert name not in rule.after
    # the table's order is the canonical order: every stage comes after what it must follow
    position = {name: i for i, name in enumerate(STAGE_RULES)}
    assert all(position[a] < position[name] for name, rule in STAGE_RULES.items() for a in rule.after)
    assert len(STAGE_RULES) == 18


def test_stages_append_entries_in_order_and_say_what_changed(tmp_path, capsys, audit_args):
    raw = coord_only_corpus(tmp_path / "raw")
    before = raw_fingerprint(raw)
    assert main(["unify", "--raw", str(raw), "--dry-run"]) == 0
    assert not (raw / CORPUS_FILE).exists()  # a dry run records nothing
    assert main(["unify", "--raw", str(raw)]) == 0
    assert main(["audit", "--raw", str(raw), *audit_args]) == 0
    assert main(["compact", "--raw", str(raw), "--workers", "1"]) == 0
    assert "warning" not in capsys.readouterr().err
    entries = read_stages(raw)
    assert [e.stage for e in entries] == ["unify", "audit", "compact"]
    unify, audit, compact = entries
    assert unify.options == {"pixel_tolerance": 24, "pixel_fraction": 0.005, "box_tolerance": 4.0}
    assert unify.changed["episodes"] == 1 and unify.changed["steps"] >= 1 and "audit.jsonl" in unify.changed["files"]
    assert audit.options["judges"] == ["judge0=stub-0", "judge1=stub-1", "judge2=stub-2"] and audit.changed["files"]
    assert compact.changed["episodes"] == 2 and compact.changed["steps"] == 8  # every screenshot re-encoded
    assert all(e.version == mag_dataset.__version__ and not e.backfilled for e in entries)
    # each entry's fingerprint is the content after it; the last is the corpus now
    assert len({e.fingerprint for e in entries}) == 3 and compact.fingerprint == content_fingerprint(raw)
    # the corpus holds no split: the record alone in corpus.json, which the builder splits by default
    doc = json.loads((raw / CORPUS_FILE).read_text())
    assert set(doc) == {"format", "format_version", STAGES_KEY}
    assert prepare_corpus(raw, progress=False).splits.source == "default"
    assert before != raw_fingerprint(raw)  # the stages changed the content, not the record
    # an idempotent rerun adds nothing; a rerun that changes something does
    assert main(["compact", "--raw", str(raw), "--workers", "1"]) == 0
    assert stages_of(raw) == ["unify", "audit", "compact"]
    assert not list(raw.glob(".*lock"))  # no lock file is left behind
    capsys.readouterr()
    assert main(["stages", "--raw", str(raw)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and out[0].split()[1] == "unify" and out[-1] == "3 stages; in the canonical order"


def test_a_stage_out_of_order_warns_in_one_line_naming_both(tmp_path, capsys, audit_args):
    raw = coord_only_corpus(tmp_path / "raw")
    assert main(["unify", "--raw", str(raw)]) == 0
    assert main(["audit", "--raw", str(raw), *audit_args]) == 0
    capsys.readouterr()
    # recapture --undo after the audit (it gives back action-time screenshots: none here, yet it ran)
    assert main(["recapture", "--raw", str(raw), "--undo", "--no-progress"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, warnings
    assert "recapture --undo runs after unify and audit, which must come after it" in warnings[0]
    assert stages_of(raw)[-1] == "recapture --undo"  # a warning, not an error: the stage ran and is recorded
    assert main(["stages", "--raw", str(raw)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("out of order: recapture --undo runs after unify and audit")
    assert out[-1] == "3 stages; 1 out of the canonical order; out of date now: unify, audit (run again)"
    # the stages run again in order: no warning for them (the audit is out of date already)
    assert main(["unify", "--raw", str(raw)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["audit", "--raw", str(raw), *audit_args]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["stages", "--raw", str(raw)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "5 stages; 1 out of the canonical order; each rerun since"


def test_stage_warning_and_order_problems():
    def e(name):
        return StageEntry(name, "0", {}, {"episodes": 0, "steps": 0, "files": []}, "0" * 64)

    record = [e("record"), e("recapture"), e("unify"), e("audit")]
    assert order_problems(record) == [] and stage_warning(record, "compact") is None
    line = stage_warning(record, "recapture")
    assert line.startswith("recapture runs after unify and audit, which must come after it: recapture rewrites "
                           "the screenshots") and "\n" not in line
    assert stage_warning(record, "recapture --evidence").startswith("recapture --evidence runs after recapture and audit")
    again = [*record, e("recapture"), e("unify"), e("audit")]
    assert len(order_problems(again)) == 1 and out_of_date(again) == [] and out_of_date(again[:5]) == ["unify", "audit"]
    assert stage_warning(record, "a-stage-of-a-newer-version") is None


def test_recording_a_stage_changes_no_fingerprint_and_no_build_byte(synthetic_corpus, built, tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(synthetic_corpus[0], raw)
    fp, content = raw_fingerprint(raw), content_fingerprint(raw)
    manifest = json.loads((raw / CORPUS_FILE).read_text())
    run = StageRun(raw, "lint-guides --regenerate", {})
    entry = run.finish(note="nothing to regenerate")
    assert entry is not None and entry.changed == {"episodes": 0, "steps": 0, "files": []}
    assert entry.fingerprint == content
    doc = json.loads((raw / CORPUS_FILE).read_text())
    assert {k: v for k, v in doc.items() if k != STAGES_KEY} == manifest  # the rest untouched
    assert (raw_fingerprint(raw), content_fingerprint(raw)) == (fp, content)
    # built: the same Parquet bytes as the corpus without a record; build_info and the card carry it
    again = build_dataset(raw, tmp_path / "again", progress=False)
    shards = sorted(p.relative_to(built) for p in built.rglob("*.parquet"))
    assert len(shards) == 4
    assert all((again / rel).read_bytes() == (built / rel).read_bytes() for rel in shards)
    info = json.loads((again / "build_info.json").read_text())
    assert info["corpus_stages"] == [entry.to_json()] and info["raw_fingerprint"] == fp
    assert json.loads((built / "build_info.json").read_text())["corpus_stages"] == []
    card = (again / "README.md").read_text()
    line = next(ln for ln in card.splitlines() if ln.startswith("Stages that made the raw corpus"))
    assert "`lint-guides --regenerate`" in line and "corpus_stages" in line
    assert "The raw corpus records no stages" in (built / "README.md").read_text()
    # the split manifest written again keeps the record
    from mag_dataset.builder.splits import write_corpus_manifest

    write_corpus_manifest(raw, 3)
    assert stages_of(raw) == ["lint-guides --regenerate"]
    assert json.loads((raw / CORPUS_FILE).read_text())["split_seed"] == 3


def test_a_corpus_json_without_stages_still_reads(synthetic_corpus):
    raw = synthetic_corpus[0]
    assert STAGES_KEY not in json.loads((raw / CORPUS_FILE).read_text())
    assert read_stages(raw) == [] and read_stages(raw / "no-such-folder") == []
    assert main(["stages", "--raw", str(raw)]) == 0


@pytest.mark.parametrize("stages,problem", [
    ({"stage": "unify"}, "field 'stages' must be a list"),
    ([{"stage": "unify"}], "stages[0]: field 'mag_dataset' must be a non-empty string"),
    (["unify"], "stages[0]: expected an object"),
    ([{"stage": "unify", "mag_dataset": "0.1.0", "options": {}, "changed": {"episodes": -1, "steps": 0, "files": []},
       "fingerprint": "0" * 64}], "stages[0]: field 'changed'"),
    ([{"stage": "unify", "mag_dataset": "0.1.0", "options": {}, "changed": None, "fingerprint": None}],
     "stages[0]: field 'changed'"),  # only a backfilled entry may lack them
    ([{"stage": "unify", "mag_dataset": "0.1.0", "options": {}, "changed": {"episodes": 0, "steps": 0, "files": []},
       "fingerprint": "abc"}], "stages[0]: field 'fingerprint'"),
    ([{"stage": "unify", "mag_dataset": "0.1.0", "options": {}, "changed": None, "fingerprint": None,
       "backfilled": True, "when": "yesterday"}], "stages[0]: unknown field 'when'"),
])
def test_a_malformed_stage_record_is_refused_in_one_line(synthetic_corpus, tmp_path, capsys, stages, problem):
    raw = tmp_path / "raw"
    shutil.copytree(synthetic_corpus[0], raw)
    doc = json.loads((raw / CORPUS_FILE).read_text())
    doc[STAGES_KEY] = stages
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    (raw / CORPUS_FILE).write_text(text)
    with pytest.raises(StageRecordError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        read_stages(raw)
    with pytest.raises(BuildError, match="corpus.json: "):
        prepare_corpus(raw, progress=False)
    for argv in (["stages", "--raw", str(raw)], ["unify", "--raw", str(raw)],
                 ["build", "--raw", str(raw), "--out", str(tmp_path / "out"), "--no-progress"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and problem in err[0], (argv, err)
    assert (raw / CORPUS_FILE).read_text() == text  # nothing rewritten over a malformed record
    entry = StageEntry("unify", "0", {}, {"episodes": 0, "steps": 0, "files": []}, "0" * 64)
    with pytest.raises(StageRecordError):
        append_stage(raw, entry)
    with pytest.raises(ValueError, match="unknown corpus stage"):
        append_stage(raw, dataclasses.replace(entry, stage="polish"))


def test_the_bundled_corpus_has_its_backfilled_record():
    entries = read_stages(BUNDLED)
    names = [e.stage for e in entries]
    # scripts/make_corpus.py's sequence (its docstring, and 6a78bdf for v2.2), in the canonical order
    assert names[:3] == ["record"] * 3 and names[3:] == [
        "make-corpus merge", "recapture --evidence", "recapture", "unify", "audit", "lint-guides --regenerate",
        "compact", "lint-guides --regenerate", "compact", "make-corpus fit", "make-corpus split"]
    assert all(e.backfilled and e.note for e in entries) and order_problems(entries) == []
    # the states between are gone; the last one is the corpus as it is
    assert [e.fingerprint for e in entries[:-1]] == [None] * (len(entries) - 1)
    assert entries[-1].fingerprint == content_fingerprint(BUNDLED)
    assert entries[5].options == {"share": 1.0, "seed": 0, "reset": True, "drift": 7, "drift_level": 1}


def test_lint_guides_records_only_when_it_regenerates(tmp_path, capsys):
    raw = coord_only_corpus(tmp_path / "raw")
    main(["lint-guides", "--raw", str(raw)])
    assert not (raw / CORPUS_FILE).exists()  # a lint reads; it rewrites nothing
    main(["lint-guides", "--raw", str(raw), "--regenerate"])
    (entry,) = read_stages(raw)
    assert entry.stage == "lint-guides --regenerate" and entry.fingerprint == content_fingerprint(raw)


def test_an_import_appends_its_entry_and_unify_after_it_is_in_order(tmp_path, capsys):
    from test_importer_agentlab import _with_screenshots

    study = _with_screenshots(tmp_path)
    raw = tmp_path / "raw"
    assert main(["import-browsergym", str(study), "--out", str(raw), "--no-progress"]) == 0
    (entry,) = read_stages(raw)
    assert entry.stage == "import-browsergym" and entry.changed["episodes"] == 4 and entry.changed["steps"] == 7
    assert entry.options["inputs"] == [study.name]
    # again: every episode already there, nothing changed, nothing appended
    assert main(["import-browsergym", str(study), "--out", str(raw), "--no-progress"]) == 0
    assert stages_of(raw) == ["import-browsergym"]
    assert main(["unify", "--raw", str(raw)]) == 0
    assert stages_of(raw) == ["import-browsergym", "unify"] and "warning" not in capsys.readouterr().err


def test_draft_guides_records_its_drafts_file(tmp_path, capsys):
    from stub_openai import StubOpenAI

    raw = coord_only_corpus(tmp_path / "raw")
    with StubOpenAI(responder=lambda body: "Click the button to go on.") as stub:
        args = ["draft-guides", "--raw", str(raw), "--base-url", stub.base_url, "--model", "m", "--api-key-env", "none",
                "--cache-dir", str(tmp_path / "c"), "--no-progress"]
        assert main(args) == 0
        assert main([*args, "--out", str(tmp_path / "elsewhere.jsonl")]) == 0  # not into the corpus: no stage
    (entry,) = read_stages(raw)
    assert entry.stage == "draft-guides" and entry.options == {"model": "m", "sources": ["template"], "max_tokens": 64}
    assert entry.changed == {"episodes": 0, "steps": 0, "files": ["guide_drafts.jsonl"]}


def test_the_annotation_app_records_a_session_that_changed_the_corpus(tmp_path, monkeypatch):
    import mag_dataset.harness.annotate_app as app
    from mag_dataset.raw import read_episode, rewrite_episode_json

    raw = coord_only_corpus(tmp_path / "raw")
    monkeypatch.setattr("mag_dataset.commands.annotate._warn_other_databases", lambda args: None)
    monkeypatch.setattr(app, "launch", lambda *a, **k: None)  # a session that only looked
    assert main(["annotate", "--raw", str(raw), "--annotator", "ann"]) == 0
    assert read_stages(raw) == []

    def decide(raw_dir, **kwargs):  # a session that wrote a decision back, then stopped
        ep = read_episode(raw / "plain.seed-0")
        steps = (dataclasses.replace(ep.steps[0], guide="Type ann into the username field."), *ep.steps[1:])
        rewrite_episode_json(raw / "plain.seed-0", dataclasses.replace(ep, steps=steps))

    monkeypatch.setattr(app, "launch", decide)
    assert main(["annotate", "--raw", str(raw), "--annotator", "ann"]) == 0
    (entry,) = read_stages(raw)
    assert entry.stage == "annotate" and entry.options == {"annotator": "ann"}
    assert (entry.changed["episodes"], entry.changed["steps"]) == (1, 1)


def test_the_card_line_names_the_stages_and_what_is_out_of_date():
    from mag_dataset.card import _stages

    def e(name, **kw):
        return StageEntry(name, "0", {}, {"episodes": 0, "steps": 0, "files": []}, "0" * 64, **kw).to_json()

    line = _stages([e("record", backfilled=True), e("unify"), e("audit"), e("recapture")])
    assert "\n" not in line and line.startswith("Stages that made the raw corpus, in order (* backfilled")
    assert "`record`* → `unify` → `audit` → `recapture`" in line
    assert line.endswith("Out of date: `unify`, `audit` (a stage that must come before ran after it; see `mag stages`).")
    assert "Out of date" not in _stages([e("record"), e("recapture"), e("unify"), e("audit")])
