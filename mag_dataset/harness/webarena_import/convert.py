"""One WebArena task of a result folder converted into a raw episode, and a folder into a corpus.

Each step of ``render_<id>.html`` is a step of the episode, with:

* **the action**: WebArena's action type mapped by :data:`WEBARENA_ACTIONS` (an action with no
  counterpart refuses the task, naming it; ``none``, an output WebArena could not parse and
  did not execute, is dropped and listed in ``metadata["webarena_dropped"]``, as the
  BrowserGym importer drops ``noop``). ``type [id] [text] [1]`` (text then Enter, WebArena's
  default) is one ``type`` step whose ``metadata["webarena_enter"]`` says Enter followed.
* **the screenshot**: the render's (``--render_screenshot``), else the trace's last screencast
  frame before the action (``metadata["screenshot_source"]`` says which). With neither the
  step is imported without one (``screenshot`` null, ``screenshot_source: "none"``, its size
  the viewport's): ``mag build`` refuses it until ``mag recapture`` gives it one.
* **the replay**: ``metadata["browsergym_action"]``, the BrowserGym action that does what
  WebArena's did (:func:`browsergym_action`), which ``mag recapture`` replays. A config of the
  package's sites (``mag sites export-webarena``, :func:`mag_dataset.sites.webarena_run.record_run`)
  gives the episode its template and seed (``metadata["expert"]``, ``seed``:
  :func:`mag_dataset.sites.webarena.task_of_config`), so it can be recaptured; any other
  episode says why not in ``metadata["not_recapturable"]``.
* **the candidates**: the trace's DOM snapshot of the step's observation (taken with its
  screenshot) laid out again in Chromium at the recorded viewport and read as the site
  recorder reads a page (:class:`mag_dataset.harness.trace_import.snapshots.SnapshotRenderer`), since
  neither the render file nor the snapshot holds boxes.
* **the target** of an id-based ``click``/``type``/``hover``: WebArena acts at the centre of the
  node's ``union_bound`` (``page.mouse.click``), and the trace records that point. The target is
  the candidate under the point whose text matches the node's name in the observation
  (``[id] role 'name'``), else the smallest candidate under it; none under it: a
  coordinate-only step, restored by ``mag unify``. ``mouse_click``/``mouse_hover`` (WebArena's
  coordinate actions) are coordinate-only steps too.

The trace's calls are matched to the steps through the observations: the ``i``-th
``page.screenshot`` call is step ``i``'s observation, and the step's action is the first call
of its kind after it (:data:`TRACE_CALLS`).
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mag_dataset.template_guides import template_guide
from mag_dataset.harness.import_common import (
    BatchReport,
    check_converted,
    is_finite_number,
    open_image,
)
from mag_dataset.harness.trace_import.archive import (
    Call,
    Trace,
    TraceImportError,
    read_trace,
)
from mag_dataset.harness.trace_import.convert import _browser, _frame_before, _Screen
from mag_dataset.harness.trace_import.snapshots import SnapshotRenderer
from mag_dataset.harness.webarena_import.results import (
    RenderFile,
    RenderStep,
    ResultReadError,
    find_config,
    read_render,
    read_verdicts,
    verdict_of,
)
from mag_dataset.raw import RawEpisode, RawStep
from mag_dataset.live.page_step import PageCapture, step_from_page
from mag_dataset.schema import Action, Candidate, point_in_box

#: WebArena's action types (``ActionTypes`` names) -> the benchmark's; None: no counterpart (the
#: task is refused, naming it). ``CHECK`` and ``SELECT_OPTION`` act through Playwright code,
#: ``KEYBOARD_TYPE`` types into whatever has the focus: none names an element the step could hold.
WEBARENA_ACTIONS: dict[str, str | None] = {
    "CLICK": "click", "TYPE": "type", "HOVER": "hover", "SCROLL": "scroll", "KEY_PRESS": "press",
    "GOTO_URL": "goto", "GO_BACK": "go_back", "GO_FORWARD": "go_forward", "NEW_TAB": "new_tab",
    "PAGE_FOCUS": "tab_focus", "PAGE_CLOSE": "close_tab", "STOP": "finish",
    "MOUSE_CLICK": "click", "MOUSE_HOVER": "hover",
    "KEYBOARD_TYPE": None, "CHECK": None, "SELECT_OPTION": None,
}
#: Dropped, as the BrowserGym importer drops ``noop``: an output WebArena could not parse (nothing ran).
DROPPED = ("NONE",)

#: The Playwright call WebArena's ``execute_action`` makes for each action type (class, method);
#: ``SCROLL`` is a ``page.evaluate`` of :data:`SCROLL_EXPRESSION`; ``STOP`` makes none.
TRACE_CALLS: dict[str, tuple[str, str]] = {
    "CLICK": ("Page", "mouseClick"), "TYPE": ("Page", "mouseClick"), "HOVER": ("Page", "mouseMove"),
    "MOUSE_CLICK": ("Page", "mouseClick"), "MOUSE_HOVER": ("Page", "mouseMove"), "KEY_PRESS": ("Page", "keyboardPress"),
    "GOTO_URL": ("Frame", "goto"), "GO_BACK": ("Page", "goBack"), "GO_FORWARD": ("Page", "goForward"),
    "SCROLL": ("Frame", "evaluateExpression"), "NEW_TAB": ("BrowserContext", "newPage"),
    "PAGE_FOCUS": ("Page", "bringToFront"), "PAGE_CLOSE": ("Page", "close"),
}
SCROLL_EXPRESSION = "(document.scrollingElement || document.body).scrollTop = "


class WebArenaImportError(ValueError):
    """A task of a result folder cannot be imported; the message says why."""


def _key_names() -> list[str] | None:
    """WebArena's key vocabulary (``_id2key``: a TYPE action's ``text`` is ids into it), or None
    without webarenax."""
    try:
        from mag_dataset.sites.webarena import WebArenaError, _webarena_evaluators

        _webarena_evaluators()  # the import shim its package needs
        from webarena.browser_env.actions import _id2key
    except (ImportError, WebArenaError):
        return None
    return list(_id2key)


def _typed_text(step: RenderStep, keys: list[str] | None) -> str:
    """The text of a TYPE action: its key ids decoded, else the parsed action's ``[text]``
    (where WebArena printed a newline as a space)."""
    ids = step.action.get("text")
    if keys is not None and isinstance(ids, list) and all(isinstance(i, int) and 0 <= i < len(keys) for i in ids):
        return "".join(keys[i] for i in ids)
    m = re.match(r"type \[\d+\] \[(.*)\] where \[", step.parsed_action, re.DOTALL)
    if m is None:
        raise WebArenaImportError(f"step {step.index}: the typed text cannot be read (install the [webarena] extra "
                                  "to decode its key ids)")
    return m.group(1)


def _node_name(line: str | None) -> tuple[str, str]:
    """``(role, name)`` of an observation line ``role 'name' properties``."""
    if not line:
        return "", ""
    role, _, rest = line.partition(" ")
    m = re.match(r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")", rest)
    if not m:
        return role, ""
    try:
        return role, str(ast.literal_eval(m.group(1)))
    except (ValueError, SyntaxError):
        return role, m.group(1)[1:-1]


def _plain(text: str) -> str:
    """Text compared with a node's name: icon glyphs (private use area) and spacing dropped, case folded."""
    return " ".join(re.sub(r"[\ue000-\uf8ff]", " ", text or "").split()).casefold()


