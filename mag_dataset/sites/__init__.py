"""Real web applications served on 127.0.0.1 as benchmark sites, with live tasks.

One package per site (``mag_dataset/sites/<name>/``): ``__init__.py`` names its
:class:`~mag_dataset.sites.base.Site` subclass as ``SITE`` (cheap to import: no browser, no
app), ``tasks.py`` its task classes as ``TASKS`` (BrowserGym tasks named
``sites.<site>.<template>``, each with a state-based check and an expert). Tasks that span
two sites live in :mod:`mag_dataset.sites.cross_site`, each listed under the site it ends on.

:data:`SITES` is the explicit table of sites; :func:`task_ids` expands shell-style patterns
(``sites.shop.*``) against every site's templates.

Usage::

    from mag_dataset.sites import site, task_class, task_ids
    shop = site("shop"); shop.setup(print)          # or: mag sites setup --site shop
    task_ids(["sites.shop.*"])                     # ['sites.shop.add_to_basket', ...]
"""

from __future__ import annotations

import fnmatch
import importlib
from typing import TYPE_CHECKING

from mag_dataset.sites.base import Site, SiteError, sites_home

if TYPE_CHECKING:  # pragma: no cover
    from mag_dataset.sites.task import SiteTask

#: site name -> its package. Explicit on purpose: grep here to find a site.
SITES: dict[str, str] = {
    "shop": "mag_dataset.sites.shop",
    "tracker": "mag_dataset.sites.tracker",
    "wiki": "mag_dataset.sites.wiki",
    "forum": "mag_dataset.sites.forum",
}

__all__ = ["SITES", "Site", "SiteError", "site", "site_class", "site_names", "sites_home", "task_class",
           "task_ids", "tasks_of"]


def site_names() -> list[str]:
    """Names of the sites whose package is present, in table order."""
    out = []
    for name, module in SITES.items():
        try:
            package = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is not None and module.startswith(e.name):
                continue  # the package is not there yet
            raise
        if hasattr(package, "SITE"):  # a package being built names no site yet
            out.append(name)
    return out


def site_class(name: str) -> type[Site]:
    """The :class:`Site` subclass of a site name.

    Raises:
        SiteError: for an unknown name.
    """
    if name not in site_names():
        raise SiteError(f"unknown site {name!r}; sites: {', '.join(site_names())}")
    return importlib.import_module(SITES[name]).SITE


def site(name: str) -> Site:
    """An instance of the named site with its default home and port."""
    return site_class(name)()


def tasks_of(name: str, *, cross_site: bool = True) -> dict[str, type["SiteTask"]]:
    """Task id -> task class, for one site (imports BrowserGym): its own templates and, unless
    ``cross_site`` is False, the cross-site ones that end on it."""
    site_class(name)
    module = importlib.import_module(SITES[name] + ".tasks")
    cross = importlib.import_module("mag_dataset.sites.cross_site").tasks_ending_on(name) if cross_site else []
    return {cls.get_task_id(): cls for cls in [*module.TASKS, *cross]}


def _all_tasks() -> dict[str, type["SiteTask"]]:
    out: dict[str, type[SiteTask]] = {}
    for name in site_names():
        out.update(tasks_of(name))
    return out


def task_ids(patterns: list[str] | tuple[str, ...]) -> list[str]:
    """Expand task-id patterns (``sites.shop.*``, ``sites.*.search_*``) to known site task ids.

    Raises:
        SiteError: for a pattern that matches no task.
    """
    known = sorted(_all_tasks())
    out: list[str] = []
    for pat in patterns:
        hits = [t for t in known if fnmatch.fnmatchcase(t, pat)]
        if not hits:
            raise SiteError(f"no site task matches {pat!r}; known: {', '.join(known) or 'none'}")
        out.extend(h for h in hits if h not in out)
    return out


def task_class(task_id: str) -> type["SiteTask"]:
    """The task class of a ``sites.<site>.<template>`` id.

    Raises:
        SiteError: for an unknown site or template.
    """
    parts = task_id.split(".")
    if len(parts) != 3 or parts[0] != "sites":
        raise SiteError(f"site task ids look like sites.<site>.<template>, got {task_id!r}")
    tasks = tasks_of(parts[1])
    if task_id not in tasks:
        raise SiteError(f"unknown task {task_id!r}; {parts[1]} has: {', '.join(sorted(tasks))}")
    return tasks[task_id]
