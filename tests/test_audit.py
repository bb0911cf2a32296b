"""Three-judge audit against three real local stub endpoints; merge rule; cache; replay; round trip."""

from __future__ import annotations

import dataclasses
import json
import re
import socket

import harness_fixtures as hf
import pytest
from stub_openai import Malformed, Slow, Status, StubOpenAI

from mag_dataset.cli import main
from mag_dataset.harness.audit import (
    JudgeDownError,
    NoVotesError,
    AuditVerdict,
    JudgeConfig,
    parse_verdict,
    read_audit_verdicts,
    replay_audit,
    run_audit,
    select_steps,
)
from mag_dataset.harness.audit_prompt import JUDGE_SYSTEM_PROMPT, judge_user_text
from mag_dataset.harness.audit_rules import Vote, merge_verdicts
from mag_dataset.harness.judges import load_judges
from mag_dataset.harness.preflight import PreflightError
from mag_dataset.llm_client import LLMConfigError
from mag_dataset.raw import read_audit
from mag_dataset.schema import AuditStatus

C, R, U = Vote.CONFIRM, Vote.REMAP, Vote.UNMAPPABLE


def V(vote, el=None, judge="j"):
    return AuditVerdict(judge, vote, element_id=el, error=None if vote else "timeout")


@pytest.mark.parametrize(
    "votes, expected",
    [
        ([V(C), V(C), V(C)], (AuditStatus.CONFIRMED, None)),
        ([V(R, "7"), V(R, "7"), V(C)], (AuditStatus.REMAPPED, "7")),
        ([V(R, "7"), V(R, "7"), V(R, "7")], (AuditStatus.REMAPPED, "7")),
        ([V(R, "7"), V(R, "7"), V(None)], (AuditStatus.REMAPPED, "7")),  # majority of the panel
        ([V(U), V(U), V(R, "7")], (AuditStatus.UNMAPPABLE, None)),
        ([V(U), V(U), V(None)], (AuditStatus.UNMAPPABLE, None)),
        ([V(C), V(C), V(None)], (AuditStatus.DISPUTED, None)),  # "all confirm" not established
        ([V(C), V(C), V(R, "7")], (AuditStatus.DISPUTED, None)),
        ([V(R, "7"), V(R, "8"), V(C)], (AuditStatus.DISPUTED, None)),  # remaps to different elements
        ([V(C), V(R, "7"), V(U)], (AuditStatus.DISPUTED, None)),
        ([V(None), V(None), V(None)], (AuditStatus.DISPUTED, None)),
        ([], (AuditStatus.DISPUTED, None)),
    ],
)
def test_merge_rule(votes, expected):
    assert merge_verdicts(votes) == expected


IDS = ["1", "2", "3", "4", "5"]


@pytest.mark.parametrize(
    "text, vote, element, error",
    [
        ('{"verdict": "confirm"}', C, None, None),
        ('  {"verdict": "remap", "element": "3", "reason": "the row"}\n', R, "3", None),
        ('{"verdict": "remap", "element": 3}', R, "3", None),
        ('{"verdict": "remap", "element": "2"}', C, None, None),  # remap to the recorded element
        ('{"verdict": "unmappable"}', U, None, None),
        ('```json\n{"verdict": "unmappable"}\n```', U, None, None),
        ('Sure! {"verdict": "confirm"}', None, None, "malformed"),
        ('{"verdict": "remap", "element": "99"}', None, None, "malformed"),
        ('{"verdict": "remap"}', None, None, "malformed"),
        ('{"verdict": "yes"}', None, None, "malformed"),
        ('{"verdict": "confirm", "confidence": 0.9}', None, None, "malformed"),
        ('{"verdict": "confirm", "element": "2"}', None, None, "malformed"),
        ('["confirm"]', None, None, "malformed"),
        ("", None, None, "malformed"),
        ("[" * 100000, None, None, "malformed"),
    ],
)
def test_parse_verdict_is_strict(text, vote, element, error):
    v = parse_verdict("j", text, IDS, "2")
    assert (v.vote, v.element_id, v.error) == (vote, element, error)


def corpus(root):
    """Two episodes (8 targeted steps); A's last step stale, B's step 2 coordinate-restored."""
    a = dataclasses.replace(hf.login_episode("ep-a.seed-0"), intent="Task A")
    steps = list(a.steps)
    steps[3] = dataclasses.replace(steps[3], stale=True)
    a = dataclasses.replace(a, steps=tuple(steps))
    b = dataclasses.replace(hf.login_episode("ep-b.seed-0"), intent="Task B")
    steps = list(b.steps)
    steps[2] = dataclasses.replace(steps[2], metadata={"coordinate_restored": True})
    b = dataclasses.replace(b, steps=tuple(steps))
    hf.write(root, a)
    hf.write(root, b)
    (root / "corpus.json").write_text(json.dumps({
        "format": "mag-raw-corpus", "format_version": 1, "split_seed": 0, "held_out_templates": [],
        "splits": {"ep-a.seed-0": "train", "ep-b.seed-0": "test"},
    }))
    return a, b


