"""Import BrowserGym / AgentLab experiment directories as raw episodes.

WebMRE (arXiv 2609.27353) is built from successful WebArena trajectories. Those runs are
usually BrowserGym/AgentLab experiment directories; this importer turns the successful
ones into raw episodes (:mod:`mag_dataset.raw`) that the builder reads.

Input layout (written by ``browsergym.experiments.loop``; one directory per episode)::

    <date>_<agent>_on_<task_name>_<seed>/
        exp_args.pkl                  # pickled ExpArgs (env_args.task_name, task_seed, ...)
        summary_info.json             # n_steps, cum_reward, err_msg, terminated, truncated, ...
        step_0.pkl.gz, step_1.pkl.gz  # gzip-pickled StepInfo: obs, action, reward, ...
        screenshot_step_0.png         # obs["screenshot"], saved apart from the pickle
        screenshot_som_step_0.png     # optional (save_som=True)
        goal_object.pkl.gz            # optional: obs["goal_object"] saved once

``StepInfo.action`` of step *i* is the action chosen on the observation of step *i*; the
last step has no action. Pickles are read with a restricted unpickler: BrowserGym's and
AgentLab's classes do not need to be installed (they load as inert records) and no
callable outside numpy's array reconstruction and a few builtins is ever resolved. Still,
import only experiment directories you trust.

What is imported
    An episode is imported when ``summary_info.json`` reports no error and
    ``cum_reward >= min_reward`` (default 1.0: strict success). BrowserGym's MiniWoB++
    reward is 1 for any positive raw reward (partial credit), so a MiniWoB++ episode must
    also have MiniWoB's own raw reward (``task_info["RAW_REWARD_GLOBAL"]`` of its last
    step that stores one) ``>= min_reward``. Each step with an action
    becomes a raw step: the screenshot (cropped to MiniWoB's task area, whole otherwise),
    the candidate menu and Set-of-Mark screenshot — with :func:`mag_dataset.live.observe.observe`
    when the observation holds the DOM snapshot, else from the accessibility tree and
    BrowserGym's element properties (elements BrowserGym marks for set-of-marks) — the
    action mapped onto the benchmark action space, and a template guide
    (:func:`mag_dataset.guides.template_guide`). ``noop()`` steps are dropped. An episode
    with an action that has no benchmark equivalent (several actions in one step,
    ``keyboard_type`` without a focused element, drag and drop, file upload...) is skipped
    as a whole, with the reason reported, because dropping a step would break the
    trajectory. ``mouse_click(x, y)`` becomes a coordinate-only click with a point-sized
    target box; run ``mag unify`` afterwards to restore its element.

Sites and templates
    MiniWoB++: the site and template are the task name (``click-button``). WebArena: the
    site comes from the port of the first URL (WebArena's standard ports, :data:`WEBARENA_PORTS`),
    the template is the task name unless ``templates`` maps task names to template ids.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import gzip
import io
import json
import os
import pickle
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlparse

from mag_dataset.raw import RawEpisode, RawStep, parse_step, write_episode
from mag_dataset.schema import Action, Candidate

#: WebArena's standard ports -> WebMRE site names.
WEBARENA_PORTS: dict[int, str] = {
    7770: "shopping",
    7780: "shopping_admin",
    9999: "reddit",
    8023: "gitlab",
    3000: "map",
    443: "map",
    8888: "wikipedia",
}

MINIWOB_SCALE = 1.5


class ImportErrorForEpisode(ValueError):
    """An experiment directory cannot be imported; the message says why."""


# -- restricted unpickling ----------------------------------------------------------------

_SAFE_BUILTINS = frozenset({"set", "frozenset", "complex", "slice", "bytearray", "range", "object", "list", "dict", "tuple"})
_NUMPY_NAMES = frozenset({"_reconstruct", "ndarray", "dtype", "scalar", "_frombuffer", "frombuffer"})


class Record:
    """An object of a class that is not imported (BrowserGym's StepInfo, AgentLab's classes...).

    Its pickled state becomes attributes; ``_class`` names the original class.
    """

    _class = "?"

    def __init__(self, *args: Any, **kwargs: Any):
        self._args = args
        self.__dict__.update(kwargs)

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2 and (state[0] is None or isinstance(state[0], dict)):
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            self.__dict__.update(state)
        else:
            self.__dict__["_state"] = state

    def __getattr__(self, name: str) -> Any:  # absent fields read as None, like dataclass defaults
        if name.startswith("__"):
            raise AttributeError(name)
        return None

    def __repr__(self) -> str:
        return f"<{self._class} record>"


class _RestrictedUnpickler(pickle.Unpickler):
    _classes: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and name in _SAFE_BUILTINS:
            return getattr(builtins, name)
        if module == "collections" and name in ("OrderedDict", "defaultdict", "deque"):
            import collections

            return getattr(collections, name)
        if module == "copyreg" and name == "_reconstructor":
            import copyreg

            return copyreg._reconstructor  # type: ignore[attr-defined]
        if module.split(".")[0] == "numpy" and name in _NUMPY_NAMES:
            return super().find_class(module, name)
        if module == "datetime" and name in ("datetime", "date", "time", "timedelta", "timezone"):
            return super().find_class(module, name)
        key = (module, name)
        if key not in self._classes:
            self._classes[key] = type(name, (Record,), {"_class": f"{module}.{name}"})
        return self._classes[key]


def load_pickle(data: bytes) -> Any:
    """Unpickle with the restricted unpickler (see the module docstring)."""
    return _RestrictedUnpickler(io.BytesIO(data)).load()


# -- actions ------------------------------------------------------------------------------


def parse_action_calls(text: str) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """Parse a BrowserGym action string into ``(function, args, kwargs)`` calls.

    Raises:
        ImportErrorForEpisode: not a sequence of calls with literal arguments.
    """
    try:
        tree = ast.parse(text.strip())
    except SyntaxError as e:
        raise ImportErrorForEpisode(f"action {text!r} is not valid Python: {e.msg}") from None
    calls = []
    for node in tree.body:
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)):
            raise ImportErrorForEpisode(f"action {text!r} is not a sequence of function calls")
        try:
            args = [ast.literal_eval(a) for a in node.value.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in node.value.keywords if k.arg}
        except ValueError:
            raise ImportErrorForEpisode(f"action {text!r} has non-literal arguments") from None
        calls.append((node.value.func.id, args, kwargs))
    return calls


@dataclass
class _View:
    """What one step's observation gives the importer."""

    png: bytes
    som_png: bytes
    width: int
    height: int
    candidates: list[Candidate]
    crop: tuple[int, int, int, int]
    scale: float
    url: str
    focused: str | None
    boxes: dict[str, tuple[float, float, float, float]]  # every visible bid, screenshot px
    names: dict[str, tuple[str, str]]  # bid -> (role, text)


