"""The base class of every site task: a BrowserGym task with a state-based success check.

See :mod:`mag_dataset.sites.base` for the life cycle. Importing this module imports
BrowserGym (the ``[live]`` extra); :mod:`mag_dataset.sites.base` does not.
"""

from __future__ import annotations

import json
import random
import string
import time
import urllib.parse
from abc import abstractmethod
from typing import Any, ClassVar

from browsergym.core.task import AbstractBrowserTask

from mag_dataset.sites.base import VIEWPORT, Site


#: What a task's check reads (:attr:`SiteTask.kind`), in WebArena's terms: the answer, the final page, the state.
TASK_KINDS = ("information", "navigation", "state")

#: Most seconds a step waits for the page's navigation in flight (a form post, a link) to finish.
SETTLE_TIMEOUT = 15.0

#: Most seconds a step waits for the page's animations to end (a modal fading in, a date
#: picker sliding open): a page with an endless one (a spinner) is observed as it is then.
ANIMATION_TIMEOUT = 2.0

#: True when no finite animation runs: CSS animations and transitions, the Web Animations
#: API, and jQuery's own (``jQuery.timers``: Trac's and Oscar's dashboard widgets).
_ANIMATIONS_DONE = """() => (!window.jQuery || !window.jQuery.timers || window.jQuery.timers.length === 0)
    && document.getAnimations().every(a => a.playState !== "running"
        || !Number.isFinite(a.effect && a.effect.getComputedTiming().endTime))"""


