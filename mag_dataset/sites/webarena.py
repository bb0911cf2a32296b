"""The site tasks as WebArena tasks: ``mag sites export-webarena`` and WebArena's own judge.

WebArena (Zhou et al., 2024, "WebArena: A Realistic Web Environment for Building Autonomous
Agents", ICLR) describes each task by a JSON config (``config_files/test.raw.json``): the sites,
the start URL, the login (a Playwright ``storage_state`` file), the intent and an ``eval`` block
that its ``evaluation_harness`` judges after the episode: ``string_match`` on the answer,
``url_match`` on the last page, ``program_html`` on pages read in the agent's browser.
:func:`webarena_config` writes a task instance in exactly those keys, with the ``eval`` block
taken from the template's hooks (:meth:`~mag_dataset.sites.task.SiteTask.reference_answers`,
:meth:`~mag_dataset.sites.task.SiteTask.reference_url`,
:meth:`~mag_dataset.sites.task.SiteTask.program_html`); :func:`export` writes every instance
with its login files; :func:`judge` runs WebArena's own evaluators (pip ``webarenax``, the
``[webarena]`` extra) on a page and an answer.

Site names, ours -> WebArena's (:data:`WEBARENA_SITES`): ``shop`` -> ``"shopping"`` (the
customer side; templates that start on the staff dashboard -> ``"shopping_admin"``), ``forum``
-> ``"reddit"``, ``tracker`` -> ``"gitlab"``, ``wiki`` -> ``"wikipedia"``.

Login files hold sessions of the seeded sites made right after :func:`export` reset them: a
later reset of a site (every task's setup, ``mag sites reset``) drops its sessions, so export
again before a WebArena run, as WebArena's own ``auto_login.py`` is run again before its runs.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import string
import sys
import tempfile
import threading
import time
import types
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from mag_dataset.sites import SiteError, site_class, site_names, tasks_of

if TYPE_CHECKING:  # pragma: no cover
    from mag_dataset.sites.task import SiteTask

#: our site name -> WebArena's (the shop's staff-dashboard templates: ``"shopping_admin"``)
WEBARENA_SITES: dict[str, str] = {"shop": "shopping", "forum": "reddit", "tracker": "gitlab", "wiki": "wikipedia"}

#: the keys of a WebArena task config (``test.raw.json``), in its order; nothing else is written
CONFIG_KEYS: tuple[str, ...] = ("sites", "task_id", "require_login", "storage_state", "start_url",
                                "intent_template", "instantiation_dict", "intent", "require_reset", "eval",
                                "intent_template_id")

#: the eval block's keys, as WebArena writes them (unused ones null or empty)
EVAL_KEYS: tuple[str, ...] = ("eval_types", "reference_answers", "reference_url", "program_html", "url_note",
                              "string_note", "reference_answer_raw_annotation")

#: what each kind of task is judged by, in WebArena's ``eval_types``
EVAL_TYPES: dict[str, str] = {"information": "string_match", "navigation": "url_match", "state": "program_html"}

#: why a template whose hook gives nothing cannot be exported, by kind (unless its ``webarena_note`` says)
INEXPRESSIBLE_REASONS: dict[str, str] = {
    "information": "reference_answers() gives no answer WebArena's string_match (exact_match or must_include) "
                   "could check",
    "navigation": "reference_url() gives no URL WebArena's url_match could check",
    "state": "program_html() gives no page content WebArena's program_html could check: the state it reads "
             "is shown on no page",
}

#: separators WebArena's configs use: several start pages (one tab each), several reference URLs
AND, OR = " |AND| ", " |OR| "

#: the install line of the ``[webarena]`` extra: without dependencies (webarenax pins versions that
#: would downgrade huggingface-hub below what transformers 5 needs)
WEBARENA_INSTALL = "pip install --no-deps webarenax==0.4 text-generation==0.7.0 beartype aiolimiter"

#: the file that says a folder holds an export (one that may be replaced by the next export)
SUMMARY_FILE = "summary.json"
INEXPRESSIBLE_FILE = "inexpressible.json"
AUTH_DIR = ".auth"


class WebArenaError(RuntimeError):
    """WebArena's code is missing, or a template's hook gives something WebArena cannot read."""


class Inexpressible(ValueError):
    """A task's check cannot be said in WebArena's evaluators' terms; the message says why."""


