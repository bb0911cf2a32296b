"""The foundation: action space, schema validation, raw format, cheap imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mag_dataset import raw
from mag_dataset.actions import ACTION_SPACE, CONTRACT_KEYS, GROUNDING_KEY, ActionType, Contract, View
from mag_dataset.schema import Action, AuditRecord, AuditStatus, Candidate, SchemaError, Step, point_in_box

HEAVY = ("torch", "gradio", "trl", "playwright", "transformers", "datasets", "browsergym", "pyarrow")


def test_import_is_cheap():
    code = (
        "import sys, mag_dataset, mag_dataset.cli, mag_dataset.schema, mag_dataset.raw, mag_dataset.actions;"
        f"print([m for m in sys.modules if m.split('.')[0] in {HEAVY!r}])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_action_space_covers_all_types():
    assert len(ACTION_SPACE) == 13
    assert set(ACTION_SPACE) == set(ActionType)
    targeted = {t.value for t, s in ACTION_SPACE.items() if s.targeted}
    assert targeted == {"click", "type", "select", "hover"}
    assert set(CONTRACT_KEYS) == set(Contract)
    assert CONTRACT_KEYS[Contract.J] == ("action", "guide")
    assert CONTRACT_KEYS[Contract.JG] == ("guide", "action")
    assert set(GROUNDING_KEY) == set(View)


@pytest.mark.parametrize(
    "d, message",
    [
        ({"type": "teleport"}, "unknown action type"),
        ({"type": "click"}, "needs an element_id or a coordinate"),
        ({"type": "type", "element_id": "3"}, "needs action.text"),
        ({"type": "scroll", "direction": "sideways"}, "must be one of"),
        ({"type": "scroll", "direction": "up", "element_id": "4"}, "takes no target"),
        ({"type": "click", "element_id": "4", "text": "x"}, "not an argument of click"),
        ({"type": "click", "coordinate": [float("nan"), 3]}, "finite numbers"),
        ({"type": "click", "element_id": "4", "bogus": 1}, "unknown fields"),
    ],
)
def test_action_rejects(d, message):
    with pytest.raises(SchemaError, match=message):
        Action.from_dict(d)


def test_action_round_trip():
    a = Action.from_dict({"type": "type", "element_id": 7, "coordinate": [10, 20.5], "text": "Cheree"})
    assert a.element_id == "7" and a.coordinate == (10.0, 20.5)
    assert Action.from_dict(a.to_dict()) == a


def test_point_in_box_edges_included():
    box = (10.0, 10.0, 20.0, 20.0)
    assert point_in_box((10, 10), box) and point_in_box((20, 20), box)
    assert not point_in_box((20.0001, 15), box)


def test_audit_record_consistency():
    with pytest.raises(SchemaError):
        AuditRecord(status=AuditStatus.DISPUTED, disputed=False)
    with pytest.raises(SchemaError, match="remapped"):
        AuditRecord(status="remapped")
    assert AuditRecord(status="disputed", disputed=True).status is AuditStatus.DISPUTED


def _step(**kw):
    base = dict(
        step_id="t:0", task_id="t", site="s", intent="i", intent_template_id="s", step_index=0, num_steps=1,
        image_width=100, image_height=100, previous_guides=[], guide="Click 'OK'.", guide_source="template",
        action=Action(ActionType.CLICK, element_id="1", coordinate=(5, 5)), target_bbox=[0, 0, 10, 10],
    )
    base.update(kw)
    return Step(**base)


def test_step_element_scored():
    assert _step().element_scored
    assert not _step(audit_status="unmappable").element_scored
    assert not _step(audit_status="disputed", disputed=True).element_scored
    with pytest.raises(SchemaError, match="step_index"):
        _step(step_index=3)


def _png(w=40, h=30) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h), "white").save(buf, format="PNG")
    return buf.getvalue()


def _episode(**step_kw) -> raw.RawEpisode:
    step = dict(
        step_index=0, screenshot="step_000.png", som_screenshot="step_000_som.png", image_width=40,
        image_height=30, candidates=(Candidate("1", "button", "OK", (0, 0, 10, 10)),),
        action=Action(ActionType.CLICK, element_id="1", coordinate=(5, 5)), target_bbox=(0, 0, 10, 10),
        guide="Click 'OK'.",
    )
    step.update(step_kw)
    return raw.RawEpisode("ep1", "ep1", "site", "Click OK.", "site", steps=(raw.RawStep(**step),))


def test_raw_round_trip(tmp_path):
    ep = _episode()
    raw.write_episode(tmp_path, ep, {"step_000.png": _png(), "step_000_som.png": _png()})
    back = raw.read_episode(tmp_path / "ep1")
    assert back == ep
    assert [e.episode_id for e in raw.read_corpus(tmp_path)] == ["ep1"]


@pytest.mark.parametrize("eid", ["", ".hidden", "../escape", "a/b", "a\\b"])
def test_write_episode_needs_a_plain_folder_name(tmp_path, eid):
    # a leading '.' would be skipped by every reader as a temp folder; '/' would write elsewhere
    root = tmp_path / "raw"
    ep = raw.RawEpisode(eid, "t", "site", "Click OK.", "site", steps=_episode().steps)
    with pytest.raises(ValueError, match="must be a plain folder name"):
        raw.write_episode(root, ep, {"step_000.png": _png(), "step_000_som.png": _png()})
    assert not any(tmp_path.rglob("*.png"))


def test_raw_rejects_coordinate_outside_box(tmp_path):
    ep = _episode()
    raw.write_episode(tmp_path, ep, {"step_000.png": _png(), "step_000_som.png": _png()})
    path = tmp_path / "ep1" / raw.EPISODE_FILE
    d = json.loads(path.read_text())
    d["steps"][0]["action"]["coordinate"] = [25, 5]
    path.write_text(json.dumps(d))
    with pytest.raises(raw.RawDataError, match=r"episode 'ep1', step 0, field 'action.coordinate'"):
        raw.read_episode(tmp_path / "ep1")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda st: st["action"].update(type=["click"]), "step 0, field 'action.type': unknown action type ['click']"),
        (lambda st: st.update(metadata="x"), "step 0, field 'metadata': expected an object, got str"),
        (lambda st: st.update(url=5), "step 0, field 'url': expected str, got int"),
        (lambda st: st.update(stale="no"), "step 0, field 'stale': expected bool, got str"),
    ],
)
def test_raw_rejects_malformed_step_fields(tmp_path, edit, message):
    # each of these once gave a traceback (unhashable type, str has no .get) or a silent coercion
    raw.write_episode(tmp_path, _episode(), {"step_000.png": _png(), "step_000_som.png": _png()})
    path = tmp_path / "ep1" / raw.EPISODE_FILE
    d = json.loads(path.read_text())
    edit(d["steps"][0])
    path.write_text(json.dumps(d))
    with pytest.raises(raw.RawDataError) as e:
        raw.read_episode(tmp_path / "ep1")
    assert str(e.value) == f"episode 'ep1', {message}"


def test_raw_rejects_episode_metadata_that_is_not_an_object(tmp_path):
    raw.write_episode(tmp_path, _episode(), {"step_000.png": _png(), "step_000_som.png": _png()})
    path = tmp_path / "ep1" / raw.EPISODE_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), "metadata": [1]}))
    with pytest.raises(raw.RawDataError, match=r"^episode 'ep1', field 'metadata': expected an object, got list$"):
        raw.read_episode(tmp_path / "ep1")


def test_bad_audit_files_name_the_file(tmp_path):
    (tmp_path / "latin1.jsonl").write_bytes(b'{"step_id": "caf\xe9:0"}\n')
    with pytest.raises(ValueError, match=r"latin1.jsonl: not valid UTF-8"):
        raw.read_audit(tmp_path / "latin1.jsonl")
    (tmp_path / "ids.jsonl").write_text('{"step_id": "a:0"}\n{"step_id": ["a:1"]}\n')
    with pytest.raises(ValueError, match=r"ids.jsonl:2: bad audit record: step_id must be a string"):
        raw.read_audit(tmp_path / "ids.jsonl")


def test_atomic_writes_get_normal_permissions(tmp_path):
    import os

    from mag_dataset.fileio import atomic_write

    umask = os.umask(0o022)
    os.umask(umask)
    probe = tmp_path / "probe.txt"
    probe.write_text("x")
    rewritten = raw.rewrite_episode_json(raw.write_episode(tmp_path, _episode(), {"step_000.png": _png(),
                                                                               "step_000_som.png": _png()}), _episode())
    for path in (atomic_write(tmp_path / "a.json", "{}"), rewritten):
        assert path.stat().st_mode & 0o777 == probe.stat().st_mode & 0o777 == 0o666 & ~umask, path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "ep1", "probe.txt"]  # no temp file left


def test_audit_file_round_trip(tmp_path):
    recs = {"a:0": AuditRecord(status="remapped", element_id="9", original_element_id="3"), "a:1": AuditRecord()}
    raw.write_audit(tmp_path / "audit.jsonl", recs)
    assert raw.read_audit(tmp_path / "audit.jsonl") == recs
    (tmp_path / "bad.jsonl").write_text('{"step_id": "x", "status": "maybe"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: bad audit record"):
        raw.read_audit(tmp_path / "bad.jsonl")


def test_cli_help_and_unknown_command(capsys):
    from mag_dataset.cli import COMMANDS, main

    assert len(COMMANDS) >= 10
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "score" in capsys.readouterr().out