class SiteTask(AbstractBrowserTask):
    """A task on a site, as a BrowserGym task. Subclasses set the class variables and fill
    :meth:`sample`, :meth:`check` and :meth:`expert`.

    Attributes:
        site_class: the :class:`Site` subclass this task runs on.
        template: template name; the task id is ``sites.<site>.<template>``.
        intent_template: the intent with ``{param}`` slots filled from :meth:`sample`: a goal,
            as WebArena writes them, not a procedure.
        intent_templates: several phrasings of that goal (optional); each task instance
            takes one, drawn with ``random.Random(f"{task_id}:{seed}:intent")``, into
            ``self.intent_template``. ``self.instantiation_dict`` holds the parameters the
            chosen phrasing names (WebArena's ``instantiation_dict``).
        start_path: page the episode starts on (relative to the site's base URL).
        user: seeded user logged in before the episode (None: anonymous).
        answer_task: True for information-seeking tasks judged on the ``finish`` answer.
        kind: WebArena's three kinds of task, by what the check reads: ``"information"``
            (the ``finish`` answer; WebArena's ``string_match``), ``"navigation"`` (the page
            the agent ends on, :attr:`final_url`; WebArena's ``url_match``) or ``"state"`` (the
            application's state; WebArena's ``program_html``). Left unset, it follows
            ``answer_task``: ``"information"`` or ``"state"``.
        other_sites: the other sites of a cross-site task (WebArena's multi-site tasks, such
            as a wiki fact posted on the forum): served alongside the task's own site, reset
            with it, reached with ``goto`` (:meth:`url_on`). The task is registered under the
            site it ends on (``site_class``), from :mod:`mag_dataset.sites.cross_site`.
        other_users: per other site, the seeded user logged in there before the episode.
    """

    site_class: ClassVar[type[Site]]
    template: ClassVar[str]
    intent_template: ClassVar[str]
    intent_templates: ClassVar[tuple[str, ...]] = ()
    start_path: ClassVar[str] = "/"
    user: ClassVar[str | None] = None
    answer_task: ClassVar[bool] = False
    kind: ClassVar[str] = ""
    other_sites: ClassVar[tuple[type[Site], ...]] = ()
    other_users: ClassVar[dict[str, str]] = {}
    #: why WebArena's evaluators cannot say this template's check (its WebArena hook returns None)
    webarena_note: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("kind"):  # set here: kept, and inherited by subclasses
            cls._set_kind = cls.kind
        else:  # inherited from a class that set it, else what answer_task says
            cls.kind = getattr(cls, "_set_kind", "") or ("information" if cls.answer_task else "state")
        if cls.kind not in TASK_KINDS:
            raise TypeError(f"{cls.__name__}.kind is {cls.kind!r}; one of {', '.join(TASK_KINDS)}")

    @classmethod
    def get_task_id(cls) -> str:
        return f"sites.{cls.site_class.name}.{cls.template}"

    def __init__(self, seed: int, site: Site | None = None, reset_site: bool = True) -> None:
        """Args:
            seed: the task instance (parameters are drawn with it).
            site: the site to run on (default: the site class with its default home and port).
            reset_site: reset the site to its seeded state in ``setup`` (False only for
                :mod:`mag_dataset.harness.recapture`, which replays on a site that has moved on).
        """
        super().__init__(seed)
        self.reset_site = bool(reset_site)
        self.seed = int(seed)
        self.viewport = dict(VIEWPORT)
        self.slow_mo = 0
        self.timeout = 10000
        self.locale = "en-US"
        self.timezone_id = "UTC"
        self.site = site or self.site_class()
        #: the other sites of a cross-site task, by name (their homes and ports from the environment)
        self.others: dict[str, Site] = {c.name: c() for c in self.other_sites}
        self.params: dict[str, Any] = self.sample(random.Random(f"{self.get_task_id()}:{self.seed}"))
        if self.intent_templates:  # an instance attribute: the class keeps its first phrasing
            self.intent_template = random.Random(f"{self.get_task_id()}:{self.seed}:intent").choice(self.intent_templates)
        fields = [f for _, f, _, _ in string.Formatter().parse(self.intent_template) if f]
        self.instantiation_dict: dict[str, Any] = {f: self.params[f] for f in dict.fromkeys(fields)}
        self.goal = self.intent_template.format(**self.params)
        self.external_requests: list[str] = []
        self.reset_seconds: float | None = None
        #: the page the agent was on when it finished (read by navigation tasks' checks)
        self.final_url: str | None = None
        self._target_url: str | None = None

    # ------------------------------------------------------------------ to fill
    @abstractmethod
    def sample(self, rng: random.Random) -> dict[str, Any]:
        """Draw the task's parameters from the seed data with ``rng`` (no database access needed)."""

    @abstractmethod
    def check(self, answer: str | None) -> tuple[bool, str]:
        """Read the application's state after the episode; ``(success, reason)``.

        Args:
            answer: the agent's ``finish`` answer (the last chat message to the user).
        """

    @abstractmethod
    def expert(self, ob: Any, memory: dict[str, Any]) -> Any:
        """Next :class:`~mag_dataset.live.experts.Decision` from an observation, or None to give up.

        Reads only the observation (``ob.elements``: bids, tags, texts; ``ob.url``) and
        ``self.params``; ``memory`` is per-episode scratch space. Returns
        ``Decision(ActionType.FINISH, answer=answer)`` when done.
        """

    # ------------------------------------------------------------------ BrowserGym life cycle
    def setup(self, page: Any) -> tuple[str, dict[str, Any]]:
        base = self.site.running_url()
        self.external_requests = []

        def route(r: Any) -> None:
            host = urllib.parse.urlsplit(r.request.url).hostname or ""
            if r.request.url.startswith(("data:", "blob:", "about:")) or host in ("127.0.0.1", "localhost"):
                r.continue_()
            else:  # nothing leaves the machine; the site test asserts this list stays empty
                self.external_requests.append(r.request.url)
                r.abort()

        page.context.route("**/*", route)
        # the page's own navigations in flight, so that validate() can let them finish
        pending: set[Any] = set()
        self._pending = pending
        page.on("request", lambda r: pending.add(r) if r.is_navigation_request() and r.frame == page.main_frame
                else None)
        page.on("requestfinished", lambda r: pending.discard(r))
        page.on("requestfailed", lambda r: pending.discard(r))
        _keep_viewport_after_screenshots()
        self.reset_seconds = self.site.reset() if self.reset_site else None
        for name, other in self.others.items():
            other.running_url()
            if self.reset_site:
                self.reset_seconds += other.reset()
            if self.other_users.get(name):
                other.login(page, self.other_users[name])
        if self.user is not None:
            self.site.login(page, self.user)
        page.goto(base + self.start_path)
        page.wait_for_load_state("load")
        return self.goal, {}

    def validate(self, page: Any, chat_messages: list[dict[str, Any]]) -> tuple[float, bool, str, dict[str, Any]]:
        """Let the step's navigation and animations finish, then judge the episode once the
        agent has finished.

        BrowserGym validates right before it extracts the observation, and its own wait
        returns at once when a click or an Enter has only *started* a navigation: on a busy
        machine the observation would be a half-parsed page without marks. Waiting here for
        the navigation in flight, the load event and the page's finite animations
        (:data:`_ANIMATIONS_DONE`) costs nothing when the page is idle, and lets the site env
        observe after a short fixed delay (:func:`mag_dataset.sites.env.make_site_env`).
        """
        deadline = time.monotonic() + SETTLE_TIMEOUT
        try:
            while getattr(self, "_pending", None) and time.monotonic() < deadline:
                page.wait_for_timeout(50)
            page.wait_for_load_state("load", timeout=SETTLE_TIMEOUT * 1000)
            page.wait_for_function(_ANIMATIONS_DONE, timeout=ANIMATION_TIMEOUT * 1000, polling=50)
        except Exception:  # noqa: BLE001 - a closed or crashed page, an endless animation: observed as it is
            pass
        # only the agent's messages count: BrowserGym's own greeting precedes the goal (a user message)
        last_user = max((i for i, m in enumerate(chat_messages) if m.get("role") == "user"), default=-1)
        answers = [m for m in chat_messages[last_user + 1:] if m.get("role") == "assistant"]
        if not answers:
            return 0.0, False, "", {}
        self.final_url = page.url
        ok, reason = self.check(str(answers[-1].get("message") or ""))
        return (1.0 if ok else 0.0), True, "", {"success": ok, "reason": reason}

    def url_on(self, name: str, path: str = "/") -> str:
        """The URL of ``path`` on one of this task's sites (its own or another), for ``goto``."""
        where = self.site if name == self.site.name else self.others.get(name)
        if where is None:
            raise KeyError(f"{self.get_task_id()} uses no site {name!r}")
        return where.base_url + path

    def on_page(self, path: str, *, on_site: str | None = None, **query: str) -> tuple[bool, str]:
        """Navigation tasks' check: did the agent finish on ``path`` (under the base URL of the
        task's site, or of the other site ``on_site``) with at least these query parameters?
        WebArena's ``url_match``: same site and path, and the named parameters equal (others,
        and their order, ignored); a trailing slash ignored.
        """
        where = self.site if on_site in (None, self.site.name) else self.others[on_site]
        want = f"{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        # what reference_url() reports: percent-encoded as a browser's address bar shows it
        self._target_url = where.base_url.rstrip("/") + urllib.parse.quote(want, safe="/:@!$&'()*+,;=~%?")
        if not self.final_url:
            return False, f"no final page (expected {want})"
        got = urllib.parse.urlsplit(self.final_url)
        base = urllib.parse.urlsplit(where.base_url)
        if got.netloc != base.netloc:
            return False, f"ended on {self.final_url}, not on the {where.name} site ({where.base_url})"
        base_path = base.path.rstrip("/")
        got_path = urllib.parse.unquote(got.path)
        if base_path and got_path.startswith(base_path):
            got_path = got_path[len(base_path):]
        if got_path.rstrip("/") != urllib.parse.unquote(path).rstrip("/"):
            return False, f"ended on {self.final_url}, not on {want}"
        params = urllib.parse.parse_qs(got.query)
        for key, value in query.items():
            if params.get(key, [None])[0] != str(value):
                return False, f"ended on {self.final_url}: {key} is {params.get(key, [None])[0]!r}, not {value!r}"
        return True, f"ended on {want}"

    # ------------------------------------------------------------------ WebArena's terms
    # `mag sites export-webarena` writes each task as a WebArena config whose `eval` block says
    # what check() checks, in WebArena's own evaluators' terms (webarena.evaluation_harness), so
    # that WebArena's evaluators judge an episode as check() does. Each is read on the seeded site
    # (reset, served) and may query it; None: the check cannot be said in these terms.

    def reference_answers(self) -> dict[str, Any] | None:
        """Information tasks: WebArena's ``string_match`` answers, ``{"exact_match": str}`` or
        ``{"must_include": [str, ...]}`` (no ``fuzzy_match``: it needs a model), or None."""
        return None

    def reference_url(self) -> str | None:
        """Navigation tasks: WebArena's ``url_match`` target, the absolute URL :meth:`check` wants
        the agent to end on. By default read from the :meth:`on_page` call that ``check`` makes."""
        if self.kind != "navigation":
            return None
        self._target_url = None
        self._check_unfinished()
        return self._target_url

    def _check_unfinished(self) -> None:
        """Run :meth:`check` as if the agent had not finished (no final page, no answer), for the
        target it names on the way (:meth:`on_page` records it)."""
        final, self.final_url = self.final_url, None
        try:
            self.check(None)
        finally:
            self.final_url = final

    def page_shows(self, path: str, locator: str, *entries: str) -> list[dict[str, Any]]:
        """One ``program_html`` target: on the page ``path`` of the task's site, what ``locator``
        reads includes each of ``entries``."""
        return [html_target(self.site.base_url + path, locator, *entries)]

    def program_html(self) -> list[dict[str, Any]] | None:
        """State tasks: WebArena's ``program_html`` targets, each ``{"url": absolute URL or
        "last", "locator": JavaScript expression or "" (the page's text), "required_contents":
        {"must_include": [...]} or {"exact_match": str}}``, read after the episode in the agent's
        own browser (its login), or None."""
        return None

    def teardown(self) -> None:
        """Nothing to undo: the next ``setup`` resets the site."""

    def cheat(self, page: Any, chat_messages: list[dict[str, Any]]) -> None:  # pragma: no cover
        raise NotImplementedError("site tasks are solved by their observation-driven expert, see expert()")