def _arg(args: list[Any], kwargs: dict[str, Any], i: int, name: str, default: Any = None) -> Any:
    return args[i] if len(args) > i else kwargs.get(name, default)


def map_action(text: str, view: _View) -> tuple[Action, Candidate | None, tuple[float, float, float, float] | None] | None:
    """Map a BrowserGym action string onto the benchmark action space.

    Returns:
        ``(action, target candidate, target box)``, or None for a ``noop``.

    Raises:
        ImportErrorForEpisode: the action has no benchmark equivalent.
    """
    calls = [c for c in parse_action_calls(text) if c[0] != "noop"]
    if not calls:
        return None
    if len(calls) > 1:
        raise ImportErrorForEpisode(f"action {text!r} holds {len(calls)} actions in one step")
    fn, args, kw = calls[0]

    def target(bid: Any, atype: str, **extra: Any) -> tuple[Action, Candidate | None, Any]:
        bid = str(bid)
        cand = next((c for c in view.candidates if c.id == bid), None)
        if cand is None:
            box = view.boxes.get(bid)
            if box is None:
                raise ImportErrorForEpisode(f"{fn}({bid!r}) acts on an element that is not visible on the screenshot")
            role, name = view.names.get(bid, ("", ""))
            cand = Candidate(id=bid, role=role or "generic", text=name, bbox=box)
            view.candidates.append(cand)
        cx, cy = (cand.bbox[0] + cand.bbox[2]) / 2.0, (cand.bbox[1] + cand.bbox[3]) / 2.0
        return Action(type=atype, element_id=bid, coordinate=(round(cx, 2), round(cy, 2)), **extra), cand, cand.bbox

    if fn in ("click", "dblclick"):
        return target(_arg(args, kw, 0, "bid"), "click")
    if fn == "hover":
        return target(_arg(args, kw, 0, "bid"), "hover")
    if fn == "fill":
        return target(_arg(args, kw, 0, "bid"), "type", text=str(_arg(args, kw, 1, "value", "")))
    if fn == "clear":
        return target(_arg(args, kw, 0, "bid"), "type", text="")
    if fn == "select_option":
        opts = _arg(args, kw, 1, "options")
        if isinstance(opts, (list, tuple)):
            if len(opts) != 1:
                raise ImportErrorForEpisode(f"action {text!r} selects {len(opts)} options at once")
            opts = opts[0]
        return target(_arg(args, kw, 0, "bid"), "select", value=str(opts))
    if fn in ("keyboard_press", "press"):
        key = _arg(args, kw, 0 if fn == "keyboard_press" else 1, "key" if fn == "keyboard_press" else "key_comb")
        return Action(type="press", key=str(key)), None, None
    if fn == "keyboard_type":
        if not view.focused:
            raise ImportErrorForEpisode(f"action {text!r} types without a focused element")
        return target(view.focused, "type", text=str(_arg(args, kw, 0, "text", "")))
    if fn in ("scroll", "scroll_at"):
        dx, dy = (float(_arg(args, kw, 0, "delta_x", 0)), float(_arg(args, kw, 1, "delta_y", 0))) if fn == "scroll" else (
            float(_arg(args, kw, 2, "dx", 0)), float(_arg(args, kw, 3, "dy", 0)))
        if dx == 0 and dy == 0:
            return None
        direction = ("down" if dy > 0 else "up") if abs(dy) >= abs(dx) else ("right" if dx > 0 else "left")
        return Action(type="scroll", direction=direction), None, None
    if fn == "goto":
        return Action(type="goto", url=str(_arg(args, kw, 0, "url"))), None, None
    if fn in ("go_back", "go_forward", "new_tab"):
        return Action(type=fn), None, None
    if fn == "tab_focus":
        return Action(type="tab_focus", value=str(int(_arg(args, kw, 0, "index", 0)))), None, None
    if fn == "tab_close":
        return Action(type="close_tab"), None, None
    if fn in ("send_msg_to_user", "report_infeasible"):
        return Action(type="finish", answer=str(_arg(args, kw, 0, "text", "")) or None), None, None
    if fn in ("mouse_click", "mouse_dblclick", "mouse_move"):
        x, y = float(_arg(args, kw, 0, "x")), float(_arg(args, kw, 1, "y"))
        # BrowserGym's mouse actions take full-screenshot pixels; ours are cropped
        px, py = round(x - view.crop[0], 2), round(y - view.crop[1], 2)
        if not (0 <= px <= view.width and 0 <= py <= view.height):
            raise ImportErrorForEpisode(f"action {text!r} points outside the screenshot")
        atype = "hover" if fn == "mouse_move" else "click"
        return Action(type=atype, coordinate=(px, py)), None, (px, py, px, py)
    raise ImportErrorForEpisode(f"action {fn}() has no equivalent in the benchmark action space")