def _target_under(point: tuple[float, float], name: str, cands: list[Candidate], ob: Any,
                  screen: _Screen) -> Candidate | None:
    """The candidate under ``point`` whose text is the node's ``name`` (else one containing it,
    else the smallest under the point); an element under it that is no candidate joins the menu."""
    want = _plain(name)

    def score(c: Candidate) -> tuple[int, float]:
        got = _plain(c.text)
        match = 2 if want and got == want else (1 if want and got and (want in got or got in want) else 0)
        return match, -(c.bbox[2] - c.bbox[0]) * (c.bbox[3] - c.bbox[1])

    under = [c for c in cands if point_in_box(point, c.bbox)]
    if under:
        return max(under, key=score)
    boxes = []
    for bid, el in ob.elements.items():
        css = ob.screen_box(bid)
        box = screen.box(css) if css is not None else None
        if box is not None and point_in_box(point, box) and (el.label or "").strip():
            boxes.append(Candidate(bid, el.role or el.tag, el.label[:200], box))
    if not boxes:
        return None
    target = max(boxes, key=score)
    cands.append(target)
    return target


@dataclass(frozen=True)
class _Aligned:
    """A render step's trace calls: its observation's screenshot call and its action's call."""

    observation: Call | None
    action: Call | None


def _align(trace: Trace, steps: list[RenderStep]) -> list[_Aligned]:
    """Each render step's observation call (the ``i``-th ``page.screenshot``) and action call.

    Raises:
        WebArenaImportError: the trace has fewer observations than the render has steps, or
            an action left no call of its kind (it failed in WebArena).
    """
    calls = [c for c in trace.calls if not c.error]
    shots = [i for i, c in enumerate(calls) if c.cls == "Page" and c.method == "screenshot"]
    if len(shots) < len(steps):
        raise WebArenaImportError(f"the trace holds {len(shots)} observations (page.screenshot calls) for "
                                  f"{len(steps)} rendered steps: not this run's trace")
    out = []
    for k, step in enumerate(steps):
        kind = step.action["action_type"]
        start, end = shots[k], shots[k + 1] if k + 1 < len(shots) else len(calls)
        want = TRACE_CALLS.get(kind)
        hit = None
        if want is not None:
            hit = next((c for c in calls[start + 1:end] if (c.cls, c.method) == want and (
                kind != "SCROLL" or SCROLL_EXPRESSION in str(c.params.get("expression") or ""))), None)
            if hit is None:
                raise WebArenaImportError(f"step {k}: WebArena's {kind.lower()} left no {want[0]}.{want[1]} call in "
                                          "the trace (it failed when run)")
        out.append(_Aligned(calls[start], hit))
    return out