def html_target(url: str, locator: str, *must_include: str) -> dict[str, Any]:
    """A WebArena ``program_html`` target: what ``locator`` reads on ``url`` includes each of
    ``must_include`` (case-insensitive; empty strings are left out)."""
    return {"url": url, "locator": locator, "required_contents": {"must_include": [s for s in must_include if s]}}


def exact_target(url: str, locator: str, text: str) -> dict[str, Any]:
    """A WebArena ``program_html`` target: what ``locator`` reads on ``url`` is ``text`` (case and
    surrounding spaces aside)."""
    return {"url": url, "locator": locator, "required_contents": {"exact_match": text}}


def js_entries(selector: str, entry: str) -> str:
    """A ``program_html`` locator (WebArena's JavaScript expression): each element ``x`` that
    ``selector`` selects, read by the expression ``entry`` and written as ``|entry|``, so that a
    required ``|value|`` matches one whole entry, not a part of one."""
    return f"[...document.querySelectorAll({json.dumps(selector)})].map(x => '|' + {entry} + '|').join('')"


_VIEWPORT_PATCHED = False


def _keep_viewport_after_screenshots() -> None:
    """Take BrowserGym's screenshots on a CDP session kept per page, at the viewport size.

    BrowserGym's ``extract_screenshot`` opens a CDP session per screenshot, sets a
    device-metrics override (the viewport size, its scale factor, not mobile), captures, sets
    the page back and detaches; with Debian's Chromium the detach drops Playwright's viewport
    too, so the page fell back to the headless window (780x493) until the next navigation:
    wide-layout elements (Bootstrap navbars) collapsed and actions on them failed as "not
    visible". The override was then re-sent on a session kept per page. Each screenshot so
    cost three relayouts of the page (to the override, to 780x493, back to 1280x720): about
    150 ms of Chromium's CPU, most of an observation's.

    Here, at scale factor 1 (the sites' and MiniWoB++'s), the same override is sent on the
    kept session and the page captured under it: the pixels BrowserGym's capture gives (the
    same override; 40 of 40 captures identical over the four sites, scrolled and not), with
    no relayout when the override is already in place, and the page stays at its viewport
    size. Another scale factor, or a page without a viewport, goes through BrowserGym's
    function, the override re-sent after it.
    """
    global _VIEWPORT_PATCHED
    if _VIEWPORT_PATCHED:
        return
    import base64
    import io

    import browsergym.core.env as bg_env

    original = bg_env.extract_screenshot

    def _session(page: Any, size: dict[str, int]) -> Any:
        cdp = getattr(page, "_mag_viewport_cdp", None)
        if cdp is None:
            cdp = page.context.new_cdp_session(page)
            page._mag_viewport_cdp = cdp
        cdp.send("Emulation.setDeviceMetricsOverride", {"width": size["width"], "height": size["height"],
                                                         "deviceScaleFactor": 1, "mobile": False})
        return cdp

    def extract_screenshot(page: Any) -> Any:
        import numpy as np
        from PIL import Image

        size = page.viewport_size
        if not size or getattr(page, "_bgym_scale_factor", 1.0) != 1.0:
            out = original(page)
            if size:
                _session(page, size)
            return out
        answer = _session(page, size).send("Page.captureScreenshot", {"format": "png", "optimizeForSpeed": True})
        with io.BytesIO(base64.b64decode(answer["data"])) as f:  # as BrowserGym decodes it
            return np.array(Image.open(f).convert(mode="RGB"))

    bg_env.extract_screenshot = extract_screenshot
    _VIEWPORT_PATCHED = True