# -- observations -------------------------------------------------------------------------


def _axtree_names(obs: dict[str, Any]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for node in (obs.get("axtree_object") or {}).get("nodes", []):
        bid = node.get("browsergym_id")
        if bid is None or str(bid) in out:
            continue
        role = str((node.get("role") or {}).get("value") or "")
        name = " ".join(str((node.get("name") or {}).get("value") or "").split())
        out[str(bid)] = (role, name[:200])
    return out


def _bid_key(bid: str) -> tuple[int, str]:
    return (int(bid), "") if bid.isdigit() else (1 << 30, bid)


def process_observation(obs: dict[str, Any], task_name: str) -> _View:
    """Screenshot, Set-of-Mark screenshot and candidate menu of one saved observation."""
    import numpy as np
    from PIL import Image

    from mag_dataset.live.observe import draw_som, encode_png, observe

    miniwob = task_name.startswith("miniwob")
    scale = MINIWOB_SCALE if miniwob else 1.0
    names = _axtree_names(obs)
    if obs.get("dom_object"):
        ob = observe(obs, crop=miniwob, scale=scale)
        boxes = {bid: b for bid in ob.elements if (b := ob.screen_box(bid)) is not None}
        return _View(ob.png, ob.som_png, ob.width, ob.height, list(ob.candidates), ob.conv.crop, scale,
                     ob.url, ob.focused, boxes, names)
    # no DOM snapshot (some AgentLab preprocessors drop it): AX tree + element properties
    image = Image.fromarray(np.asarray(obs["screenshot"], dtype=np.uint8)).convert("RGB")
    w, h = image.size
    boxes: dict[str, tuple[float, float, float, float]] = {}
    cands = []
    for bid, pr in sorted((obs.get("extra_element_properties") or {}).items(), key=lambda kv: _bid_key(str(kv[0]))):
        bb = (pr or {}).get("bbox")
        if not bb or float(pr.get("visibility") or 0) < 0.5:
            continue
        x0, y0, x1, y1 = max(0.0, bb[0]), max(0.0, bb[1]), min(float(w), bb[0] + bb[2]), min(float(h), bb[1] + bb[3])
        if x1 - x0 < 2 or y1 - y0 < 2:
            continue
        box = (round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2))
        boxes[str(bid)] = box
        if pr.get("set_of_marks"):
            role, name = names.get(str(bid), ("", ""))
            cands.append(Candidate(id=str(bid), role=role or "generic", text=name, bbox=box))
    return _View(encode_png(image), encode_png(draw_som(image, cands)), w, h, cands, (0, 0, w, h), scale,
                 str(obs.get("url") or ""), str(obs.get("focused_element_bid") or "") or None, boxes, names)