# ----------------------------------------------------------------------------- WebArena's evaluators
def _webarena_evaluators() -> types.ModuleType:
    """``webarena.evaluation_harness.evaluators`` of pip ``webarenax``, imported as its wheel needs.

    Its ``env_config`` asserts that the site URLs are in the environment (``REDDIT``,
    ``SHOPPING``, ...): they are set to our sites' URLs unless the caller set them. The wheel
    lacks ``webarena/agent/prompts``, which ``browser_env.helper_functions`` (``RenderHelper``'s module)
    star-imports for its ``PromptConstructor`` annotation: a stand-in module with a stand-in class
    takes its place. WebArena's setup downloads nltk's ``punkt`` tokenizer, which
    ``must_include`` uses for one-character references (a count such as ``"3"``); where it was
    not downloaded, nltk's own ``word_tokenize(..., preserve_line=True)`` tokenizes the answer
    instead (the same tokens, without splitting sentences first), so nothing is downloaded.

    Raises:
        WebArenaError: webarenax or one of its imports is not installed (names the extra).
    """
    urls = {"REDDIT": _base_url("forum"), "SHOPPING": _base_url("shop"),
            "SHOPPING_ADMIN": _base_url("shop") + "/dashboard", "GITLAB": _base_url("tracker"),
            "WIKIPEDIA": _base_url("wiki"), "MAP": "http://127.0.0.1:3000", "HOMEPAGE": "http://127.0.0.1:4399"}
    for key, url in urls.items():
        os.environ.setdefault(key, url)
    prompts = sys.modules.setdefault("webarena.agent.prompts", types.ModuleType("webarena.agent.prompts"))
    if not hasattr(prompts, "PromptConstructor"):  # helper_functions (RenderHelper's module) annotates with it
        prompts.PromptConstructor = type("PromptConstructor", (), {"__module__": "webarena.agent.prompts"})
        prompts.__all__ = ["PromptConstructor"]
    try:
        evaluators = importlib.import_module("webarena.evaluation_harness.evaluators")
        import nltk
    except ModuleNotFoundError as e:
        raise WebArenaError(f"WebArena's evaluators need the [webarena] extra (pip package {e.name!r} is missing): "
                            f"{WEBARENA_INSTALL}") from None
    try:
        nltk.data.find("tokenizers/punkt_tab")
    except LookupError:
        evaluators.word_tokenize = lambda text: nltk.word_tokenize(text, preserve_line=True)
    return evaluators


def _base_url(name: str) -> str:
    return site_class(name)().base_url


def judge(config: dict[str, Any], page: Any, answer: str | None, settle: float = 3.0) -> tuple[bool, str]:
    """WebArena's own verdict on an episode: its ``evaluator_router`` on ``config``.

    Args:
        config: a task config (:func:`webarena_config`; written to a temporary file, as
            WebArena's evaluators read their config from a file).
        page: the Playwright (sync) page the agent finished on, in its own browser context
            (``program_html`` opens its URLs in that context: the agent's login).
        answer: the agent's final answer (None: none, judged as an empty answer).
        settle: seconds ``program_html`` waits after opening each of its URLs (WebArena's
            hard-coded 3; its ``page.goto`` has already waited for the load event, so the tests,
            on the sites' server-rendered pages, pass 0).

    Returns:
        ``(passed, reason)``: passed when every evaluator scores 1; the reason gives each
        evaluator's score.

    Raises:
        WebArenaError: webarenax is not installed.
    """
    evaluators = _webarena_evaluators()
    from webarena.browser_env.actions import create_stop_action

    trajectory = [create_stop_action(answer or "")]
    with tempfile.TemporaryDirectory(prefix="mag-webarena-") as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(config, indent=1))
        combined = evaluators.evaluator_router(path)
        real_time, evaluators.time = evaluators.time, types.SimpleNamespace(sleep=lambda _: time.sleep(settle))
        try:
            scores = [float(evaluator(trajectory, path, page, None)) for evaluator in combined.evaluators]
        finally:
            evaluators.time = real_time
    kinds = config["eval"]["eval_types"]
    passed = all(score == 1.0 for score in scores)
    detail = ", ".join(f"{kind} {score:g}" for kind, score in zip(kinds, scores))
    return passed, f"WebArena's evaluators: {detail} (answer {answer!r}, page {page.url})"