def _step_action(step: RenderStep, kind: str, keys: list[str] | None) -> tuple[Action, dict[str, Any]]:
    """The benchmark action of an untargeted step (and extra metadata)."""
    a = step.action
    if kind == "SCROLL":
        return Action(type="scroll", direction="up" if "up" in str(a.get("direction")) else "down"), {}
    if kind == "KEY_PRESS":
        return Action(type="press", key=str(a.get("key_comb") or "")), {}
    if kind == "GOTO_URL":
        return Action(type="goto", url=str(a.get("url") or "")), {}
    if kind == "PAGE_FOCUS":
        n = a.get("page_number")
        return Action(type="tab_focus", value=str(int(n) if is_finite_number(n) else 0)), {}
    if kind == "STOP":
        answer = str(a.get("answer") or "")
        return Action(type="finish", answer=answer or None), {}
    return Action(type=WEBARENA_ACTIONS[kind]), {}


def convert_task(task_id: str, render: RenderFile, trace_path: Path, config: dict[str, Any], browser: Any,
                 keys: list[str] | None = None) -> tuple[RawEpisode, dict[str, bytes], list[dict[str, Any]]]:
    """Convert one task's render file and trace into a raw episode.

    Returns:
        ``(episode, images, dropped)``: ``dropped`` lists the ``none`` steps left out.

    Raises:
        WebArenaImportError: an action without a counterpart (named), a trace that does not
            match the render.
    """
    kept, dropped = [], []
    for step in render.steps:
        kind = step.action["action_type"]
        if kind in DROPPED:
            dropped.append({"step": step.index, "action": kind.lower(), "raw_prediction": step.raw_prediction[:500]})
            continue
        if WEBARENA_ACTIONS.get(kind) is None:
            raise WebArenaImportError(f"step {step.index}: WebArena's {kind.lower()} action has no counterpart in the "
                                      "benchmark action space")
        if kind in ("CLICK", "TYPE", "HOVER") and not str(step.action.get("element_id") or ""):
            raise WebArenaImportError(f"step {step.index}: WebArena's {kind.lower()} by role/name or Playwright code "
                                      "(no element id) has no counterpart in the benchmark action space")
        kept.append(step)
    if not kept:
        raise WebArenaImportError("the render file holds no step")
    try:
        trace = read_trace(trace_path)
    except TraceImportError as e:
        raise WebArenaImportError(f"{trace_path.name}: {e}") from None
    aligned = _align(trace, [s for s in render.steps if s.action["action_type"] not in DROPPED])
    renderer = SnapshotRenderer(trace, browser)
    images: dict[str, bytes] = {}
    steps: list[RawStep] = []
    for k, (step, calls) in enumerate(zip(kept, aligned)):
        steps.append(_convert_step(k, step, calls, trace, renderer, images, keys))
    sites = [str(s) for s in config.get("sites") or []] if isinstance(config.get("sites"), list) else []
    eid = f"webarena.{task_id}"
    template = config.get("intent_template_id")
    meta = {"webarena": {k: config.get(k) for k in ("task_id", "intent_template", "instantiation_dict", "sites",
                                                     "start_url", "intent_template_id") if k in config},
            "render": f"render_{task_id}.html", "trace": trace_path.name,
            "task_key": f"webarena-template-{template}" if template is not None else eid}
    if dropped:
        meta["webarena_dropped"] = dropped
    seed, why = None, _not_recapturable(steps)
    if why is None:
        from mag_dataset.sites.webarena import NotOurTask, task_of_config

        try:
            meta["expert"], seed = task_of_config(config)
        except NotOurTask as e:
            why = f"not a task of the package's sites: {e}"
    if why is not None:
        meta["not_recapturable"] = why
    ep = RawEpisode(episode_id=eid, task_id=eid, site="+".join(sites) or "webarena",
                    intent=" ".join(str(config["intent"]).split()),
                    intent_template_id=str(template if template is not None else task_id), steps=tuple(steps),
                    source="webarena", seed=seed, reward=1.0, success=True, metadata=meta)
    check_converted(ep, WebArenaImportError)
    return ep, images, dropped