CONF, UNM = '{"verdict": "confirm"}', '{"verdict": "unmappable"}'


def remap(x):
    return json.dumps({"verdict": "remap", "element": x})


# (task, step index) -> answers of judges 1, 2, 3
SCRIPT = {
    ("Task A", 0): (CONF, CONF, CONF),  # confirmed
    ("Task A", 1): (remap("1"), remap("1"), CONF),  # remapped to 1
    ("Task A", 2): (UNM, UNM, remap("3")),  # unmappable
    ("Task A", 3): (CONF, remap("1"), UNM),  # disputed
    ("Task B", 0): (CONF, CONF, "TIMEOUT"),  # disputed on the first run (no vote), confirmed later
    ("Task B", 1): (CONF, CONF, 'Sure! {"verdict": "confirm"}'),  # malformed -> no vote -> disputed
    ("Task B", 2): (remap("3"), remap("3"), '{"verdict": remap'),  # remapped despite a malformed vote
    ("Task B", 3): (remap("4"), remap("1"), remap("99")),  # disputed
}
EXPECTED = {
    "ep-a.seed-0:0": ("confirmed", None),
    "ep-a.seed-0:1": ("remapped", "1"),
    "ep-a.seed-0:2": ("unmappable", None),
    "ep-a.seed-0:3": ("disputed", None),
    "ep-b.seed-0:0": ("disputed", None),
    "ep-b.seed-0:1": ("disputed", None),
    "ep-b.seed-0:2": ("remapped", "3"),
    "ep-b.seed-0:3": ("disputed", None),
}


def responder(j, timeouts):
    def answer(body):
        text = body["messages"][1]["content"][1]["text"]
        task = re.search(r"^Task: (.*)$", text, re.M).group(1)
        k = int(re.search(r"^Step (\d+) of", text, re.M).group(1)) - 1
        a = SCRIPT[(task, k)][j]
        if a == "TIMEOUT":
            timeouts["n"] += 1
            return Slow(5.0, CONF) if timeouts["n"] == 1 else CONF  # times out once, then answers
        return a

    return answer


@pytest.fixture()
def judges():
    timeouts = {"n": 0}
    stubs = [StubOpenAI(responder=responder(j, timeouts)).start() for j in range(3)]
    yield stubs
    for s in stubs:
        s.stop()


def configs(stubs):
    return [
        JudgeConfig(name=f"judge{i + 1}", base_url=s.base_url, model=f"stub-{i + 1}", api_key_env=None,
                    timeout=2.0, max_retries=0)
        for i, s in enumerate(stubs)
    ]


