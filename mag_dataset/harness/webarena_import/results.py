"""What WebArena's ``run.py`` wrote into a result folder, read without a browser.

* ``render_<task_id>.html`` (its ``RenderHelper``): the config block (``key: value`` lines,
  values as Python prints them), then per step a ``<h2>New Page</h2>`` block: the URL, the
  accessibility-tree observation (``[id] role 'name' properties`` lines, not escaped), the
  screenshot (base64 PNG, with ``--render_screenshot``), the previous action, the raw
  prediction, the action object (``repr`` of WebArena's ``Action`` dict) and the parsed action
  (``action2str``). Nothing in it is escaped, so it is cut at its fixed markers, the last one
  of each kind, never parsed as HTML. :func:`read_render` gives :class:`RenderStep` entries.
* the logs: ``[Result] (PASS|FAIL) <config file>`` lines (:func:`read_verdicts`) in any
  ``*.log`` file under the folder, ``merge_log.txt`` and the files ``log_files.txt`` names.
* the config files (``<task_id>.json``: ``intent``, ``intent_template``,
  ``intent_template_id``, ``instantiation_dict``, ``sites``, ``start_url``).

Result folders are untrusted: files are read under :data:`MAX_RENDER_BYTES`, screenshots
are decoded by the importer under its pixel cap.
"""

from __future__ import annotations