def _not_recapturable(steps: list[RawStep]) -> str | None:
    """Why a recapture's screenshots could not stand for the steps' (None: they could): BrowserGym's
    are the viewport at 1 px per CSS px, and the steps' boxes are in their screenshots' pixels."""
    scaled = next((st for st in steps if st.device_pixel_ratio not in (None, 1.0)), None)
    if scaled is None:
        return None
    return (f"step {scaled.step_index}'s screenshot is {scaled.image_width}x{scaled.image_height} for a "
            f"{scaled.viewport_width}x{scaled.viewport_height} viewport (a screencast frame): a recaptured one "
            "would not match its boxes")


def _convert_step(k: int, step: RenderStep, calls: _Aligned, trace: Trace, renderer: SnapshotRenderer,
                  images: dict[str, bytes], keys: list[str] | None) -> RawStep:
    from mag_dataset.live.observe import Conversion, dom_evidence
    from mag_dataset.som import encode_png

    kind = step.action["action_type"]
    obs_call, act_call = calls.observation, calls.action
    snap = (obs_call.snapshots.get("before") if obs_call else None) or (
        act_call.snapshots.get("before") if act_call else None)
    if snap is None:
        raise WebArenaImportError(f"step {step.index}: the trace holds no DOM snapshot of its page (record with "
                                  "tracing.start(snapshots=True))")
    viewport = trace.viewport or (1280, 720)
    source = "render"
    shot = None
    if step.screenshot is not None:
        shot = open_image(io.BytesIO(step.screenshot), f"render step {step.index}'s screenshot", WebArenaImportError)
    elif (frame := _frame_before(trace, act_call or obs_call)) is not None:
        shot = open_image(io.BytesIO(trace.resource(frame[0])), f"resources/{frame[0]}", WebArenaImportError)
        source = "trace-screencast"
    else:  # none: imported without one (the viewport's size, 1 px per CSS px); `mag recapture` fills it
        source = "none"
    fw, fh = shot.size if shot is not None else viewport
    screen = _Screen(fw, fh, fw / viewport[0], fh / viewport[1])
    ob = renderer.observe(snap, viewport)
    cands = [Candidate(c.id, c.role, c.text, b) for c in ob.candidates if (b := screen.box(c.bbox)) is not None]
    element_id = str(step.action.get("element_id") or "")
    line = step.node_line(element_id) if element_id else None
    meta: dict[str, Any] = {"webarena_action": step.parsed_action.split(" where [")[0][:500],
                            "raw_prediction": step.raw_prediction[:2000], "screenshot_source": source,
                            "conversion": {"scale_factor": round(screen.sx, 6), "crop": [0, 0, fw, fh]},
                            "viewport": list(viewport), "page_url": step.url}
    if act_call is not None:
        meta["trace_call"] = act_call.call_id
    target: Candidate | None = None
    if kind in ("CLICK", "TYPE", "HOVER", "MOUSE_CLICK", "MOUSE_HOVER"):
        point = _point(step, act_call, screen, viewport)
        if kind in ("CLICK", "TYPE", "HOVER"):
            meta.update(webarena_element_id=element_id, webarena_node=line)
            target = _target_under(point, _node_name(line)[1], cands, ob, screen)
        extra: dict[str, Any] = {}
        if kind == "TYPE":
            text = _typed_text(step, keys)
            if text.endswith("\n"):  # type [id] [text] [1]: WebArena pressed Enter after the text
                text = text[:-1]
                meta["webarena_enter"] = True
            extra["text"] = text
        action = Action(type=WEBARENA_ACTIONS[kind], element_id=target.id if target else None,
                        coordinate=point, **extra)
        if target is not None:
            meta["dom"] = dom_evidence(ob, target.id)
        else:
            meta["recorded_as"] = "point_only"
    else:
        action, more = _step_action(step, kind, keys)
        meta.update(more)
    box = target.bbox if target is not None else (
        (action.coordinate[0], action.coordinate[1], action.coordinate[0], action.coordinate[1])
        if action.coordinate else None)
    meta["browsergym_action"] = browsergym_action(kind, action, Conversion(screen.sx, (0, 0, fw, fh)), viewport,
                                                  bool(meta.get("webarena_enter")))
    raw = step_from_page(
        PageCapture(encode_png(shot) if shot is not None else b"", fw, fh, tuple(cands)), images, step_index=k,
        action=action, target_bbox=box, guide=template_guide(action, target), url=step.url, som=False,
        viewport=viewport, device_pixel_ratio=round(screen.sx, 6), metadata=meta)
    if shot is None:
        del images[raw.screenshot]
        raw = dataclasses.replace(raw, screenshot="")
    return raw


