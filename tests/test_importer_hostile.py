"""``mag import-browsergym`` on crafted experiment folders (issue 17): every attack is one
skipped folder with its specific reason, never a crash, a hang or a killed batch, and the
good folder next to it still imports.

Each attack is generated here (hand-written pickle opcodes, crafted PNG headers, symlinks),
never a committed blob. The crafted pickles are only ever read by the importer's child
process, under its memory and time limits.
"""

from __future__ import annotations

import gzip
import json
import pickle
import struct
import subprocess
import sys
import types
import zlib
from pathlib import Path

import numpy as np
import pytest

from mag_dataset.harness.browsergym_import import import_experiments, ImportErrorForEpisode
from mag_dataset.harness.browsergym_import.limits import check_dom
from mag_dataset.harness.browsergym_import.unpickle import ChatMessage, UnsafePickle, load_pickle
from mag_dataset.isolation import Limits
from test_importer import FakeBrowserGym, dom_snapshot, write_experiment, BIDS

ROOT = Path(__file__).resolve().parents[1]
LIMITS = Limits(memory_mb=1024, seconds=120)
GOOD = "miniwob.login-user.seed-1"


class Reduce:
    """Pickles as ``fn(*args)`` followed by BUILD ``state`` (what a crafted file can say)."""

    def __init__(self, fn, args, state=None):
        self.fn, self.args, self.state = fn, args, state

    def __reduce__(self):
        return (self.fn, self.args) if self.state is None else (self.fn, self.args, self.state)


def _stepinfo_bytes(fb, obs_patch=None, action="click('6')", **fields):
    """A pickled StepInfo of the standard observation with fields replaced."""
    from test_importer import observation

    obs = observation()
    obs.pop("screenshot")
    obs.update(obs_patch or {})
    info = fb.loop.StepInfo(step=0, obs=obs, action=action, **fields)
    return pickle.dumps(info, protocol=4)


def _with_screenshot(obj) -> dict:
    return {"screenshot": obj}


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header declares ``width`` x ``height`` (valid CRCs), with almost no data."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")


# Each attack: (name, how to plant it in a good experiment folder, expected reason substring).
# `plant(fb, exp, tmp)` overwrites a file of the folder.


def _step0(data: bytes, compress=True):
    def plant(fb, exp, tmp):
        (exp / "step_0.pkl.gz").write_bytes(gzip.compress(data) if compress else data)
    return plant


def _step0_obj(make):
    def plant(fb, exp, tmp):
        (exp / "step_0.pkl.gz").write_bytes(gzip.compress(make(fb)))
    return plant


def _dtype_state_attack(fb):
    # numpy.dtype('V8') whose state claims a plain dtype while its field is an object:
    # numpy would then read 8 attacker bytes as a pointer (the signal-11 crash of the issue)
    from numpy._core.numeric import _frombuffer

    bad = Reduce(np.dtype, ("V8", False, True), (3, "|", None, ("a",), {"a": (np.dtype("O"), 0)}, 8, 1, 0))
    return _stepinfo_bytes(fb, _with_screenshot(Reduce(_frombuffer, (b"\x00" * 8, bad, (1,), "C"))))


def _dtype_flags_attack(fb):
    # a plain dtype code with a crafted state (object flags set)
    bad = Reduce(np.dtype, ("u1", False, True), (3, "|", None, None, None, -1, -1, 63))
    from numpy._core.multiarray import _reconstruct

    arr = Reduce(_reconstruct, (np.ndarray, (0,), b"b"), (1, (2, 2, 3), bad, False, b"\x00" * 12))
    return _stepinfo_bytes(fb, _with_screenshot(arr))


def _declared_array_attack(fb):
    from numpy._core.multiarray import _reconstruct

    arr = Reduce(_reconstruct, (np.ndarray, (0,), b"b"), (1, (100_000, 100_000, 1), np.dtype("u1"), False, b"abc"))
    return _stepinfo_bytes(fb, _with_screenshot(arr))


def _stride0_attack(fb):
    arr = Reduce(np.ndarray, ((60_000, 60_000, 3), np.dtype("u1"), b"abc", 0, (0, 0, 0)))
    return _stepinfo_bytes(fb, _with_screenshot(arr))


def _laughs():
    lol = ["lol"] * 10
    for _ in range(30):
        lol = [lol] * 10  # 10**31 leaves when printed, a few hundred bytes pickled
    return lol


def _billion_laughs(fb):
    return _stepinfo_bytes(fb, action=_laughs())


