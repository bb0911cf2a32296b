"""WebArena-format runs of the site experts: what WebArena's ``run.py`` writes, written by its own code.

WebArena (Zhou et al., 2024, "WebArena: A Realistic Web Environment for Building Autonomous
Agents", ICLR) runs an agent with ``run.py``: for each config file it opens WebArena's
``ScriptBrowserEnv`` (accessibility-tree observations, id-based actions such as
``click [1234]``), renders every step into ``render_<task_id>.html`` with its ``RenderHelper``
(the config, then per step the URL, the accessibility tree, the screenshot, the raw
prediction, the action object and the parsed action), judges the episode with its
``evaluator_router``, logs ``[Result] (PASS) <config file>`` or ``(FAIL)``, and saves the
Playwright trace as ``traces/<task_id>.zip`` (``env.save_trace``). :func:`record_run` does
the same on the package's sites, with the same classes of pip ``webarenax`` (the
``[webarena]`` extra), where the agent is the template's expert: its decisions, made on a
BrowserGym reading of the page (:func:`mag_dataset.live.observe.observe_page`), are translated
into WebArena's id-based actions on the node ids of WebArena's own observation
(:func:`webarena_action`).

Two things differ from ``run.py``, both to make the runs reliable on a busy machine, neither
in what is written: after each action the page's navigation in flight and its load event are
awaited (where ``run.py`` sleeps ``--sleep_after_execution`` seconds), and the browser is the
system Chromium (Playwright cannot download its own here). The expert's reading of the page
marks its elements (BrowserGym's ``bid`` attributes) and so shows in the trace's DOM
snapshots and calls, as an agent's own page scripts would; an importer ignores both.

Layout of a run (``result_dir``)::

    render_<id>.html        RenderHelper's file
    traces/<id>.zip         the Playwright trace (screenshots and DOM snapshots on)
    log_files/log_<time>_<n>.log, log_files.txt   run.py's log and the file naming it
    config.json             the run's arguments, as run.py dumps them
and the config files in ``config_dir`` (``<id>.json``, login files in ``config_dir/.auth``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mag_dataset.sites import SiteError, manager, site_class, task_class
from mag_dataset.sites.webarena import (
    on_own_thread,
    WebArenaError,
    _webarena_evaluators,
    judge,
    logins,
    webarena_config,
    write_storage_states,
)

#: WebArena's action set and observation of the runs (run.py's ``--action_set_tag``, ``--observation_type``)
ACTION_SET_TAG = "id_accessibility_tree"
OBSERVATION_TYPE = "accessibility_tree"
#: run.py's step limit (``--max_steps``)
MAX_STEPS = 30
#: seconds to wait for a navigation an action started, and for its page's load event
SETTLE_TIMEOUT = 15.0


@dataclass(frozen=True)
class RunTask:
    """One task of a run: a template (``sites.<site>.<template>``) on a seed."""

    template: str
    seed: int = 0


@dataclass
class TaskRecord:
    """What a run did with one task.

    Attributes:
        task_id: WebArena's ``task_id`` (the config file ``<task_id>.json``).
        template: the template (``sites.<site>.<template>``) and ``seed`` it instantiates.
        passed: WebArena's verdict (``[Result] (PASS)``).
        actions: the parsed actions in WebArena's spelling (``click [12]``, ``stop [answer]``).
        union_bounds: per action, the acted node's ``union_bound`` (``[x, y, width, height]`` in CSS
            px, from WebArena's observation metadata), or None for an action without an element.
        labels: per action, the acted node's line of the accessibility tree, or None.
        reason: the verdict's reason, or why the run of the task stopped.
        seconds: the task's wall time.
    """

    task_id: int
    template: str
    seed: int
    passed: bool = False
    actions: list[str] = field(default_factory=list)
    union_bounds: list[list[float] | None] = field(default_factory=list)
    labels: list[str | None] = field(default_factory=list)
    reason: str = ""
    seconds: float = 0.0


@dataclass
class RunSummary:
    """What :func:`record_run` wrote: ``result_dir``, ``config_dir`` and a record per task."""

    result_dir: str
    config_dir: str
    tasks: list[TaskRecord]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ----------------------------------------------------------------------------- expert -> WebArena action
def _q(text: str) -> str:
    """An argument of an id-based action: WebArena's parser reads ``[...]`` up to the last ``]``."""
    return " ".join(str(text).split())