def browsergym_action(kind: str, action: Action, conv: Any, viewport: tuple[int, int], enter: bool = False) -> str:
    """The BrowserGym action that does what WebArena's ``kind`` action did (``metadata["browsergym_action"]``,
    which ``mag recapture`` replays).

    WebArena acts through Playwright (``execute_action``): an id-based ``click``/``hover`` is a
    ``mouse.click``/``mouse.move`` at the node's centre, ``type`` clicks there and types the
    text (its ``[1]``: then Enter), ``scroll`` moves the page by one viewport height, ``press``
    presses the key combination (``Meta`` as ``Control`` off a Mac). The same with BrowserGym's
    functions: ``mouse_click``/``mouse_move`` at the step's point in BrowserGym's pixels
    (:meth:`~mag_dataset.live.observe.Conversion.to_browsergym`), ``keyboard_type`` (then
    ``keyboard_press('Enter')``), ``scroll(0, ±height)``, ``keyboard_press``; the rest as
    :func:`~mag_dataset.live.execute.to_browsergym_action` writes them (``goto``, ``go_back``,
    ``go_forward``, ``new_tab``, ``tab_focus``, ``tab_close``, ``stop`` as ``send_msg_to_user``).

    Args:
        kind: WebArena's action type (``"CLICK"``).
        action: the step's benchmark action (its point in screenshot px).
        conv: the step's :class:`~mag_dataset.live.observe.Conversion`.
        viewport: the CSS viewport ``(width, height)``.
        enter: WebArena pressed Enter after the typed text.
    """
    from mag_dataset.actions import View
    from mag_dataset.live.execute import to_browsergym_action

    if action.coordinate is not None:
        x, y = (round(v, 2) for v in conv.to_browsergym(action.coordinate))
        if kind in ("HOVER", "MOUSE_HOVER"):
            return f"mouse_move({x}, {y})"
        if kind == "TYPE":
            return f"mouse_click({x}, {y})\nkeyboard_type({action.text or ''!r})" + (
                "\nkeyboard_press('Enter')" if enter else "")
        return f"mouse_click({x}, {y})"
    if kind == "SCROLL":
        return f"scroll(0, {(-1 if action.direction == 'up' else 1) * round(viewport[1] * conv.scale, 2)})"
    if kind == "KEY_PRESS":
        return f"keyboard_press({(action.key or '').replace('Meta', 'Control')!r})"
    return to_browsergym_action(action, View.SOM, conv)


