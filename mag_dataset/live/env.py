"""BrowserGym MiniWoB++ environments driven by the system Chromium.

Usage (all calls from one thread: Playwright objects are bound to the thread that made them)::

    from mag_dataset.live.env import make_env, strict_success
    env = make_env("login-user")          # a BrowserGym BrowserEnv, headless system Chromium
    obs, info = env.reset(seed=3)          # obs["goal"], obs["screenshot"], obs["dom_object"], ...
    obs, reward, done, trunc, info = env.step("click('14')")
    done, ok, raw = episode_outcome(env, info, done)   # MiniWoB's raw reward == 1, read from
    env.close()                                        # the page, not BrowserGym's reward

The sites' envs (:func:`mag_dataset.sites.env.make_site_env`) are built on the same
:func:`browser_env`: the browser layer knows no site.

Three facts found on this machine shape this module:

* Playwright cannot download its own browsers here, so every launch gets the system
  Chromium (``executable_path``) and headless-friendly flags. BrowserGym launches the task
  browser with ``pw_chromium_kwargs`` but its chat window starts a *second* Chromium that
  ignores them; we replace the chat window by an in-process message list (no browser at
  all: one Chromium per episode instead of two) and route every launch BrowserGym makes
  through :func:`_launch_kwargs`.
* BrowserGym's MiniWoB reward is ``RAW_REWARD > 0``, which counts partial credit as
  success. :func:`strict_success` uses MiniWoB's raw reward and requires exactly 1.
* MiniWoB pages ship in pip ``miniwob``; ``MINIWOB_URL`` is set to a ``file://`` URL of its
  ``html/miniwob/`` folder unless the caller set it.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

#: Flags given to every Chromium launch (the task page's browser, and any other).
CHROMIUM_FLAGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)

#: BrowserGym action subsets the executor's strings use.
ACTION_SUBSETS: tuple[str, ...] = ("chat", "bid", "coord", "nav", "tab")


class LiveEnvError(RuntimeError):
    """The live environment cannot be set up (no Chromium, no MiniWoB pages, unknown task)."""


def chromium_executable() -> str:
    """Path of the system Chromium: ``$MAG_CHROMIUM``, the Debian binary, or ``chromium`` on PATH.

    Raises:
        LiveEnvError: when none exists.
    """
    for p in (os.environ.get("MAG_CHROMIUM"), "/usr/lib/chromium/chromium", shutil.which("chromium"),
              shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if p and os.path.exists(p):
            return p
    raise LiveEnvError("no Chromium found: install Debian's chromium (apt-get install -y chromium) "
                       "or set MAG_CHROMIUM to a Chromium executable")


def miniwob_url() -> str:
    """``file://`` URL (with trailing slash) of the MiniWoB++ pages shipped in pip ``miniwob``."""
    if os.environ.get("MINIWOB_URL"):
        return os.environ["MINIWOB_URL"]
    try:
        import miniwob
    except ImportError as e:  # pragma: no cover - the [live] extra installs it
        raise LiveEnvError("pip package 'miniwob' is required for MiniWoB++ pages") from e
    html = Path(miniwob.__file__).resolve().parent / "html" / "miniwob"
    if not html.is_dir():
        raise LiveEnvError(f"MiniWoB++ pages not found in {html}")
    return html.as_uri() + "/"


#: A launch option of :func:`browser_env` (``scrollbars=False``), read by :func:`_launch_kwargs`.
HIDE_SCROLLBARS = "mag_hide_scrollbars"


def _launch_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs = dict(kwargs)
    kwargs["executable_path"] = chromium_executable()
    kwargs["headless"] = True
    args = [a for a in kwargs.get("args") or [] if a]
    if kwargs.pop(HIDE_SCROLLBARS, False):  # Playwright's headless default, which BrowserGym turns off
        kwargs["ignore_default_args"] = [a for a in kwargs.get("ignore_default_args") or [] if a != "--hide-scrollbars"]
        args = [a for a in args if not a.startswith("--disable-features=OverlayScrollbars")]
    kwargs["args"] = args + [f for f in CHROMIUM_FLAGS if f not in args]
    return kwargs