def _gzip_bomb(fb, exp, tmp):
    member = gzip.compress(b"\x00" * (16 << 20), compresslevel=9)  # 16 MiB of zeros in ~16 KB
    (exp / "step_0.pkl.gz").write_bytes(member * 20)  # 320 MiB once decompressed: over the cap


def _dom_patch(**changes):
    def make(fb):
        dom = dom_snapshot(BIDS)
        nodes = dom["documents"][0]["nodes"]
        for i, p in changes.items():
            nodes["parentIndex"][int(i[1:])] = p
        return _stepinfo_bytes(fb, {"dom_object": dom})
    return make


def _deep_dom(levels: int) -> dict:
    """html > body > div > ... ``levels`` nested divs, the innermost holding the input and button."""
    dom = dom_snapshot(BIDS)
    nodes = dom["documents"][0]["nodes"]
    base = len(nodes["parentIndex"])
    nodes["parentIndex"] += [1] + list(range(base, base + levels - 1))  # each new div inside the previous one
    nodes["nodeType"] += [1] * levels
    nodes["nodeName"] += [nodes["nodeName"][2]] * levels
    nodes["nodeValue"] += [-1] * levels
    nodes["attributes"] += [[] for _ in range(levels)]
    return dom


def _duplicate_bid(fb):
    dom = dom_snapshot(BIDS)
    nodes, strings = dom["documents"][0]["nodes"], dom["strings"]
    # node 5 (the input) gets the bid of node 3 (div#query): the element tree would be cyclic
    nodes["attributes"][5] = [strings.index("bid"), strings.index(BIDS["query"])]
    return _stepinfo_bytes(fb, {"dom_object": dom})


def _big_png(w, h):
    def plant(fb, exp, tmp):
        (exp / "screenshot_step_0.png").write_bytes(_png_header(w, h))
    return plant


def _symlink_screenshot(fb, exp, tmp):
    outside = tmp / "outside-secret.png"
    from PIL import Image

    Image.new("RGB", (320, 300), "red").save(outside)
    (exp / "screenshot_step_0.png").unlink()
    (exp / "screenshot_step_0.png").symlink_to(outside)


def _nan_reward(fb, exp, tmp):
    summary = json.loads((exp / "summary_info.json").read_text())
    summary["cum_reward"] = float("nan")
    (exp / "summary_info.json").write_text(json.dumps(summary))  # Python writes NaN, and reads it back


def _step_x(fb, exp, tmp):
    (exp / "step_x.pkl.gz").write_bytes((exp / "step_0.pkl.gz").read_bytes())


ATTACKS = {
    "dtype state with object field": (_step0_obj(_dtype_state_attack), "step_0.pkl.gz is refused: the pickle asks for numpy dtype 'V8'"),
    "dtype state with object flags": (_step0_obj(_dtype_flags_attack), "does not match a plain dtype"),
    "numpy.f2py.__main__": (_step0(b"cnumpy.f2py.__main__\ndtype\n(S'u1'\ntR."),
                            "the pickle names numpy.f2py.__main__.dtype, which is not on the allow-list"),
    "bytearray(8e9)": (_step0(b"cbuiltins\nbytearray\n(I8000000000\ntR."),
                       "the pickle calls bytearray(8000000000): only bytes are accepted"),
    "list(range(1e9))": (_step0(b"cbuiltins\nlist\n(cbuiltins\nrange\n(I1000000000\ntRtR."),
                         "the pickle names builtins.range, which is not on the allow-list"),
    "gzip bomb": (_gzip_bomb, f"step_0.pkl.gz decompresses to over the cap of {256 << 20:,} bytes"),
    "10 GiB declared array": (_step0_obj(_declared_array_attack),
                              "declares a numpy array of shape (100000, 100000, 1) (10,000,000,000 bytes), over the cap"),
    "stride-0 array": (_step0_obj(_stride0_attack), "calls numpy.ndarray(...) directly"),
    "billion laughs action": (_step0_obj(_billion_laughs), "step 0: the action is a list, not a string"),
    "memo index bomb": (_step0(b"(lr\xff\xff\xff\x7f."),  # LONG_BINPUT 2**31-1: the memo grows to 16 GiB
                        "refused: converting it needs more than the memory limit of 1,024 MiB"),
    "node its own parent": (_step0_obj(_dom_patch(n3=3)), "node 3 is its own ancestor (a parentIndex cycle)"),
    "cyclic children": (_step0_obj(_dom_patch(n2=3, n3=2)), "is its own ancestor (a parentIndex cycle)"),
    "DOM 1,001 levels deep": (_step0_obj(lambda fb: _stepinfo_bytes(fb, {"dom_object": _deep_dom(1_000)})),
                              "the DOM nests 1001 levels deep, over the limit of 1000"),
    "one bid on two nodes": (_step0_obj(_duplicate_bid), "gives bid '3' to two nodes"),
    "billion laughs AX name": (_step0_obj(lambda fb: _stepinfo_bytes(fb, {"axtree_object": {"nodes": [
        {"browsergym_id": "6", "role": {"value": "button"}, "name": {"value": _laughs()}}]}})),
        "step 0: axtree_object node 0 name value is a list, not text"),
    "axtree_object a list": (_step0_obj(lambda fb: _stepinfo_bytes(fb, {"axtree_object": [1, 2]})),
                             "step 0: axtree_object is a list, not an object"),
    "goal_object an int": (_step0_obj(lambda fb: _stepinfo_bytes(fb, {"goal_object": 7})),
                           "step 0: goal_object is an int, not a list of message parts"),
    "step_x.pkl.gz": (_step_x, "unexpected step file 'step_x.pkl.gz'"),
    "20000x20000 PNG": (_big_png(20_000, 20_000), "screenshot_step_0.png cannot be read: DecompressionBombError"),
    "6000x6000 PNG": (_big_png(6_000, 6_000), "screenshot_step_0.png is 6000x6000 pixels, over the cap of 25,000,000 pixels"),
    "symlinked screenshot": (_symlink_screenshot, "screenshot_step_0.png is a symlink to a file outside the experiment folder"),
    "NaN cum_reward": (_nan_reward, "unsuccessful: cum_reward nan is not a finite number"),
}