def test_audit_end_to_end_with_three_stub_judges(tmp_path, judges):
    raw = tmp_path / "raw"
    corpus(raw)
    cache = tmp_path / "cache"
    report = run_audit(raw, configs(judges), cache_dir=cache)
    assert report.steps == 8 and [s.count for s in judges] == [8, 8, 8] and report.requests == 24
    recs = read_audit(raw / "audit.jsonl")
    assert {sid: (r.status.value, r.element_id) for sid, r in recs.items()} == EXPECTED
    assert recs["ep-a.seed-0:1"].original_element_id == "2" and recs["ep-b.seed-0:2"].original_element_id == "4"
    assert all(r.disputed == (r.status is AuditStatus.DISPUTED) for r in recs.values())
    assert recs["ep-a.seed-0:3"].stale and recs["ep-b.seed-0:2"].coordinate_restored
    assert sum(r.stale for r in recs.values()) == 1 and sum(r.coordinate_restored for r in recs.values()) == 1
    assert dict(report.statuses) == {AuditStatus.CONFIRMED: 1, AuditStatus.REMAPPED: 2, AuditStatus.UNMAPPABLE: 1, AuditStatus.DISPUTED: 4}
    assert report.votes["judge3"]["no_vote:timeout"] == 1 and report.votes["judge3"]["no_vote:malformed"] == 3
    # judges 1 and 2 voted on all 8 steps and agree on A0, A1, A2, B0, B1, B2
    assert report.agreement == {"judge1~judge2": (6, 8), "judge1~judge3": (1, 4), "judge2~judge3": (1, 4)}
    assert "agreement judge1~judge2: 6/8 = 0.75" in report.summary()
    # the verdict log keeps every answer and why a vote is missing
    log = read_audit_verdicts(raw / "audit_verdicts.jsonl")
    assert len(log) == 8 and all(len(v) == 3 for v in log.values())
    assert log["ep-b.seed-0:0"][2].error == "timeout" and log["ep-b.seed-0:1"][2].answer.startswith("Sure!")
    # what the judges saw: the SoM screenshot, the menu, the recorded action
    body = judges[0].requests[0]
    assert body["messages"][0]["content"] == JUDGE_SYSTEM_PROMPT and body["temperature"] == 0
    assert body["messages"][1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")

    # rerun: cached answers are reused; only the judge that timed out is asked again
    report2 = run_audit(raw, configs(judges), cache_dir=cache)
    assert [s.count for s in judges] == [8, 8, 9] and report2.requests == 1 and report2.cache_hits == 23
    assert read_audit(raw / "audit.jsonl")["ep-b.seed-0:0"].status is AuditStatus.CONFIRMED

    # third run: everything cached, zero requests, identical files
    before = (raw / "audit.jsonl").read_bytes(), (raw / "audit_verdicts.jsonl").read_bytes()
    report3 = run_audit(raw, configs(judges), cache_dir=cache)
    assert [s.count for s in judges] == [8, 8, 9] and report3.requests == 0 and report3.cache_hits == 24
    assert before == ((raw / "audit.jsonl").read_bytes(), (raw / "audit_verdicts.jsonl").read_bytes())

    # replay from the verdict log: no endpoint at all, same audit file
    (raw / "audit.jsonl").unlink()
    for s in judges:
        s.stop()
    replayed = replay_audit(raw, raw / "audit_verdicts.jsonl")
    assert replayed.steps == 8 and (raw / "audit.jsonl").read_bytes() == before[0]


def good_audit(tmp_path, judges):
    """A finished audit of the 8-step corpus (the SCRIPT outcomes), with its files' bytes."""
    raw = tmp_path / "raw"
    corpus(raw)
    run_audit(raw, configs(judges), cache_dir=tmp_path / "cache")
    files = (raw / "audit.jsonl", raw / "audit_verdicts.jsonl")
    return raw, files, [f.read_bytes() for f in files]


def test_one_judge_down_stops_the_audit_and_keeps_the_audit_file(tmp_path, judges, capsys):
    """The 'must show': one of three judges failing every call; exit non-zero, files byte-identical."""
    raw, files, before = good_audit(tmp_path, judges)
    with StubOpenAI(responder=lambda b: Status(500, message="overloaded")) as down:
        spec = {"judges": [dict(name=c.name, base_url=c.base_url, model=c.model, api_key_env=None, timeout=2.0,
                                max_retries=0) for c in configs([*judges[:2], down])]}
        (tmp_path / "judges.json").write_text(json.dumps(spec))
        # a fresh cache, so every judge is really asked
        rc = main(["audit", "--raw", str(raw), "--judges", str(tmp_path / "judges.json"), "--cache-dir", str(tmp_path / "cache2"), "--steps", "all"])
        err = capsys.readouterr().err
        assert rc == 2 and down.count == 1  # its first request failed: nothing else was sent to it
    assert "judge judge3 is down" in err and "HTTP 500: overloaded" in err and "Traceback" not in err
    assert [f.read_bytes() for f in files] == before
    assert sorted(p.name for p in raw.iterdir() if p.is_file()) == ["audit.jsonl", "audit_verdicts.jsonl", "corpus.json"]


def flaky(after, answer=CONF, failure=None):
    """A judge that answers ``after`` requests (``answer``: a text or a responder), then fails every call."""
    seen = {"n": 0}

    def respond(body):
        seen["n"] += 1
        if seen["n"] > after:
            return failure or Status(500, message="flaky")
        return answer(body) if callable(answer) else answer

    return respond


def test_a_judge_failing_too_many_calls_stops_and_writes_nothing(tmp_path, judges):
    raw, files, before = good_audit(tmp_path, judges)
    with StubOpenAI(responder=flaky(2)) as j3:  # passes the first request, then fails 6 of 8
        cfg = [*configs(judges)[:2], configs([j3])[0]]
        cfg[2] = dataclasses.replace(cfg[2], name="judge3")
        with pytest.raises(JudgeDownError, match=r"judge judge3: 6 of 8 calls failed \(first: .*HTTP 500: flaky\).*"
                                                r"the limit is 20%.*nothing was written.*--allow-partial"):
            run_audit(raw, cfg, cache_dir=tmp_path / "cache2")
    assert [f.read_bytes() for f in files] == before


def test_allow_partial_writes_beside_and_keeps_earlier_outcomes(tmp_path, judges, capsys):
    raw, files, before = good_audit(tmp_path, judges)
    old = read_audit(raw / "audit.jsonl")
    with StubOpenAI(responder=flaky(2, responder(1, {"n": 1}))) as j2:  # judge 2 is needed for the remapped / unmappable majorities
        cfg = configs([judges[0], j2, judges[2]])
        spec = {"judges": [dict(name=c.name, base_url=c.base_url, model=c.model, api_key_env=None, timeout=2.0,
                                max_retries=0) for c in cfg]}
        (tmp_path / "judges.json").write_text(json.dumps(spec))
        assert main(["audit", "--raw", str(raw), "--judges", str(tmp_path / "judges.json"), "--cache-dir", str(tmp_path / "cache2"),
                     "--allow-partial", "--steps", "all"]) == 0
    out, err = capsys.readouterr()
    assert "PARTIAL audit" in out and "judge judge2: 6 of 8 calls failed" in out and "was not changed" in err
    assert [f.read_bytes() for f in files] == before
    partial = read_audit(raw / "audit.partial.jsonl")
    assert (raw / "audit_verdicts.partial.jsonl").is_file()
    # a failed call never turns an earlier decided outcome into disputed
    for sid, rec in old.items():
        if rec.status is not AuditStatus.DISPUTED:
            assert (partial[sid].status, partial[sid].element_id) == (rec.status, rec.element_id), sid
    assert re.search(r"kept the earlier outcome of [1-9]\d* steps", out)


def test_a_failed_call_below_the_limit_keeps_the_earlier_outcome(tmp_path, judges):
    raw, files, before = good_audit(tmp_path, judges)
    assert read_audit(raw / "audit.jsonl")["ep-a.seed-0:1"].status is AuditStatus.REMAPPED

    def j2(body):  # judge 2 again, failing only on step A1 (1 of 8 calls, under the 20% limit)
        text = body["messages"][1]["content"][1]["text"]
        if "Task: Task A" in text and "Step 2 of" in text:
            return Status(503, message="busy")
        return responder(1, {"n": 1})(body)

    with StubOpenAI(responder=j2) as second:
        report = run_audit(raw, configs([judges[0], second, judges[2]]), cache_dir=tmp_path / "cache2")
    assert report.kept == 1 and report.votes["judge2"]["no_vote:http 503"] == 1
    rec = read_audit(raw / "audit.jsonl")["ep-a.seed-0:1"]
    assert (rec.status, rec.element_id) == (AuditStatus.REMAPPED, "1")  # not disputed
    log = read_audit_verdicts(raw / "audit_verdicts.jsonl")["ep-a.seed-0:1"][1]
    assert log.error == "http 503" and "HTTP 503: busy" in log.reason


@pytest.mark.parametrize("failure, shown", [
    (Status(500), "HTTP 500"),
    (Malformed(), "not JSON"),
    (Slow(3.0), "did not answer within"),
])
def test_every_endpoint_failing_names_the_first_error(tmp_path, failure, shown):
    raw = tmp_path / "raw"
    corpus(raw)
    with StubOpenAI(responder=lambda b: failure) as a, StubOpenAI(responder=lambda b: failure) as b, \
            StubOpenAI(responder=lambda b: failure) as c:
        with pytest.raises(JudgeDownError, match=f"judge judge1 is down.*{shown}"):
            run_audit(raw, configs([a, b, c]), cache_dir=None, out_path=tmp_path / "c" / "c.jsonl")
        assert [s.count for s in (a, b, c)] == [1, 1, 1]
        # even when partial audits are allowed, a run without one vote writes nothing
        with pytest.raises(NoVotesError, match=f"no judge gave a vote on any of the 8 steps \\(first error: judge1: .*{shown}"):
            run_audit(raw, configs([a, b, c]), cache_dir=None, out_path=tmp_path / "c" / "c.jsonl", allow_partial=True)
    assert not (tmp_path / "c").exists()


def test_misconfiguration_stops(tmp_path):
    raw = tmp_path / "raw"
    corpus(raw)
    with StubOpenAI(responder=lambda b: CONF) as ok, StubOpenAI(responder=lambda b: Status(401, message="bad key")) as denied:
        with pytest.raises(LLMConfigError, match="judge3.*HTTP 401: bad key"):
            run_audit(raw, configs([ok, ok, denied]), cache_dir=None, out_path=tmp_path / "b.jsonl")
        assert denied.count == 1
    assert not (tmp_path / "b.jsonl").exists()


def test_missing_key_unreachable_endpoint_and_bad_image_are_found_before_any_request(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    corpus(raw)
    monkeypatch.delenv("MAG_NO_SUCH_KEY", raising=False)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with StubOpenAI(responder=lambda b: CONF) as a, StubOpenAI(responder=lambda b: CONF) as b:
        cfg = configs([a, b, a])
        cfg[2] = dataclasses.replace(cfg[2], base_url="https://judge.example.invalid/v1", api_key_env="MAG_NO_SUCH_KEY")
        with pytest.raises(LLMConfigError, match="judge judge3: environment variable MAG_NO_SUCH_KEY is not set"):
            run_audit(raw, cfg, cache_dir=None)
        cfg[2] = dataclasses.replace(cfg[2], base_url=f"http://127.0.0.1:{closed}/v1", api_key_env=None)
        with pytest.raises(PreflightError, match=f"judge judge3: cannot reach http://127.0.0.1:{closed}/v1"):
            run_audit(raw, cfg, cache_dir=None)
        png = raw / "ep-b.seed-0" / "step_001_som.png"
        png.write_bytes(png.read_bytes()[:200])  # truncated
        with pytest.raises(PreflightError, match=r"1 of 8 screenshots cannot be sent, e.g. .*step_001_som.png: not a readable"):
            run_audit(raw, configs([a, b, a]), cache_dir=None)
        assert (a.count, b.count) == (0, 0)
    assert not (raw / "audit.jsonl").exists()


def test_unknown_judge_key_is_named(tmp_path):
    p = tmp_path / "judges.yaml"
    p.write_text("judges:\n" + "".join(f"  - {{name: j{i}, base-url: 'http://x/v1', model: m}}\n" for i in range(3)))
    with pytest.raises(ValueError, match=r"judge 'j0': unknown key 'base-url' \(did you mean 'base_url'\?\); known keys: api_key_env"):
        load_judges(p)


def test_select_flagged_and_split(tmp_path):
    raw = tmp_path / "raw"
    corpus(raw)
    assert len(select_steps(raw)) == 8
    assert [i.step_id for i in select_steps(raw, "flagged")] == ["ep-a.seed-0:3", "ep-b.seed-0:2"]
    assert [i.step_id for i in select_steps(raw, "all", "test")] == [f"ep-b.seed-0:{k}" for k in range(4)]
    with pytest.raises(ValueError):
        select_steps(raw, "some")


def test_judge_prompt_lists_menu_and_action(tmp_path):
    a, _ = corpus(tmp_path / "raw")
    text = judge_user_text(a, a.steps[1])
    assert "Task: Task A" in text and "Step 2 of 4." in text
    assert '- Type \'ann\' into the Username field.' in text
    assert 'Recorded element: [2] textbox "Password" [10, 40, 150, 60]' in text
    assert text.count("\n[") == 5


def test_load_judges(tmp_path):
    p = tmp_path / "judges.yaml"
    p.write_text("judges:\n" + "".join(f"  - {{name: j{i}, base_url: 'http://127.0.0.1:1/v1', model: m}}\n" for i in range(3)))
    assert [j.name for j in load_judges(p)] == ["j0", "j1", "j2"]
    p.write_text("judges:\n  - {name: j0, base_url: 'http://x/v1', model: m}\n")
    with pytest.raises(ValueError, match="exactly 3 judges"):
        load_judges(p)
    p.write_text("judges:\n" + "".join(f"  - {{name: j, base_url: 'http://x/v1', model: m}}\n" for i in range(3)))
    with pytest.raises(ValueError, match="unique"):
        load_judges(p)
    p.write_text("judges:\n" + "".join(f"  - {{name: j{i}, base_url: 'http://x/v1', modl: m}}\n" for i in range(3)))
    with pytest.raises(ValueError, match="unknown key 'modl' \\(did you mean 'model'\\?\\)"):
        load_judges(p)
    p.write_text("judges:\n" + "".join(f"  - {{name: j{i}, base_url: 'http://x/v1'}}\n" for i in range(3)))
    with pytest.raises(ValueError, match="judge 'j0': 'model' is required"):
        load_judges(p)
    # a field of the wrong type is named, not a TypeError deep inside the client
    for bad, msg in (("timeout: x", "'timeout' must be a positive number"), ("api_key_env: 5", "'api_key_env' must be"),
                     ("max_retries: 1.5", "'max_retries' must be an integer"), ("params: x", "'params' must be a mapping"),
                     ("params: {model: y}", "'params' must be a mapping")):
        p.write_text("judges:\n" + "".join(f"  - {{name: j{i}, base_url: 'http://x/v1', model: m, {bad}}}\n" for i in range(3)))
        with pytest.raises(ValueError, match=msg):
            load_judges(p)


def test_judge_params_reach_every_request(tmp_path):
    """``params`` in the judges file (e.g. max_tokens) is sent with each request to that judge."""
    raw = tmp_path / "raw"
    hf.make_corpus(raw, 1)
    p = tmp_path / "judges.yaml"
    with StubOpenAI(responder=lambda body: CONF) as stub:
        p.write_text("judges:\n" + "".join(
            f"  - {{name: j{i}, base_url: '{stub.base_url}', model: m{i}, api_key_env: null, params: {{max_tokens: {50 + i}}}}}\n"
            for i in range(3)))
        report = run_audit(raw, load_judges(p), cache_dir=tmp_path / "cache")
        assert report.statuses[AuditStatus.CONFIRMED] == 4 and stub.count == 12
        assert sorted({(r["model"], r["max_tokens"], r["temperature"]) for r in stub.requests}) == [
            ("m0", 50, 0), ("m1", 51, 0), ("m2", 52, 0)]


def test_cli_audit_and_replay(tmp_path, judges, capsys, monkeypatch):
    raw = tmp_path / "raw"
    corpus(raw)
    spec = {"judges": [dict(name=c.name, base_url=c.base_url, model=c.model, api_key_env=None, timeout=2.0, max_retries=0)
                       for c in configs(judges)]}
    (tmp_path / "judges.json").write_text(json.dumps(spec))
    args = ["audit", "--raw", str(raw), "--judges", str(tmp_path / "judges.json"), "--cache-dir", str(tmp_path / "cache"),
            "--steps", "all"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "audited 8 steps: confirmed 1, remapped 2, unmappable 1, disputed 4" in out
    assert main(["audit", "--raw", str(raw), "--replay"]) == 0
    assert "audited 8 steps" in capsys.readouterr().out
    assert main(["audit", "--raw", str(raw)]) == 2
    assert "--judges FILE is required" in capsys.readouterr().err
    # a remote judge without its API key: one clear line, exit 2, nothing written
    spec["judges"][0].update(base_url="https://judge.example.invalid/v1", api_key_env="MAG_NO_SUCH_KEY")
    (tmp_path / "judges.json").write_text(json.dumps(spec))
    monkeypatch.delenv("MAG_NO_SUCH_KEY", raising=False)
    assert main([*args[:-2], "--cache-dir", str(tmp_path / "cache2"), "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "MAG_NO_SUCH_KEY is not set" in err and "Traceback" not in err
    assert not (tmp_path / "x.jsonl").exists()
    assert [s.count for s in judges] == [8, 8, 8]  # found before the other judges sent anything


@pytest.mark.slow
def test_round_trip_audit_build_load(tmp_path, judges):
    """raw episodes -> audit with stub judges -> build_dataset -> datasets.load_dataset."""
    import datasets

    from mag_dataset.builder import build_dataset

    raw = tmp_path / "raw"
    corpus(raw)
    run_audit(raw, configs(judges), cache_dir=tmp_path / "cache")
    out = build_dataset(raw, tmp_path / "ds", progress=False)
    seen = {}
    for view in ("som", "coord"):
        dd = datasets.load_dataset(str(out), view)
        assert sorted(dd) == ["test", "train"]
        rows = [r for split in ("train", "test") for r in dd[split]]
        assert len(rows) == 8
        for r in rows:
            seen.setdefault(r["step_id"], {})[view] = r
    for sid, (status, element) in EXPECTED.items():
        som, coord = seen[sid]["som"], seen[sid]["coord"]
        for r in (som, coord):
            assert r["audit_status"] == status and r["disputed"] == (status == "disputed")
        if status == "remapped":
            assert som["action"]["element_id"] == element
            assert som["original_element_id"] == {"ep-a.seed-0:1": "2", "ep-b.seed-0:2": "4"}[sid]
            box = next(c["bbox"] for c in som["candidates"] if c["id"] == element)
            assert list(coord["target_bbox"]) == list(box)
    assert seen["ep-a.seed-0:3"]["som"]["stale"] and seen["ep-b.seed-0:2"]["som"]["coordinate_restored"]
    assert sum(v["som"]["stale"] for v in seen.values()) == 1
    assert sum(v["coord"]["coordinate_restored"] for v in seen.values()) == 1


def test_chunks_give_the_same_outcome(tmp_path, judges):
    from mag_dataset.harness.audit import ask_judges

    raw = tmp_path / "raw"
    corpus(raw)
    items = select_steps(raw)
    pairs = [(c.name, c.client(None, backoff=0.01)) for c in configs(judges)]
    verdicts = ask_judges(items, pairs, chunk_size=3)  # chunks of 3, 3 and 2 steps
    assert [s.count for s in judges] == [8, 8, 8]
    got = {sid: merge_verdicts(v) for sid, v in verdicts.items()}
    assert {sid: (st.value, el) for sid, (st, el) in got.items()} == EXPECTED


@pytest.mark.slow
def test_round_trip_on_recorded_episodes(tmp_path):
    """Recorded MiniWoB++ episodes (the bundled corpus) -> audit with stub judges -> build -> load."""
    import shutil

    import datasets

    from mag_dataset.builder import build_dataset
    from mag_dataset.dataset import bundled_raw_dir
    from mag_dataset.raw import copy_episodes, iter_episode_dirs

    src = bundled_raw_dir()
    episodes = [p.name for p in iter_episode_dirs(src)]
    # one episode per task, the first six tasks, so the sample spans several sites
    picked, seen_tasks = [], set()
    for name in episodes:
        task = name.split(".seed-")[0]
        if task not in seen_tasks and len(picked) < 6:
            picked.append(name)
            seen_tasks.add(task)
    assert len(picked) == 6
    raw = tmp_path / "raw"
    copy_episodes(src, raw, picked)  # with the screenshots they share with other episodes
    shutil.copy(src / "corpus.json", raw / "corpus.json")
    items = select_steps(raw)
    assert len(items) >= 6
    # the k-th audited step gets outcome k % 4: confirmed, remapped, unmappable, disputed
    plan = {judge_user_text(it.episode, it.step): (k % 4, it) for k, it in enumerate(items)}

    def judge(j):
        def answer(body):
            k, it = plan[body["messages"][1]["content"][1]["text"]]
            other = next((c.id for c in it.step.candidates if c.id != it.step.action.element_id), None)
            if k == 1 and other is not None:
                return [remap(other), remap(other), CONF][j]
            if k == 2:
                return [UNM, UNM, CONF][j]
            if k == 3:
                return [CONF, UNM, "not json"][j]
            return CONF
        return answer

    stubs = [StubOpenAI(responder=judge(j)).start() for j in range(3)]
    try:
        report = run_audit(raw, configs(stubs), cache_dir=tmp_path / "cache")
    finally:
        for s in stubs:
            s.stop()
    recs = read_audit(raw / "audit.jsonl")
    assert report.steps == len(items) == len(recs)
    out = build_dataset(raw, tmp_path / "ds", progress=False)
    for view in ("som", "coord"):
        dd = datasets.load_dataset(str(out), view)
        rows = {r["step_id"]: r for split in dd for r in dd[split]}
        assert set(recs) <= set(rows)
        for sid, rec in recs.items():
            assert rows[sid]["audit_status"] == rec.status.value
            assert rows[sid]["disputed"] == (rec.status is AuditStatus.DISPUTED)
            if rec.status is AuditStatus.REMAPPED and view == "som":  # the coord view carries no element ids
                assert rows[sid]["original_element_id"] == rec.original_element_id
                assert rows[sid]["action"]["element_id"] == rec.element_id
        counts = {s: sum(r["audit_status"] == s for r in rows.values()) for s in ("confirmed", "remapped", "unmappable", "disputed")}
        assert all(n > 0 for n in counts.values()), counts


@pytest.mark.parametrize("line", ['{"judge": "a", "vote": "confirm"}', "[1, 2]", "not json", '{"step_id": "s:0", "judge": "a", "vote": "maybe"}'])
def test_a_bad_line_of_a_verdict_log_or_drafts_file_is_named(tmp_path, line):
    from mag_dataset.harness.annotate import read_drafts

    good_verdict = json.dumps({"step_id": "s:0", "judge": "a", "vote": "confirm"})
    (tmp_path / "v.jsonl").write_text(f"{good_verdict}\n\n{line}\n")
    with pytest.raises(ValueError, match=r"v\.jsonl:3: bad verdict entry: "):
        read_audit_verdicts(tmp_path / "v.jsonl")
    good_draft = json.dumps({"step_id": "s:0", "draft": "Click OK.", "model": "m"})
    (tmp_path / "d.jsonl").write_text(f"{good_draft}\n{line.replace('vote', 'prompt_version')}\n")
    with pytest.raises(ValueError, match=r"d\.jsonl:2: bad draft entry: "):
        read_drafts(tmp_path / "d.jsonl")
    (tmp_path / "d.jsonl").write_text(f"{good_draft}\n")
    assert read_drafts(tmp_path / "d.jsonl")["s:0"].draft == "Click OK."
    (tmp_path / "v.jsonl").write_text(f"{good_verdict}\n")
    assert read_audit_verdicts(tmp_path / "v.jsonl")["s:0"][0].vote is Vote.CONFIRM


def test_one_name_per_verdict_meaning_and_one_home_per_name():
    from mag_dataset import verdicts
    from mag_dataset.harness import annotate, annotation_store, audit, audit_rules, judges, preflight
    from mag_dataset.llm_client import FATAL_STATUSES

    # a label-audit verdict and a usefulness verdict are two types with two names
    assert AuditVerdict is audit_rules.AuditVerdict and verdicts.UsefulnessVerdict is not AuditVerdict
    assert {AuditVerdict.__name__, verdicts.UsefulnessVerdict.__name__} == {"AuditVerdict", "UsefulnessVerdict"}
    # the former alias names are gone (issue 28: compatibility only where the README documents a name)
    for module, name in ((audit, "Verdict"), (audit, "read_verdicts"), (audit_rules, "Verdict"),
                         (verdicts, "Verdict"), (verdicts, "read_verdicts")):
        assert not hasattr(module, name), f"{module.__name__}.{name}"
    # a name is imported from the module that defines it, not from a runner that happens to use it
    assert not hasattr(audit, "merge_verdicts") and not hasattr(audit, "load_judges")
    assert audit_rules.merge_verdicts.__module__ == audit_rules.__name__ and judges.load_judges
    assert not hasattr(annotate, "decision_counts") and annotation_store.decision_counts
    assert not hasattr(annotation_store, "cohen_kappa")  # the agreement rules are mag_dataset.annotation_rules'
    assert preflight.FATAL_STATUSES is FATAL_STATUSES == frozenset({401, 403, 404})


def test_the_audit_rules_module_is_pure():
    """The rules do no I/O: no file, network, clock, randomness, thread or client module is imported."""
    import ast
    from pathlib import Path

    from mag_dataset.harness import audit_rules

    tree = ast.parse(Path(audit_rules.__file__).read_text("utf-8"))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported, "no import found: the check would be vacuous"
    forbidden = {"os", "io", "socket", "sqlite3", "threading", "time", "random", "urllib", "shutil", "subprocess",
                 "mag_dataset.llm_client", "mag_dataset.fileio", "mag_dataset.harness.preflight"}
    assert not imported & forbidden, imported & forbidden
    assert not {m for m in imported if m.startswith("mag_dataset.") and m != "mag_dataset.schema"} - {"mag_dataset.raw"}
    assert "open(" not in Path(audit_rules.__file__).read_text("utf-8")


def test_the_request_helper_probes_alone_sends_in_chunks_and_stops_on_a_misconfigured_endpoint():
    """harness.llm_batch.ask_batch, the one request loop of draft-guides and the audit."""
    from mag_dataset.harness.llm_batch import ask_batch, som_messages
    from mag_dataset.llm_client import ChatClient, LLMError

    png = hf.draw(hf.FORM)
    built: list[int] = []

    def messages(k):
        built.append(k)
        return som_messages("system", png, f"request {k}")

    def echo(body):
        return "answer to " + body["messages"][1]["content"][1]["text"]

    def denied_after(n):
        def answer(body):
            k = int(body["messages"][1]["content"][1]["text"].split()[-1])
            return Status(401, message="bad key") if k >= n else echo(body)
        return answer

    with StubOpenAI(responder=echo) as a, StubOpenAI(responder=lambda b: Status(500, message="down")) as b:
        ends = []
        pairs = [("a", ChatClient(a.base_url, "m", api_key_env=None, max_retries=0)),
                 ("b", ChatClient(b.base_url, "m", api_key_env=None, max_retries=0))]
        got = ask_batch(pairs, 5, messages, chunk_size=2, progress=ends.append)
        assert ends == [2, 4, 5] and a.count == b.count == 5  # the probe's request is not sent twice
        assert got["a"] == [f"answer to request {k}" for k in range(5)]
        assert all(isinstance(x, LLMError) for x in got["b"])
        with pytest.raises(JudgeDownError, match="b is down"):  # a failed probe stops the batch before any chunk
            ask_batch(pairs, 5, messages, down=lambda name, e: JudgeDownError(f"{name} is down ({e})"))
        assert b.count == 6
    built.clear()
    with StubOpenAI(responder=denied_after(3)) as c:
        pairs = [("c", ChatClient(c.base_url, "m", api_key_env=None, max_retries=0))]
        with pytest.raises(LLMConfigError, match="^judge c: .*401"):
            ask_batch(pairs, 9, messages, chunk_size=2, who=lambda name: f"judge {name}")
        assert c.count == 4  # stopped at the end of the chunk where the 401 showed, not after the whole batch
    assert built == [0, 0, 1, 2, 3]  # built lazily: the probe's, then chunk by chunk; 4..8 never read