# ----------------------------------------------------------------------------- the eval block
def eval_block(task: SiteTask) -> dict[str, Any] | None:
    """The ``eval`` block of a task instance, from its kind and hooks, in WebArena's layout.

    Args:
        task: a task instance on its seeded, served site (the hooks may query it).

    Returns:
        The block (every key of :data:`EVAL_KEYS`), or None when the hook gives nothing.

    Raises:
        WebArenaError: the hook gives something WebArena's evaluators cannot read.
    """
    block: dict[str, Any] = {"eval_types": [EVAL_TYPES[task.kind]], "reference_answers": None,
                             "reference_url": "", "program_html": [], "url_note": "GOLD in PRED",
                             "string_note": "", "reference_answer_raw_annotation": ""}
    if task.kind == "information":
        answers = task.reference_answers()
        if not answers:
            return None
        _check_answers(task, answers)
        block["reference_answers"] = answers
        block["reference_answer_raw_annotation"] = answers.get("exact_match") or ", ".join(answers["must_include"])
    elif task.kind == "navigation":
        url = task.reference_url()
        if not url:
            return None
        if not all(u.startswith(("http://", "https://")) for u in url.split(OR)):
            raise WebArenaError(f"{task.get_task_id()}: reference_url() must be absolute, got {url!r}")
        block["reference_url"] = url
    else:
        targets = task.program_html()
        if not targets:
            return None
        _check_targets(task, targets)
        block["reference_url"] = None  # WebArena's program_html configs leave it null
        block["program_html"] = targets
    return block


def _check_answers(task: SiteTask, answers: dict[str, Any]) -> None:
    """Raise :class:`WebArenaError` unless ``answers`` is one WebArena string_match form."""
    ok = (list(answers) == ["exact_match"] and isinstance(answers["exact_match"], str) and answers["exact_match"]) or (
        list(answers) == ["must_include"] and isinstance(answers["must_include"], list) and answers["must_include"]
        and all(isinstance(a, str) and a.strip() for a in answers["must_include"]))
    if not ok:
        raise WebArenaError(f"{task.get_task_id()}: reference_answers() must be {{'exact_match': str}} or "
                            f"{{'must_include': [str, ...]}} (non-empty), got {answers!r}")


def _check_targets(task: SiteTask, targets: list[dict[str, Any]]) -> None:
    """Raise :class:`WebArenaError` unless every target is one WebArena program_html reads."""
    for t in targets:
        if not _readable_target(t):
            raise WebArenaError(f"{task.get_task_id()}: a program_html() target must be {{'url': absolute URL or "
                                f"'last', 'locator': '' or a document.* expression, 'required_contents': "
                                f"{{'must_include': [...]}} or {{'exact_match': str}}}}, got {t!r}")


def _readable_target(t: Any) -> bool:
    if not isinstance(t, dict) or set(t) - {"prep_actions"} != {"url", "locator", "required_contents"}:
        return False
    url, locator, contents = t["url"], t["locator"], t["required_contents"]
    if not isinstance(url, str) or not (url == "last" or url.startswith(("http://", "https://"))):
        return False
    if not isinstance(locator, str) or not (not locator.strip() or locator.startswith(("document.", "[...document."))):
        return False
    if not isinstance(contents, dict) or len(contents) != 1:
        return False
    required = next(iter(contents.items()))
    return (required[0] == "exact_match" and isinstance(required[1], str)) or (
        required[0] == "must_include" and isinstance(required[1], list) and bool(required[1])
        and all(isinstance(c, str) for c in required[1]))


def inexpressible(tasks: Iterable[SiteTask]) -> dict[str, str]:
    """The templates among ``tasks`` whose check WebArena's evaluators cannot express, with why.

    Args:
        tasks: task instances on their seeded, served sites.

    Returns:
        Task id (``sites.<site>.<template>``) -> the reason, in the order given.
    """
    return {t.get_task_id(): inexpressible_reason(t) for t in tasks if eval_block(t) is None}


def inexpressible_reason(task: SiteTask) -> str:
    """Why the task's check cannot be said in WebArena's terms: its template's ``webarena_note``,
    else what its kind's hook lacks."""
    return task.webarena_note or INEXPRESSIBLE_REASONS[task.kind]