def _point(step: RenderStep, call: Call | None, screen: _Screen, viewport: tuple[int, int]) -> tuple[float, float]:
    """Where WebArena's mouse went: the trace's ``mouse.click``/``mouse.move`` point (CSS px), else a
    coordinate action's own fractions of the viewport; in screenshot px."""
    x, y = (call.params.get("x"), call.params.get("y")) if call is not None else (None, None)
    if not (is_finite_number(x) and is_finite_number(y)):
        coords = step.action.get("coords")
        if not (isinstance(coords, list) and len(coords) == 2 and all(is_finite_number(v) for v in coords)):
            raise WebArenaImportError(f"step {step.index}: no point for its {step.action['action_type'].lower()}")
        x, y = float(coords[0]) * viewport[0], float(coords[1]) * viewport[1]
    px, py = round(float(x) * screen.sx, 2), round(float(y) * screen.sy, 2)
    if not (0 <= px <= screen.width and 0 <= py <= screen.height):
        raise WebArenaImportError(f"step {step.index}: its point ({px}, {py}) is outside the screenshot")
    return px, py


# ----------------------------------------------------------------------------- a result folder
@dataclass
class WebArenaImportReport(BatchReport):
    """What :func:`import_webarena` did (a :class:`~mag_dataset.harness.import_common.BatchReport`
    whose sources are the tasks of a result folder)."""

    dropped: int = 0

    def summary(self) -> str:
        lines = [f"{self.found} tasks: imported {len(self.imported)} episodes ({self.steps} steps), "
                 f"skipped {len(self.skipped)}" + (f"; dropped {self.dropped} 'none' steps" if self.dropped else "")]
        lines += [f"  skipped {n}: {r}" for n, r in self.skipped]
        return "\n".join(lines)