def _plant(fb, root: Path, tmp: Path, name: str, seed: int) -> Path:
    exp = write_experiment(fb, root, "miniwob.login-user", seed, ["click('6')"],
                           name=f"2026-11-29_10-00-00_attack-{seed}_on_miniwob.login-user_{seed}")
    ATTACKS[name][0](fb, exp, tmp)
    return exp


def test_every_attack_of_the_issue_is_covered():
    assert len(ATTACKS) == 22


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_is_skipped_with_its_reason_and_the_good_folder_imports(name, tmp_path):
    root = tmp_path / "study"
    with FakeBrowserGym() as fb:
        write_experiment(fb, root, "miniwob.login-user", 1, ["click('6')"])
        bad = _plant(fb, root, tmp_path, name, 2)
    report = import_experiments([root], tmp_path / "raw", limits=LIMITS)
    assert report.imported == [GOOD], report.skipped
    reasons = dict(report.skipped)
    assert list(reasons) == [bad.name]
    assert ATTACKS[name][1] in reasons[bad.name], reasons[bad.name]
    assert not (tmp_path / "raw" / "miniwob.login-user.seed-2").exists()


def test_a_batch_of_every_attack_imports_the_good_one_and_prints_the_summary(tmp_path):
    """The CLI over all attacks and one good folder: exit 0, a summary, no signal, no time-out."""
    root = tmp_path / "study"
    with FakeBrowserGym() as fb:
        bad = {name: _plant(fb, root, tmp_path, name, 10 + i) for i, name in enumerate(ATTACKS)}
        write_experiment(fb, root, "miniwob.login-user", 1, ["click('6')"])
    proc = subprocess.run(
        [sys.executable, "-m", "mag_dataset.cli", "import-browsergym", str(root), "--out", str(tmp_path / "raw"),
         "--memory-limit", "1024", "--time-limit", "120"],
        capture_output=True, text=True, cwd=ROOT, timeout=1200,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    n = len(ATTACKS) + 1
    assert f"{n} experiments: imported 1 episodes (1 steps), skipped {n - 1}" in proc.stdout
    for name, exp in bad.items():
        line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(f"  skipped {exp.name}:"))
        assert ATTACKS[name][1] in line, (name, line)
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == sorted([GOOD, "corpus.json"])  # + the stage record
    assert "pwned" not in proc.stdout + proc.stderr and "usage: f2py" not in proc.stdout + proc.stderr


