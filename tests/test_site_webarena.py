"""The site tasks as WebArena tasks: ``mag sites export-webarena`` and WebArena's own evaluators.

Every template's config on seed 0 has exactly the keys of WebArena's ``test.raw.json`` and
values in its conventions; the command writes the configs, the login files and the list of
templates WebArena cannot express (and refuses a bad ``--out`` in one line, exit 2); the login
files load and log the user in; :func:`~mag_dataset.sites.webarena.judge` (WebArena's
``evaluator_router``, pip ``webarenax``) passes the expert's end page and answer and fails the
start page with an empty answer (checked after every template's expert by the per-site and
cross-site expert tests, :func:`conftest.expert_episode_judged`); an exported config drives
WebArena's ``ScriptBrowserEnv`` to its start page, logged in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import site_browser

from mag_dataset.sites import manager, site, site_names, tasks_of

# every site at once: scripts/test.sh runs this module in the last pass, alone, with the cross-site
# tests (see tests/test_site_cross.py for the group marker)
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("site-forum")]

#: the keys of a task in WebArena's config_files/test.raw.json, in its order (its `geolocation`,
#: null in every task but unused by its evaluators, is left out)
WEBARENA_KEYS = ["sites", "task_id", "require_login", "storage_state", "start_url", "intent_template",
                 "instantiation_dict", "intent", "require_reset", "eval", "intent_template_id"]
WEBARENA_SITE_NAMES = {"shopping", "shopping_admin", "reddit", "gitlab", "wikipedia", "map"}
EVAL_TYPES = {"information": ["string_match"], "navigation": ["url_match"], "state": ["program_html"]}

#: templates judged after their expert here, one or two per kind (the rest: the per-site expert tests);
#: none on the shop, whose login files the export tests below read
JUDGED = ("sites.tracker.milestone_due", "sites.wiki.capital_population", "sites.wiki.talk_page",
          "sites.tracker.open_milestone", "sites.tracker.edit_milestone_description", "sites.wiki.watch_page")


@pytest.fixture(scope="module")
def sites(chromium):
    """Every site served (those started here are stopped after the module) and reset to its seed."""
    served, started = [site(n) for n in site_names()], []
    try:
        for s in served:
            s.setup(print)
            if manager.serve(s).started:
                started.append(s)
            s.reset()
        yield {s.name: s for s in served}
    finally:
        for s in started:
            manager.stop(s)


def _mag(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mag_dataset.cli", *args], capture_output=True, text=True,
                          timeout=600, env=os.environ.copy())


@pytest.fixture(scope="module")
def shop_export(sites, tmp_path_factory) -> Path:
    """``mag sites export-webarena --site shop`` into a new folder (the shop and the cross-site
    templates that end on it: the wiki is served too)."""
    out = tmp_path_factory.mktemp("webarena") / "shop"
    r = _mag("sites", "export-webarena", "--out", str(out), "--site", "shop")
    assert r.returncode == 0, r.stderr
    return out


# ----------------------------------------------------------------------------- configs
def test_every_template_has_webarenas_keys_and_conventions(sites, tmp_path):
    from mag_dataset.sites.webarena import (
        CONFIG_KEYS,
        EVAL_KEYS,
        Inexpressible,
        inexpressible,
        webarena_config,
    )

    assert list(CONFIG_KEYS) == WEBARENA_KEYS
    classes = [cls for n in site_names() for _, cls in sorted(tasks_of(n).items())]
    assert len(classes) >= 100  # every site's templates, cross-site ones included
    configs, skipped, tasks = [], [], []
    for cls in classes:
        task = cls(0)
        tasks.append(task)
        try:
            config = webarena_config(task, len(configs), tmp_path)
        except Inexpressible:
            skipped.append(cls)
            continue
        configs.append(config)
        assert list(config) == WEBARENA_KEYS, cls.get_task_id()
        assert json.loads(json.dumps(config)) == config
        assert set(config["sites"]) <= WEBARENA_SITE_NAMES and len(config["sites"]) == 1 + len(cls.other_sites)
        starts = config["start_url"].split(" |AND| ")
        assert len(starts) == len(config["sites"]) and all(u.startswith("http://127.0.0.1:") for u in starts)
        assert config["require_login"] == (config["storage_state"] is not None)
        assert config["require_reset"] == (cls.kind == "state")
        # WebArena's intents are their templates with {{name}} slots filled from instantiation_dict
        intent = config["intent_template"]
        for key, value in config["instantiation_dict"].items():
            assert "{{" + key + "}}" in intent
            intent = intent.replace("{{" + key + "}}", str(value))
        assert intent == config["intent"] == task.goal
        block = config["eval"]
        assert list(block) == list(EVAL_KEYS) and block["eval_types"] == EVAL_TYPES[cls.kind]
        assert (block["reference_answers"] is not None) == (cls.kind == "information")
        assert bool(block["program_html"]) == (cls.kind == "state")
        assert block["url_note"] == "GOLD in PRED"
        if cls.kind == "navigation":
            assert block["reference_url"].startswith("http://127.0.0.1:")
    # every answer and every final page is expressible; only state checks may not be
    assert {cls.kind for cls in skipped} <= {"state"}, [c.get_task_id() for c in skipped]
    assert list(inexpressible(tasks)) == [c.get_task_id() for c in skipped]
    assert len({c["intent_template_id"] for c in configs}) == len(configs)


def test_templates_read_in_webarenas_spelling():
    from mag_dataset.sites.webarena import webarena_template

    assert webarena_template('Who started "{title}" in {board}?') == 'Who started "{{title}}" in {{board}}?'
    assert webarena_template("{{literal}} braces and {n}") == "{literal} braces and {{n}}"


# ----------------------------------------------------------------------------- the command
def test_export_writes_configs_logins_and_the_inexpressible_list(shop_export):
    out = shop_export
    summary = json.loads((out / "summary.json").read_text())
    configs = sorted(out.glob("*.json"), key=lambda p: (not p.stem.isdigit(), p.stem))
    numbered = [p for p in configs if p.stem.isdigit()]
    assert [int(p.stem) for p in sorted(numbered, key=lambda p: int(p.stem))] == list(range(summary["configs"]))
    assert summary["configs"] >= 20 and summary["sites"] == ["shop"] and summary["seeds"] == [0]
    inexpressible = json.loads((out / "inexpressible.json").read_text())
    assert inexpressible == summary["inexpressible"]
    assert summary["configs"] + len(inexpressible) == summary["templates"] == len(tasks_of("shop"))
    states = set()
    for p in numbered:
        config = json.loads(p.read_text())
        assert list(config) == WEBARENA_KEYS and config["task_id"] == int(p.stem)
        assert config["sites"][0] in ("shopping", "shopping_admin")
        if config["storage_state"]:
            assert Path(config["storage_state"]).is_file() and Path(config["storage_state"]).parent == out / ".auth"
            states.add(config["storage_state"])
    assert len(states) == summary["storage_states"] >= 3  # the customers and the staff user
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_export_refuses_a_bad_out_in_one_line(sites, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    stranger = tmp_path / "not_an_export"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine")
    for args in (["--out", str(a_file)], ["--out", str(stranger)], ["--out", str(tmp_path / "x"), "--seeds", "0"],
                 [], ["--out", str(tmp_path / "missing" / "x")]):
        r = _mag("sites", "export-webarena", "--site", "shop", *args)
        assert r.returncode == 2, (args, r.stderr)
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert (stranger / "notes.txt").read_text() == "mine" and sorted(os.listdir(stranger)) == ["notes.txt"]
    r = _mag("sites", "status", "--out", str(tmp_path / "y"))
    assert r.returncode == 2 and "export-webarena" in r.stderr
    assert "export-webarena" in _mag("sites", "--help").stdout


def test_login_files_load_and_log_the_user_in(shop_export):
    shop = site("shop")
    configs = [json.loads(p.read_text()) for p in shop_export.glob("*.json") if p.stem.isdigit()]
    with site_browser() as browser:
        for state in sorted({c["storage_state"] for c in configs if c["storage_state"]}):
            assert set(json.loads(Path(state).read_text())) == {"cookies", "origins"}
            context = browser.new_context(storage_state=state)
            try:
                page = context.new_page()
                page.goto(shop.base_url + "/accounts/profile/")
                assert "/accounts/login/" not in page.url, f"{state}: not logged in"
            finally:
                context.close()


def test_a_config_drives_webarenas_script_browser_env_logged_in(shop_export, chromium, monkeypatch):
    """WebArena's ``ScriptBrowserEnv`` reads the config (``storage_state``, ``start_url``) and opens
    the staff dashboard, which sends anonymous visitors to the login page. Its Playwright runs on
    a thread of its own (BrowserGym's sync Playwright holds this one); its launch gets Debian's
    Chromium, as Playwright cannot download its own browser here."""
    from playwright.sync_api import BrowserType

    from mag_dataset.sites.webarena import _webarena_evaluators

    _webarena_evaluators()  # WebArena's import shim (URLs in the environment, the prompts stand-in)
    launch = BrowserType.launch
    monkeypatch.setattr(BrowserType, "launch", lambda self, **kw: launch(self, **{"executable_path": chromium, **kw}))
    config = next(p for p in sorted(shop_export.glob("*.json")) if p.stem.isdigit()
                  and json.loads(p.read_text())["sites"] == ["shopping_admin"])
    start = json.loads(config.read_text())["start_url"]
    seen: dict = {}

    def drive() -> None:
        from webarena.browser_env import ScriptBrowserEnv

        env = ScriptBrowserEnv(headless=True, observation_type="accessibility_tree")
        try:
            obs, _ = env.reset(options={"config_file": str(config)})
            seen.update(url=env.page.url, text=obs["text"])
        except BaseException as e:  # noqa: BLE001 - reported on the test's thread
            seen["error"] = e
        finally:
            env.close()

    worker = threading.Thread(target=drive)
    worker.start()
    worker.join(timeout=120)
    assert "error" not in seen, seen.get("error")
    assert seen["url"].rstrip("/") == start.rstrip("/"), seen["url"]
    assert "Dashboard" in seen["text"]


# ----------------------------------------------------------------------------- WebArena's verdicts
# WebArena's evaluators judge every template's expert (its end page and answer: PASS; the start page
# with no answer, and an information task's end page with an empty answer: FAIL) in the per-site
# expert tests and the cross-site ones (conftest.expert_episode_judged); this module ran six of those
# episodes again.


def test_judge_without_webarenax_names_the_extra(monkeypatch):
    import importlib

    from mag_dataset.sites import webarena

    real = importlib.import_module

    def missing(name, *args, **kwargs):
        if name.startswith("webarena"):
            raise ModuleNotFoundError(f"No module named {name!r}", name="webarena")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", missing)
    with pytest.raises(webarena.WebArenaError, match=r"\[webarena\] extra.*--no-deps webarenax==0.4"):
        webarena.judge({"eval": {"eval_types": ["string_match"]}}, None, "x")
