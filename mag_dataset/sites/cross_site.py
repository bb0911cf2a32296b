"""Tasks that span two sites, as WebArena's multi-site tasks do (a wiki fact posted on the forum,
a tracker ticket that cites a wiki page, a shop order discussed on the forum).

Each is a task of the site it ends on (its ``site_class``: the site whose state, answer page or
final URL the check reads), so its id is ``sites.<that site>.<template>`` and
:func:`mag_dataset.sites.tasks_of` lists it with that site's own templates; ``other_sites``
names the sites it also needs. Before the episode every site of the task is reset and its
user logged in (:meth:`mag_dataset.sites.task.SiteTask.setup`); the expert crosses from one
site to the other with ``goto`` (:meth:`~mag_dataset.sites.task.SiteTask.url_on`), as a
WebArena agent opens another site's address.
"""

from __future__ import annotations

from mag_dataset.sites.task import SiteTask

#: every cross-site task class (the site modules' own templates are in their ``TASKS``)
TASKS: list[type[SiteTask]] = []


def tasks_ending_on(name: str) -> list[type[SiteTask]]:
    """The cross-site tasks registered under the site ``name`` (the site they end on)."""
    return [cls for cls in TASKS if cls.site_class.name == name]