class _SharedBrowser:
    """A Chromium that outlives BrowserGym's ``reset``: its ``close`` closes the contexts only.

    BrowserGym closes and relaunches the browser on every ``reset``; each episode runs in a
    fresh context all the same (own cookies, storage and cache, as a new browser profile),
    so keeping the process saves a launch and a shutdown per episode (0.5-1 s on 2 cores).
    """

    def __init__(self, browser: Any):
        self._browser = browser

    def close(self, **kwargs: Any) -> None:
        for context in list(self._browser.contexts):
            context.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


#: One shared Chromium per thread (Playwright's sync API is per thread) and launch options, with
#: the Playwright ``chromium`` that launched it. They end with the process, as BrowserGym's
#: global Playwright does (its driver closes the browsers it launched); closing them from an
#: ``atexit`` hook can hang a Ray worker at shutdown.
_BROWSERS: dict[tuple[int, str], tuple[Any, Any]] = {}


def _alive(browser: Any) -> bool:
    """Whether a cached browser can still be used: a browser of a Playwright that was stopped
    (someone stopped BrowserGym's global one, which then starts anew) still says it is
    connected, or raises "Event loop is closed"."""
    try:
        return bool(browser.is_connected())
    except Exception:  # noqa: BLE001 - any failure means it cannot be used
        return False


class _ChromiumLauncher:
    """Wraps ``playwright.chromium`` so every ``launch`` uses the system Chromium, one per
    thread and set of options, shared across episodes (:class:`_SharedBrowser`)."""

    def __init__(self, chromium: Any):
        self._chromium = chromium

    def launch(self, **kwargs: Any) -> Any:
        kwargs = _launch_kwargs(kwargs)
        key = (threading.get_ident(), json.dumps(kwargs, sort_keys=True, default=str))
        launcher, browser = _BROWSERS.get(key, (None, None))
        # only a browser this Playwright launched: after a stop and a new start, the old one's is dead
        if launcher is not self._chromium or not _alive(browser):
            browser = self._chromium.launch(**kwargs)
            _BROWSERS[key] = (self._chromium, browser)
        return _SharedBrowser(browser)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._chromium, name)


class _PlaywrightProxy:
    def __init__(self, pw: Any):
        self._pw = pw
        self.chromium = _ChromiumLauncher(pw.chromium)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pw, name)


class BrowserlessChat:
    """Drop-in for BrowserGym's ``Chat`` that keeps messages in memory (no second browser)."""

    def __init__(self, headless: bool = True, chat_size: Any = None, record_video_dir: Any = None, modern: bool = True):
        self.messages: list[dict[str, Any]] = []
        self.recording_start_time = None

    def add_message(self, role: str, msg: str) -> None:
        if role not in ("user", "user_image", "assistant", "info", "infeasible"):
            raise ValueError(f"Invalid role: {role}")
        if role != "info":
            self.messages.append({"role": role, "timestamp": time.time(), "message": msg})

    def wait_for_user_message(self) -> None:
        raise RuntimeError("interactive chat is not available in headless recording")

    def close(self) -> None:
        pass


_PATCHED = False


def _patch_browsergym() -> None:
    """Route BrowserGym's launches through the system Chromium, drop its chat browser and make
    Playwright's per-call stack capture cheap (:mod:`mag_dataset.live.pw_stack`)."""
    global _PATCHED
    if _PATCHED:
        return
    from mag_dataset.live import pw_stack

    pw_stack.install()
    _driver_in_own_session()
    import browsergym.core as bg_core
    import browsergym.core.chat as bg_chat
    import browsergym.core.env as bg_env

    def get_playwright() -> Any:
        pw = bg_core._get_global_playwright()
        return pw if isinstance(pw, _PlaywrightProxy) else _PlaywrightProxy(pw)

    bg_env._get_global_playwright = get_playwright
    bg_chat._get_global_playwright = get_playwright
    bg_env.Chat = BrowserlessChat
    _PATCHED = True


