"""BrowserGym environments for the sites' tasks, and for a recorder's task name.

A site task's env is the browser layer's (:func:`mag_dataset.live.env.browser_env`: the system
Chromium, no chat browser, BrowserGym's high-level actions) around the task class of a
``sites.<site>.<template>`` id, once its sites are served. It lives here, beside the task
classes, so that the browser layer imports no site.

Usage (all calls from one thread, as for :func:`mag_dataset.live.env.make_env`)::

    from mag_dataset.sites.env import make_site_env, make_task_env
    env = make_site_env("sites.shop.add_to_basket")   # the shop must be served (mag sites serve)
    env = make_task_env("login-user")                  # a MiniWoB++ name: live.env.make_env
"""

from __future__ import annotations

from typing import Any

from mag_dataset.live.env import ACTION_SUBSETS, LiveEnvError, browser_env, chromium_executable, make_env
from mag_dataset.sites import SiteError, task_class


def make_site_env(task_id: str, *, pre_observation_delay: float = 0.2,
                  action_subsets: tuple[str, ...] = ACTION_SUBSETS, reset_site: bool = True,
                  scrollbars: bool = True) -> Any:
    """Create a headless BrowserGym environment for a site task (``sites.shop.add_to_basket``).

    The site must be served (``mag sites serve``); ``reset`` restores its seeded state, logs
    the task's user in and opens the start page in a 1280x720 viewport. After each action
    BrowserGym sleeps ``pre_observation_delay`` (for the page's own event handlers), then the
    task waits for the navigation in flight, the load event and the page's animations
    (:meth:`mag_dataset.sites.task.SiteTask.validate`) before the observation. Pages show
    their scrollbars, as BrowserGym draws them; ``scrollbars=False`` hides them (no room
    taken), as Playwright's headless Chromium draws pages for WebArena's runs, so a replay of
    such a run lays pages out as it did.

    Raises:
        LiveEnvError: for an unknown task id, or a site that is not set up or not served.
    """
    chromium_executable()  # fail early with a clear message, before the sites are asked
    try:
        cls = task_class(task_id)
        for needed in (cls.site_class, *cls.other_sites):
            needed().running_url()
    except SiteError as e:
        raise LiveEnvError(str(e)) from None
    return browser_env(cls, {"reset_site": reset_site}, pre_observation_delay=pre_observation_delay,
                       action_subsets=action_subsets, scrollbars=scrollbars)


def is_site_task(task: str) -> bool:
    """Whether a task name is a site task (``sites.<site>.<template>``) rather than MiniWoB++."""
    return task.startswith("sites.")


def make_task_env(task: str) -> Any:
    """The env of a recorder task name: a site task id, or a MiniWoB++ task name."""
    return make_site_env(task) if is_site_task(task) else make_env(task)