# ----------------------------------------------------------------------------- one config
def webarena_sites(task: SiteTask) -> list[str]:
    """WebArena's names of the task's sites: its own first, then the others of a cross-site task."""
    own = WEBARENA_SITES[task.site.name]
    if task.site.name == "shop" and task.start_path.startswith("/dashboard"):
        own = "shopping_admin"
    return [own, *(WEBARENA_SITES[name] for name in task.others)]


def logins(task: SiteTask) -> tuple[tuple[str, str], ...]:
    """``(site, user)`` of every login the task's episode starts with (its own site's first)."""
    own = ((task.site.name, task.user),) if task.user is not None else ()
    return own + tuple((name, user) for name, user in task.other_users.items() if user)


def storage_state_name(pairs: tuple[tuple[str, str], ...]) -> str:
    """The file name of the storage state of these logins (WebArena: ``<site>_state.json``)."""
    return "+".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{WEBARENA_SITES[s]}_{u}") for s, u in pairs) + "_state.json"


def webarena_template(template: str) -> str:
    """A ``str.format`` intent template in WebArena's spelling: ``{name}`` -> ``{{name}}``."""
    parts = []
    for literal, field, _, _ in string.Formatter().parse(template):
        parts.append(literal + ("{{" + field + "}}" if field is not None else ""))
    return "".join(parts)


def webarena_config(task: SiteTask, task_index: int, storage_dir: Path | str) -> dict[str, Any]:
    """A task instance as a WebArena config: exactly the keys of :data:`CONFIG_KEYS`.

    Args:
        task: a task instance on its seeded, served site (the hooks may query it).
        task_index: its ``task_id`` (and the config's file name, ``<task_index>.json``).
        storage_dir: the folder of the login files (:func:`storage_state_name`); the config
            names its file there (absolute), or null for an anonymous task. Not written here.

    Raises:
        Inexpressible: the template's hook gives no eval block (the message says why).
        WebArenaError: the hook gives something WebArena cannot read.
    """
    block = eval_block(task)
    if block is None:
        raise Inexpressible(f"{task.get_task_id()}: {inexpressible_reason(task)}")
    pairs = logins(task)
    starts = [task.site.base_url + task.start_path, *(other.base_url + "/" for other in task.others.values())]
    return {
        "sites": webarena_sites(task),
        "task_id": int(task_index),
        "require_login": bool(pairs),
        "storage_state": str(Path(storage_dir).absolute() / storage_state_name(pairs)) if pairs else None,
        "start_url": AND.join(starts),
        "intent_template": webarena_template(task.intent_template),
        "instantiation_dict": {k: _plain(v) for k, v in task.instantiation_dict.items()},
        "intent": task.goal,
        "require_reset": task.kind == "state",
        "eval": block,
        "intent_template_id": template_ids()[task.get_task_id()],
    }


def _plain(value: Any) -> Any:
    """A JSON value: numbers, strings and booleans as they are, anything else as its text."""
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


def template_ids() -> dict[str, int]:
    """Task id -> WebArena's ``intent_template_id``: its place among every site's templates, by id."""
    ids = sorted(t for name in site_names() for t in tasks_of(name))
    return {t: i for i, t in enumerate(ids)}


#: the seeds :func:`task_of_config` tries (an export's seeds are small numbers)
MAX_CONFIG_SEED = 1000


class NotOurTask(ValueError):
    """A WebArena config that no template of the package's sites wrote; the message says why."""