# -- experiment directories ---------------------------------------------------------------


def find_experiments(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Experiment directories under ``paths`` (each a directory or a root of many), sorted.

    Directories named ``_*`` or ``.*`` are skipped (AgentLab's convention for superseded runs).
    """
    found: set[Path] = set()
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            raise FileNotFoundError(f"experiment directory not found: {p}")
        if (p / "summary_info.json").is_file() or (p / "step_0.pkl.gz").is_file():
            found.add(p)
            continue
        for marker in list(p.rglob("summary_info.json")) + list(p.rglob("step_0.pkl.gz")):
            d = marker.parent
            if not any(part.startswith(("_", ".")) for part in d.relative_to(p).parts):
                found.add(d)
    return sorted(found)


_DIRNAME = re.compile(r"_on_(?P<task>.+)_(?P<seed>\d+)(?:_\d+)?$")


def _task_and_seed(exp: Path) -> tuple[str, int | None, str]:
    args_file = exp / "exp_args.pkl"
    if args_file.is_file():
        try:
            args = load_pickle(args_file.read_bytes())
            env = getattr(args, "env_args", None)
            agent = getattr(getattr(args, "agent_args", None), "agent_name", None) or ""
            if env is not None and getattr(env, "task_name", None):
                seed = getattr(env, "task_seed", None)
                return str(env.task_name), int(seed) if seed is not None else None, str(agent)
        except Exception:  # an unreadable exp_args.pkl falls back to the directory name
            pass
    m = _DIRNAME.search(exp.name)
    if m is None:
        raise ImportErrorForEpisode("no readable exp_args.pkl and the directory name does not say the task")
    return m.group("task"), int(m.group("seed")), ""


def _site_and_template(task_name: str, url: str, templates: dict[str, str]) -> tuple[str, str]:
    bench, _, rest = task_name.partition(".")
    if bench == "miniwob":
        return rest, templates.get(task_name, rest)
    site = bench or "unknown"
    parsed = urlparse(url)
    if bench in ("webarena", "visualwebarena") and parsed.port in WEBARENA_PORTS:
        site = WEBARENA_PORTS[parsed.port]
    elif parsed.hostname:
        site = parsed.hostname
    return site, templates.get(task_name, task_name)


def _redraw_som(view: _View) -> bytes:
    from PIL import Image

    from mag_dataset.live.observe import draw_som, encode_png

    with Image.open(io.BytesIO(view.png)) as img:
        return encode_png(draw_som(img.convert("RGB"), view.candidates))


def _goal_text(obs: dict[str, Any], exp: Path) -> str:
    goal = obs.get("goal")
    if isinstance(goal, str) and goal.strip():
        return " ".join(goal.split())
    go = obs.get("goal_object")
    if go is None and (exp / "goal_object.pkl.gz").is_file():
        try:
            go = load_pickle(gzip.decompress((exp / "goal_object.pkl.gz").read_bytes()))
        except Exception as e:  # corrupt gzip or pickle, as for the step files
            raise ImportErrorForEpisode(f"goal_object.pkl.gz cannot be read: {type(e).__name__}: {e}") from None
    texts = [p.get("text", "") for p in (go or []) if isinstance(p, dict) and p.get("type") == "text"]
    return " ".join(" ".join(texts).split())


def _screenshot(exp: Path, i: int) -> Any:
    import numpy as np
    from PIL import Image

    for ext in ("png", "jpg"):
        p = exp / f"screenshot_step_{i}.{ext}"
        if p.is_file():
            try:
                with Image.open(p) as img:
                    return np.asarray(img.convert("RGB"))
            except (OSError, ValueError) as e:  # truncated or not an image: skip the episode, say which file
                raise ImportErrorForEpisode(f"{p.name} cannot be read: {type(e).__name__}: {e}") from None
    return None


def _miniwob_raw_reward(infos: list[Any]) -> float | None:
    """MiniWoB's own raw reward of an episode: the last ``task_info["RAW_REWARD_GLOBAL"]``
    stored in its step infos (None when no step stores one)."""
    for info in reversed(infos):
        task_info = getattr(info, "task_info", None)
        value = task_info.get("RAW_REWARD_GLOBAL") if isinstance(task_info, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def convert_experiment(exp: Path, min_reward: float = 1.0, templates: dict[str, str] | None = None) -> tuple[RawEpisode, dict[str, bytes]]:
    """Convert one experiment directory into a raw episode and its images.

    Raises:
        ImportErrorForEpisode: the episode is unsuccessful or cannot be converted (why).
    """
    from mag_dataset.guides import template_guide

    summary_file = exp / "summary_info.json"
    if not summary_file.is_file():
        raise ImportErrorForEpisode("no summary_info.json (the run did not finish)")
    try:
        summary = json.loads(summary_file.read_text("utf-8") or "null")
    except json.JSONDecodeError as e:
        raise ImportErrorForEpisode(f"summary_info.json is not JSON: {e}") from None
    if not isinstance(summary, dict):
        raise ImportErrorForEpisode("summary_info.json is empty")
    if summary.get("err_msg"):
        raise ImportErrorForEpisode("unsuccessful: the run ended with an error")
    reward = summary.get("cum_reward")
    if not isinstance(reward, (int, float)) or reward < min_reward:
        raise ImportErrorForEpisode(f"unsuccessful: cum_reward {reward!r} < {min_reward:g}")
    task_name, seed, agent = _task_and_seed(exp)
    files = sorted(exp.glob("step_*.pkl.gz"), key=lambda p: int(p.name.split("_")[1].split(".")[0]))
    if not files:
        raise ImportErrorForEpisode("no step_*.pkl.gz files")
    infos = []
    for n, f in enumerate(files):
        if f.name != f"step_{n}.pkl.gz":
            raise ImportErrorForEpisode(f"step files are not numbered 0..{len(files) - 1}: {f.name}")
        try:
            infos.append(load_pickle(gzip.decompress(f.read_bytes())))
        except Exception as e:  # corrupt gzip or pickle: skip the episode, say which file
            raise ImportErrorForEpisode(f"{f.name} cannot be read: {type(e).__name__}: {e}") from None
    raw = _miniwob_raw_reward(infos) if task_name.startswith("miniwob.") else None
    if raw is not None and raw < min_reward:
        raise ImportErrorForEpisode(
            f"unsuccessful: MiniWoB raw reward {raw:g} < {min_reward:g} (BrowserGym's reward counts partial credit)"
        )
    steps: list[RawStep] = []
    images: dict[str, bytes] = {}
    intent, first_url = "", ""
    for n, info in enumerate(infos):
        obs = getattr(info, "obs", None)
        action_text = getattr(info, "action", None)
        if not isinstance(obs, dict):
            raise ImportErrorForEpisode(f"step {n} has no observation")
        if n == 0:
            intent = _goal_text(obs, exp)
            first_url = str(obs.get("url") or "")
        if action_text is None:
            continue
        obs = dict(obs)
        if obs.get("screenshot") is None:
            obs["screenshot"] = _screenshot(exp, n)
        if obs.get("screenshot") is None:
            raise ImportErrorForEpisode(f"step {n} has no screenshot (screenshot_step_{n}.png)")
        view = process_observation(obs, task_name)
        n_marked = len(view.candidates)
        mapped = map_action(str(action_text), view)
        if mapped is None:
            continue
        if len(view.candidates) != n_marked:  # the target was added to the menu: label it too
            view.som_png = _redraw_som(view)
        action, target, box = mapped
        k = len(steps)
        shot, som = f"step_{k:03d}.png", f"step_{k:03d}_som.png"
        images[shot], images[som] = view.png, view.som_png
        steps.append(RawStep(
            step_index=k, screenshot=shot, som_screenshot=som, image_width=view.width, image_height=view.height,
            candidates=tuple(view.candidates), action=action, target_bbox=box,
            guide=template_guide(action, target), url=view.url,
            metadata={"browsergym_action": str(action_text), "browsergym_step": n,
                      "conversion": {"scale_factor": view.scale, "crop": list(view.crop)}},
        ))
    if not steps:
        raise ImportErrorForEpisode("no step with an action")
    if not intent:
        raise ImportErrorForEpisode("the observation holds no goal text")
    site, template = _site_and_template(task_name, first_url, templates or {})
    episode_id = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{task_name}.seed-{seed}" if seed is not None else task_name)
    ep = RawEpisode(
        episode_id=episode_id, task_id=episode_id, site=site, intent=intent, intent_template_id=template,
        steps=tuple(steps), source="browsergym", seed=seed, reward=float(reward), success=True,
        metadata={"browsergym_task": task_name, "agent": agent, "experiment": exp.name,
                  "n_steps": summary.get("n_steps"), "cum_reward": reward},
    )
    for st in ep.steps:  # validate against the raw format before anything is written
        parse_step(st.to_json(), ep.episode_id, None)
    return ep, images


@dataclass
class ImportReport:
    """What :func:`import_experiments` did.

    Attributes:
        found: experiment directories found.
        imported: episode ids written.
        skipped: ``(experiment dir, reason)`` for every directory not imported.
        steps: raw steps written.
    """

    found: int = 0
    imported: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    steps: int = 0

    def summary(self) -> str:
        reasons = Counter(r.split(":")[0] for _, r in self.skipped)
        lines = [f"{self.found} experiments: imported {len(self.imported)} episodes ({self.steps} steps), "
                 f"skipped {len(self.skipped)}" + (f" ({', '.join(f'{k} {v}' for k, v in sorted(reasons.items()))})" if reasons else "")]
        lines += [f"  skipped {d}: {r}" for d, r in self.skipped]
        return "\n".join(lines)


def import_experiments(
    paths: Iterable[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    min_reward: float = 1.0,
    templates: dict[str, str] | None = None,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ImportReport:
    """Import every successful experiment under ``paths`` into the raw corpus ``out_dir``.

    Args:
        paths: experiment directories or roots holding many.
        out_dir: the raw corpus to add episodes to (created when missing).
        min_reward: the least ``cum_reward`` of a successful episode.
        templates: optional ``task_name -> intent_template_id`` map.
        overwrite: replace an episode that already exists in ``out_dir`` (default: skip it).
        progress: called with one line per experiment.

    Returns:
        An :class:`ImportReport`; each episode is written atomically.
    """
    out = Path(out_dir)
    exps = find_experiments(paths)
    report = ImportReport(found=len(exps))
    taken: set[str] = set()
    for exp in exps:
        try:
            ep, images = convert_experiment(exp, min_reward, templates)
        except ImportErrorForEpisode as e:
            report.skipped.append((exp.name, str(e)))
            continue
        base, n = ep.episode_id, 2
        while ep.episode_id in taken:  # the same task and seed run twice
            ep = dataclasses.replace(ep, episode_id=f"{base}-{n}", task_id=f"{base}-{n}")
            n += 1
        taken.add(ep.episode_id)
        if (out / ep.episode_id).exists() and not overwrite:
            report.skipped.append((exp.name, f"already imported: {ep.episode_id} exists in {out}"))
            continue
        write_episode(out, ep, images)
        report.imported.append(ep.episode_id)
        report.steps += len(ep.steps)
        if progress:
            progress(f"imported {exp.name} -> {ep.episode_id} ({len(ep.steps)} steps)")
    return report