def webarena_action(decision: Any, node_id: str | None) -> str:
    """An expert's decision as WebArena's id-based action string (``create_id_based_action``'s input).

    Args:
        decision: a :class:`~mag_dataset.live.expert_kit.Decision`.
        node_id: the WebArena observation's node id of its target (targeted decisions).

    Raises:
        WebArenaError: a decision WebArena's id-based action set cannot express (``select``:
            WebArena selects options only by Playwright code).
    """
    kind = decision.type.value
    if kind in ("click", "hover"):
        return f"{kind} [{node_id}]"
    if kind == "type":  # [0]: no Enter after the text (the expert presses Enter itself when it means to)
        return f"type [{node_id}] [{_q(decision.text or '')}] [0]"
    if kind == "scroll":
        if decision.direction not in ("up", "down"):
            raise WebArenaError(f"WebArena scrolls up or down only, not {decision.direction!r}")
        return f"scroll [{decision.direction}]"
    if kind == "press":
        return f"press [{decision.key}]"
    if kind == "goto":
        return f"goto [{decision.url}]"
    if kind in ("go_back", "go_forward", "new_tab", "close_tab"):
        return kind
    if kind == "tab_focus":
        return f"tab_focus [{int(decision.value or 0)}]"
    if kind == "finish":
        return f"stop [{_q(decision.answer or '')}]" if (decision.answer or "").strip() else "stop"
    raise WebArenaError(f"the expert's {kind!r} has no id-based WebArena action (WebArena selects options "
                        "only through Playwright code)")


def _expert_observation(page: Any, screenshot: Any) -> Any:
    """The expert's reading of ``page``: BrowserGym's extraction (bids marked), as the recorder reads a page."""
    import numpy as np
    from browsergym.core.observation import (
        _post_extract,
        _pre_extract,
        extract_dom_extra_properties,
        extract_dom_snapshot,
        extract_focused_element_bid,
        extract_merged_axtree,
    )

    from mag_dataset.live.observe import observe_page

    _pre_extract(page, lenient=True)
    try:
        dom = extract_dom_snapshot(page)
        axtree = extract_merged_axtree(page)
        focused = extract_focused_element_bid(page)
    finally:
        _post_extract(page)
    props = extract_dom_extra_properties(dom, scale_factor=1.0)
    shot = np.ascontiguousarray(np.asarray(screenshot)[:, :, :3])
    obs = {"dom_object": dom, "axtree_object": axtree, "extra_element_properties": props, "screenshot": shot,
           "url": page.url, "goal": "", "focused_element_bid": focused,
           "open_pages_titles": [page.title()], "active_page_index": [0]}
    return observe_page(obs)


def _node_of(page: Any, ob: Any, bid: str, nodes: dict[str, Any]) -> str:
    """WebArena's node id (of the observation's ``obs_nodes_info``) of the element with BrowserGym bid ``bid``.

    The node whose DOM node is the element; else the one whose ``union_bound`` overlaps its box
    most (an element the accessibility tree folds into an ancestor or a child).

    Raises:
        WebArenaError: no node of the observation stands for it.
    """
    client = page.context.new_cdp_session(page)
    try:
        found = client.send("Runtime.evaluate", {"expression": f"document.querySelector('[bid=\"{bid}\"]')"})
        oid = (found.get("result") or {}).get("objectId")
        backend = client.send("DOM.describeNode", {"objectId": oid})["node"]["backendNodeId"] if oid else None
    finally:
        client.detach()
    hits = [i for i, n in nodes.items() if backend is not None and n.get("backend_id") == backend]
    if hits:
        return hits[0]
    el = ob.elements.get(bid)
    box = el.bbox if el is not None else None
    best, best_iou = None, 0.0
    for i, n in nodes.items():
        ub = n.get("union_bound")
        if box is None or not ub or ub[2] <= 0 or ub[3] <= 0 or "StaticText" in str(n.get("text", "")).split("'")[0]:
            continue
        iou = _iou(box, (ub[0], ub[1], ub[0] + ub[2], ub[1] + ub[3]))
        if iou > best_iou:
            best, best_iou = i, iou
    if best is None or best_iou < 0.5:
        raise WebArenaError(f"no node of WebArena's observation stands for the expert's element {bid!r}")
    return best