def task_of_config(config: dict[str, Any]) -> tuple[str, int]:
    """The template (``sites.<site>.<template>``) and seed whose instance :func:`webarena_config` wrote as ``config``.

    The template is the one its ``intent_template_id`` names (:func:`template_ids`), provided
    the config's ``intent_template`` and ``sites`` are that template's (a config of WebArena's
    own sites numbers its templates too); the seed is the first below
    :data:`MAX_CONFIG_SEED` whose instance has the config's ``intent`` and
    ``instantiation_dict``. Drawing an instance's parameters reads no site.

    Raises:
        NotOurTask: no template of the package's sites, or no seed of it, gives the config.
    """
    tid = config.get("intent_template_id")
    by_id = {i: t for t, i in template_ids().items()}
    if isinstance(tid, bool) or not isinstance(tid, int) or tid not in by_id:
        raise NotOurTask(f"its intent_template_id {tid!r} is none of the package's {len(by_id)} site templates")
    template = by_id[tid]
    from mag_dataset.sites import task_class

    cls = task_class(template)
    if config.get("intent_template") not in {webarena_template(t) for t in (*cls.intent_templates, cls.intent_template)}:
        raise NotOurTask(f"its intent_template is not that of {template} (intent_template_id {tid}): a task of "
                         "other sites than the package's")
    for seed in range(MAX_CONFIG_SEED):
        task = cls(seed)
        if task.goal == config.get("intent") and \
                {k: _plain(v) for k, v in task.instantiation_dict.items()} == config.get("instantiation_dict"):
            if webarena_sites(task) != config.get("sites"):
                raise NotOurTask(f"its sites {config.get('sites')!r} are not those of {template} "
                                 f"({webarena_sites(task)!r})")
            return template, seed
    raise NotOurTask(f"no seed below {MAX_CONFIG_SEED} of {template} gives its intent {str(config.get('intent'))[:80]!r}")


# ----------------------------------------------------------------------------- login files
def write_storage_states(pairs_list: Iterable[tuple[tuple[str, str], ...]], folder: Path) -> list[Path]:
    """Log each combination of users in (each site's own login form) and save the browser's
    storage state (cookies, local storage) as WebArena's ``storage_state`` file.

    The browser runs on a thread of its own: a process where BrowserGym already started its
    sync Playwright cannot start a second one on the same thread.

    Args:
        pairs_list: ``(site, user)`` combinations (:func:`logins`), each written once.
        folder: where the files go (:func:`storage_state_name`).

    Returns:
        The files written.

    Raises:
        SiteError: a site is not served, or a login fails.
    """
    combos = list(dict.fromkeys(pairs_list))
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    on_own_thread(lambda: written.extend(_log_in(combos, folder)), "mag-webarena-login")
    return written