class _DetachedAsyncio:
    """``asyncio`` for Playwright's transport module, starting its driver in a session of its own."""

    def __getattr__(self, name: str) -> Any:
        import asyncio

        return getattr(asyncio, name)

    @staticmethod
    async def create_subprocess_exec(*args: Any, **kwargs: Any) -> Any:
        import asyncio

        kwargs.setdefault("start_new_session", True)
        return await asyncio.create_subprocess_exec(*args, **kwargs)


def _driver_in_own_session() -> None:
    """Keep a terminal's Ctrl-C (SIGINT to the foreground process group) away from Playwright's driver.

    The driver (node) closes its browsers and exits on SIGINT; Playwright's sync API then spins
    forever at the next call (its dispatcher greenlet is gone), so a run could not stop cleanly.
    In a session of its own the driver stays until Python closes it, or exits when Python's end
    closes its stdin; its browsers are detached already (Playwright starts them so).
    """
    if os.name != "posix":
        return
    try:
        from playwright._impl import _transport
    except ImportError:  # pragma: no cover - another Playwright layout: left as it is
        return
    if not isinstance(getattr(_transport, "asyncio", None), _DetachedAsyncio):
        _transport.asyncio = _DetachedAsyncio()


def task_class(task: str) -> type:
    """The BrowserGym task class of a MiniWoB++ task name such as ``login-user``.

    Raises:
        LiveEnvError: for an unknown task name.
    """
    os.environ.setdefault("MINIWOB_URL", miniwob_url())
    from browsergym.miniwob import ALL_MINIWOB_TASKS

    by_name = {cls.subdomain: cls for cls in ALL_MINIWOB_TASKS}
    if task not in by_name:
        raise LiveEnvError(f"unknown MiniWoB++ task {task!r}")
    return by_name[task]


def make_env(task: str, *, pre_observation_delay: float = 0.3, action_subsets: tuple[str, ...] = ACTION_SUBSETS) -> Any:
    """Create a headless BrowserGym environment for one MiniWoB++ task.

    Args:
        task: MiniWoB++ task name (``click-button``, ``login-user``, ``book-flight``, ...).
        pre_observation_delay: seconds BrowserGym waits after an action before observing.
        action_subsets: BrowserGym high-level action subsets accepted by ``env.step``.

    Returns:
        A ``browsergym.core.env.BrowserEnv``; call ``reset(seed=...)`` then ``step(action_str)``.
        Use it from the thread that created it.
    """
    os.environ.setdefault("MINIWOB_URL", miniwob_url())
    chromium_executable()  # fail early with a clear message
    return browser_env(task_class(task), {"base_url": os.environ["MINIWOB_URL"]},
                       pre_observation_delay=pre_observation_delay, action_subsets=action_subsets)