def find_renders(result_dir: Path) -> dict[str, Path]:
    """``task_id -> render_<task_id>.html`` of a result folder, in task id order."""
    found = {}
    for p in result_dir.glob("render_*.html"):
        tid = p.stem[len("render_"):]
        if p.is_file() and re.fullmatch(r"[A-Za-z0-9._-]+", tid):
            found[tid] = p
    return dict(sorted(found.items(), key=lambda kv: (not kv[0].isdigit(), int(kv[0]) if kv[0].isdigit() else 0,
                                                       kv[0])))


def import_webarena(result_dir: str | Path, out_dir: str | Path, *, configs_dir: str | Path | None = None,
                    include_failed: bool = False, overwrite: bool = False,
                    progress: Callable[[str], None] | None = None) -> WebArenaImportReport:
    """Import the tasks of a WebArena result folder (``run.py --result_dir``) into a raw corpus.

    Args:
        result_dir: the folder with ``render_<id>.html``, ``traces/<id>.zip`` and the logs.
        out_dir: the raw corpus (created when missing); episodes are ``webarena.<task_id>``.
        configs_dir: WebArena's ``config_files`` folder (else the config the log names, else
            the render file's config block).
        include_failed: import FAIL tasks and tasks no ``[Result]`` line names too (default:
            PASS only).
        overwrite: replace episodes that exist (default: skip them, so a second run resumes).
        progress: called with one line per task.

    Returns:
        A :class:`WebArenaImportReport`; each task not imported is skipped with its reason.

    Raises:
        FileNotFoundError: ``result_dir`` is not a folder.
    """
    from mag_dataset.live.env import chromium_executable

    root, out = Path(result_dir), Path(out_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"result folder not found: {root}")
    configs = Path(configs_dir) if configs_dir is not None else None
    renders = find_renders(root)
    verdicts = read_verdicts(root)
    report = WebArenaImportReport(found=len(renders))
    todo: list[tuple[str, Path, tuple[bool, str, str] | None]] = []
    for tid, path in renders.items():
        verdict = verdict_of(tid, verdicts)
        if verdict is None and not include_failed:
            report.skip(tid, f"no [Result] line names {tid}.json in the run's logs (merge_log.txt, *.log, "
                             "log_files.txt): its verdict is unknown; --all imports it", progress)
        elif verdict is not None and not verdict[0] and not include_failed:
            report.skip(tid, f"FAIL in {verdict[2]}; --all imports failed tasks too", progress)
        elif not overwrite and (out / f"webarena.{tid}").exists():
            report.skip(tid, f"already imported: webarena.{tid} exists in {out}", progress)
        elif not (root / "traces" / f"{tid}.zip").is_file():
            report.skip(tid, f"no traces/{tid}.zip (run.py --save_trace_enabled): the candidates' boxes come from "
                             "its DOM snapshots", progress)
        else:
            todo.append((tid, path, verdict))
    if not todo:
        return report
    keys = _key_names()
    with _browser(chromium_executable()) as browser:
        for tid, path, verdict in todo:
            try:
                render = read_render(path)
                config, config_source = find_config(tid, verdict[1] if verdict else None, configs, root, render)
                ep, images, dropped = convert_task(tid, render, root / "traces" / f"{tid}.zip", config, browser, keys)
            except (WebArenaImportError, ResultReadError) as e:
                report.skip(tid, str(e), progress)
                continue
            passed = verdict[0] if verdict else None
            ep = _with_verdict(ep, passed, verdict, config_source)
            report.dropped += len(dropped)
            report.write(out, ep, images, f"task {tid}", progress)
    return report


def _with_verdict(ep: RawEpisode, passed: bool | None, verdict: tuple[bool, str, str] | None,
                  config_source: str) -> RawEpisode:
    meta = {**ep.metadata, "webarena_result": {True: "PASS", False: "FAIL", None: "unknown"}[passed],
            "webarena_log": verdict[2] if verdict else None, "webarena_config": config_source}
    return dataclasses.replace(ep, success=passed is True, reward=None if passed is None else float(passed),
                               metadata=meta)