def on_own_thread(fn: Callable[[], object], name: str) -> None:
    """Run ``fn`` on a thread of its own (sync Playwright cannot start twice on one thread) and
    re-raise its error on the caller's thread."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
            failure.append(e)

    worker = threading.Thread(target=run, name=name)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]


def _log_in(combos: list[tuple[tuple[str, str], ...]], folder: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    from mag_dataset.live.env import CHROMIUM_FLAGS, chromium_executable
    from mag_dataset.sites.base import VIEWPORT

    written = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_executable(), headless=True, args=list(CHROMIUM_FLAGS))
        try:
            for pairs in combos:
                context = browser.new_context(viewport=dict(VIEWPORT))
                try:
                    page = context.new_page()
                    for name, user in pairs:
                        site_class(name)().login(page, user)
                    path = folder / storage_state_name(pairs)
                    context.storage_state(path=str(path))
                    written.append(path)
                finally:
                    context.close()
        finally:
            browser.close()
    return written


# ----------------------------------------------------------------------------- the export
@dataclass(frozen=True)
class ExportSummary:
    """What :func:`export` wrote.

    Attributes:
        out_dir: the export folder.
        sites: the sites whose templates were exported (ours).
        seeds: the task instances of each template.
        configs: how many configs (``<task_id>.json``) were written.
        by_kind: configs per kind of task (information, navigation, state).
        by_site: configs per site.
        templates: templates looked at.
        inexpressible: task id -> why it was not exported (also in ``inexpressible.json``).
        storage_states: login files written (``.auth/``).
    """

    out_dir: str
    sites: tuple[str, ...]
    seeds: tuple[int, ...]
    configs: int
    by_kind: dict[str, int]
    by_site: dict[str, int]
    templates: int
    inexpressible: dict[str, str]
    storage_states: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def export(out_dir: Path | str, sites: Iterable[str] | None = None, seeds: Iterable[int] = (0,),
           log: Callable[[str], None] | None = None) -> ExportSummary:
    """Write every template's instances as WebArena configs, with their login files.

    The folder gets ``<task_id>.json`` per exportable instance (task ids 0, 1, ... in site,
    template and seed order, as WebArena's ``config_files``), ``.auth/`` (the storage states),
    ``inexpressible.json`` (task id -> why it has no config) and ``summary.json``. It is written
    in a temporary folder beside ``out_dir`` and renamed into place when complete: nothing
    half-written is left on an error, and an earlier export there is replaced.

    The sites the templates need are served (and those started here stopped again) and reset
    to their seeded state first: the reference answers and URLs are the seeded site's.

    Args:
        out_dir: the export folder: new, empty, or an earlier export.
        sites: our site names whose templates are exported (default: all); a cross-site
            template goes with the site it ends on.
        seeds: the task instances of each template.
        log: progress lines (none when None).

    Raises:
        SiteError: an unknown site, a folder that is not an export, a site that cannot be
            served or logged in.
        WebArenaError: a hook gives something WebArena cannot read.
    """
    from mag_dataset.sites import manager

    say = log or (lambda line: None)
    names = list(dict.fromkeys(sites or site_names()))
    unknown = [n for n in names if n not in site_names()]
    if unknown:
        raise SiteError(f"unknown site(s) {', '.join(unknown)}; sites: {', '.join(site_names())}")
    seeds = tuple(dict.fromkeys(int(s) for s in seeds))
    if not seeds or min(seeds) < 0:
        raise SiteError(f"seeds must be at least one number >= 0, got {list(seeds)}")
    out = Path(out_dir).absolute()
    _check_out(out)
    classes = [cls for name in names for _, cls in sorted(tasks_of(name).items())]
    needed = list(dict.fromkeys([*names, *(s.name for cls in classes for s in cls.other_sites)]))
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        with manager.served([site_class(n)() for n in needed]):
            for name in needed:
                say(f"{name}: reset in {site_class(name)().reset():.2f}s")
            configs, skipped, combos = [], {}, []
            for cls in classes:
                for seed in seeds:
                    task = cls(seed)
                    try:
                        configs.append(webarena_config(task, len(configs), out / AUTH_DIR))
                    except Inexpressible:
                        skipped[cls.get_task_id()] = inexpressible_reason(task)
                        continue
                    combos.append(logins(task))
            say(f"{len(configs)} configs; {len(skipped)} templates inexpressible; logging the users in")
            states = write_storage_states([c for c in combos if c], tmp / AUTH_DIR)
        summary = _summary(out, names, seeds, configs, len(classes), skipped, len(states))
        for config in configs:
            (tmp / f"{config['task_id']}.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
        (tmp / INEXPRESSIBLE_FILE).write_text(json.dumps(skipped, indent=2) + "\n")
        (tmp / SUMMARY_FILE).write_text(json.dumps(summary.to_dict(), indent=2) + "\n")
        _move_into_place(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary


def _summary(out: Path, names: list[str], seeds: tuple[int, ...], configs: list[dict[str, Any]], templates: int,
             skipped: dict[str, str], states: int) -> ExportSummary:
    by_kind = {kind: 0 for kind in EVAL_TYPES}
    by_site = {name: 0 for name in names}
    kinds = {v: k for k, v in EVAL_TYPES.items()}
    ours = {v: k for k, v in WEBARENA_SITES.items()} | {"shopping_admin": "shop"}
    for c in configs:
        by_kind[kinds[c["eval"]["eval_types"][0]]] += 1
        by_site[ours[c["sites"][0]]] += 1
    return ExportSummary(out_dir=str(out), sites=tuple(names), seeds=seeds, configs=len(configs), by_kind=by_kind,
                         by_site=by_site, templates=templates, inexpressible=skipped, storage_states=states)


def _check_out(out: Path) -> None:
    """Refuse an ``out_dir`` that is a file, or a folder with files that is not an earlier export."""
    if out.exists() and not out.is_dir():
        raise SiteError(f"the export folder {out} is a file; give a folder (new, empty, or an earlier export)")
    if out.is_dir() and any(out.iterdir()) and not (out / SUMMARY_FILE).is_file():
        raise SiteError(f"the export folder {out} holds files and is no earlier export (no {SUMMARY_FILE}); "
                        "give a new or empty folder")
    if not out.parent.is_dir():
        raise SiteError(f"the export folder {out}: its parent folder {out.parent} does not exist")


def _move_into_place(tmp: Path, out: Path) -> None:
    """Rename the finished export onto ``out`` (an earlier export there is moved aside, then deleted)."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
    try:
        tmp.rename(out)
    except OSError:
        if old is not None:
            old.rename(out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