def test_nothing_importable_exits_1_with_the_summary(tmp_path):
    root = tmp_path / "study"
    with FakeBrowserGym() as fb:
        _plant(fb, root, tmp_path, "NaN cum_reward", 3)
    proc = subprocess.run([sys.executable, "-m", "mag_dataset.cli", "import-browsergym", str(root), "--out",
                           str(tmp_path / "raw")], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "1 experiments: imported 0 episodes (0 steps), skipped 1" in proc.stdout
    assert "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------- in-process units


def test_unpickler_allows_exact_pairs_only():
    for blob, message in ((b"cnumpy.f2py.__main__\ndtype\n(S'u1'\ntR.", "numpy.f2py.__main__.dtype"),
                          (b"cnumpy\nfrombuffer\n.", "numpy.frombuffer"),
                          (b"cbuiltins\neval\n.", "builtins.eval"),
                          (b"cnumpy.lib.stride_tricks\nas_strided\n.", "as_strided")):
        with pytest.raises(UnsafePickle, match=message):
            load_pickle(blob)
    # real arrays, scalars and dtypes of every pickle protocol still round-trip
    values = {"shot": np.arange(24, dtype=np.uint8).reshape(2, 4, 3), "f": np.float64(1.5), "b": np.bool_(True),
              "big": np.zeros(3, ">f8"), "s": np.array(["ab", "c"]), "i": np.asarray([0])}
    for proto in (2, 4, 5):
        blob = pickle.dumps(values, protocol=proto)
        got, want = load_pickle(blob), pickle.loads(blob)  # numpy's own result (it may swap to native order)
        for k, v in values.items():
            a, b = np.asarray(got[k]), np.asarray(want[k])
            assert np.array_equal(a, v) and a.dtype == b.dtype and a.shape == b.shape, (proto, k)


def test_a_dom_at_the_depth_limit_imports(tmp_path):
    """1,000 levels (the cap) pass the check and the DOM reader's recursion in the child."""
    root = tmp_path / "study"
    with FakeBrowserGym() as fb:
        exp = write_experiment(fb, root, "miniwob.login-user", 1, ["click('6')"])
        (exp / "step_0.pkl.gz").write_bytes(gzip.compress(_stepinfo_bytes(fb, {"dom_object": _deep_dom(998)})))
    report = import_experiments([root], tmp_path / "raw", limits=LIMITS)
    assert report.imported == [GOOD], report.skipped


def test_dom_check_is_iterative_and_finds_cycles():
    dom = dom_snapshot(BIDS)
    check_dom(dom, "step 0")
    deep = {"strings": [], "documents": [{"nodes": {
        "parentIndex": list(range(-1, 5000)), "nodeType": [1] * 5001, "nodeName": [-1] * 5001,
        "attributes": [[] for _ in range(5001)]}}]}
    with pytest.raises(ImportErrorForEpisode, match="nests 1001 levels deep, over the limit of 1000"):
        check_dom(deep, "step 0")
    ring = {"strings": [], "documents": [{"nodes": {
        "parentIndex": [1, 2, 0], "nodeType": [1] * 3, "nodeName": [-1] * 3, "attributes": [[], [], []]}}]}
    with pytest.raises(ImportErrorForEpisode, match="node 0 is its own ancestor"):
        check_dom(ring, "step 0")


# ----------------------------------------------------------------------------- AgentLab's classes

AGENTLAB_LLM_SOURCE = '''
class BaseMessage(dict):  # as agentlab.llm.llm_utils defines them
    def __init__(self, role, content):
        self["role"] = role
        self["content"] = content

class SystemMessage(BaseMessage):
    def __init__(self, content):
        super().__init__("system", content)

class HumanMessage(BaseMessage):
    def __init__(self, content):
        super().__init__("user", content)

class AIMessage(BaseMessage):
    def __init__(self, content):
        super().__init__("assistant", content)

class Discussion:
    def __init__(self, messages=None):
        self.messages = messages or []

class ToolMessage(BaseMessage):  # not on the allow-list
    def __init__(self, content):
        super().__init__("tool", content)

def image_to_jpg_base64_url(image):
    return "pwned"
'''

CHAT_API_SOURCE = '''
class Message(dict):  # a dict subclass of another AgentLab module
    pass
'''


class FakeAgentLab:
    """``agentlab.llm.llm_utils`` and ``agentlab.llm.chat_api`` stand-ins under their real names,
    removed on exit (the modules already present, such as FakeBrowserGym's ``agentlab``, stay)."""

    def __enter__(self):
        self.added = [n for n in ("agentlab", "agentlab.llm") if n not in sys.modules]
        for name in self.added:
            sys.modules[name] = types.ModuleType(name)
        for name, src in (("agentlab.llm.llm_utils", AGENTLAB_LLM_SOURCE), ("agentlab.llm.chat_api", CHAT_API_SOURCE)):
            mod = types.ModuleType(name)
            sys.modules[name] = mod
            exec(src, mod.__dict__)
            self.added.append(name)
        self.llm = sys.modules["agentlab.llm.llm_utils"]
        self.chat_api = sys.modules["agentlab.llm.chat_api"]
        return self

    def __exit__(self, *exc):
        for name in self.added:
            sys.modules.pop(name, None)


def test_agentlab_chat_messages_load_as_dicts_in_protocols_2_to_5():
    with FakeAgentLab() as al:
        ai = al.llm.AIMessage("click('18')")
        ai.note = "kept apart"  # an instance attribute: pickle's BUILD
        ai_shadow = al.llm.HumanMessage("hi")
        ai_shadow.get = "not a method"
        talk = al.llm.Discussion([al.llm.SystemMessage("be brief"), al.llm.HumanMessage([{"type": "text", "text": "go"}]),
                                  ai, ai_shadow])
        # protocols 0 and 1 name builtins as __builtin__, off the allow-list (refused before this change too)
        blobs = {proto: pickle.dumps({"chat": talk}, protocol=proto) for proto in range(2, pickle.HIGHEST_PROTOCOL + 1)}
    for proto, blob in blobs.items():
        got = load_pickle(blob)["chat"]
        assert got._class == "agentlab.llm.llm_utils.Discussion", proto
        assert [dict(m) for m in got.messages] == [
            {"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": "click('18')"}, {"role": "user", "content": "hi"}], proto
        assert all(isinstance(m, ChatMessage) for m in got.messages), proto
        assert got.messages[2]._attrs == {"note": "kept apart"}, proto
        assert got.messages[3].get("role") == "user", proto  # an attribute named like a dict method shadows nothing


def test_agentlab_names_off_the_allow_list_are_refused():
    with FakeAgentLab() as al:
        tool = pickle.dumps(al.llm.ToolMessage("x"), protocol=4)
        helper = pickle.dumps(Reduce(al.llm.image_to_jpg_base64_url, ("img",)), protocol=4)
        called = pickle.dumps(Reduce(al.llm.SystemMessage, ("x",)), protocol=4)
        other = al.chat_api.Message()
        other["role"] = "user"
        other_blob = pickle.dumps(other, protocol=4)
    with pytest.raises(UnsafePickle, match=r"names agentlab\.llm\.llm_utils\.ToolMessage, which is not on the allow-list"):
        load_pickle(tool)
    with pytest.raises(UnsafePickle, match=r"names agentlab\.llm\.llm_utils\.image_to_jpg_base64_url, which is not on"):
        load_pickle(helper)
    with pytest.raises(UnsafePickle, match=r"calls agentlab\.llm\.llm_utils\.SystemMessage\(\.\.\.\); a chat message is rebuilt"):
        load_pickle(called)
    with pytest.raises(UnsafePickle, match=r"stores items in agentlab\.llm\.chat_api\.Message, a dict class that is not on"):
        load_pickle(other_blob)
    # a crafted BUILD state that is not a dict of attributes
    with pytest.raises(UnsafePickle, match=r"gives agentlab\.llm\.llm_utils\.SystemMessage the state a list"):
        load_pickle(b"\x80\x04\x8c\x16agentlab.llm.llm_utils\x8c\rSystemMessage\x93)\x81]\x94b.")


def test_a_step_holding_an_agentlab_dict_off_the_allow_list_skips_its_folder(tmp_path):
    root = tmp_path / "study"
    with FakeBrowserGym() as fb, FakeAgentLab() as al:
        write_experiment(fb, root, "miniwob.login-user", 1, ["click('6')"])
        bad = write_experiment(fb, root, "miniwob.login-user", 2, ["click('6')"])
        message = al.chat_api.Message()
        message["content"] = "hello"
        (bad / "step_0.pkl.gz").write_bytes(gzip.compress(_stepinfo_bytes(fb, agent_info={"chat_messages": [message]})))
    report = import_experiments([root], tmp_path / "raw", limits=LIMITS)
    assert report.imported == [GOOD], report.skipped
    assert dict(report.skipped) == {bad.name: "step_0.pkl.gz is refused: the pickle stores items in "
                                              "agentlab.llm.chat_api.Message, a dict class that is not on the allow-list"}