def browser_env(task_entrypoint: type, task_kwargs: dict[str, Any], *, pre_observation_delay: float,
                action_subsets: tuple[str, ...] = ACTION_SUBSETS, scrollbars: bool = True) -> Any:
    """A headless BrowserGym environment around a task class, on the system Chromium.

    What every task env of the package shares (:func:`make_env` for MiniWoB++,
    :func:`mag_dataset.sites.env.make_site_env` for the sites): the system Chromium with
    :data:`CHROMIUM_FLAGS`, no chat browser, and BrowserGym's high-level actions.

    Args:
        task_entrypoint: a BrowserGym task class (an ``AbstractBrowserTask`` subclass).
        task_kwargs: the keyword arguments the env constructs it with.
        pre_observation_delay: seconds BrowserGym waits after an action before observing.
        action_subsets: BrowserGym high-level action subsets accepted by ``env.step``.
        scrollbars: False hides the pages' scrollbars (no room taken), as Playwright's headless
            Chromium draws pages; BrowserGym shows them.

    Returns:
        A ``browsergym.core.env.BrowserEnv``, to use from the thread that created it.
    """
    chromium_executable()
    _patch_browsergym()
    from browsergym.core.action.highlevel import HighLevelActionSet
    from browsergym.core.env import BrowserEnv

    # multiaction: coord-view clicks are several BrowserGym calls (see live.execute).
    action_set = HighLevelActionSet(subsets=list(action_subsets), multiaction=True, strict=False)
    return BrowserEnv(
        task_entrypoint=task_entrypoint,
        task_kwargs=task_kwargs,
        headless=True,
        action_mapping=action_set.to_python_code,
        pre_observation_delay=pre_observation_delay,
        pw_chromium_kwargs={} if scrollbars else {HIDE_SCROLLBARS: True},
    )


def make_browsergym_env(task_id: str, package: str) -> Any:
    """Create a headless environment for any registered BrowserGym task id, on the system Chromium.

    Args:
        task_id: a BrowserGym task id such as ``webarena.310`` or ``workarena.servicenow.order-ipad-pro``.
        package: the module that registers that benchmark's tasks (``browsergym.webarena``, ...);
            the benchmark itself (sites, credentials) must be set up as its own docs say.

    Returns:
        A gymnasium environment with the same action set as :func:`make_env`.
    """
    import importlib

    chromium_executable()
    _patch_browsergym()
    importlib.import_module(package)
    import gymnasium
    from browsergym.core.action.highlevel import HighLevelActionSet

    # multiaction: coord-view clicks are several BrowserGym calls (see live.execute).
    action_set = HighLevelActionSet(subsets=list(ACTION_SUBSETS), multiaction=True, strict=False)
    return gymnasium.make(f"browsergym/{task_id}", headless=True, action_mapping=action_set.to_python_code)


def raw_reward(info: dict[str, Any]) -> float:
    """MiniWoB's raw reward from a BrowserGym step/reset ``info`` (0.0 when absent)."""
    task_info = info.get("task_info") or {}
    value = task_info.get("RAW_REWARD_GLOBAL")
    return float(value) if value is not None else 0.0


def strict_success(info: dict[str, Any]) -> bool:
    """Whether the episode ended with MiniWoB's raw reward exactly 1 (no partial credit)."""
    task_info = info.get("task_info") or {}
    return bool(task_info.get("DONE_GLOBAL")) and raw_reward(info) == 1.0


def page_task_info(env: Any) -> dict[str, Any]:
    """MiniWoB's own episode state read from the page (``{"task_info": {...}}`` like ``info``).

    BrowserGym's ``validate`` reports reward 0 with an ``invalid url`` error as soon as the
    page URL changes, which clicking any ``<a href="#">`` in MiniWoB does (search-engine,
    click-link, ...), even when MiniWoB itself scored the episode 1. Read the page instead.
    """
    task = getattr(getattr(env, "unwrapped", env), "task", None)
    if task is None:
        return {"task_info": {}}
    try:
        return {"task_info": task._get_info()}
    except Exception:  # the page is gone
        return {"task_info": {}}


def episode_outcome(env: Any, info: dict[str, Any], terminated: bool) -> tuple[bool, bool, float]:
    """``(done, strict_success, raw_reward)`` after ``env.step``, robust to BrowserGym's URL check.

    Use this rather than BrowserGym's reward: when BrowserGym terminates (e.g. its ``invalid url``
    check after a ``href="#"`` click), MiniWoB's own state is read from the page.
    """
    if terminated:
        info = page_task_info(env)
    task_info = info.get("task_info") or {}
    done = bool(terminated or task_info.get("DONE_GLOBAL"))
    return done, strict_success(info), raw_reward(info)