def _iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


# ----------------------------------------------------------------------------- the run
def _settle(page: Any, pending: set[Any]) -> None:
    """Wait for the navigation an action started and the page's load event (run.py sleeps instead)."""
    page.wait_for_timeout(100)
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while pending and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    with contextlib.suppress(Exception):  # a page that never loads is observed as it is, as in run.py
        page.wait_for_load_state("load", timeout=SETTLE_TIMEOUT * 1000)


def _env_class() -> type:
    """WebArena's ``ScriptBrowserEnv`` whose step awaits the page (:func:`_settle`) where run.py sleeps."""
    from webarena.browser_env import ScriptBrowserEnv
    from webarena.browser_env.actions import execute_action
    from webarena.browser_env.utils import DetachedPage

    class SettlingEnv(ScriptBrowserEnv):  # type: ignore[misc, valid-type]
        pending: ClassVar[set[Any]] = set()
        watched: Any = None

        def watch(self) -> None:
            """Track the navigations of the current page (the one WebArena acts on)."""
            page = self.page
            if page is self.watched:
                return
            self.watched = page
            pending: set[Any] = set()
            self.pending = pending
            page.on("request", lambda r: pending.add(r) if r.is_navigation_request() and r.frame == page.main_frame
                    else None)
            page.on("requestfinished", lambda r: pending.discard(r))
            page.on("requestfailed", lambda r: pending.discard(r))

        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
            # WebArena's ScriptBrowserEnv.step, with _settle where it sleeps sleep_after_execution
            success, fail_error = False, ""
            try:
                self.page = execute_action(action, self.page, self.context, self.observation_handler.action_processor)
                success = True
            except Exception as e:  # noqa: BLE001 - as WebArena's step: the error is the info's fail_error
                fail_error = str(e)
            _settle(self.page, self.pending)
            observation = self._get_obs()
            info = {"page": DetachedPage(self.page.url, self.page.content()), "fail_error": fail_error,
                    "observation_metadata": self._get_obs_metadata()}
            return observation, float(success), False, False, info

    return SettlingEnv


class _system_chromium:
    """WebArena's env launches Playwright's own Chromium; here its launches get the system one."""

    def __enter__(self) -> None:
        from playwright.sync_api import BrowserType

        from mag_dataset.live.env import CHROMIUM_FLAGS, chromium_executable

        exe, flags = chromium_executable(), list(CHROMIUM_FLAGS)
        self.launch = launch = BrowserType.launch
        BrowserType.launch = lambda bt, **kw: launch(bt, **{"executable_path": exe, "args": flags, **kw})  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        from playwright.sync_api import BrowserType

        BrowserType.launch = self.launch  # type: ignore[method-assign]


def _run_task(task: Any, config_file: Path, result_dir: Path, record: TaskRecord, logger: logging.Logger,
              render_screenshot: bool, max_steps: int) -> None:
    """run.py's loop for one config file, the expert as the agent (on the calling thread)."""
    from webarena.browser_env.helper_functions import RenderHelper

    config = json.loads(config_file.read_text())
    render = RenderHelper(str(config_file), str(result_dir), ACTION_SET_TAG)
    env = _env_class()(headless=True, observation_type=OBSERVATION_TYPE, current_viewport_only=True,
                       viewport_size={"width": task.viewport["width"], "height": task.viewport["height"]},
                       save_trace_enabled=True, sleep_after_execution=0.0)
    try:
        try:
            _episode(task, env, render, config_file, config, record, logger, render_screenshot, max_steps)
        except WebArenaError as e:  # the expert's failure: a FAIL, as an agent's would be
            record.reason = str(e)
        logger.info(f"[Result] ({'PASS' if record.passed else 'FAIL'}) {config_file}")
        (result_dir / "traces").mkdir(exist_ok=True)
        env.save_trace(result_dir / "traces" / f"{config['task_id']}.zip")
    finally:
        render.close()
        env.close()