import ast
import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The largest render file read (WebArena's are a few MB: one PNG per step).
MAX_RENDER_BYTES = 512 * 1024 * 1024
#: The largest log or config file read.
MAX_TEXT_BYTES = 64 * 1024 * 1024

#: The config keys the importer reads (those of WebArena's ``test.raw.json`` it uses).
CONFIG_FIELDS = ("task_id", "intent", "intent_template", "intent_template_id", "instantiation_dict", "sites",
                 "start_url")


class ResultReadError(ValueError):
    """A file of the result folder cannot be read; the message says why."""


@dataclass(frozen=True)
class RenderStep:
    """One ``<h2>New Page</h2>`` block of a render file.

    Attributes:
        index: its place in the file (0, 1, ...).
        url: the page's URL.
        observation: the accessibility tree (the tab line first).
        screenshot: the PNG bytes, or None when the run did not render screenshots.
        raw_prediction: the model's output.
        action: the action object as a dict (``action_type`` as WebArena's enum name, e.g.
            ``"CLICK"``; ``coords`` a list; ``text`` the key ids).
        parsed_action: ``action2str``'s text (``click [12] where [12] is [12] link 'Home'``).
    """

    index: int
    url: str
    observation: str
    screenshot: bytes | None
    raw_prediction: str
    action: dict[str, Any]
    parsed_action: str

    def node_line(self, element_id: str) -> str | None:
        """The observation's line of node ``[element_id]`` (indent and id stripped), or None."""
        m = re.search(rf"^\s*\[{re.escape(element_id)}\] (.*)$", self.observation, re.MULTILINE)
        return m.group(1).strip() if m else None


@dataclass
class RenderFile:
    """A render file: its config block (as printed) and its steps."""

    config: dict[str, Any] = field(default_factory=dict)
    steps: list[RenderStep] = field(default_factory=list)


def _read_text(path: Path, cap: int) -> str:
    try:
        size = path.stat().st_size
        if size > cap:
            raise ResultReadError(f"{path.name} is {size:,} bytes, over the cap of {cap:,}")
        return path.read_text("utf-8", errors="replace")
    except OSError as e:
        raise ResultReadError(f"{path.name} cannot be read: {e}") from None


def _between(text: str, start: str, end: str, last: bool = False) -> str | None:
    i = text.find(start)
    if i < 0:
        return None
    i += len(start)
    j = text.rfind(end) if last else text.find(end, i)
    return text[i:j] if j >= i else None


def _config_block(head: str) -> dict[str, Any]:
    """RenderHelper's ``key: value`` lines: values as Python printed them (``str(v)``)."""
    body = _between(head, "<pre>", "</pre>") or ""
    config: dict[str, Any] = {}
    for line in body.splitlines():
        key, sep, value = line.partition(": ")
        if not sep or not re.fullmatch(r"[a-z_]+", key):
            continue
        try:
            config[key] = ast.literal_eval(value) if value[:1] in "[{" or value in ("True", "False", "None") \
                or re.fullmatch(r"-?\d+", value) else value
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            config[key] = value
    return config


_ENUM = re.compile(r"<ActionTypes\.([A-Z_]+): \d+>")
_ARRAY = re.compile(r"array\((\[[^\]]*\])(?:, dtype=[a-z0-9]+)?\)")


def parse_action_object(text: str) -> dict[str, Any]:
    """The ``repr`` of WebArena's ``Action`` dict as a dict (the enum as its name, arrays as lists).

    Raises:
        ResultReadError: it is not such a repr.
    """
    literal = _ARRAY.sub(r"\1", _ENUM.sub(lambda m: repr(m.group(1)), text.strip()))
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ResultReadError(f"the action object {text[:120]!r} is not a WebArena Action") from None
    if not isinstance(value, dict) or not isinstance(value.get("action_type"), str):
        raise ResultReadError(f"the action object {text[:120]!r} has no action_type")
    return value


#: Where a step block starts: its heading after the config block or after the previous block's
#: action (the observation is not escaped, and a page may well say "New Page").
_BLOCK = re.compile(r"(?:(?<=</pre>\n)|(?<=</pre></div></div>\n))\s*<h2>New Page</h2>\n(?=<h3 class='url'>)")


def read_render(path: Path) -> RenderFile:
    """Parse a ``render_<task_id>.html`` file.

    Raises:
        ResultReadError: the file cannot be read, or a step block lacks its action.
    """
    text = _read_text(path, MAX_RENDER_BYTES)
    head, *blocks = _BLOCK.split(text)
    render = RenderFile(config=_config_block(head))
    for k, block in enumerate(blocks):
        url = (_between(block, "URL: ", "</a></h3>") or "").strip()
        state_end = block.rfind("\n<div class='prev_action'")
        state = block[:state_end] if state_end >= 0 else block
        observation = _between(state, "<div class='state_obv'><pre>", "</pre><div>", last=True) or ""
        shot = None
        img = re.search(r"<img src='data:image/png;base64,([A-Za-z0-9+/=\s]+)'", state[state.rfind("</pre><div>"):])
        if img:
            try:
                shot = base64.b64decode(img.group(1), validate=False)
            except (binascii.Error, ValueError):
                shot = None
        predict = block[block.rfind("<div class='predict_action'>"):]
        raw = _between(predict, "<div class='raw_parsed_prediction' style='background-color:grey'><pre>",
                       "</pre></div><div class='action_object'")
        obj = _between(predict, "<div class='action_object' style='background-color:grey'><pre>",
                       "</pre></div><div class='parsed_action'")
        parsed = _between(predict, "<div class='parsed_action' style='background-color:yellow'><pre>",
                          "</pre></div></div>", last=True)
        if obj is None:
            raise ResultReadError(f"{path.name}: step {k} has no action object (not a RenderHelper file with the "
                                  "id_accessibility_tree action set)")
        render.steps.append(RenderStep(k, url, observation, shot, raw or "", parse_action_object(obj), parsed or ""))
    return render


# ----------------------------------------------------------------------------- logs and configs
_RESULT = re.compile(r"\[Result\] \((PASS|FAIL)\) (\S[^\n]*)")


def read_verdicts(result_dir: Path) -> dict[str, tuple[bool, str]]:
    """Every ``[Result] (PASS|FAIL) <config file>`` line of the run's logs.

    Read from ``merge_log.txt``, every ``*.log`` under ``result_dir`` and the files
    ``log_files.txt`` names (run.py writes its log beside the working folder and names it
    there). A config logged twice keeps its last verdict.

    Returns:
        config file as logged -> ``(passed, log file name)``.
    """
    files = [result_dir / "merge_log.txt", *sorted(result_dir.rglob("*.log"))]
    listed = result_dir / "log_files.txt"
    if listed.is_file():
        for line in _read_text(listed, MAX_TEXT_BYTES).splitlines():
            p = Path(line.strip())
            if line.strip():
                files += [p] if p.is_absolute() else [result_dir / p, result_dir.parent / p]
    verdicts: dict[str, tuple[bool, str]] = {}
    seen: set[Path] = set()
    for f in files:
        key = f.resolve() if f.exists() else f
        if key in seen or not f.is_file():
            continue
        seen.add(key)
        for m in _RESULT.finditer(_read_text(f, MAX_TEXT_BYTES)):
            verdicts[m.group(2).strip()] = (m.group(1) == "PASS", f.name)
    return verdicts


def verdict_of(task_id: str, verdicts: dict[str, tuple[bool, str]]) -> tuple[bool, str, str] | None:
    """The verdict of task ``task_id``: the logged config file named ``<task_id>.json``.

    Returns:
        ``(passed, config file as logged, log file name)``, or None when no line names it.
    """
    hit = None
    for config, (passed, log) in verdicts.items():
        if Path(config.replace("\\", "/")).name == f"{task_id}.json":
            hit = (passed, config, log)
    return hit


def read_config(path: Path) -> dict[str, Any]:
    """A WebArena config file.

    Raises:
        ResultReadError: not a JSON object with a non-empty ``intent``.
    """
    try:
        config = json.loads(_read_text(path, MAX_TEXT_BYTES))
    except json.JSONDecodeError as e:
        raise ResultReadError(f"{path.name} is not JSON: {e}") from None
    if not isinstance(config, dict) or not isinstance(config.get("intent"), str) or not config["intent"].strip():
        raise ResultReadError(f"{path.name} is no WebArena config (no intent)")
    return config


def find_config(task_id: str, logged: str | None, configs_dir: Path | None, result_dir: Path,
                render: RenderFile) -> tuple[dict[str, Any], str]:
    """The config of task ``task_id`` and where it came from: ``--configs DIR/<task_id>.json``,
    else the file the log names (as logged, or beside the result folder), else the render file's
    config block.

    Raises:
        ResultReadError: none of them gives a config with an intent.
    """
    candidates: list[Path] = []
    if configs_dir is not None:
        candidates.append(configs_dir / f"{task_id}.json")
    if logged:
        p = Path(logged)
        candidates += [p] if p.is_absolute() else [result_dir.parent / p, Path.cwd() / p, result_dir / p]
    for p in candidates:
        if p.is_file():
            return read_config(p), str(p)
    block = {k: v for k, v in render.config.items() if k in CONFIG_FIELDS}
    if isinstance(block.get("intent"), str) and block["intent"].strip():
        return block, f"render_{task_id}.html"
    where = f"{configs_dir}/{task_id}.json" if configs_dir is not None else "no --configs"
    raise ResultReadError(f"no config with an intent ({where}; the render file's config block has none)")