def _episode(task: Any, env: Any, render: Any, config_file: Path, config: dict[str, Any], record: TaskRecord,
             logger: logging.Logger, render_screenshot: bool, max_steps: int) -> None:
    from webarena.browser_env import ActionTypes, create_id_based_action
    from webarena.browser_env.helper_functions import get_action_description

    logger.info(f"[Config file]: {config_file}")
    logger.info(f"[Intent]: {config['intent']}")
    obs, info = env.reset(options={"config_file": str(config_file)})
    env.watch()
    state_info = {"observation": obs, "info": info}
    meta_data: dict[str, Any] = {"action_history": ["None"]}
    memory: dict[str, Any] = {}
    answer = None
    for _ in range(max_steps):
        ob = _expert_observation(env.page, obs["image"])
        decision = task.expert(ob, memory)
        if decision is None:
            raise WebArenaError(f"the expert of {record.template} gave up on {env.page.url}")
        nodes = info["observation_metadata"]["text"]["obs_nodes_info"]
        node = _node_of(env.page, ob, decision.bid, nodes) if decision.bid is not None else None
        action_str = webarena_action(decision, node)
        action = create_id_based_action(action_str)
        purpose = "; ".join(decision.purpose[:1]) or f"the next step is {decision.type.value}"
        action["raw_prediction"] = (f"Let's think step-by-step. I need to {purpose}. In summary, the next action "
                                    f"I will perform is ```{action_str}```")
        record.actions.append(action_str)
        record.union_bounds.append(list(nodes[node]["union_bound"]) if node is not None else None)
        record.labels.append(nodes[node]["text"] if node is not None else None)
        description = get_action_description(action, info["observation_metadata"], ACTION_SET_TAG, None)
        render.render(action, state_info, meta_data, render_screenshot)
        meta_data["action_history"].append(description)
        if action["action_type"] == ActionTypes.STOP:
            answer = action["answer"]
            break
        obs, _, _, _, info = env.step(action)
        if info["fail_error"]:
            raise WebArenaError(f"{action_str} failed: {info['fail_error'][:200]}")
        env.watch()
        state_info = {"observation": obs, "info": info}
    else:
        raise WebArenaError(f"the expert of {record.template} did not stop in {max_steps} steps")
    record.passed, record.reason = judge(config, env.page, answer, settle=0)


def record_run(tasks: Iterable[RunTask | str], result_dir: Path | str, config_dir: Path | str | None = None, *,
               first_task_id: int = 0, render_screenshot: bool = True, max_steps: int = MAX_STEPS,
               log: Callable[[str], None] | None = None) -> RunSummary:
    """Run the experts of ``tasks`` as WebArena's ``run.py`` runs an agent, writing what it writes.

    For each task: its site (and a cross-site task's other sites) is reset to its seeded state,
    its WebArena config (:func:`~mag_dataset.sites.webarena.webarena_config`) and login file are
    written to ``config_dir``, then WebArena's ``ScriptBrowserEnv`` (accessibility tree,
    current viewport only, tracing on) runs the expert's actions, ``RenderHelper`` renders
    each step, WebArena's evaluators judge the end and the log says ``[Result] (PASS|FAIL)``.
    WebArena's Playwright runs on a thread of its own (a process where BrowserGym already
    started its sync Playwright cannot start a second one on the same thread).

    Args:
        tasks: templates (``sites.<site>.<template>``, seed 0) or :class:`RunTask` entries.
        result_dir: run.py's ``--result_dir`` (created; files of an earlier run of the same
            task ids are replaced, as run.py replaces them).
        config_dir: where the config files go (default ``<result_dir>/config_files``).
        first_task_id: the ``task_id`` of the first task (the others follow).
        render_screenshot: run.py's ``--render_screenshot`` (the screenshots in the render files).
        max_steps: run.py's ``--max_steps``.
        log: progress lines (none when None).

    Returns:
        A :class:`RunSummary` (also written as ``<result_dir>/run_summary.json``).

    Raises:
        WebArenaError: webarenax is not installed.
        SiteError: a site cannot be served, reset or logged in.
    """
    _webarena_evaluators()  # the import shim (site URLs in the environment, the prompts stand-in)
    say = log or (lambda line: None)
    entries = [t if isinstance(t, RunTask) else RunTask(str(t)) for t in tasks]
    out = Path(result_dir).absolute()
    configs = Path(config_dir).absolute() if config_dir is not None else out / "config_files"
    out.mkdir(parents=True, exist_ok=True)
    configs.mkdir(parents=True, exist_ok=True)
    logger, log_file = _run_logger(out)
    (out / "config.json").write_text(json.dumps({
        "render": False, "slow_mo": 0, "action_set_tag": ACTION_SET_TAG, "observation_type": OBSERVATION_TYPE,
        "current_viewport_only": True, "viewport_width": 1280, "viewport_height": 720, "save_trace_enabled": True,
        "sleep_after_execution": 0.0, "max_steps": max_steps, "agent_type": "mag_dataset site experts",
        "render_screenshot": render_screenshot, "result_dir": str(out)}, indent=4))
    records: list[TaskRecord] = []
    classes = [task_class(e.template) for e in entries]
    needed = list(dict.fromkeys(n for cls in classes for n in (cls.site_class.name, *(s.name for s in cls.other_sites))))
    try:
        with manager.served([site_class(n)() for n in needed]):
            for k, (entry, cls) in enumerate(zip(entries, classes)):
                record = TaskRecord(task_id=first_task_id + k, template=entry.template, seed=entry.seed)
                records.append(record)
                start = time.monotonic()
                task = cls(entry.seed)
                task.site.reset()
                for other in task.others.values():
                    other.reset()
                config = webarena_config(task, record.task_id, configs / ".auth")
                pairs = logins(task)
                if pairs:
                    write_storage_states([pairs], configs / ".auth")
                config_file = configs / f"{record.task_id}.json"
                config_file.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
                _on_thread(functools.partial(_run_task, task, config_file, out, record, logger, render_screenshot, max_steps))
                record.seconds = round(time.monotonic() - start, 2)
                say(f"task {record.task_id} ({entry.template} seed {entry.seed}): "
                    f"{'PASS' if record.passed else 'FAIL'} in {len(record.actions)} actions, {record.seconds:.1f}s")
    finally:
        for handler in list(logger.handlers):
            handler.close()
            logger.removeHandler(handler)
    summary = RunSummary(result_dir=str(out), config_dir=str(configs), tasks=records)
    (out / "run_summary.json").write_text(json.dumps(summary.to_dict(), indent=2) + "\n")
    say(f"log: {log_file}")
    return summary


def _run_logger(out: Path) -> tuple[logging.Logger, Path]:
    """run.py's logger: ``log_files/log_<time>_<n>.log`` (format ``time - LEVEL - message``),
    named in ``log_files.txt``."""
    folder = out / "log_files"
    folder.mkdir(exist_ok=True)
    path = folder / f"log_{time.strftime('%Y%m%d%H%M%S', time.localtime())}_{random.randint(0, 10000)}.log"
    logger = logging.getLogger(f"mag_dataset.webarena_run.{id(path)}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(message)s"))
    logger.addHandler(handler)
    with open(out / "log_files.txt", "a+") as f:
        f.write(f"{path}\n")
    return logger, path


def _on_thread(fn: Callable[[], None]) -> None:
    """Run ``fn`` on a thread of its own, with the system Chromium; re-raise its error here."""

    def run() -> None:
        with _system_chromium():
            fn()

    on_own_thread(run, "mag-webarena-run")


__all__ = ["ACTION_SET_TAG", "MAX_STEPS", "OBSERVATION_TYPE", "RunSummary", "RunTask", "SiteError", "TaskRecord",
           "record_run", "webarena_action"]
